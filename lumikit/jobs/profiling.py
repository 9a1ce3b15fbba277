"""Profiling modes a job spec can switch on, and what each adds to the profiled ranks.

Tools that wrap the command (rocprof, rocprofv3) become a prefix; the others are environment variables read by
ROCm, RCCL, MIOpen or :mod:`lumikit.profiler`. Outputs go to ``$LUMIKIT_RUN_DIR/profile`` (the run folder) so
the readers find them without the learner naming files.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

PROFILE_DIR = "${LUMIKIT_RUN_DIR:-$PWD}/profile"


@dataclass(frozen=True)
class ProfileMode:
    name: str
    summary: str
    prefix: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    makes_dir: str | None = None
    #: Small files written before the tool starts (its input): (path, printf format: \\n for line ends).
    files: tuple[tuple[str, str], ...] = ()


#: Counters gfx90a can count in one pass, per hardware block (more: rocprofv3 error 38, "Request exceeds the
#: capabilities of the hardware to collect").
PASS_LIMITS = {"SQ": 8, "TCP": 4, "TCC": 4}
_VALU = ("ADD", "MUL", "FMA", "TRANS")
#: rocprof-compute's three gfx90a roofline passes (ROCm/rocprofiler-compute
#: ``src/rocprof_compute_soc/profile_configs/gfx90a/roofline/pmc_roof_perf.txt``): the F16/F32 vector
#: instructions; the F64 ones, the MFMA ops, the L1-to-L2 reads and the HBM requests; the LDS and L1/L2 requests.
ROOFLINE_PASSES: tuple[tuple[str, ...], ...] = (
    tuple(f"SQ_INSTS_VALU_{op}_{p}" for p in ("F16", "F32") for op in _VALU),
    tuple(f"SQ_INSTS_VALU_{op}_F64" for op in _VALU)
    + tuple(f"SQ_INSTS_VALU_MFMA_MOPS_{p}" for p in ("F16", "BF16", "F32", "F64"))
    + ("TCP_TCC_READ_REQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum",
       "TCC_EA_WRREQ_sum"),
    ("SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT", "TCP_TOTAL_CACHE_ACCESSES_sum", "TCP_TCC_WRITE_REQ_sum",
     "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum"),
)


def counter_block(name: str) -> str:
    """The hardware block a counter is counted in: its prefix (``SQ``, ``TCP``, ``TCC``, ``GRBM``, ...)."""
    return name.split("_", 1)[0]


def plan_passes(counters: Iterable[str], limits: dict[str, int] = PASS_LIMITS) -> list[list[str]]:
    """Any set of counters split into passes, in order, none counting more of a block than ``limits`` allows
    (first fit; a block without a limit gets 4). The roofline mode uses :data:`ROOFLINE_PASSES` as
    rocprof-compute runs them on MI200."""
    passes: list[list[str]] = []
    for name in dict.fromkeys(counters):
        block = counter_block(name)
        for p in passes:
            if sum(counter_block(c) == block for c in p) < limits.get(block, 4):
                p.append(name)
                break
        else:
            passes.append([name])
    return passes


def input_file_text(passes: Iterable[Iterable[str]]) -> str:
    """A rocprofv3 input file (``-i FILE.txt``) with one ``pmc:`` line per pass: rocprofv3 runs the program once
    per line and writes each pass to its own ``pass_N/`` folder."""
    return "".join(f"pmc: {' '.join(p)}\n" for p in passes)


def _roofline_mode() -> ProfileMode:
    """rocprofv3 with :data:`ROOFLINE_PASSES` in an input file written per rank before it starts."""
    plan = PROFILE_DIR + "/roofline-rank${SLURM_PROCID}.txt"
    return ProfileMode(
        "roofline", "rocprofv3 counters for a roofline (3 passes: the program runs 3 times), CSV per rank",
        prefix=("rocprofv3", "-i", plan, "--output-format", "csv", "-d", PROFILE_DIR + "/rank${SLURM_PROCID}",
                "--"),
        makes_dir=PROFILE_DIR, files=((plan, input_file_text(ROOFLINE_PASSES).replace("\n", "\\n")),))


MODES: dict[str, ProfileMode] = {m.name: m for m in (
    ProfileMode("torch", "torch.profiler via lumikit.profiler: a Chrome trace per rank",
                env=(("LUMIKIT_PROFILE", "torch"), ("LUMIKIT_PROFILE_DIR", PROFILE_DIR))),
    ProfileMode("rocprof", "rocprof v1 HIP trace and kernel statistics (results.stats.csv per rank)",
                prefix=("rocprof", "--hip-trace", "--stats", "-o", PROFILE_DIR + "/rank${SLURM_PROCID}/results.csv"),
                makes_dir=PROFILE_DIR + "/rank${SLURM_PROCID}"),
    ProfileMode("rocprofv3", "rocprofv3 kernel trace and statistics as CSV per rank",
                prefix=("rocprofv3", "--kernel-trace", "--stats", "--output-format", "csv",
                        "-d", PROFILE_DIR, "-o", "rank${SLURM_PROCID}", "--"),
                makes_dir=PROFILE_DIR),
    ProfileMode("hiplog", "HIP runtime log (AMD_LOG_LEVEL=4) in the rank's stderr",
                env=(("AMD_LOG_LEVEL", "4"),)),
    ProfileMode("miopen-log", "MIOpen's log of the convolution algorithms it picks",
                env=(("MIOPEN_ENABLE_LOGGING", "1"), ("MIOPEN_ENABLE_LOGGING_CMD", "1"))),
    ProfileMode("rccl-debug", "RCCL initialisation and collectives log, one file per rank",
                env=(("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "INIT,COLL"),
                     ("NCCL_DEBUG_FILE", PROFILE_DIR + "/rccl-rank${SLURM_PROCID}.txt")),
                makes_dir=PROFILE_DIR),
    _roofline_mode(),
)}


def overlay_key(profile: str) -> str:
    """The name a container's ``overlays`` table uses for a profiling mode: the tool it runs (``roofline`` runs
    rocprofv3, so it needs rocprofv3's overlay), or the mode's own name for modes that run no tool."""
    mode = MODES.get(profile)
    return mode.prefix[0] if mode and mode.prefix else profile
