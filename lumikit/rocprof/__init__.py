"""rocprof outputs (v1, rocprofv3 CSV, rocpd databases, Perfetto traces) as ranked kernel tables: read, find,
summarise, draw."""
from __future__ import annotations

from .activities import Activities
from .names import short_kernel_name
from .outputs import RocprofOutputs, activities, find_outputs, rocprof_kernels
from .pftrace import read_pftrace
from .rocpd import read_rocpd
from .stats import (class_totals, combine_stats, parse_rocprof_stats, read_rocprof_stats, stats_from_durations,
                    stats_kind, write_rocprof_stats)
from .traces import parse_kernel_trace, parse_rocprof_json, read_kernel_trace, read_rocprof_json

__all__ = [
    "Activities", "RocprofOutputs", "activities", "class_totals", "combine_stats", "find_outputs",
    "parse_kernel_trace", "parse_rocprof_json", "parse_rocprof_stats", "read_kernel_trace", "read_pftrace",
    "read_rocpd", "read_rocprof_json", "read_rocprof_stats", "rocprof_kernels", "short_kernel_name",
    "stats_from_durations", "stats_kind", "write_rocprof_stats",
]
