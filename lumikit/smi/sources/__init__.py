"""Where GPU readings come from: one small module per source, all behind one interface (:class:`Source`).

- :mod:`.library`: ``amdsmi`` / ``pynvml`` in this process (no process per sample; the first choice);
- :mod:`.stream`: one long-lived tool process printing a reading per interval (``nvidia-smi --loop-ms``,
  ``amd-smi monitor --watch``, lumi-sim's stand-in, ``srun --overlap`` steps watching a job);
- :mod:`.command`: the tool started once per sample (the last resort: a Python program such as ``amd-smi`` costs
  a start-up at every sample);
- :mod:`.pm_counters`: HPE Cray's node energy counters; :mod:`.replay`: a recorded or generated session.

:func:`choose_source` picks the cheapest one found here, in that order. The recorder (:mod:`lumikit.record`) and
the live views (:mod:`lumikit.smi.sampler`, ``lumikit smi watch``, the dashboard) both take their sources from
here; nothing here imports the record.
"""
from __future__ import annotations

import shutil
from types import ModuleType
from typing import Sequence

from ...errors import LumikitError
from ...site import Site
from .base import MIN_INTERVAL_S, EndOfSource, Sample, Source, UnreadOutput
from .command import CommandSource
from .library import LIBRARIES, LibrarySource
from .pm_counters import PmCountersSource
from .replay import ReplaySource
from .stream import AmdSmiMonitorSource, NvidiaStreamSource, StreamSource, watch_job
from .tools import (AMD_SMI_JSON, FRAME_END, NVIDIA_SMI_CSV, ROCM_SMI_JSON, TOOLS, amd_smi_monitor, find_tool,
                    nvidia_stream, stream_loop)


def choose_source(command: Sequence[str] | None = None, *, stream: bool = False, interval: float = 2.0,
                  site: str | Site | None = "lumi", path: str | None = None,
                  libraries: Sequence[str] = LIBRARIES, module: ModuleType | None = None) -> Source | None:
    """The cheapest way to read this node's GPUs: ``command`` where given (a framed stream with ``stream``, else
    run per sample); else a library that starts here (``amdsmi``, or ``module``, a stand-in with its API;
    ``pynvml``); else the tool's own stream (``nvidia-smi --loop-ms``, ``amd-smi monitor --watch`` where the interval is
    whole seconds); else the best tool on ``path`` run per sample; None without any.
    """
    if command:
        if stream:
            return StreamSource(command, site=site, timeout=max(120.0, 4 * interval))
        return CommandSource(command, timeout=max(30.0, 5 * interval), site=site)
    for lib in libraries:
        try:
            return LibrarySource(lib, module=module if lib == "amdsmi" else None)
        except LumikitError:
            continue  # not installed, or no GPU/driver here: the next way
    nvidia, amd = shutil.which("nvidia-smi", path=path), shutil.which("amd-smi", path=path)
    if nvidia:
        return NvidiaStreamSource(interval, site=site, tool=nvidia if path else "nvidia-smi")
    if amd and float(interval).is_integer():  # --watch takes whole seconds
        return AmdSmiMonitorSource(interval, site=site, tool=amd if path else "amd-smi")
    tool = find_tool(path)
    if tool is None:
        return None
    found = shutil.which(tool[0], path=path) if path else None  # a folder given: run the tool found there
    return CommandSource((found or tool[0], *tool[1:]), timeout=max(30.0, 5 * interval), site=site)


__all__ = ["AMD_SMI_JSON", "AmdSmiMonitorSource", "CommandSource", "EndOfSource", "FRAME_END", "LIBRARIES",
           "LibrarySource", "MIN_INTERVAL_S", "NVIDIA_SMI_CSV", "NvidiaStreamSource", "PmCountersSource",
           "ROCM_SMI_JSON", "ReplaySource", "Sample", "Source", "StreamSource", "TOOLS", "UnreadOutput",
           "amd_smi_monitor", "choose_source", "find_tool", "nvidia_stream", "stream_loop", "watch_job"]
