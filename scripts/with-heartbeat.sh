#!/usr/bin/env bash
# Run a long, quiet step of set-up (pip) with its output in a log file, and print a line every HEARTBEAT_S seconds
# (default 15) while it runs, with the time so far and pip's latest line, so that set-up never sits silent.
# Usage: with-heartbeat.sh LOG WHAT COMMAND [ARG...]; exits with COMMAND's exit status (its output is in LOG only).
set -uo pipefail
log=${1:?usage: with-heartbeat.sh LOG WHAT COMMAND [ARG...]}
what=${2:?usage: with-heartbeat.sh LOG WHAT COMMAND [ARG...]}
shift 2
[ "$#" -gt 0 ] || { echo "with-heartbeat.sh: no command given" >&2; exit 2; }
every=${HEARTBEAT_S:-15}
case "$every" in ''|*[!0-9]*|0) echo "with-heartbeat.sh: HEARTBEAT_S=$every: give a whole number of seconds" >&2; exit 2;; esac
esc=$(printf '\033')
width=${HEARTBEAT_WIDTH:-100}  # the most of pip's line a heartbeat shows
started=$SECONDS
"$@" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT TERM
next=$every
while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    elapsed=$((SECONDS - started))
    if [ "$elapsed" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
        # pip's latest line (Collecting ..., Downloading ...): escape sequences and control characters dropped; a
        # long one shortened at a word's end (never mid-word), with "..." where words were left out
        latest=$(tail -n 1 "$log" 2>/dev/null | sed -E "s/$esc\[[0-9;?]*[ -\/]*[@-~]//g" | tr -cd '[:print:]')
        if [ "${#latest}" -gt "$width" ]; then
            cut_at=${latest:0:$width}
            if [ "${latest:$width:1}" != " " ] && [ "${cut_at% *}" != "$cut_at" ]; then cut_at=${cut_at% *}; fi
            latest="$cut_at ..."
        fi
        echo "   installing $what ... (${elapsed} s${latest:+; pip: $latest}; log: $log)"
        next=$((elapsed + every))
    fi
done
wait "$pid"
