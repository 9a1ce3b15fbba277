#!/usr/bin/env bash
# Install the workbook's torch pin from a chosen wheel index before the rest of the workbook, so a laptop can take
# PyTorch's CPU-only build (a few hundred MB) instead of the default CUDA build (about 4 GB on Linux x86_64).
# Usage: install-torch.sh PYTHON INDEX_URL. With an empty INDEX_URL it does nothing. If the index cannot be reached,
# it says so and returns 0: the ordinary install that follows then takes torch from the default package index.
set -uo pipefail
py=${1:?usage: install-torch.sh PYTHON INDEX_URL}
index=${2:-}
[ -n "$index" ] || exit 0
cd "$(dirname "$0")/.." || exit 2
pin=$(grep -oE '"torch==[0-9][0-9.]*"' pyproject.toml | head -n1 | tr -d '"')
if [ -z "$pin" ]; then
    echo "install-torch.sh: no torch==VERSION pin found in pyproject.toml" >&2
    exit 2
fi
echo "== installing $pin from $index (TORCH_INDEX)"
if "$py" -m pip install --progress-bar on --index-url "$index" "$pin"; then
    echo "== $pin installed from $index"
else
    echo "== could not install $pin from $index (is it reachable from here?); the default package index is used instead"
fi
exit 0
