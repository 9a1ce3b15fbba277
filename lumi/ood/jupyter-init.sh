# shellcheck shell=bash
# Init script for LUMI Open OnDemand's Jupyter app, Advanced mode. The app *sources* it with bash and then runs
# `python -m jupyter lab`, so all it does is put the workbook venv's python first on PATH and set the caches.
# Give the app <venv>/ood-init.sh (written by lumi/setup-venv.sh), which sets LUMI_WORKBOOK_VENV and sources
# this file, or paste those two lines into "Custom init Text".
#
# Sourced, not run: it returns instead of exiting and sets no shell options, so the app's own script goes on.

_lumi_workbook_init() {
    local venv=${LUMI_WORKBOOK_VENV:-}
    if [[ -z $venv ]]; then
        echo "lumi-workbook: LUMI_WORKBOOK_VENV is not set; use <venv>/ood-init.sh from lumi/setup-venv.sh" \
            "as the Custom init File" >&2
        return 2
    fi
    if [[ ! -r $venv/lumi-workbook.env ]]; then
        echo "lumi-workbook: $venv is not a workbook venv (no lumi-workbook.env); run" \
            "lumi/setup-venv.sh --project <your project> --venv $venv on a login node first" >&2
        return 2
    fi
    # shellcheck source=/dev/null
    source "$venv/lumi-workbook.env"

    if [[ ${LUMI_WORKBOOK_BASE:-container} == module ]]; then
        if ! command -v module >/dev/null 2>&1; then
            echo "lumi-workbook: the venv $venv is built on modules, but 'module' is not available here" >&2
            return 2
        fi
        if [[ -n ${LUMI_WORKBOOK_MODULE_USE:-} ]]; then module use "$LUMI_WORKBOOK_MODULE_USE"; fi
        local m
        for m in ${LUMI_WORKBOOK_MODULES:-}; do module load "$m" || return 2; done
        export PATH="$venv/bin:$PATH"
    else
        export PATH="$venv/host-bin:$PATH"
    fi
    # Caches go to /flash and /scratch, never $HOME (20 GB); HF_HOME must be set before transformers is imported.
    mkdir -p "$HF_HOME" "$TORCH_HOME" 2>/dev/null || true
    echo "lumi-workbook: python is $(command -v python) (venv $venv); account ${LUMIKIT_ACCOUNT:-unset}," \
        "reservation ${LUMIKIT_RESERVATION:-none}"
}

_lumi_workbook_init
_lumi_workbook_status=$?
unset -f _lumi_workbook_init
# shellcheck disable=SC2317  # `exit` is reached only when the file is run instead of sourced
return "$_lumi_workbook_status" 2>/dev/null || exit "$_lumi_workbook_status"
