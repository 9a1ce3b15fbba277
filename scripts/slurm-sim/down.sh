#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# down.sh - stop the lumi-sim cluster that up.sh started in $LUMIKIT_SLURM_SIM_DIR. Idempotent.
#
# Daemons are found by their PID files only (and checked by program name). Job processes left behind
# by a dead slurmd are found by their environment: they carry this cluster's SLURM_CONF.
#   --purge   also delete the generated config, state (jobs, accounting database), logs and mode.json
#   --quiet   print nothing but errors
# The /etc/hosts entries for the node names stay: they are harmless and up.sh would only add them again.
set -uo pipefail
SCRIPT=slurm-down
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"
PURGE=0
for arg in "$@"; do
  case $arg in
    --purge) PURGE=1;;
    --quiet) QUIET=1;;
    *) die "unknown option '$arg' (use --purge and/or --quiet)";;
  esac
done
case "$SIM_DIR" in /*) ;; *) die "LUMIKIT_SLURM_SIM_DIR must be an absolute path (got '$SIM_DIR')";; esac
if [ ! -d "$SIM_DIR" ]; then say "nothing to stop: $SIM_DIR does not exist"; exit 0; fi
take_lock
rm -f "$MODE_JSON"   # from here on the cluster is not to be used

# 1. Cancel every job while the controller still runs, so that slurmd ends the steps cleanly.
if pid_alive "$STATE/slurmctld.pid" slurmctld >/dev/null && [ -f "$CONF" ]; then
  jobs=$(sl squeue -h -t PD,R,S,CF,CG -o %A 2>/dev/null | sort -u | tr '\n' ' ')
  if [ -n "${jobs// }" ]; then
    say "cancelling jobs: $jobs"
    # shellcheck disable=SC2086
    sl scancel $jobs 2>/dev/null || true
    all_slurmd=1
    while read -r n; do
      pid_alive "$STATE/slurmd-$n.pid" slurmd >/dev/null || all_slurmd=0
    done < <(conf_node_names)
    # Wait (at most 8 s) for the steps to end; pointless when a slurmd is gone (step 3 sweeps up).
    if [ "$all_slurmd" = 1 ]; then
      for _ in $(seq 1 80); do
        [ "$(sl squeue -h -t PD,R,S,CF,CG -o %A 2>/dev/null | wc -l)" = 0 ] && break
        sleep 0.1
      done
    fi
  fi
fi

# 2. The slurmd of every node, then the controller.
for f in "$STATE"/slurmd-*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid); stop_pidfile "$f" slurmd "slurmd ${n#slurmd-}"
done
stop_pidfile "$STATE/slurmctld.pid" slurmctld slurmctld

# 3. What a dead slurmd left behind: this cluster's slurmstepd and job processes.
mapfile -t left < <(cluster_job_pids "")
if [ "${#left[@]}" -gt 0 ]; then
  say "ending leftover job processes: ${left[*]}"
  kill_pids "${left[@]}"
fi

# 4. Accounting, then munge.
stop_pidfile "$STATE/slurmdbd.pid" slurmdbd slurmdbd
stop_pidfile "$STATE/mysql/mysqld.pid" mariadbd mariadbd
stop_pidfile "$STATE/munge/munged.pid" munged munged

if [ "$PURGE" = 1 ]; then
  rm -rf "$STATE/ctld" "$STATE/spool" "$STATE/jobcomp.txt" "$STATE/mysql" "$LOG" "$ETC" "$DEV" "$SIM_DIR/env.sh"
  say "purged config, state and logs (the munge key stays)"
fi
say "lumi-sim stopped in $(elapsed_ms) ms"
exit 0
