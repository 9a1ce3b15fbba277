#!/usr/bin/env bash
# Run the test suite as two pytest processes at once: the `slurm` tests (one after another, since they share the
# lumi-sim clusters, kill nodes and start private clusters on fixed ports) beside all the others. The Slurm tests
# mostly wait on jobs, so the others use the CPU meanwhile. The Slurm part's output is kept and printed after the
# rest, so neither is interleaved. Extra arguments go to both pytest runs. TESTS_SERIAL=1 runs one process instead.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PY=${PY:-.venv/bin/python}
start=$(date +%s)
if [ "${TESTS_SERIAL:-0}" = 1 ]; then
    exec "$PY" -m pytest "$@"
fi
slurm_log=$(mktemp "${TMPDIR:-/tmp}/lumikit-slurm-tests-XXXXXX.log")
slurm_pid=""
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {  # an interrupted run leaves no pytest behind (background jobs of a script ignore Ctrl-C)
    [ -n "$slurm_pid" ] && kill -TERM "$slurm_pid" 2>/dev/null
    rm -f "$slurm_log"
}
trap cleanup EXIT

"$PY" -m pytest -m slurm "$@" >"$slurm_log" 2>&1 &
slurm_pid=$!
"$PY" -m pytest -m "not slurm" "$@"
rest_rc=$?
rest_s=$(( $(date +%s) - start ))
wait "$slurm_pid"
slurm_rc=$?
slurm_pid=""
echo "== the slurm-marked tests (run beside the others)"
cat "$slurm_log"
echo "Tests ran in $(( $(date +%s) - start )) s: the others ${rest_s} s, the slurm tests beside them"
# 5 is pytest's "no tests collected" (e.g. a selection without slurm tests): not a failure here
[ "$rest_rc" = 0 ] || [ "$rest_rc" = 5 ] || exit "$rest_rc"
[ "$slurm_rc" = 0 ] || [ "$slurm_rc" = 5 ] || exit "$slurm_rc"
exit 0
