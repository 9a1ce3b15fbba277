"""Profiling modes a job spec can switch on, and what each adds to the profiled ranks.

Tools that wrap the command (rocprof, rocprofv3) become a prefix; the others are environment variables read by
ROCm, RCCL, MIOpen or :mod:`lumikit.profiler`. Outputs go to ``$LUMIKIT_RUN_DIR/profile`` (the run folder) so
the readers find them without the learner naming files.
"""
from __future__ import annotations

from dataclasses import dataclass

PROFILE_DIR = "${LUMIKIT_RUN_DIR:-$PWD}/profile"


@dataclass(frozen=True)
class ProfileMode:
    name: str
    summary: str
    prefix: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    makes_dir: str | None = None


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
)}
