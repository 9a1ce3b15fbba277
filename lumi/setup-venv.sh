#!/bin/bash
# Set up the LUMI AI workbook's Python environment on LUMI: a venv with --system-site-packages on top of the
# course's PyTorch container (run through `singularity exec`) or of a PyTorch module, holding lumikit and the
# workbook's extras (never torch: the container's ROCm build is the one to use).
#
# Idempotent: a second run reuses the venv, skips pip when nothing changed and rewrites no file that is already
# right. --dry-run prints every command it would run and changes nothing. Run it on a LUMI login node from the
# clone of the workbook (in /project or /scratch, not $HOME):
#
#     lumi/setup-venv.sh --project project_465000000 --dry-run
#     lumi/setup-venv.sh --project project_465000000
#
# What it leaves in the venv (besides the packages):
#   host-bin/python      python of the venv run inside the container (what OOD's Jupyter app starts)
#   lumi-workbook.env    container, binds and cache folders, sourced by host-bin/python and the init script
#   ood-init.sh          the file to give to OOD's Jupyter app, Advanced -> Custom init File
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: lumi/setup-venv.sh --project project_<number> [options]

  --project P        LUMI project that pays and owns the folders (default: $LUMIKIT_ACCOUNT, $SLURM_JOB_ACCOUNT)
  --venv DIR         where the venv goes (default: /projappl/<project>/$USER/lumi-workbook-venv)
  --container C      a container named in the site profile, or the path of a .sif image
                     (default: the profile's default_container)
  --module M         build on a module instead of a container (e.g. pytorch); repeatable
  --module-use DIR   folder to `module use` before --module (e.g. /appl/local/csc/modulefiles)
  --site-file F      site profile to read (default: lumikit/sites/lumi.toml in this clone)
  --cache-dir DIR    model caches (HF_HOME, TORCH_HOME) under DIR (default: the site's [env.caches], in /flash
                     and /scratch of the project)
  --recreate         move an existing venv aside (to DIR.old-<time>) and build a new one
  --no-check         skip the final import check
  --dry-run, -n      print every command it would run, change nothing
  -h, --help         this text
EOF
}

say() { printf '==> %s\n' "$*"; }
warn() { printf 'lumi-workbook: warning: %s\n' "$*" >&2; }
die() {
    printf 'lumi-workbook: error: %s\n' "$1" >&2
    [[ $# -gt 1 ]] && printf '  fix: %s\n' "$2" >&2
    exit 2
}

# Quote one word for display the way a reader would type it: bare when safe, else in single quotes.
quote_word() {
    if [[ $1 =~ ^[A-Za-z0-9_./,:=@%+-]+$ ]]; then
        printf '%s' "$1"
    else
        printf "'%s'" "${1//\'/\'\\\'\'}"
    fi
}

# Print a command (quoted, so that it can be pasted into a shell) and run it unless this is a dry run.
run() {
    local line="+" word
    for word in "$@"; do line+=" $(quote_word "$word")"; done
    printf '%s\n' "$line"
    if [[ $DRY_RUN == 0 ]]; then "$@"; fi
}

# Write text to a file unless it already holds exactly that text; atomically (temporary file, then rename).
write_file() {
    local target=$1 text=$2 mode=${3:-0644}
    if [[ -f $target ]] && [[ "$(cat "$target")" == "$text" ]]; then
        say "$target is up to date"
        return
    fi
    printf '+ write %s (mode %s)\n' "$(quote_word "$target")" "$mode"
    if [[ $DRY_RUN == 0 ]]; then
        printf '%s\n' "$text" >"$target.tmp.$$"
        chmod "$mode" "$target.tmp.$$"
        mv -f "$target.tmp.$$" "$target"
    fi
}

# toml_get FILE SECTION KEY: one value of a flat TOML file like lumikit/sites/lumi.toml ("" = top level).
# Strings lose their quotes; arrays of strings become comma-separated lists. Enough for the site profile,
# which is read here because LUMI's system python (3.6) has no TOML parser.
toml_get() {
    awk -v want="$2" -v key="$3" '
        /^[[:space:]]*\[/ { line = $0; gsub(/[[:space:]]|\[|\]/, "", line); section = line; next }
        section == want && $0 ~ "^[[:space:]]*" key "[[:space:]]*=" {
            value = $0
            sub(/^[^=]*=[[:space:]]*/, "", value)
            sub(/[[:space:]]+#.*$/, "", value)
            gsub(/[][" ]/, "", value)
            print value
            exit
        }' "$1"
}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DRY_RUN=0
PROJECT=${LUMIKIT_ACCOUNT:-${SLURM_JOB_ACCOUNT:-}}
VENV=""
CONTAINER=""
MODULES=()
MODULE_USE=""
SITE_FILE="$REPO/lumikit/sites/lumi.toml"
CACHE_DIR=""
RECREATE=0
CHECK=1
SINGULARITY=${LUMI_WORKBOOK_SINGULARITY:-singularity}

while [[ $# -gt 0 ]]; do
    case $1 in
        --project) PROJECT=${2:?--project needs a value}; shift 2 ;;
        --venv) VENV=${2:?--venv needs a value}; shift 2 ;;
        --container) CONTAINER=${2:?--container needs a value}; shift 2 ;;
        --module) MODULES+=("${2:?--module needs a value}"); shift 2 ;;
        --module-use) MODULE_USE=${2:?--module-use needs a value}; shift 2 ;;
        --site-file) SITE_FILE=${2:?--site-file needs a value}; shift 2 ;;
        --cache-dir) CACHE_DIR=${2:?--cache-dir needs a value}; shift 2 ;;
        --recreate) RECREATE=1; shift ;;
        --no-check) CHECK=0; shift ;;
        -n | --dry-run) DRY_RUN=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" "see the options above" ;;
    esac
done

# --- inputs ------------------------------------------------------------------------------------------------
[[ -n $PROJECT ]] || die "no project given" "pass --project project_<number> (your LUMI project, see www.lumi.csc.fi)"
[[ $PROJECT =~ ^project_[0-9]+$ ]] ||
    die "project '$PROJECT' does not look like a LUMI project" "pass --project project_<number>, e.g. project_465000000"
[[ -r $SITE_FILE ]] || die "site profile '$SITE_FILE' not found" "pass --site-file PATH or run from a full clone"
VENV=${VENV:-/projappl/$PROJECT/${USER:-$(id -un)}/lumi-workbook-venv}
[[ $VENV == /* ]] || VENV="$PWD/$VENV"
REQUIREMENTS="$REPO/lumi/requirements-lumi.txt"
[[ -r $REQUIREMENTS ]] || die "$REQUIREMENTS is missing" "run from a full clone of the workbook"

if [[ ${#MODULES[@]} -gt 0 ]]; then
    BASE=module
    [[ -z $CONTAINER ]] || die "both --container and --module given" "choose one base for the venv"
else
    BASE=container
    CONTAINER=${CONTAINER:-$(toml_get "$SITE_FILE" "" default_container)}
    [[ -n $CONTAINER ]] || die "$SITE_FILE names no default_container" "pass --container NAME or a .sif path"
    if [[ $CONTAINER == */* || $CONTAINER == *.sif ]]; then
        SIF=$CONTAINER LAUNCH=exec WITH_CONDA=false
    else
        SIF=$(toml_get "$SITE_FILE" "containers.$CONTAINER" path)
        [[ -n $SIF ]] || die "no container '$CONTAINER' in $SITE_FILE" \
            "pass --container with one of: $(grep -o '^\[containers\.[^]]*' "$SITE_FILE" | cut -d. -f2- | xargs)"
        LAUNCH=$(toml_get "$SITE_FILE" "containers.$CONTAINER" launch)
        WITH_CONDA=$(toml_get "$SITE_FILE" "containers.$CONTAINER" with_conda)
    fi
    BINDS=$(toml_get "$SITE_FILE" binds user)
    # Slurm's client inside the container, so that notebooks can submit jobs (bound only where present).
    SLURM_PATHS=$(toml_get "$SITE_FILE" binds slurm_client)
    SLURM_PATHS=${SLURM_PATHS:-/usr/bin/sbatch,/usr/bin/srun,/usr/bin/squeue,/usr/bin/scancel,/usr/bin/sacct,/usr/bin/scontrol,/usr/bin/sinfo,/usr/lib64/slurm,/etc/slurm,/var/spool/slurmd,/run/munge,/usr/lib64/libmunge.so.2}
fi

# Cache folders from the site's [env.caches] recipe, with the project and user filled in now (the Jupyter job
# would expand ${SLURM_JOB_ACCOUNT} to the same project). Set before any import, so nothing lands in $HOME.
cache_value() {
    local value
    value=$(toml_get "$SITE_FILE" env.caches "$1")
    value=${value//\$\{SLURM_JOB_ACCOUNT\}/$PROJECT}
    printf '%s' "${value//\$\{USER\}/${USER:-$(id -un)}}"
}
if [[ -n $CACHE_DIR ]]; then
    HF_HOME_DIR=$CACHE_DIR/hf-cache TORCH_HOME_DIR=$CACHE_DIR/torch-cache
else
    HF_HOME_DIR=$(cache_value HF_HOME) TORCH_HOME_DIR=$(cache_value TORCH_HOME)
fi

case $REPO in "${HOME:-/nonexistent}"/*)
    warn "the workbook is cloned under \$HOME ($REPO); \$HOME is small (20 GB): clone it into /project/$PROJECT or /scratch/$PROJECT" ;;
esac

say "LUMI AI workbook set-up$([[ $DRY_RUN == 1 ]] && printf ' (dry run: nothing will be changed)')"
say "project:   $PROJECT"
say "workbook:  $REPO"
say "venv:      $VENV"
if [[ $BASE == container ]]; then
    say "container: $CONTAINER ($SIF)"
else
    say "modules:   ${MODULES[*]}${MODULE_USE:+ (from $MODULE_USE)}"
fi

# --- how to run a command in the base environment ----------------------------------------------------------
# in_base SCRIPT ARGS...: run a bash script inside the container (or with the modules loaded); ARGS become $1...
in_base() {
    local script=$1
    shift
    if [[ $BASE == container ]]; then
        local verb=exec prelude=""
        [[ $LAUNCH == run ]] && verb=run
        # $WITH_CONDA is set inside the image: it activates the image's conda environment.
        # shellcheck disable=SC2016
        [[ $WITH_CONDA == true ]] && prelude='$WITH_CONDA; '
        local binds=()
        [[ -z $BINDS ]] || binds=(--bind "$BINDS")
        run "$SINGULARITY" "$verb" "${binds[@]}" "$SIF" bash -c "${prelude}${script}" bash "$@"
    else
        run bash -c "$script" bash "$@"
    fi
}

if [[ $BASE == container ]]; then
    if [[ $DRY_RUN == 0 ]]; then
        command -v "$SINGULARITY" >/dev/null ||
            die "'$SINGULARITY' is not on PATH" "run this on a LUMI login node (singularity is part of the system there)"
        [[ -r $SIF ]] || die "container image $SIF not found" "check --container; the images live in /appl/local/containers"
    elif [[ ! -r $SIF ]]; then
        warn "container image $SIF is not here (fine for a dry run off LUMI)"
    fi
else
    # Modules are shell functions: load them into this shell, so that the commands below see them.
    if [[ -n $MODULE_USE ]]; then
        printf '+ module use %s\n' "$(quote_word "$MODULE_USE")"
        [[ $DRY_RUN == 1 ]] || module use "$MODULE_USE"
    fi
    for m in "${MODULES[@]}"; do
        printf '+ module load %s\n' "$(quote_word "$m")"
        [[ $DRY_RUN == 1 ]] || module load "$m"
    done
fi

# --- 1. the venv -------------------------------------------------------------------------------------------
venv_ok() { [[ -f $VENV/pyvenv.cfg ]] && grep -Eq '^include-system-site-packages *= *true' "$VENV/pyvenv.cfg"; }

if [[ -e $VENV && $RECREATE == 1 ]]; then
    run mv "$VENV" "$VENV.old-$(date +%Y%m%d-%H%M%S)"
    NEW_VENV=1
elif [[ -e $VENV ]]; then
    venv_ok || die "$VENV exists but is not a venv with system site packages" \
        "pass --recreate (the old folder is kept as $VENV.old-<time>) or choose another --venv"
    if [[ $DRY_RUN == 1 ]]; then say "would reuse the existing venv $VENV"; else say "reusing the existing venv $VENV"; fi
    NEW_VENV=0
else
    NEW_VENV=1
fi
if [[ $NEW_VENV == 1 ]]; then
    run mkdir -p "$(dirname "$VENV")"
    # shellcheck disable=SC2016  # "$1" is the inner script's argument
    in_base 'python -m venv --system-site-packages "$1"' "$VENV"
fi

# --- 2. packages -------------------------------------------------------------------------------------------
# The stamp says what the venv was last installed from; pip runs only when that changes.
STAMP="$VENV/.lumi-workbook-stamp"
want_stamp=$({
    printf 'base=%s container=%s modules=%s\n' "$BASE" "${SIF:-}" "${MODULES[*]:-}"
    cat "$REQUIREMENTS" "$REPO/pyproject.toml"
} | sha256sum | cut -d' ' -f1)
if [[ -f $STAMP && "$(cat "$STAMP")" == "$want_stamp" ]]; then
    say "packages are up to date (nothing changed since the last install)"
else
    # Pin what the base already provides (torch, numpy) so that pip never replaces the ROCm build.
    # shellcheck disable=SC2016
    in_base 'source "$1/bin/activate" && python - >"$1/lumi-constraints.txt" <<"PY"
import importlib.metadata as m
for name in ("torch", "numpy"):
    try:
        print(f"{name}=={m.version(name)}")
    except m.PackageNotFoundError:
        pass
PY' "$VENV"
    # shellcheck disable=SC2016
    pip_install='python -m pip install --upgrade-strategy only-if-needed -c "$1/lumi-constraints.txt" -r "$2" -e "$3"'
    in_base "source \"\$1/bin/activate\" && $pip_install" "$VENV" "$REQUIREMENTS" "$REPO"
    write_file "$STAMP" "$want_stamp"
fi

# --- 3. launchers and settings -----------------------------------------------------------------------------
env_text="# Written by lumi/setup-venv.sh; sourced by host-bin/python and lumi/ood/jupyter-init.sh. Re-run the script to change it.
export LUMI_WORKBOOK_BASE=$(printf '%q' "$BASE")
export LUMI_WORKBOOK_REPO=$(printf '%q' "$REPO")
export LUMIKIT_ACCOUNT=\${LUMIKIT_ACCOUNT:-$(printf '%q' "$PROJECT")}
export LUMIKIT_SITE=\${LUMIKIT_SITE:-lumi}
export HF_HOME=\${HF_HOME:-$(printf '%q' "$HF_HOME_DIR")}
export TORCH_HOME=\${TORCH_HOME:-$(printf '%q' "$TORCH_HOME_DIR")}
export TOKENIZERS_PARALLELISM=\${TOKENIZERS_PARALLELISM:-false}"
if [[ $BASE == container ]]; then
    env_text+="
export LUMI_WORKBOOK_SIF=$(printf '%q' "$SIF")
export LUMI_WORKBOOK_LAUNCH=$(printf '%q' "$LAUNCH")
export LUMI_WORKBOOK_WITH_CONDA=$(printf '%q' "$WITH_CONDA")
export LUMI_WORKBOOK_BINDS=$(printf '%q' "$BINDS")
export LUMI_WORKBOOK_SLURM_PATHS=$(printf '%q' "$SLURM_PATHS")"
else
    env_text+="
export LUMI_WORKBOOK_MODULE_USE=$(printf '%q' "$MODULE_USE")
export LUMI_WORKBOOK_MODULES=$(printf '%q' "${MODULES[*]}")"
fi

init_text="# OOD Jupyter app, Advanced -> Custom init File. Written by lumi/setup-venv.sh.
export LUMI_WORKBOOK_VENV=$(printf '%q' "$VENV")
# shellcheck source=/dev/null
source $(printf '%q' "$REPO/lumi/ood/jupyter-init.sh")"

if [[ $NEW_VENV == 1 && $DRY_RUN == 1 ]]; then
    # The venv does not exist yet: say what would be written without comparing.
    printf '+ install -D -m 0755 %s %s\n' "$(quote_word "$REPO/lumi/bin/python")" "$(quote_word "$VENV/host-bin/python")"
    printf '+ write %s\n' "$(quote_word "$VENV/lumi-workbook.env")" "$(quote_word "$VENV/ood-init.sh")"
else
    if [[ $BASE == container ]]; then
        if cmp -s "$REPO/lumi/bin/python" "$VENV/host-bin/python"; then
            say "$VENV/host-bin/python is up to date"
        else
            run install -D -m 0755 "$REPO/lumi/bin/python" "$VENV/host-bin/python"
        fi
    fi
    write_file "$VENV/lumi-workbook.env" "$env_text"
    write_file "$VENV/ood-init.sh" "$init_text"
fi
for d in "$HF_HOME_DIR" "$TORCH_HOME_DIR"; do
    [[ -z $d || -d $d ]] || run mkdir -p "$d"
done

# --- 4. check ----------------------------------------------------------------------------------------------
if [[ $CHECK == 1 ]]; then
    if [[ $BASE == container ]]; then py=("$VENV/host-bin/python"); else py=("$VENV/bin/python"); fi
    check='import sys, torch, lumikit, jupyterlab, ipywidgets; '
    check+='print("python", sys.version.split()[0], "torch", torch.__version__, "from", torch.__file__); '
    check+='assert sys.prefix not in torch.__file__, "torch got into the venv: the container has the ROCm build"; '
    check+='from lumikit.trace.columns import _fastevents; '
    check+='print("trace reader:", "compiled (built by pip)" if _fastevents else '
    check+='"msgspec only (no C compiler in the container when lumikit was installed: same numbers, slower)")'
    run "${py[@]}" -c "$check"
fi

say "done$([[ $DRY_RUN == 1 ]] && printf ' (dry run: nothing was changed)')"
cat <<EOF

Next, in www.lumi.csc.fi -> Jupyter, Settings: Advanced, and either
  Custom init File:  $VENV/ood-init.sh
or Custom init Text:
  export LUMI_WORKBOOK_VENV=$VENV
  source $REPO/lumi/ood/jupyter-init.sh
Working directory: $REPO. Then open notebooks/00_start_here.ipynb (the README's LUMI section walks through every screen).
EOF
