"""The log doctor: known LUMI failure signatures in job logs -> what went wrong and how to fix it.

Each :class:`Signature` is a few regular expressions plus a two-or-three-line cause and fix, written for
LUMI (containers, Slingshot, Slurm, Lustre). :func:`diagnose` reads logs and reports one :class:`Diagnosis`
per signature and file: the first matching line and how many lines matched. A line is claimed by the first
signature that matches it, so specific signatures stand before general ones. ``note`` diagnoses are worth
knowing but are not failures (a cancelled job, a harmless warning).
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from ..bindings_modules import load_advice, load_commands
from ..errors import LumikitError
from ..text import printable
from .text import ANSI, bound_lines, looks_binary, read_log_text

Severity = Literal["problem", "note"]
#: Files a folder given to :func:`diagnose` is searched for.
LOG_SUFFIXES = (".out", ".err", ".log", ".txt")


@dataclass(frozen=True)
class Signature:
    """A known failure: its id, a short title, the patterns that reveal it, its cause and its fix.

    Patterns run over whatever a job printed, so they must stay linear: no ``.*``; a gap between two words is
    written ``A(?:(?!A).){0,500}B`` (bounded, and never rescanned from a later ``A``).
    """

    id: str
    title: str
    patterns: tuple[str, ...]
    cause: str
    fix: str
    severity: Severity = "problem"

    def matches(self, line: str) -> re.Match[str] | None:
        """The first pattern match in ``line``, or None."""
        for pattern in self.patterns:
            m = re.search(pattern, line)
            if m:
                return m
        return None


@dataclass(frozen=True)
class Diagnosis:
    """One signature found in one file: where it first showed, the line itself, and what to do."""

    signature: str
    title: str
    severity: Severity
    file: str
    line_no: int
    line: str
    cause: str
    fix: str
    count: int = 1

    def describe(self) -> str:
        """A few readable lines: place and title, the evidence, the cause and the fix."""
        more = f"  (and {self.count - 1} more line{'s' if self.count > 2 else ''} like it)" if self.count > 1 else ""
        return (f"{printable(self.file)}:{self.line_no}: [{self.severity}] {self.title} ({self.signature})\n"
                f"    > {printable(self.line)}{more}\n"
                f"    cause: {self.cause}\n"
                f"    fix:   {self.fix}")


SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "conda-not-activated", "Container Python without its conda environment",
        (r"ModuleNotFoundError: No module named '(?:torch|torchvision|tensorflow|horovod|transformers|datasets|"
         r"accelerate|deepspeed|lightning|pytorch_lightning|numpy)'", r"/usr/lib(?:64)?/python3\.6/"),
        "Inside a LUMI AI container the command ran without the container's conda environment, so the system "
        "Python 3.6 answered, and it has none of the ML packages.",
        "Start the container command with $WITH_CONDA, in single quotes so the container expands it: "
        "singularity exec $SIF bash -c '$WITH_CONDA; python train.py'. (Images started with "
        "`singularity run` activate it themselves.)"),
    Signature(
        "missing-system-binds", "Host libraries not bound into the container",
        (r"(?:libmpi_cray|libcxi|libjansson|libfabric|libpmi\w*|libpals)\.so[.\d]*: cannot open shared object file",),
        "The program needs Cray MPI or Slingshot network libraries from the host, and they were not bound into "
        "the container.",
        f"Before singularity: {load_advice()}; or bind them yourself: "
        "-B /var/spool/slurmd,/opt/cray,/usr/lib64/libcxi.so.1,/usr/lib64/libjansson.so.4"),
    Signature(
        "rocprofv3-libdw", "rocprofv3 cannot load libdw",
        (r"libdw\.so[.\d]*: cannot open shared object file",),
        "rocprofv3 needs libdw (elfutils), which some LUMI AI containers do not ship.",
        "Add it with a squashfs overlay: unpack the libdw1t64 package into deps/, `mksquashfs deps deps.sqsh`, "
        "and run singularity with --overlay deps.sqsh:ro; or profile with torch.profiler instead."),
    Signature(
        "ofi-fabric-domain", "RCCL's network plugin cannot open the Slingshot network",
        (r"NET/OFI Couldn't open a fabric access domain",),
        "The aws-ofi-rccl plugin loaded but could not open a CXI (Slingshot) domain: the container does not see "
        "the host's libfabric/CXI libraries and devices (typical for self-built containers).",
        f"Bind the host network stack in ({load_commands()}; or -B /opt/cray,/usr/lib64/libcxi.so.1,...) "
        "or build on a LUMI container; a good run then logs "
        "'NET/OFI Selected Provider is cxi'."),
    Signature(
        "rccl-socket-fallback", "RCCL without its network plugin (TCP sockets)",
        (r"NET/Plugin\s*:?\s*(?:No plugin found|Plugin load (?:(?!Plugin load ).){0,500}returned"
         r"|Using internal network plugin)",
         r"lib[rn]ccl-net\.so: cannot open shared object file", r"NCCL INFO NET/Socket\s*:\s*Using",
         r"NCCL INFO Using network Socket"),
        "RCCL did not load the aws-ofi-rccl plugin and falls back to TCP sockets: traffic between nodes is many "
        "times slower and large jobs can hang (within one node it does not matter).",
        "Use a LUMI container that ships the plugin, or put the plugin's folder on the library path "
        "(SINGULARITYENV_LD_LIBRARY_PATH), with NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3; a good run logs "
        "'NET/OFI Using aws-ofi-rccl' and 'Selected Provider is cxi'."),
    Signature(
        "rccl-reverse-path", "RCCL cannot connect the GPUs of a shared node",
        (r"Failed to find reverse path",),
        "RCCL could not build its rings because the job's GPUs are isolated from each other on a node shared "
        "with other jobs (per-task GPU binding, CUDA_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES).",
        "Use whole nodes (standard-g or --exclusive) and select devices with HIP_VISIBLE_DEVICES instead of "
        "per-task GPU binding."),
    Signature(
        "miopen-sqlite-lock", "MIOpen's database locked on Lustre",
        (r"MIOpen(?:(?!MIOpen).){0,500}SQLite database: locking protocol",
         r"sqlite_db\.cpp(?:(?!sqlite_db\.cpp).){0,500}locking protocol",
         r"MIOpen(?:(?!MIOpen).){0,500}database is locked"),
        "MIOpen keeps its kernel database in SQLite under your home folder; many processes use it at once on "
        "Lustre, which does not support SQLite's file locking.",
        "Give each node its own database in node-local /tmp with the site's `miopen` recipe (--env-recipe miopen; "
        "multi-node jobs get it anyway): MIOPEN_USER_DB_PATH=/tmp/$USER-miopen-cache-$SLURM_NODEID and "
        "MIOPEN_CUSTOM_CACHE_DIR=$MIOPEN_USER_DB_PATH."),
    Signature(
        "rocm-smi-login-node", "rocm-smi run where there are no GPUs",
        (r"Driver not initialized \(amdgpu not found in modules\)", r"/sys/module/amdgpu/initstate: No such file"),
        "rocm-smi ran on a login node: the amdgpu driver is loaded only on LUMI-G compute nodes.",
        "Run it inside your job: srun --jobid=<JOBID> --overlap -N1 -n1 --pty rocm-smi (add -w <node> in a "
        "multi-node job; `lumikit attach` prints it), or as a step of the batch script."),
    Signature(
        "home-quota-container-cache", "Container cache filled your home quota",
        (r"\.(?:singularity|apptainer)/cache(?:(?!\.(?:singularity|apptainer)/cache).){0,500}[Dd]isk quota exceeded",
         r"[Dd]isk quota exceeded(?:(?![Dd]isk quota exceeded).){0,500}\.(?:singularity|apptainer)/"),
        "singularity pull keeps image layers in ~/.singularity/cache, and your home folder's 20 GB quota is "
        "too small for them.",
        "export SINGULARITY_CACHEDIR=/tmp/$USER SINGULARITY_TMPDIR=/tmp/$USER (or a folder on /scratch) before "
        "pulling, run `singularity cache clean`, and check with `lumi-quota`."),
    Signature(
        "disk-quota", "A file system quota is full",
        (r"[Dd]isk quota exceeded", r"\[Errno 122\]"),
        "A quota (space or number of files) is full: home has 20 GB, project, scratch and flash folders have "
        "their own limits.",
        "Check with `lumi-quota`; move caches (HF_HOME, TORCH_HOME, pip, singularity) and outputs to "
        "/scratch/<project> or /flash/<project> and delete what you no longer need."),
    Signature(
        "read-only-cache", "A cache folder is not writable inside the container",
        (r"Read-only file system",
         r"Not enough free disk space to download the file(?:(?!download the file).){0,500}only has 0\.00 MB free"),
        "A cache or output folder (HF_HOME, TORCH_HOME, ...) points at a path inside the container that is not "
        "bound to a real file system, so it is read-only with no space (e.g. /workdir without -B .:/workdir).",
        "Bind the folder (singularity exec -B .:/workdir ..., or -B /scratch/<project>) or point HF_HOME and "
        "TORCH_HOME at a bound, writable folder on /scratch or /flash."),
    Signature(
        "gpu-out-of-memory", "Out of GPU memory",
        (r"HIP out of memory", r"CUDA out of memory", r"torch\.(?:cuda\.)?OutOfMemoryError", r"hipErrorOutOfMemory",
         r"\bout of memory\. Tried to allocate"),
        "The model, its activations and the batch needed more than the 64 GiB of one GCD, or the free memory "
        "was cut into pieces too small for the request (the message then shows much memory 'reserved by "
        "PyTorch but unallocated').",
        "Much reserved but unallocated: export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True. Else find the "
        "peak (profile_memory=True, then `lumikit trace memory FILE`), then lower the batch per GCD, use bf16 or "
        "activation checkpointing, or shard the model (FSDP)."),
    Signature(
        "host-out-of-memory", "Out of host memory (oom-kill)",
        (r"oom[-_]kill", r"Out Of Memory", r"Exceeded job memory limit", r"\bOUT_OF_MEMORY\b"),
        "The job used more CPU memory than it asked for, and the kernel killed a process.",
        "Ask for more (--mem-per-gpu=60G per GCD, or --mem=480G for a whole node), use fewer DataLoader "
        "workers, and keep big files out of /tmp, which counts as memory."),
    Signature(
        "mem-options-conflict", "Two kinds of Slurm memory options",
        (r"SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive",),
        "srun inherited a memory option from the surrounding allocation (a terminal on a compute node, e.g. "
        "VS Code or Jupyter) and was given another kind.",
        "Use one kind of memory option; in such a terminal run `unset SLURM_MEM_PER_CPU SLURM_MEM_PER_GPU "
        "SLURM_MEM_PER_NODE` before srun, or submit with sbatch from a login node."),
    Signature(
        "time-limit", "Job stopped at its time limit",
        (r"CANCELLED AT \S+ DUE TO TIME LIMIT", r"DUE TO TIME LIMIT"),
        "Slurm ended the job when it reached its --time limit; whatever was not saved is lost.",
        "Ask for more time (up to the partition's limit), run fewer steps, or save checkpoints and resume "
        "(Trainer resume_from_checkpoint) in a follow-up job."),
    Signature(
        "job-cancelled", "Job cancelled before it finished",
        (r"CANCELLED AT [\dT:\-]+ \*\*\*",),
        "The job or step was cancelled (scancel by you or an administrator, or Slurm after a node failure); it "
        "was not the time limit.",
        "If you did not cancel it, ask `sacct -j <JOBID> -o JobID,State,ExitCode,Reason` why, and read the lines "
        "just before this one.",
        severity="note"),
    Signature(
        "rccl-rocm-smi-init", "RCCL could not start ROCm SMI",
        (r"NCCL WARN ROCm SMI init failure",),
        "RCCL uses ROCm SMI to read the GPU topology; it could not start it and carries on with less "
        "information. Harmless by itself.",
        "If collectives are slow or fail, look at the other diagnoses first; check that the job requested its "
        "GPUs with --gpus-per-node and runs on a compute node.",
        severity="note"),
)

_ANY = re.compile("|".join(f"(?:{p})" for s in SIGNATURES for p in s.patterns))


def _shown(line: str, m: re.Match[str], width: int = 200) -> str:
    """The part of a line around a match: the carriage-return segment holding it, without control codes."""
    start = line.rfind("\r", 0, m.start()) + 1
    end = line.find("\r", m.end())
    text = ANSI.sub("", line[start:] if end < 0 else line[start:end]).strip()
    return text if len(text) <= width else text[: width - 1] + "…"


def diagnose_text(text: str, source: str = "<text>",
                  signatures: Iterable[Signature] = SIGNATURES) -> list[Diagnosis]:
    """The diagnoses of one log given as text, in order of first appearance."""
    signatures = tuple(signatures)
    text = bound_lines(text)
    first: dict[str, Diagnosis] = {}
    counts: dict[str, int] = {}
    starts = [0] + [m.end() for m in re.finditer("\n", text)]  # offset of each line
    seen = -1
    for hit in _ANY.finditer(text):  # one pass over the whole text; only lines with a hit are examined
        no = bisect.bisect_right(starts, hit.start())
        if no == seen:
            continue
        seen = no
        end = text.find("\n", starts[no - 1])
        line = text[starts[no - 1]:] if end < 0 else text[starts[no - 1]:end]
        for sig in signatures:
            m = sig.matches(line)
            if m:
                counts[sig.id] = counts.get(sig.id, 0) + 1
                if sig.id not in first:
                    first[sig.id] = Diagnosis(sig.id, sig.title, sig.severity, source, no, _shown(line, m),
                                              sig.cause, sig.fix)
                break
    found = [Diagnosis(**{**d.__dict__, "count": counts[d.signature]}) for d in first.values()]
    return sorted(found, key=lambda d: d.line_no)


def _log_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in LOG_SUFFIXES
                      and not any(part.startswith(".") for part in p.relative_to(path).parts))
    if not path.exists():
        raise LumikitError(f"{path}: no such file or folder; give job logs (slurm-<jobid>.out) or a run folder")
    return [path]


def diagnose(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Diagnosis]:
    """Diagnose job logs: files, or folders searched for ``*.out``, ``*.err``, ``*.log``, ``*.txt``.

    Returns the diagnoses of every file, file by file in the order given, each file's in line order.
    Binary files are passed by. An empty list means no known failure was recognised (not that all is well).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: list[Diagnosis] = []
    dumps: list[Path] = []
    for given in paths:
        dumps += _flight_recorder_dumps(Path(given))
        for path in _log_files(Path(given)):
            if path in dumps or (path != Path(given) and looks_binary(path)):  # in a folder: pass by; named: say why not
                continue
            found.extend(diagnose_text(read_log_text(path), source=str(path)))
    return found + diagnose_flight_recorder(dumps)


def problems(diagnoses: Iterable[Diagnosis]) -> list[Diagnosis]:
    """Only the diagnoses that are failures (severity ``problem``), not notes."""
    return [d for d in diagnoses if d.severity == "problem"]


# --- PyTorch flight recorder dumps (a hang: which rank never joined which collective) ---------------------------

_DUMP_NAME = re.compile(r"(?:(?:trace|fr|flight)\w*?_?\d+(?:\.json|\.pkl)?|\.pkl)$", re.IGNORECASE)


def _flight_recorder_dumps(path: Path) -> list[Path]:
    """Flight recorder dumps given by name, or found in a folder under their usual names (``nccl_trace_rank_3``,
    ``fr_trace_rank_3``, ``<TORCH_FR_DUMP_TEMP_FILE>3``, any ``*.pkl``); what is inside decides."""
    from .flight_recorder import is_flight_recorder_dump

    if path.is_file():
        return [path] if is_flight_recorder_dump(path) else []
    if not path.is_dir():
        return []
    return sorted(p for p in path.rglob("*") if p.is_file() and _DUMP_NAME.search(p.name)
                  and not any(part.startswith(".") for part in p.relative_to(path).parts)
                  and is_flight_recorder_dump(p))


_HANG_FIX = ("Look at what rank {rank} did after collective {last}: its traceback in the job log, or `py-spy dump "
             "--pid PID` on it through `srun --overlap --jobid JOBID`; keep TORCH_FR_BUFFER_SIZE=2000 set so the "
             "next hang is recorded too.")


def diagnose_flight_recorder(dumps: Iterable[str | os.PathLike[str]]) -> list[Diagnosis]:
    """One diagnosis per process group where some ranks never joined a collective the others waited in, and one per
    collective that ranks called differently (a desync: another collective, or other sizes, at the same
    sequence number); a note for dumps whose file name gives no rank."""
    from .flight_recorder import find_desyncs, find_hangs, rank_list, read_flight_recorder

    records = [read_flight_recorder(p) for p in dumps]
    by_rank = {r.rank: r for r in records}
    out = [Diagnosis("flight-recorder-no-rank", "A flight recorder dump without a rank in its name", "note",
                     str(r.path), 0, f"{r.path.name}: {len(r.entries)} entries",
                     "The rank of a dump is the number its file name ends with (torch writes "
                     "<TORCH_FR_DUMP_TEMP_FILE><rank>); this one has none, so it was left out of the comparison.",
                     "Give the dumps under the names torch wrote them (nccl_trace_rank_<rank>).")
           for r in records if r.rank is None]
    for d in find_desyncs(records):
        first = d.calls[0][1][0]
        odd = d.calls[-1][1]
        what = ("different collectives" if d.kind == "collective" else "the same collective with different tensor "
                "sizes")
        out.append(Diagnosis(
            "collective-desync", "Ranks called different collectives at the same point (flight recorder)", "problem",
            str(by_rank[first].path), 0, d.describe(),
            f"Every rank of a process group must call the same collectives in the same order with matching sizes; "
            f"at collective {d.seq} the ranks made {what}, so they pair up wrongly and hang or exchange garbage: a "
            "branch taken on some ranks only (a rank-dependent condition, an uneven last batch), or tensors shaped "
            "by per-rank data.",
            f"Find the code that calls collectives conditionally or with rank-dependent shapes; compare what rank "
            f"{odd[0]} ({rank_list(odd)}) did before collective {d.seq} with rank {first}; "
            "TORCH_DISTRIBUTED_DEBUG=DETAIL makes torch check each collective's type and shapes as it runs."))
    for hang in find_hangs(records):
        where = by_rank[hang.waiting[0]].path if hang.waiting else records[0].path
        out.append(Diagnosis(
            "collective-never-joined", "A rank never joined a collective (flight recorder)", "problem", str(where),
            0, hang.describe(),
            f"The ranks {rank_list(hang.waiting)} called collective {hang.seq} of that process group and "
            "waited until the timeout; the others were elsewhere: an exception, a data loader that ran out early "
            "on one rank, a branch that skips a collective, or a rank stuck before it.",
            _HANG_FIX.format(rank=hang.missing[0], last=hang.last_seen[hang.missing[0]])))
    return out
