"""rocprof outputs (v1, rocprofv3 CSV and JSON, rocpd databases, Perfetto traces) as ranked kernel tables: read,
find, summarise, draw.

The names below are imported on first use (PEP 562), so a command that reads a rocpd database into the trace
analyses (numpy only) does not pay for pandas' import.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Activities": "activities", "short_kernel_name": "names", "RocprofOutputs": "outputs", "activities": "outputs",
    "find_outputs": "outputs", "rocprof_kernels": "outputs", "read_pftrace": "pftrace", "read_rocpd": "rocpd",
    "class_totals": "stats", "combine_stats": "stats", "parse_rocprof_stats": "stats",
    "read_rocprof_stats": "stats", "stats_from_durations": "stats", "stats_kind": "stats",
    "write_rocprof_stats": "stats", "parse_kernel_trace": "traces", "parse_rocprof_json": "traces",
    "read_kernel_trace": "traces", "read_rocprof_json": "traces",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
