#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# up.sh - bring up "lumi-sim": a real Slurm 22.05 cluster on this machine (127.0.0.1) for tests and demos.
#
# munged, slurmctld and one slurmd per simulated node (nid005001, nid005002: `slurmd -N NAME`, own port),
# plus slurmdbd and MariaDB when accounting is on (the default). LUMI's partitions, 8 GPUs per node as GRES.
# Knobs and the folder layout: see lib.sh. Examples:
#   bash scripts/slurm-sim/up.sh                                  # accounting on, real CPUs, 2 nodes
#   LUMIKIT_SLURM_ACCOUNTING=0 bash scripts/slurm-sim/up.sh       # no slurmdbd/MariaDB (sacct -c only)
#   LUMIKIT_SLURM_PROFILE=lumi bash scripts/slurm-sim/up.sh       # nodes shaped like LUMI-G
#
# Idempotent. Same configuration and every daemon alive: only checks the nodes (a fraction of a second).
# Same configuration but daemons gone (kill-node.sh, a crashed controller, down.sh without --purge): starts just
# those daemons, keeps jobs, state and accounting, and resumes nodes that are down or drained. Different configuration (another mode): stops the old
# cluster (down.sh), wipes its state and starts afresh.
set -euo pipefail
SCRIPT=slurm-up
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=config.sh
source "$HERE/config.sh"
validate_knobs
[ "$(id -u)" = 0 ] || die "run as root: slurmd must start job steps as the submitting user"
# Who may submit when accounting is on (Slurm refuses a user without an account): root, and the user behind sudo.
default_users=root
[ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ] && default_users="root,$SUDO_USER"
USERS=${LUMIKIT_SLURM_USERS:-$default_users}
mapfile -t NODES < <(node_names)

# ------------------------------------------------------------------------------------------ packages
install_packages() {
  local pkgs="munge slurmctld slurmd slurm-client" missing=0 cmd
  [ "$ACCOUNTING" = 1 ] && pkgs="$pkgs slurmdbd mariadb-server"
  for cmd in munged slurmctld slurmd srun sinfo; do command -v "$cmd" >/dev/null || missing=1; done
  if [ "$ACCOUNTING" = 1 ]; then
    for cmd in slurmdbd sacctmgr mariadbd mariadb-install-db; do command -v "$cmd" >/dev/null || missing=1; done
  fi
  [ "$missing" = 0 ] && return 0
  [ "$INSTALL" = 1 ] || die "Slurm packages missing; install them with:
  apt-get update && apt-get install -y --no-install-recommends $pkgs"
  command -v apt-get >/dev/null || die "Slurm packages missing and no apt-get here (Debian 12 expected): install $pkgs"
  say "installing Debian packages: $pkgs"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=120 update -qq >"$LOG/apt.log" 2>&1 \
    || die "apt-get update failed (see $LOG/apt.log)"
  # shellcheck disable=SC2086
  apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends $pkgs >>"$LOG/apt.log" 2>&1 \
    || die "apt-get install $pkgs failed (see $LOG/apt.log)"
  say "packages installed"
}

# ------------------------------------------------------------------------------------------ /etc/hosts
# The node names must resolve to 127.0.0.1 (MASTER_ADDR is taken from the node list). Append-only.
add_hosts_entries() {
  local n missing=()
  for n in "${NODES[@]}"; do
    grep -qE "^[[:space:]]*127\.0\.0\.1([[:space:]].*)?[[:space:]]$n([[:space:]]|$)" /etc/hosts 2>/dev/null || missing+=("$n")
  done
  [ "${#missing[@]}" = 0 ] && return 0
  printf '127.0.0.1 %s %s\n' "${missing[*]}" "$HOSTS_TAG" >> /etc/hosts \
    || die "cannot add '127.0.0.1 ${missing[*]}' to /etc/hosts; add it by hand"
  say "added to /etc/hosts: 127.0.0.1 ${missing[*]}"
}

# ------------------------------------------------------------------------------------------ daemons
start_munged() {
  pid_alive "$MUNGE_DIR/munged.pid" munged >/dev/null && return 0
  mkdir -p "$MUNGE_DIR"
  chmod 711 "$MUNGE_DIR"   # clients of every user must reach the socket
  if [ ! -s "$MUNGE_DIR/munge.key" ]; then
    mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null 2>&1 \
      || dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
  fi
  chmod 600 "$MUNGE_DIR/munge.key"
  rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
  munged --key-file="$MUNGE_DIR/munge.key" --socket="$MUNGE_SOCK" --pid-file="$MUNGE_DIR/munged.pid" \
         --log-file="$LOG/munged.log" --seed-file="$MUNGE_DIR/munged.seed" --num-threads=2 9>&- \
    || die "munged did not start: $(tail -n 3 "$LOG/munged.log" 2>/dev/null)"
  munge -n -S "$MUNGE_SOCK" | unmunge -S "$MUNGE_SOCK" >/dev/null || die "munge credentials do not round-trip"
  say "munged up (pid $(cat "$MUNGE_DIR/munged.pid"))"
}

# The PID a daemon wrote into FILE (it may take a moment after the daemon forked), or "?".
new_pid() { local i; for i in $(seq 1 20); do [ -s "$1" ] && { cat "$1"; return; }; sleep 0.05; done; echo '?'; }

mysql_cli() { mariadb --no-defaults -S "$MYSQL_DIR/mysqld.sock" -uroot "$@"; }

start_mariadb() {
  pid_alive "$MYSQL_DIR/mysqld.pid" mariadbd >/dev/null && return 0
  mkdir -p "$MYSQL_DIR"
  if [ ! -d "$MYSQL_DIR/data/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$MYSQL_DIR/data" --user=root \
      --auth-root-authentication-method=socket --skip-test-db >"$LOG/mariadb-install.log" 2>&1 \
      || die "mariadb-install-db failed (see $LOG/mariadb-install.log)"
  fi
  setsid mariadbd --no-defaults --datadir="$MYSQL_DIR/data" --socket="$MYSQL_DIR/mysqld.sock" \
    --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve --user=root \
    --pid-file="$MYSQL_DIR/mysqld.pid" --log-error="$LOG/mariadbd.err" --skip-log-bin \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 --innodb-flush-log-at-trx-commit=0 \
    --innodb-doublewrite=0 </dev/null >/dev/null 2>&1 9>&- &
  local i
  for i in $(seq 1 300); do mysql_cli -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  mysql_cli -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'lumikit-sim';
                GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;" \
    || die "MariaDB did not come up (see $LOG/mariadbd.err)"
  say "mariadbd up (pid $(cat "$MYSQL_DIR/mysqld.pid"))"
}

start_slurmdbd() {
  pid_alive "$STATE/slurmdbd.pid" slurmdbd >/dev/null && return 0
  rm -f "$STATE/slurmdbd.pid"
  SLURM_CONF=$CONF slurmdbd 9>&- || die "slurmdbd did not start: $(tail -n 3 "$LOG/slurmdbd.log" 2>/dev/null)"
  local i
  for i in $(seq 1 100); do sl sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 0.1; done
  sl sacctmgr -n show cluster >/dev/null 2>&1 || die "slurmdbd does not answer (see $LOG/slurmdbd.log)"
  say "slurmdbd up (pid $(cat "$STATE/slurmdbd.pid"))"
}

# Cluster, the course account (every user's default) and a second account. Idempotent: adding what
# exists only makes sacctmgr say "Nothing new added"; the association check at the end is what counts.
setup_accounts() {
  local u users=${USERS//,/ }
  sl sacctmgr -i -Q add cluster "$CLUSTER" >/dev/null 2>&1 || true
  sl sacctmgr -i -Q add account "$COURSE_ACCOUNT,$SECOND_ACCOUNT" Cluster="$CLUSTER" \
    Description="lumikit course" Organization=lumikit >/dev/null 2>&1 || true
  sl sacctmgr -i -Q add user "${users// /,}" Account="$COURSE_ACCOUNT,$SECOND_ACCOUNT" Cluster="$CLUSTER" \
    DefaultAccount="$COURSE_ACCOUNT" >/dev/null 2>&1 || true
  sl sacctmgr -i -Q modify user where name="${users// /,}" set DefaultAccount="$COURSE_ACCOUNT" >/dev/null 2>&1 || true
  for u in $users; do
    sl sacctmgr -n -P show user "$u" format=defaultaccount | grep -qx "$COURSE_ACCOUNT" \
      || die "sacctmgr could not make $COURSE_ACCOUNT the default account of $u (see $LOG/slurmdbd.log)"
  done
  sl sacctmgr -n -P show assoc format=account,user | grep -qx "$SECOND_ACCOUNT|root" \
    || die "sacctmgr could not create the association $SECOND_ACCOUNT/root (see $LOG/slurmdbd.log)"
  say "accounts $COURSE_ACCOUNT (default) and $SECOND_ACCOUNT for: $users"
}

# The users of USERS that have no association yet (one sacctmgr call), one per line.
users_without_account() {
  local have
  have=$(sl sacctmgr -n -P show assoc format=user 2>/dev/null | sort -u)
  tr ',' '\n' <<<"$USERS" | grep -vxF -e "" -f <(printf '%s\n' "$have") || true
}

start_slurmctld() {
  pid_alive "$STATE/slurmctld.pid" slurmctld >/dev/null && return 0
  rm -f "$STATE/slurmctld.pid"
  SLURM_CONF=$CONF slurmctld 9>&- || die "slurmctld did not start: $(tail -n 3 "$LOG/slurmctld.log" 2>/dev/null)"
  say "slurmctld up (pid $(new_pid "$STATE/slurmctld.pid"))"
}

start_slurmd() { # NODE
  local n=$1
  pid_alive "$STATE/slurmd-$n.pid" slurmd >/dev/null && return 0
  rm -f "$STATE/slurmd-$n.pid"
  mkdir -p "$STATE/spool/$n"
  SLURM_CONF=$CONF slurmd -N "$n" 9>&- \
    || die "slurmd $n did not start: $(tail -n 3 "$LOG/slurmd-$n.log" 2>/dev/null)"
  say "slurmd $n up (pid $(new_pid "$STATE/slurmd-$n.pid"))"
}

any_alive() {
  local f
  for f in "$MUNGE_DIR/munged.pid:munged" "$MYSQL_DIR/mysqld.pid:mariadbd" "$STATE/slurmdbd.pid:slurmdbd" \
           "$STATE/slurmctld.pid:slurmctld" "$STATE"/slurmd-*.pid; do
    case $f in *:*) pid_alive "${f%:*}" "${f##*:}" >/dev/null && return 0;; *) pid_alive "$f" slurmd >/dev/null && return 0;; esac
  done
  return 1
}

all_alive() {
  local n
  pid_alive "$MUNGE_DIR/munged.pid" munged >/dev/null || return 1
  if [ "$ACCOUNTING" = 1 ]; then
    pid_alive "$MYSQL_DIR/mysqld.pid" mariadbd >/dev/null || return 1
    pid_alive "$STATE/slurmdbd.pid" slurmdbd >/dev/null || return 1
  fi
  pid_alive "$STATE/slurmctld.pid" slurmctld >/dev/null || return 1
  for n in "${NODES[@]}"; do pid_alive "$STATE/slurmd-$n.pid" slurmd >/dev/null || return 1; done
}

# ------------------------------------------------------------------------------------------ node states
# "NAME STATE" per node; STATE is sinfo's long form (idle, mixed, down*, drained, ...).
node_states() { sl sinfo -h -N -p small-g -o '%N %T' 2>/dev/null | sort -u; }

# Nodes that are down or drained (by kill-node.sh or a lost slurmd) go back into service.
resume_nodes() {
  local n s
  while read -r n s; do
    case "$s" in
      down*|drain*|fail*|inval*)
        sl scontrol update NodeName="$n" State=RESUME >/dev/null 2>&1 \
          && say "resumed node $n (was $s)";;
    esac
  done < <(node_states)
}

# wait_nodes REGEX: until every node's state matches REGEX (resuming fallen nodes), or TIMEOUT.
wait_nodes() {
  local ok=$1 deadline=$(( $(date +%s) + TIMEOUT )) states good
  while :; do
    states=$(node_states || true)
    good=$(awk -v re="^($ok)$" '$2 ~ re' <<<"$states" | wc -l)
    [ -n "$states" ] && [ "$good" -eq "$NNODES" ] && return 0
    [ "$(date +%s)" -ge "$deadline" ] && { say "node states: ${states:-none (sinfo failed)}"; return 1; }
    resume_nodes
    sleep 0.2
  done
}

# The course reservation: every node, open to the course account only (others get Slurm's "Access denied
# to requested reservation"). An ACTIVE reservation on every node would show them as "reserved" in sinfo
# and hold back every job outside it; so this one starts a year from now and FLEX lets its jobs start
# before then: jobs with --reservation=lumikit-course run at once, and jobs without it run as usual.
ensure_reservation() {
  sl scontrol show reservation "$RESERVATION" >/dev/null 2>&1 && return 0
  sl scontrol create reservation ReservationName="$RESERVATION" StartTime=now+365days Duration=UNLIMITED \
    Nodes=ALL Accounts="$COURSE_ACCOUNT" Flags=FLEX >/dev/null \
    || die "could not create reservation $RESERVATION (see $LOG/slurmctld.log)"
  say "reservation $RESERVATION ready (account $COURSE_ACCOUNT, nodes ${NODES[*]})"
}

# ------------------------------------------------------------------------------------------ mode.json
write_mode_json() {
  local tmp cpus version nodes_json
  cpus=$(sed -n 's/^NodeName=.* CPUs=\([0-9]*\).*/\1/p' "$CONF" | head -1)
  version=$(sl sinfo --version 2>/dev/null | awk '{print $2}')
  nodes_json=$(printf '"%s",' "${NODES[@]}"); nodes_json="[${nodes_json%,}]"
  tmp=$(mktemp "$SIM_DIR/.mode.json.XXXXXX")
  cat >"$tmp" <<EOF
{
  "cluster": "$CLUSTER",
  "slurm_conf": "$CONF",
  "accounting": $([ "$ACCOUNTING" = 1 ] && echo true || echo false),
  "profile": "$PROFILE",
  "nodes": $nodes_json,
  "cpus_per_node": $cpus,
  "gpus_per_node": $GPUS_PER_NODE,
  "default_partition": "small-g",
  "partitions": ["small-g", "standard-g", "dev-g", "small", "standard", "debug"],
  "accounts": $([ "$ACCOUNTING" = 1 ] && echo "[\"$COURSE_ACCOUNT\", \"$SECOND_ACCOUNT\"]" || echo "[]"),
  "default_account": $([ "$ACCOUNTING" = 1 ] && echo "\"$COURSE_ACCOUNT\"" || echo null),
  "reservation": "$RESERVATION",
  "slurm_version": "$version",
  "started_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
  chmod 644 "$tmp"
  mv -f "$tmp" "$MODE_JSON"
}

write_env_file() {
  local tmp
  tmp=$(mktemp "$SIM_DIR/.env.sh.XXXXXX")
  printf '# Generated by scripts/slurm-sim/up.sh: point Slurm commands at lumi-sim.\nexport SLURM_CONF=%s\n' "$CONF" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$SIM_DIR/env.sh"
}

# munged refuses a socket below a folder that others cannot traverse: check before anything starts.
check_traversable() {
  local d=$SIM_DIR
  while [ "$d" != / ] && [ -n "$d" ]; do
    if [ -d "$d" ] && [ "$(( 0$(stat -c %a "$d") & 1 ))" = 0 ]; then
      die "munged needs every folder above its socket to be searchable by all, and $d is not:
  chmod o+x $d   (or choose another LUMIKIT_SLURM_SIM_DIR)"
    fi
    d=$(dirname "$d")
  done
}

# ------------------------------------------------------------------------------------------ main
check_traversable
mkdir -p "$SIM_DIR"
take_lock
mkdir -p "$ETC" "$STATE" "$LOG" "$DEV"
chmod 755 "$SIM_DIR" "$STATE" "$ETC" "$LOG"
install_packages
add_hosts_entries
for i in $(seq 0 $((GPUS_PER_NODE - 1))); do ln -sfn /dev/null "$DEV/gpu$i"; done

NEW=$(mktemp -d)
trap 'rm -rf "$NEW"' EXIT
slurm_conf >"$NEW/slurm.conf"
gres_conf >"$NEW/gres.conf"
[ "$ACCOUNTING" = 1 ] && slurmdbd_conf >"$NEW/slurmdbd.conf"

same_config() {
  cmp -s "$NEW/slurm.conf" "$CONF" && cmp -s "$NEW/gres.conf" "$ETC/gres.conf" || return 1
  if [ "$ACCOUNTING" = 1 ]; then cmp -s "$NEW/slurmdbd.conf" "$ETC/slurmdbd.conf" || return 1; fi
}

# A node in service: idle, or busy with jobs (sinfo's long state; "idle*" = not responding, is not).
IN_SERVICE='idle|mixed|allocated|completing|planned'
if same_config && all_alive; then
  wait_nodes "$IN_SERVICE" \
    || die "the cluster runs but its nodes do not come back (see $LOG/slurmctld.log)"
  [ "$ACCOUNTING" = 1 ] && [ -n "$(users_without_account)" ] && setup_accounts  # users named this time
  ensure_reservation
  [ -f "$MODE_JSON" ] || write_mode_json
  write_env_file
  say "lumi-sim already up (accounting=$ACCOUNTING profile=$PROFILE nodes=${NODES[*]})"
  exit 0
fi

REPAIR=0
if same_config && [ -d "$STATE/ctld" ]; then
  # The controller too may be gone (a crash): slurmctld reads its saved state back, MariaDB keeps accounting.
  REPAIR=1
  say "same configuration, some daemons gone: restarting only those (jobs, state and accounting kept)"
else
  if any_alive; then
    say "starting afresh (new configuration, or the controller is gone): stopping the old cluster"
    QUIET=1 LUMIKIT_SLURM_SIM_LOCKED=1 LUMIKIT_SLURM_SIM_DIR=$SIM_DIR bash "$HERE/down.sh" || true
  fi
  rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/jobcomp.txt" "$MYSQL_DIR" "$MODE_JSON"
  mkdir -p "$STATE/ctld" "$STATE/spool"
  cp "$NEW/slurm.conf" "$CONF"
  cp "$NEW/gres.conf" "$ETC/gres.conf"
  : >"$ETC/plugstack.conf"
  if [ "$ACCOUNTING" = 1 ]; then
    install -m 600 "$NEW/slurmdbd.conf" "$ETC/slurmdbd.conf"
  else
    rm -f "$ETC/slurmdbd.conf"
  fi
fi

start_munged
if [ "$ACCOUNTING" = 1 ]; then
  start_mariadb
  start_slurmdbd
  setup_accounts
fi
start_slurmctld
for n in "${NODES[@]}"; do start_slurmd "$n"; done

if [ "$REPAIR" = 1 ]; then WANT=$IN_SERVICE; else WANT=idle; fi
if ! wait_nodes "$WANT"; then
  die "the nodes did not become $WANT within ${TIMEOUT}s (see $LOG/slurmctld.log and $LOG/slurmd-*.log)"
fi
ensure_reservation
write_mode_json
write_env_file
sl sinfo -o '%P %a %l %D %T %N %c %m %G' || true
say "lumi-sim is up (accounting=$ACCOUNTING profile=$PROFILE nodes=${NODES[*]}) in $(elapsed_ms) ms"
cat <<EOF
Point Slurm commands at it with one of:
  export SLURM_CONF=$CONF
  source $SIM_DIR/env.sh
(lumikit's site 'lumi-sim' finds it by itself.) Stop it with: make slurm-down
EOF
