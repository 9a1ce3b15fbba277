"""rocprof outputs (v1 and rocprofv3) as ranked kernel tables: read, find in a run folder, summarise, draw."""
from __future__ import annotations

from .names import short_kernel_name
from .outputs import RocprofOutputs, find_outputs, rocprof_kernels
from .stats import (class_totals, combine_stats, parse_rocprof_stats, read_rocprof_stats, stats_from_durations,
                    stats_kind, write_rocprof_stats)
from .traces import parse_kernel_trace, parse_rocprof_json, read_kernel_trace, read_rocprof_json

__all__ = [
    "RocprofOutputs", "class_totals", "combine_stats", "find_outputs", "parse_kernel_trace", "parse_rocprof_json",
    "parse_rocprof_stats", "read_kernel_trace", "read_rocprof_json", "read_rocprof_stats", "rocprof_kernels",
    "short_kernel_name", "stats_from_durations", "stats_kind", "write_rocprof_stats",
]
