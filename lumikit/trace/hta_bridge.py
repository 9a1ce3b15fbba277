"""Hand a learner's traces to Holistic Trace Analysis (``import hta``, PyPI ``traceinsight``) the right way.

HTA guesses each file's rank with a regular expression that needs ``"rank": N`` with a space and silently puts
every other file on rank 0; it also parses any stray JSON in the folder. ``trace_analysis`` finds the trace files
with lumikit's own discovery and passes HTA the explicit rank -> file mapping, so its other analyses (critical
path, trace diff) work on the learner's runs.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

from ..errors import TraceError
from .loader import find_trace_files


def quiet_hta() -> None:
    """Silence HTA's per-file warnings (it logs at WARNING on every parse)."""
    logging.getLogger("hta").setLevel(logging.ERROR)
    try:
        from hta.configs.config import logger

        logger.setLevel(logging.ERROR)
    except ImportError:  # pragma: no cover - HTA absent
        pass


def trace_analysis(path_or_runfolder: Path | str, *, rank_map: Mapping[int, str | Path] | None = None,
                   include_last_profiler_step: bool = False, exact_timestamps: bool = False, quiet: bool = True):
    """Build HTA's ``TraceAnalysis`` over a trace file or run folder, with the correct rank -> file mapping.

    ``exact_timestamps=True`` stops HTA from rounding sub-microsecond timestamps to whole microseconds (its
    default, which shortens every short ROCm kernel by up to 1 µs); the setting is process-wide in HTA.
    Note HTA's own limits on ROCm traces: kernels on stream 0 get no iteration, launch statistics stay empty
    and the straggler analysis needs ``ncclKernel`` names; lumikit's :class:`TraceAnalyzer` covers those.
    """
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as exc:  # pragma: no cover - HTA is a workbook dependency
        raise TraceError("Holistic Trace Analysis is not installed; pip install traceinsight") from exc
    if quiet:
        quiet_hta()
    from hta.configs.env_options import HTAEnvOptions

    HTAEnvOptions.instance().set_disable_ns_rounding(exact_timestamps)
    files = find_trace_files(path_or_runfolder, rank_map)
    paths = {rank: Path(p).resolve() for rank, p in files.items()}
    common = Path(os.path.commonpath([str(p.parent) for p in paths.values()]))
    return TraceAnalysis(trace_files={rank: str(p) for rank, p in paths.items()}, trace_dir=str(common),
                         include_last_profiler_step=include_last_profiler_step)
