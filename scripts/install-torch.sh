#!/usr/bin/env bash
# Install the workbook's torch pin from a chosen wheel index before the rest of the workbook, so a laptop can take
# PyTorch's CPU-only build (a few hundred MB) instead of the default CUDA build (about 4 GB on Linux x86_64).
# Usage: install-torch.sh PYTHON INDEX_URL [FALLBACK]. With an empty INDEX_URL it does nothing. If the index cannot
# be reached it stops (exit 3) and spells out the choices, because the default index would quietly bring the
# multi-GB CUDA build; with FALLBACK=default it says so and returns 0, and the install that follows takes torch
# from the default package index. pip's own output goes to PYTHON's venv folder (torch-install.log); a progress
# line is printed every HEARTBEAT_S seconds (default 15) while it runs.
set -uo pipefail
py=${1:?usage: install-torch.sh PYTHON INDEX_URL [FALLBACK]}
index=${2:-}
fallback=${3:-}
[ -n "$index" ] || exit 0
cd "$(dirname "$0")/.." || exit 2
pin=$(grep -oE '"torch==[0-9][0-9.]*"' pyproject.toml | head -n1 | tr -d '"')
if [ -z "$pin" ]; then
    echo "install-torch.sh: no torch==VERSION pin found in pyproject.toml" >&2
    exit 2
fi
log="$(dirname "$(dirname "$py")")/torch-install.log"
echo "== installing $pin from $index (TORCH_INDEX); pip's output: $log"
# a line every 15 s while pip runs (scripts/with-heartbeat.sh): a 200 MB or 4 GB download is never silence
if bash scripts/with-heartbeat.sh "$log" "$pin" "$py" -m pip install --progress-bar off --index-url "$index" "$pin"; then
    echo "== $pin installed from $index"
    exit 0
fi
# pip's last lines after a network failure are its resolver's ("dependency conflict ..."): name the network error
# above them instead (name resolution, refused connection, proxy, certificate, time-out), where there is one
network=$(grep -E -i -m 3 "Failed to establish a new connection|Name or service not known|Temporary failure in name resolution|nodename nor servname|Connection refused|Network is unreachable|No route to host|ProxyError|SSLError|CERTIFICATE_VERIFY_FAILED|Read timed out|ConnectTimeoutError|Could not fetch URL|HTTP error [0-9]+" "$log" 2>/dev/null | cut -c1-300)
if [ -n "$network" ]; then
    echo "== could not install $pin from $index: the index could not be reached. pip's network error (from $log):"
    printf '%s\n' "$network" | sed 's/^/     /'
else
    echo "== could not install $pin from $index: is it reachable from here? (last lines of $log:)"
    tail -n 3 "$log" | sed 's/^/     /'
fi
if [ "$fallback" = default ]; then
    echo "== TORCH_FALLBACK=default: taking torch from the default package index instead (on Linux x86_64 the CUDA build, about 4-5 GB)"
    exit 0
fi
cat <<TXT
== stopped before installing anything else. Choose one:
     make venv TORCH=cpu TORCH_INDEX=URL        a mirror of PyTorch's CPU wheels that you can reach
     make venv TORCH=cpu TORCH_FALLBACK=default the default index's build instead (CUDA on Linux x86_64: about 4-5 GB,
                                                it runs on the CPU too, it is only larger)
     make venv                                  the same default build, asked for directly
TXT
exit 3
