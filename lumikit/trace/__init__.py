"""Profiler traces: a fast, ROCm-aware loader of Kineto/Chrome traces, analyses, slicing, pictures, and a bridge
to Holistic Trace Analysis.

    from lumikit.trace import load_trace, TraceAnalyzer, slice_trace
    a = TraceAnalyzer(load_trace("runs/my-run/traces"))
    a.get_temporal_breakdown(); a.get_kernel_breakdown(); a.summary()
"""
from __future__ import annotations

import importlib

#: Public names and the module that holds each; imported on first use, so that ``import lumikit.trace`` (and a
#: command that needs only the loader) does not pay for pandas and the analyses.
_EXPORTS = {"TraceAnalyzer": "analyses", "RankTrace": "loader", "Trace": "loader", "find_trace_files": "loader",
            "load_trace": "loader", "slice_trace": "slicing"}

__all__ = ["RankTrace", "Trace", "TraceAnalyzer", "find_trace_files", "load_trace", "slice_trace"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
