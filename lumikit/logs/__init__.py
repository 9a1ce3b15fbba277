"""Job logs as values: training progress, HIP runtime logs, RCCL's network choice, rccl-tests bandwidths, and the
log doctor."""
from __future__ import annotations

from .collbench import CollectiveBenchmark, link_for, parse_collbench, read_collbench
from .doctor import SIGNATURES, Diagnosis, Signature, diagnose, diagnose_text, problems
from .hip import HipRecord, hip_records, hip_summary, parse_hip_log, read_hip_log
from .progress import parse_progress, progress_summary, read_progress, training_series
from .rccl import LogLine, RcclTransport, parse_rccl, rccl_transport

__all__ = [
    "CollectiveBenchmark", "link_for", "parse_collbench", "read_collbench",
    "SIGNATURES", "Diagnosis", "HipRecord", "LogLine", "RcclTransport", "Signature", "diagnose", "diagnose_text",
    "hip_records", "hip_summary", "parse_hip_log", "parse_progress", "parse_rccl", "problems", "progress_summary",
    "rccl_transport", "read_hip_log", "read_progress", "training_series",
]
