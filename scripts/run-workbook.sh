#!/usr/bin/env bash
# Execute the whole workbook: every lesson under nbval (lax, sanitized) and, at the same time, `lumikit verify` over
# solutions/ and exercises/ (both wait on kernels and Slurm jobs much of the time, so together they take less than
# one after the other, even on 2 cores). verify's output is kept and printed after the lessons', so neither is
# interleaved. Prints the time of each part and the total (the goal is under 10 minutes).
# WORKBOOK_SERIAL=1 runs them one after the other (to compare, or on a machine short of memory).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
start=$(date +%s)
verify_log=$(mktemp "${TMPDIR:-/tmp}/lumikit-verify-XXXXXX.log")
verify_pid=""
# The lessons' and solutions' run folders go to a folder of this run, never the clone's runs/ (a learner's own)
own_runs=""
if [ -z "${LUMIKIT_RUNS_DIR:-}" ]; then
    own_runs=$(mktemp -d "${TMPDIR:-/tmp}/lumikit-workbook-runs-XXXXXX")
    export LUMIKIT_RUNS_DIR="$own_runs"
fi
cleanup() {  # an interrupted run leaves no verify behind (background jobs of a script ignore Ctrl-C)
    if [ -n "$verify_pid" ]; then pkill -TERM -P "$verify_pid" 2>/dev/null || true; kill "$verify_pid" 2>/dev/null || true; fi
    rm -f "$verify_log"
    [ -z "$own_runs" ] || rm -rf "$own_runs"
}
trap cleanup EXIT

verify() {  # verify: run `lumikit verify` into its log, then add its time and exit status there
    local t0 rc=0
    t0=$(date +%s)
    "$PY" -m lumikit verify >>"$verify_log" 2>&1 || rc=$?
    echo "__verify_s=$(( $(date +%s) - t0 ))" >>"$verify_log"
    return "$rc"
}

serial=${WORKBOOK_SERIAL:-0}
[ "$serial" = 1 ] || { verify & verify_pid=$!; }
nbval_rc=0
if compgen -G "notebooks/*.ipynb" >/dev/null; then
    # -p lumikit.testing.nbval_images: a cell that plots but leaves no image output fails (no second execution)
    "$PY" -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=90 -p lumikit.testing.nbval_images \
        --nbval-sanitize-with tests/nbval_sanitize.cfg --durations=0 -p no:cacheprovider notebooks/ || nbval_rc=$?
fi
nbval_s=$(( $(date +%s) - start ))
verify_rc=0
if [ -n "$verify_pid" ]; then
    wait "$verify_pid" || verify_rc=$?
    verify_pid=""
else
    verify || verify_rc=$?
fi
grep -v '^__verify_s=' "$verify_log" || true
verify_s=$(sed -n 's/^__verify_s=\([0-9]*\).*/\1/p' "$verify_log")
total=$(( $(date +%s) - start ))
echo "Workbook executed in ${total} s: lessons (nbval) ${nbval_s} s, solutions + exercises (lumikit verify)" \
     "${verify_s:-?} s ($([ "$serial" = 1 ] && echo 'after' || echo 'beside') the lessons); goal under 600 s"
[ "$nbval_rc" = 0 ] || { echo "lessons (nbval) failed: exit status $nbval_rc"; exit "$nbval_rc"; }
[ "$verify_rc" = 0 ] || { echo "lumikit verify failed: exit status $verify_rc"; exit "$verify_rc"; }
