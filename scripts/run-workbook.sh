#!/usr/bin/env bash
# Execute the whole workbook: every lesson under nbval (lax, sanitized), then `lumikit verify` over solutions/
# and exercises/. Prints the execution time of each part and the total (the goal is under 10 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
start=$(date +%s)
nbval_s=0
if compgen -G "notebooks/*.ipynb" >/dev/null; then
    "$PY" -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=90 \
        --nbval-sanitize-with tests/nbval_sanitize.cfg --durations=0 -p no:cacheprovider notebooks/
    nbval_s=$(( $(date +%s) - start ))
fi
"$PY" -m lumikit verify
total=$(( $(date +%s) - start ))
echo "Workbook executed in ${total} s: lessons (nbval) ${nbval_s} s, solutions + exercises (lumikit verify)" \
     "$(( total - nbval_s )) s; goal under 600 s"
