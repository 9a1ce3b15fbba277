"""Checks for the seed's hands-on tasks the modules lacked: scaling efficiency across nodes (08.S3), the per-task
``$SLURM_*`` variables of a wrapper and an srun line (08.S4), MIOpen's logging (05.S4), a shell in the container
with LUMI's bindings module (02.S1), and one JAX process per GCD (10.2).

Reference values come from this module or from the real LUMI log shipped in :mod:`lumikit.reference`, never from
the learner's namespace. A shell text is read, never run (the instructor regrades it too). A failure names the
kind of mistake and points to the idea; it never prints the value it wants.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from .. import bindings_modules
from ..jobs import JobSpec
from ..reference import load as load_reference
from .framework import CheckFailed, Passed, _number_mistake, check, expect_type, passed, switched_on, wrong
from .jobfields import expect_job_fields
from .learner import rng_for

def _close(exercise: str, found: float, want: float, *, rel: float, what: str, hint: str) -> None:
    """Fail, without saying the value wanted, unless ``found`` is within ``rel`` of ``want``."""
    if not math.isclose(float(found), want, rel_tol=rel):  # no "too high/too low": that would allow a search
        raise CheckFailed(exercise, f"{what} is off", found=float(found), hint=hint,
                          mistake=_number_mistake(float(found), want, rel, what))


# --- 08.S3: scaling efficiency ------------------------------------------------------------------------------------

SCALING_GCDS = (1, 2, 4, 8, 16, 32)


def scaling_runs(seed: str | None = None) -> list[dict[str, float]]:
    """GENERATED images/s of one training job on 1 to 32 GCDs (8 per node), different for every learner: nearly
    linear inside a node, lower once the all-reduce crosses the network. Not a measurement."""
    rng = rng_for("08.scaling", seed)
    base = rng.uniform(180.0, 240.0)
    inside = rng.uniform(0.97, 0.985)  # per doubling inside a node: 8 GCDs stay above 90 %
    across = rng.uniform(0.84, 0.89)  # per doubling across nodes
    rows = []
    for gcds in SCALING_GCDS:
        efficiency = inside ** (gcds.bit_length() - 1) if gcds <= 8 else inside ** 3 * across ** (gcds // 16)
        rows.append({"gcds": gcds, "nodes": max(1, gcds // 8), "images_per_s": round(base * gcds * efficiency, 1)})
    return rows


def lumi_total_images_per_s() -> float:
    """The total images/s the real 32-GCD LUMI log reports (``slurm-images-per-sec-32gcd``)."""
    text = load_reference("slurm-images-per-sec-32gcd").text
    match = re.search(r"Total average:\s*([\d.]+)\s*images/sec", text)
    if not match:
        raise CheckFailed("08.S3", "the shipped LUMI log has no 'Total average' line")
    return float(match.group(1))


def _rate(rows: Sequence[Mapping[str, float]], gcds: int) -> float:
    return float(next(r["images_per_s"] for r in rows if int(r["gcds"]) == gcds))


@check("08.S3",
       wrong("the speed-up given as the efficiency (not divided by the GCDs)",
             efficiency_32=lambda a: _rate(scaling_runs(), 32) / _rate(scaling_runs(), 1), mentions="per GCD"),
       wrong("the efficiency measured from one node, not from one GCD",
             efficiency_32=lambda a: _rate(scaling_runs(), 32) / (4 * _rate(scaling_runs(), 8))),
       wrong("the first GCD count below 90 % taken inside the node", first_below_90=8, mentions="node"),
       wrong("the log's total taken for the rate per GCD", lumi_per_gcd=lambda a: lumi_total_images_per_s(),
             mentions="per GCD"),
       wrong("the total divided by the 4 nodes", lumi_per_gcd=lambda a: lumi_total_images_per_s() / 4,
             mentions="per GCD"))
def check_scaling_efficiency(efficiency_32: float | None, first_below_90: int | None,
                             lumi_per_gcd: float | None) -> Passed:
    """Exercise 08.S3: the scaling efficiency at 32 GCDs of the generated runs, the first GCD count where it falls
    below 90 %, and the images/s per GCD in the real 32-GCD LUMI log."""
    rows = scaling_runs()
    one = _rate(rows, 1)
    efficiency = {int(r["gcds"]): r["images_per_s"] / (r["gcds"] * one) for r in rows}
    expect_type("08.S3", efficiency_32, (int, float), what="the scaling efficiency at 32 GCDs")
    if efficiency_32 > 1.5:
        raise CheckFailed("08.S3", "an efficiency above 1 is a speed-up: it still has to be shared per GCD",
                          hint="efficiency compares N GCDs with N times one GCD; 1.0 is perfect.")
    _close("08.S3", efficiency_32, efficiency[32], rel=0.02, what="the scaling efficiency at 32 GCDs",
           hint="compare with N times the one-GCD rate, not with one node.")
    below = min((g for g, e in efficiency.items() if e < 0.9), default=None)
    expect_type("08.S3", first_below_90, int, what="the first GCD count below 90 %")
    if first_below_90 != below:
        inside = " (inside one node, 8 GCDs or fewer, the efficiency stays high)" if first_below_90 <= 8 else ""
        raise CheckFailed("08.S3", f"{first_below_90} GCDs is not where the efficiency first falls below 90 %"
                                   f"{inside}",
                          hint="compute the efficiency for every row; where does the all-reduce leave the node?")
    total = lumi_total_images_per_s()
    expect_type("08.S3", lumi_per_gcd, (int, float), what="images/s per GCD in the LUMI log")
    if lumi_per_gcd > total * 0.5:
        raise CheckFailed("08.S3", "that is the rate of many GCDs together, not per GCD",
                          hint="the log's total is over 32 GCDs (4 nodes of 8).")
    if lumi_per_gcd > total / 32 * 1.5:
        raise CheckFailed("08.S3", "that is the rate of a node or more, not per GCD",
                          hint="share the total among the GCDs of the job (8 per node), not the nodes.")
    _close("08.S3", lumi_per_gcd, total / 32, rel=0.005, what="images/s per GCD in the LUMI log",
           hint="share the total among the GCDs of the job, not the nodes.")
    return passed("08.S3", f"efficiency {efficiency[32]:.0%} at 32 GCDs (generated runs), first below 90 % at "
                           f"{below} GCDs, where the job leaves one node; on LUMI the published 32-GCD run gives "
                           f"{total / 32:.1f} images/s per GCD, about what rank 0 prints per epoch (212.4)")


# --- 08.S4: $SLURM_* in an srun line and in a wrapper run.sh -------------------------------------------------------

#: The variables that differ from task to task.
PER_TASK = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID")
_VARIABLE = re.compile(r"\$\{?(SLURM_[A-Z_]+)")


def batch_shell_expands(line: str) -> list[str]:
    """The ``$SLURM_*`` names the batch script's own shell expands in ``line`` (once, before srun starts the
    tasks): those outside single quotes and not escaped with a backslash. Read, never run."""
    expanded = []
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = ""
        elif c == "\\" and i + 1 < len(line):
            i += 2
            continue
        elif c in "'\"" and (not quote or quote == c):
            quote = "" if quote == c else c
        elif c == "$":
            match = _VARIABLE.match(line, i)
            if match:
                expanded.append(match.group(1))
        i += 1
    return expanded


def shell_words(line: str) -> list[str]:
    """The words the batch shell passes on for ``line``, quotes removed as bash removes them and nothing expanded:
    a backslash escapes anything outside quotes, only ``$ ` " \\`` inside double quotes, nothing inside single."""
    words: list[str] = []
    word: list[str] = []
    quote = ""
    started = False
    i = 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                word.append(c)
        elif c == "\\" and i + 1 < len(line):
            nxt = line[i + 1]
            if quote == '"' and nxt not in '$`"\\':
                word.append(c)
            word.append(nxt)
            i += 1
        elif quote == '"':
            if c == '"':
                quote = ""
            else:
                word.append(c)
        elif c in "'\"":
            quote, started = c, True
        elif c.isspace():
            if word or started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(c)
        i += 1
    if word or started:
        words.append("".join(word))
    return words


def task_sees(line: str) -> str:
    """The command each task's shell receives from ``bash -c ...`` in an srun line ("" when there is none)."""
    words = shell_words(line)
    for i, word in enumerate(words[:-1]):
        if word == "-c" and i and words[i - 1].endswith(("bash", "sh")):
            return words[i + 1]
    return ""


@check("08.S4",
       wrong("the $ left unescaped inside double quotes: every task gets the batch shell's value",
             srun_line=lambda a: a.srun_line.replace("\\$", "$"), mentions="batch script's shell"),
       wrong("escaped inside single quotes: the tasks get a backslash, not the variable",
             srun_line=lambda a: "srun singularity exec $CONTAINER bash -c 'export RANK=\\$SLURM_PROCID "
                                 "LOCAL_RANK=\\$SLURM_LOCALID && "
                                 "python train.py'", mentions="backslash"),
       wrong("the wrapper's variables escaped: run.sh then sets them to the text $SLURM_PROCID",
             wrapper=lambda a: a.wrapper.replace("$SLURM", "\\$SLURM"), mentions="run.sh"),
       wrong("a wrapper that never runs the command it is given",
             wrapper=lambda a: a.wrapper.replace('exec "$@"', "python train.py"), mentions='"$@"'),
       wrong("srun without the container: the tasks run the host's Python",
             srun_line=lambda a: a.srun_line.replace("singularity exec $CONTAINER ", ""), mentions="container"),
       wrong("the srun line sets no WORLD_SIZE", srun_line=lambda a: re.sub(r"\s*WORLD_SIZE=\S+", "", a.srun_line),
             mentions="WORLD_SIZE"),
       wrong("run.sh sets the variables without export: python never sees them",
             wrapper=lambda a: a.wrapper.replace("export ", ""), mentions="export"),
       wrong("WORLD_SIZE only in a comment of run.sh",
             wrapper=lambda a: a.wrapper.replace("export WORLD_SIZE", "# export WORLD_SIZE"), mentions="WORLD_SIZE"))
def check_slurm_escaping(srun_line: str | None, wrapper: str | None) -> Passed:
    """Exercise 08.S4: an srun line in a batch script that sets RANK and LOCAL_RANK per task inside ``bash -c``,
    and a wrapper ``run.sh`` that translates Slurm's per-task variables and runs the command it is given."""
    expect_type("08.S4", srun_line, str, what="the srun line of your batch script")
    early = [v for v in batch_shell_expands(srun_line) if v in PER_TASK]
    if early:
        raise CheckFailed("08.S4", f"the batch script's shell expands ${early[0]} once, before srun starts the "
                                   f"tasks, so every task gets the same value",
                          hint="inside double quotes, protect the $ so that each task's shell expands it.")
    outer = srun_line.split("bash -c", 1)[0]
    if not (re.search(r"\b(?:singularity|apptainer)\s+(?:exec|run)\b", outer)
            and re.search(r"\$\{?CONTAINER\b", outer)):
        raise CheckFailed("08.S4", "the srun line does not run its tasks in the container",
                          mistake="tasks started on the host: they run the host's Python, not the image's",
                          hint="the question names the container the tasks run in.")
    inner = task_sees(srun_line)
    if not inner:
        raise CheckFailed("08.S4", "the srun line runs no `bash -c \"...\"` in which each task sets its rank",
                          hint="srun ... bash -c \"export RANK=... && python train.py\"")
    if "\\$SLURM" in inner:
        raise CheckFailed("08.S4", "each task's shell receives a backslash before $SLURM_..., so RANK becomes the "
                                   "text, not the number",
                          hint="single quotes keep everything as it is: escape inside double quotes only.")
    for name, source in (("RANK", "SLURM_PROCID"), ("LOCAL_RANK", "SLURM_LOCALID"),
                         ("WORLD_SIZE", "SLURM_(?:NPROCS|NTASKS)")):
        if not re.search(rf"\b{name}=\$\{{?{source}\b", inner):
            raise CheckFailed("08.S4", f"the tasks do not set {name} from Slurm's per-task variable",
                              hint="RANK counts all tasks of the job, LOCAL_RANK the tasks on one node.")
    expect_type("08.S4", wrapper, str, what="the text of run.sh")
    if "\\$SLURM" in wrapper:
        raise CheckFailed("08.S4", "run.sh runs once in every task: a backslash there keeps $SLURM_... as text",
                          hint="write run.sh as each task's shell should read it.")
    code = "\n".join(line.split("#", 1)[0] if not line.startswith("#!") else "" for line in wrapper.splitlines())
    for name, sources in (("RANK", ("SLURM_PROCID",)), ("LOCAL_RANK", ("SLURM_LOCALID",)),
                          ("WORLD_SIZE", ("SLURM_NPROCS", "SLURM_NTASKS"))):
        if not any(re.search(rf"\b{name}=\$\{{?{s}\b", code) for s in sources):
            raise CheckFailed("08.S4", f"run.sh does not set {name} from Slurm", hint="one export per variable.")
        if not re.search(rf"(?:^|&&|;)\s*export\s+(?:\w+=\S*\s+)*{name}\b", code, flags=re.M):
            raise CheckFailed("08.S4", f"run.sh sets {name} for itself only: without export, the command it runs "
                                       "never sees it", hint="a variable reaches the programs a shell starts only "
                                                             "when it is exported.")
    if not re.search(r'(?:^|&&|;)\s*(?:(?:exec|eval)\s+)?"\$@"', code, flags=re.M):  # exec is better, not needed
        raise CheckFailed("08.S4", 'run.sh does not run the command it is given ("$@")',
                          hint="srun ... run.sh python train.py: the wrapper ends by running its arguments.")
    return passed("08.S4", "each task expands its own $SLURM_PROCID and $SLURM_LOCALID: in bash -c through the "
                           "escaped $, in run.sh because the file runs in every task")


# --- 05.S4: MIOpen's logging ---------------------------------------------------------------------------------------

@check("05.S4",
       wrong("the HIP runtime's log instead of MIOpen's", miopen_job=lambda a: a.miopen_job.with_(
           env={"AMD_LOG_LEVEL": "4"}), mentions="HIP runtime"),
       wrong("only MIOpen's log level, no API logging", miopen_job=lambda a: a.miopen_job.with_(
           env={"MIOPEN_LOG_LEVEL": "6"}), mentions="logging on"),
       wrong("logging switched off", miopen_job=lambda a: a.miopen_job.with_(
           env={"MIOPEN_ENABLE_LOGGING": "0", "MIOPEN_ENABLE_LOGGING_CMD": "1"}), mentions="logging on"),
       wrong("the logging asked for on a CPU partition: no GCD, so MIOpen runs no convolution",
             miopen_job=lambda a: a.miopen_job.with_(partition="small", gpus_per_node=None, gpus_per_task=None),
             mentions="no GCD"),
       wrong("standard-g with the node's 8 GCDs", miopen_job=lambda a: a.miopen_job.with_(
           partition="standard-g", gpus_per_node=8), mentions="whole nodes"),
       wrong("8 GCDs on small-g", miopen_job=lambda a: a.miopen_job.with_(gpus_per_node=8), mentions="GCDs"),
       wrong("no time limit", miopen_job=lambda a: a.miopen_job.with_(time=None), mentions="time limit"))
def check_miopen_logging(miopen_job: JobSpec | None) -> Passed:
    """Exercise 05.S4: a job whose MIOpen calls are logged (``MIOPEN_ENABLE_LOGGING=1``) with the MIOpenDriver
    command line of each (``MIOPEN_ENABLE_LOGGING_CMD=1``), so a slow convolution can be replayed alone."""
    expect_type("05.S4", miopen_job, JobSpec, what="the job", hint="a job spec, with the environment of the run.")
    env = dict(miopen_job.env)
    if not (miopen_job.gpus_per_node or miopen_job.gpus_per_task):
        raise CheckFailed("05.S4", "the job asks for no GCD, so MIOpen runs no convolution to log",
                          hint="MIOpen runs on the GPU: the job needs a GPU partition and a GCD.")
    expect_job_fields("05.S4", miopen_job, partition="small-g", gcds=1, nodes=1, time="0:10:00")
    if not switched_on(env.get("MIOPEN_ENABLE_LOGGING"), "miopen"):
        extra = " (AMD_LOG_LEVEL is the HIP runtime's log)" if "AMD_LOG_LEVEL" in env else ""
        raise CheckFailed("05.S4", f"the job does not switch MIOpen's logging on, so it logs none of its calls"
                                   f"{extra}",
                          hint="MIOpen's own variables start with MIOPEN_; the log level alone does not log calls.")
    if not switched_on(env.get("MIOPEN_ENABLE_LOGGING_CMD"), "miopen"):
        raise CheckFailed("05.S4", "the log will not show the MIOpenDriver command of each convolution",
                          hint="a second MIOPEN_ENABLE_LOGGING_* variable adds the command lines.")
    return passed("05.S4", "MIOpen logs every call and its MIOpenDriver command: run one such command alone to time "
                           "that convolution outside the training")


# --- 02.S1: a shell in the container, with LUMI's bindings module -------------------------------------------------

#: LUMI's bindings modules, each with the folder ``module use`` must add first: the 2026 LAIF scripts' and the
#: older editions' (lumikit/bindings_modules.py).
BINDINGS_MODULES = bindings_modules.MODULES


@check("02.S1",
       wrong("module load before module use: Lmod does not know the module yet",
             shell_commands=lambda a: [c for c in a.shell_commands if c.startswith("module load")]
             + [c for c in a.shell_commands if not c.startswith("module load")], mentions="module use"),
       wrong("no bindings module and no --bind: /project and /scratch are missing inside",
             shell_commands=lambda a: [c for c in a.shell_commands if not c.startswith("module")],
             mentions="bind"),
       wrong("singularity exec of a script: no interactive shell",
             shell_commands=lambda a: [c.replace("singularity shell", "singularity exec") + " python train.py"
                                       if c.startswith("singularity shell") else c for c in a.shell_commands],
             mentions="shell"),
       wrong("a --bind of an unrelated folder instead of the bindings module",
             shell_commands=lambda a: [c.replace("singularity shell", "singularity shell --bind /tmp")
                                       for c in a.shell_commands if not c.startswith("module")], mentions="bind"),
       wrong("a hand-written -B of /project and /scratch instead of the bindings module",
             shell_commands=lambda a: ["singularity shell -B /project,/scratch $CONTAINER"], mentions="bind list"))
def check_container_shell(shell_commands: Sequence[str] | None) -> Passed:
    """Exercise 02.S1: the commands, in order, that open an interactive shell in the PyTorch container with the
    bindings module that makes /project, /scratch and the system libraries visible inside."""
    expect_type("02.S1", shell_commands, (list, tuple), what="the list of commands, in order")
    lines = [" ".join(str(c).split()) for c in shell_commands]
    use = next((i for i, c in enumerate(lines) if c.startswith("module use ")), None)
    load = next((i for i, c in enumerate(lines) if c.startswith("module load ")), None)
    shell = next((i for i, c in enumerate(lines) if c.startswith("singularity shell ")), None)
    binds = any(re.search(r"\s(-B|--bind)[\s=]\S*/(?:project|scratch|pfs)\b", f" {c}") for c in lines
                if c.startswith("singularity"))
    if load is None and not binds:
        raise CheckFailed("02.S1", "nothing binds the host's folders: inside, /project and /scratch are missing",
                          hint="LUMI's bindings module sets the binds for you; load it before the container.")
    if load is None:
        raise CheckFailed("02.S1", "no bindings module is loaded, as the question asks",
                          mistake="a hand-written bind list: it misses the system libraries (libfabric, the Slurm "
                                  "and Cray folders) the module binds",
                          hint="LUMI's bindings module sets the binds for you; load it before the container.")
    if load is not None and (use is None or use > load):
        raise CheckFailed("02.S1", "module load comes before module use, so Lmod cannot find the module",
                          hint="module use adds a folder of modules; only then can they be loaded.")
    loaded = {tok.split("/")[0] for tok in lines[load].split()[2:]} if load is not None else set()  # name/version
    module = next((m for m in BINDINGS_MODULES if m in loaded), None)
    if load is not None and module is None:
        raise CheckFailed("02.S1", f"`{lines[load]}` is not one of LUMI's bindings modules",
                          hint="the module's name says it binds for Singularity.")
    if use is not None and module is not None and BINDINGS_MODULES[module] not in lines[use]:
        raise CheckFailed("02.S1", f"`{lines[use]}` adds another module folder than the one holding "
                                   f"`{module}`",
                          hint="each bindings module lives in its own folder under /appl/local.")
    if shell is None:
        raise CheckFailed("02.S1", "no `singularity shell` opens an interactive shell in the container",
                          hint="exec runs one command and returns; shell stays.")
    if not re.search(r"\.sif\b|\$\{?\w+", lines[shell].split("singularity shell", 1)[1]):
        raise CheckFailed("02.S1", "the shell command names no container image (.sif)")
    if load is not None and shell < load:
        raise CheckFailed("02.S1", "the shell starts before the bindings module is loaded, so it has no binds")
    return passed("02.S1", "module use, module load of the bindings module, then singularity shell: /project, "
                           "/scratch and the system libraries are there inside")


# --- 10.2: one JAX process per GCD ---------------------------------------------------------------------------------

@check("10.2",
       wrong("every GCD of the job in each process", devices_per_process=2, mentions="lists locally"),
       wrong("one process for the whole job", process_count=1, mentions="jax.distributed"),
       wrong("the GCDs asked per node, not per task", per_gcd_job=lambda a: a.per_gcd_job.with_(
           ntasks_per_node=1, gpus_per_task=None, gpus_per_node=2), mentions="process per GCD"))
def check_jax_per_gcd(per_gcd_job: JobSpec | None, devices_per_process: int | None,
                      process_count: int | None) -> Passed:
    """Exercise 10.2: a JAX job with one process per GCD (2 tasks, one GCD each), how many devices each process
    lists locally, and how many processes ``jax.distributed`` counts."""
    expect_type("10.2", per_gcd_job, JobSpec, what="the JAX job")
    if per_gcd_job.container != "jax":
        raise CheckFailed("10.2", "the job does not run in the JAX container",
                          hint="container=\"jax\", as in 10.S1.")
    tasks = int(per_gcd_job.ntasks_per_node or per_gcd_job.ntasks or 1)
    if tasks != 2 or per_gcd_job.gpus_per_task != 1:
        raise CheckFailed("10.2", "the job's tasks and GPUs do not give one process per GCD",
                          hint="Slurm can count GPUs per node or per task: which gives each task its own?")
    expect_type("10.2", devices_per_process, int, what="devices each process lists locally")
    if devices_per_process != 1:
        raise CheckFailed("10.2", "that is not what one process lists locally",
                          hint="which GCDs does Slurm make visible to one task (ROCR_VISIBLE_DEVICES)?")
    expect_type("10.2", process_count, int, what="processes jax.distributed counts")
    if process_count != tasks:
        raise CheckFailed("10.2", "that is not the number of processes jax.distributed counts",
                          hint="where does jax.distributed learn its processes from on a Slurm job?")
    return passed("10.2", "2 tasks x 1 GCD: each process lists 1 local device, jax.distributed sees 2 processes "
                          "and 2 devices in all")


__all__ = ["check_container_shell", "check_jax_per_gcd", "check_miopen_logging", "check_scaling_efficiency",
           "check_slurm_escaping", "scaling_runs", "lumi_total_images_per_s"]
