"""Hand a learner's traces to Holistic Trace Analysis (``import hta``, PyPI ``traceinsight``) the right way.

HTA guesses each file's rank with a regular expression that needs ``"rank": N`` with a space and silently puts
every other file on rank 0; it also parses any stray JSON in the folder. ``trace_analysis`` finds the trace files
with lumikit's own discovery and passes HTA the explicit rank -> file mapping, so HTA reads the learner's runs.

HTA's critical path does not work on ROCm traces: it takes every edge from GPU work back to the host call that
waited for it from Kineto's ``cuda_sync`` events, which ROCm traces never have. On such a trace the bridge's
``critical_path_analysis`` warns and points to lumikit's own (``lumikit trace critical-path``).
"""
from __future__ import annotations

import logging
import os
import threading
import warnings
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
        from hta.common.trace import Trace
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
    # HTA parses several rank files in a "fork" pool. Forked from a process with other threads (a Jupyter kernel, a
    # test run that drove a browser) a worker can inherit a held lock and hang for ever (seen in CI: one worker
    # a zombie, its sibling waiting on the pool's queue lock). Then parse the ranks here, one after another.
    analysis = TraceAnalysis.__new__(TraceAnalysis)
    analysis.t = Trace({rank: str(p) for rank, p in paths.items()}, str(common))
    analysis.t.load_traces(include_last_profiler_step, use_multiprocessing=threading.active_count() == 1)
    _warn_on_critical_path_without_sync_events(analysis, path_or_runfolder)
    return analysis


def no_sync_events_warning(path: Path | str) -> str:
    """What the bridge says when HTA's critical path is asked of a trace without ``cuda_sync`` events."""
    return (f"{path}: no cuda_sync events in this trace (ROCm traces never have them), so HTA's critical path has "
            f"no edge from GPU work back to the host calls that waited for it: its path and its shares are wrong "
            f"here (it often calls the step CPU-bound). Use lumikit's, which reads HIP sync calls and infers their "
            f"streams and events: lumikit trace critical-path {path} (or lumikit.trace.critical_path)")


def _warn_on_critical_path_without_sync_events(analysis, path: Path | str) -> None:
    """Wrap the analysis object's ``critical_path_analysis`` so it warns on a trace without sync events."""
    original = analysis.critical_path_analysis

    def critical_path_analysis(rank, annotation, instance_id, data_load_events=None):
        if "cuda_sync" not in analysis.t.symbol_table.get_sym_id_map():
            warnings.warn(no_sync_events_warning(path), stacklevel=2)
        return original(rank, annotation, instance_id, data_load_events)

    critical_path_analysis.__doc__ = original.__doc__
    analysis.critical_path_analysis = critical_path_analysis
