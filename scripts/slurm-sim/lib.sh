# shellcheck shell=bash disable=SC2034
# lib.sh - settings and helpers shared by the lumi-sim cluster scripts (sourced, never run).
#
# Everything the cluster writes lives under one folder, $SIM_DIR:
#   etc/   slurm.conf, gres.conf, slurmdbd.conf, plugstack.conf      (generated)
#   state/ controller state, slurmd spool, munge key/socket, MariaDB data, PID files
#   log/   daemon logs (slurmctld.log, slurmd-<node>.log, slurmdbd.log, mariadbd.err, munged.log)
#   dev/   gpu0..gpu7: symlinks to /dev/null that stand in for GPU device files
#   mode.json  what is running (written by up.sh once the nodes are idle, removed by down.sh)
#
# Knobs (environment), all optional:
#   LUMIKIT_SLURM_SIM_DIR     the folder above                                  [/tmp/lumikit-slurm-sim]
#   LUMIKIT_SLURM_ACCOUNTING  1: slurmdbd + MariaDB, sacct works, --account is checked; 0: none   [1]
#   LUMIKIT_SLURM_PROFILE     lumi: every node claims a LUMI-G node (64 cores x 2 threads, 480 GiB), so every
#                                   job shape the modules launch on LUMI is accepted (1 GCD / 7 cores
#                                   / 60 GB, 8 GCDs, 2 nodes); binding accepted but not applied (task/none)
#                             real: the CPUs/memory this machine has, binding enforced (task/affinity) [lumi]
#   LUMIKIT_SLURM_NODES       number of simulated nodes, 1..8 (nid005001, nid005002, ...)         [2]
#   LUMIKIT_SLURM_PORT_BASE   slurmctld port; slurmd ports follow it, slurmdbd is +22, MariaDB +23 [6817]
#   LUMIKIT_SLURM_INSTALL     0: never run apt-get (fail with the command to run instead)          [1]
#   LUMIKIT_SLURM_TIMEOUT     seconds to wait for the nodes to become idle                        [30]

SIM_DIR=${LUMIKIT_SLURM_SIM_DIR:-/tmp/lumikit-slurm-sim}
SIM_DIR=${SIM_DIR%/}
ACCOUNTING=${LUMIKIT_SLURM_ACCOUNTING:-1}
PROFILE=${LUMIKIT_SLURM_PROFILE:-lumi}
NNODES=${LUMIKIT_SLURM_NODES:-2}
PORT_BASE=${LUMIKIT_SLURM_PORT_BASE:-6817}
INSTALL=${LUMIKIT_SLURM_INSTALL:-1}
TIMEOUT=${LUMIKIT_SLURM_TIMEOUT:-30}

CLUSTER=lumi-sim
COURSE_ACCOUNT=project_465000000        # root's default account: jobs without --account use it
SECOND_ACCOUNT=project_465000001        # a second account root may choose with --account
RESERVATION=lumikit-course              # open to the course account, on every node
GPUS_PER_NODE=8

ETC=$SIM_DIR/etc
STATE=$SIM_DIR/state
LOG=$SIM_DIR/log
DEV=$SIM_DIR/dev
CONF=$ETC/slurm.conf
MODE_JSON=$SIM_DIR/mode.json
MUNGE_DIR=$STATE/munge
MUNGE_SOCK=$MUNGE_DIR/munge.socket
MYSQL_DIR=$STATE/mysql
CTLD_PORT=$PORT_BASE
DBD_PORT=$((PORT_BASE + 22))
MYSQL_PORT=$((PORT_BASE + 23))
HOSTS_TAG="# lumikit-slurm-sim"

T0=$(date +%s%N)
elapsed_ms() { echo $(( ($(date +%s%N) - T0) / 1000000 )); }
say() { [ "${QUIET:-0}" = 1 ] || printf '[%s %6sms] %s\n' "$SCRIPT" "$(elapsed_ms)" "$*"; }
die() { printf '[%s %6sms] ERROR: %s\n' "$SCRIPT" "$(elapsed_ms)" "$*" >&2; exit 1; }

validate_knobs() {
  case "$ACCOUNTING" in 0|1) ;; *) die "LUMIKIT_SLURM_ACCOUNTING must be 0 or 1 (got '$ACCOUNTING')";; esac
  case "$PROFILE" in real|lumi) ;; *) die "LUMIKIT_SLURM_PROFILE must be 'real' or 'lumi' (got '$PROFILE')";; esac
  [[ "$NNODES" =~ ^[1-8]$ ]] || die "LUMIKIT_SLURM_NODES must be a number from 1 to 8 (got '$NNODES')"
  [[ "$PORT_BASE" =~ ^[0-9]+$ ]] && [ "$PORT_BASE" -ge 1024 ] && [ "$PORT_BASE" -le 65000 ] \
    || die "LUMIKIT_SLURM_PORT_BASE must be a port number from 1024 to 65000 (got '$PORT_BASE')"
  case "$SIM_DIR" in /*) ;; *) die "LUMIKIT_SLURM_SIM_DIR must be an absolute path (got '$SIM_DIR')";; esac
}

# The simulated node names, LUMI style: nid005001, nid005002, ...
node_names() { local i; for i in $(seq 1 "$NNODES"); do printf 'nid%06d\n' $((5000 + i)); done; }

# Node names of the running configuration (may differ from the knobs, e.g. in down.sh).
conf_node_names() { [ -f "$CONF" ] && sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$CONF"; }

# pid_alive PIDFILE COMM: print the PID if the file names a live process running COMM (zombies count as gone).
pid_alive() {
  local f=$1 want=$2 p
  [ -s "$f" ] || return 1
  p=$(cat "$f" 2>/dev/null) || return 1
  [[ "$p" =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$want" ] || return 1
  [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] || return 1
  echo "$p"
}

# gone PID: true once the process has exited (a zombie has exited; PID 1 here may reap it late).
gone() { [ ! -d "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# stop_pid PID NAME: TERM, wait up to 5 s, then KILL.
stop_pid() {
  local p=$1 name=$2 i
  kill -TERM "$p" 2>/dev/null || return 0
  for i in $(seq 1 50); do
    if gone "$p"; then say "stopped $name (pid $p)"; return 0; fi
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null
  say "killed $name (pid $p): it ignored TERM for 5 s"
}

# stop_pidfile PIDFILE COMM NAME: stop the process a PID file names (if alive) and remove the file.
stop_pidfile() {
  local p
  if p=$(pid_alive "$1" "$2"); then stop_pid "$p" "$3"; fi
  rm -f "$1"
}

# Processes that belong to jobs of THIS cluster: slurmstepd and task processes whose environment
# carries our SLURM_CONF (slurmstepd sets it in every job, even with --export=NONE).
# Optional $1: only those of one node: a task's SLURMD_NODENAME, or a slurmstepd that holds that
# node's slurmd log open (inherited from its slurmd). Never this shell or its ancestors.
cluster_job_pids() {
  local node=${1:-} protect=" $$ " a=$$ d p env_ stepd
  while [ "$a" -gt 1 ]; do a=$(ps -o ppid= -p "$a" 2>/dev/null | tr -d ' '); a=${a:-1}; protect="$protect$a "; done
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$protect" in *" $p "*) continue;; esac
    gone "$p" && continue
    env_=$( { tr '\0' '\n' < "$d/environ"; } 2>/dev/null ) || continue
    grep -qxF "SLURM_CONF=$CONF" <<<"$env_" || continue
    stepd=0; [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] && stepd=1
    [ "$stepd" = 1 ] || grep -q '^SLURM_JOB_ID=' <<<"$env_" || continue
    if [ -n "$node" ]; then
      if [ "$stepd" = 1 ]; then
        find "$d/fd" -maxdepth 1 -lname "$LOG/slurmd-$node.log" 2>/dev/null | grep -q . || continue
      else
        grep -qxF "SLURMD_NODENAME=$node" <<<"$env_" || continue
      fi
    fi
    echo "$p"
  done
}

# kill_pids PID...: TERM, wait up to 1 s, then KILL what is left.
kill_pids() {
  [ "$#" -gt 0 ] || return 0
  local i p alive
  kill -TERM "$@" 2>/dev/null
  for i in $(seq 1 10); do
    alive=0; for p in "$@"; do gone "$p" || alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null
  return 0
}

# One script at a time per cluster folder (up.sh, down.sh and kill-node.sh may be run by several test
# sessions at once). The lock is on fd 9; daemons are started with 9>&- so they do not keep holding it.
# up.sh runs down.sh with LUMIKIT_SLURM_SIM_LOCKED=1, as it already holds the lock.
take_lock() {
  [ "${LUMIKIT_SLURM_SIM_LOCKED:-0}" = 1 ] && return 0
  exec 9>>"$SIM_DIR/.lock"
  flock -w 120 9 || die "another lumi-sim script has held $SIM_DIR/.lock for 120 s; is one stuck?"
}

# Slurm commands against this cluster (never the machine's default /etc/slurm).
sl() { SLURM_CONF=$CONF timeout 10 "$@"; }
