"""Profiler traces: a fast, ROCm-aware loader of Kineto/Chrome traces, analyses, slicing, pictures, and a bridge
to Holistic Trace Analysis.

    from lumikit.trace import load_trace, TraceAnalyzer, slice_trace
    a = TraceAnalyzer(load_trace("runs/my-run/traces"))
    a.get_temporal_breakdown(); a.get_kernel_breakdown(); a.summary()
"""
from __future__ import annotations

from .analyses import TraceAnalyzer
from .loader import RankTrace, Trace, find_trace_files, load_trace
from .slicing import slice_trace

__all__ = ["RankTrace", "Trace", "TraceAnalyzer", "find_trace_files", "load_trace", "slice_trace"]
