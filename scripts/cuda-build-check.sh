#!/usr/bin/env bash
# Check that the workbook stays quiet with PyTorch's CUDA build on a machine without a GPU (issue 31): make a venv
# OUTSIDE the clone holding the default PyPI torch at the workbook's pin (the CUDA build: about 2.7 GB of wheels,
# about 5.4 GB with the workbook around it), then run tests/test_cuda_build.py with it. Never part of CI.
# Usage: scripts/cuda-build-check.sh [VENV]   (default ~/.cache/lumikit/cuda-torch-venv; an existing one is reused)
# CUDA_TORCH_INDEX (default https://pypi.org/simple) is where torch comes from. pip's output goes to VENV/*.log, with
# a progress line every 15 s. Extra pytest arguments: after VENV, e.g. scripts/cuda-build-check.sh VENV -k lesson.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(realpath -m "${1:-$HOME/.cache/lumikit/cuda-torch-venv}")
[ "$#" -gt 0 ] && shift
index=${CUDA_TORCH_INDEX:-https://pypi.org/simple}
case "$venv/" in
    "$(pwd -P)"/*) echo "cuda-build-check.sh: $venv is inside the clone; give a folder outside it" >&2; exit 2;;
esac
pin=$(grep -oE '"torch==[0-9][0-9.]*"' pyproject.toml | head -n1 | tr -d '"')
[ -n "$pin" ] || { echo "cuda-build-check.sh: no torch==VERSION pin found in pyproject.toml" >&2; exit 2; }
py=$venv/bin/python
[ -x "$py" ] || { echo "== making $venv"; "${PYTHON:-python3}" -m venv "$venv"; }

t0=$SECONDS
echo "== installing $pin from $index (the CUDA build; pip's output: $venv/torch-install.log)"
# From that index only: pip's config files and find-links/extra-index variables are left out, since a local CPU
# wheel of the same version (2.13.0+cpu) would win over it. No cache: the wheels would take 2.7 GB more.
env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL -u PIP_NO_INDEX PIP_CONFIG_FILE=/dev/null \
    bash scripts/with-heartbeat.sh "$venv/torch-install.log" "$pin" \
    "$py" -m pip install --progress-bar off --no-cache-dir --index-url "$index" "$pin"
build=$("$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)
case "$build" in
    *"CUDA None") echo "cuda-build-check.sh: $venv holds torch $build, not the CUDA build; remove the venv and" \
                       "give CUDA_TORCH_INDEX an index with the CUDA wheels" >&2; exit 1;;
esac
echo "== torch $build installed in $(( SECONDS - t0 )) s"

t0=$SECONDS
echo "$pin" >"$venv/torch-constraint.txt"  # the workbook's other packages around it, torch left as it is
echo "== installing the workbook (-e .[workbook]; pip's output: $venv/workbook-install.log)"
bash scripts/with-heartbeat.sh "$venv/workbook-install.log" "the workbook" \
    "$py" -m pip install --progress-bar off -c "$venv/torch-constraint.txt" -e ".[workbook]"
echo "== workbook installed in $(( SECONDS - t0 )) s; the venv takes $(du -sh "$venv" | cut -f1)"

echo "== tests/test_cuda_build.py with torch $build"
LUMIKIT_CUDA_TORCH_PYTHON=$py "$py" -m pytest -p no:cacheprovider -rs tests/test_cuda_build.py "$@"
