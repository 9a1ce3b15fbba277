#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# kill-node.sh NAME [--no-mark] - crash one simulated node of lumi-sim, for failure tests.
#
# Kills (SIGKILL) the node's slurmd, found by its PID file, and the node's job processes (its slurmstepd
# and tasks), as a real node crash would. Then it tells slurmctld the node is DOWN, so that the jobs on
# it end at once as NODE_FAIL (they are not requeued: JobRequeue=0). With --no-mark slurmctld finds out
# by itself, after SlurmdTimeout (60 s). `up.sh` afterwards restarts the slurmd and resumes the node.
set -uo pipefail
SCRIPT=kill-node
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"
NODE=""; MARK=1
for arg in "$@"; do
  case $arg in
    --no-mark) MARK=0;;
    -*) die "unknown option '$arg' (usage: kill-node.sh NAME [--no-mark])";;
    *) [ -z "$NODE" ] || die "one node name only (usage: kill-node.sh NAME [--no-mark])"; NODE=$arg;;
  esac
done
[ -n "$NODE" ] || die "usage: kill-node.sh NAME [--no-mark]   (nodes: $(conf_node_names | paste -sd' '))"
conf_node_names | grep -qxF "$NODE" \
  || die "no node '$NODE' in $CONF (nodes: $(conf_node_names | paste -sd' ')); is lumi-sim up?"

take_lock
if p=$(pid_alive "$STATE/slurmd-$NODE.pid" slurmd); then
  kill -KILL "$p" 2>/dev/null
  for _ in $(seq 1 20); do gone "$p" && break; sleep 0.05; done
  say "killed slurmd $NODE (pid $p)"
else
  say "slurmd $NODE was not running"
fi
mapfile -t procs < <(cluster_job_pids "$NODE")
if [ "${#procs[@]}" -gt 0 ]; then
  kill -KILL "${procs[@]}" 2>/dev/null
  say "killed job processes on $NODE: ${procs[*]}"
fi
if [ "$MARK" = 1 ]; then
  sl scontrol update NodeName="$NODE" State=DOWN Reason="crashed by kill-node.sh" \
    || die "slurmctld did not accept 'scontrol update NodeName=$NODE State=DOWN'"
  say "node $NODE marked DOWN; its jobs end as NODE_FAIL. Bring it back with: make slurm-up"
fi
exit 0
