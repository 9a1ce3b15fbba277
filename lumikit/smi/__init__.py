"""The GPU view: parse rocm-smi / amd-smi / nvidia-smi output into snapshots, sample and replay them, say what
they mean. Pictures are in :mod:`lumikit.smi.plots`, the notebook dashboard in :mod:`lumikit.widgets.gpu_dashboard`.
"""
from .interpret import Finding, interpret, interpret_window
from .model import DEVICE_FIELDS, DeviceReading, GpuProcess, Snapshot
from .parse import parse_smi, parse_smi_series
from .sampler import CommandSource, LibrarySource, ReplaySource, Sampler, available_sources
from .sessions import list_sessions, load_session, session_frame, tidy

__all__ = [
    "DEVICE_FIELDS", "DeviceReading", "GpuProcess", "Snapshot", "parse_smi", "parse_smi_series", "Finding",
    "interpret", "interpret_window", "CommandSource", "LibrarySource", "ReplaySource", "Sampler",
    "available_sources", "list_sessions", "load_session", "session_frame", "tidy",
]
