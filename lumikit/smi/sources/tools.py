"""The SMI tools' command lines (argv lists, never a shell), the stream frame marker, and which tool is here."""
from __future__ import annotations

import shlex
import shutil
from typing import Sequence

ROCM_SMI_JSON = ("rocm-smi", "--showtemp", "--showpower", "--showmaxpower", "--showclocks", "--showperflevel",
                 "--showuse", "--showmemuse", "--showmeminfo", "vram", "--json")
AMD_SMI_JSON = ("amd-smi", "metric", "--json")
NVIDIA_QUERY = ("--query-gpu=timestamp,index,name,pci.bus_id,temperature.gpu,power.draw,power.limit,"
                "clocks.sm,clocks.mem,fan.speed,pstate,utilization.gpu,memory.used,memory.total")
NVIDIA_SMI_CSV = ("nvidia-smi", NVIDIA_QUERY, "--format=csv")
#: The tools a recorder runs once per sample (the last resort), best first: amd-smi (ROCm 6+, also reports an
#: energy counter), rocm-smi, nvidia-smi.
TOOLS: tuple[tuple[str, ...], ...] = (AMD_SMI_JSON, ROCM_SMI_JSON, NVIDIA_SMI_CSV)

#: The line a framed stream prints after each reading, with the tool's exit status: ``@@lumikit-sample 0``.
FRAME_END = "@@lumikit-sample"


def nvidia_stream(interval: float) -> tuple[str, ...]:
    """``nvidia-smi``'s own loop (``--loop-ms``): one process printing a CSV row per GPU every ``interval`` s."""
    return ("nvidia-smi", NVIDIA_QUERY, "--format=csv,noheader", f"--loop-ms={max(1, round(interval * 1000))}")


def amd_smi_monitor(interval: float) -> tuple[str, ...]:
    """``amd-smi monitor``'s own loop (``--watch``, whole seconds): power, temperature, use, memory, VRAM per GPU
    as a table, one process in all (LUMI's 2026 AI workshop, part 04, advises ``amd-smi monitor --watch 1``)."""
    return ("amd-smi", "monitor", "-p", "-t", "-u", "-m", "-v", "--watch", str(max(1, round(interval))))


def stream_loop(tool: Sequence[str], interval: float) -> list[str]:
    """A shell loop for a compute node: run ``tool``, mark the end of its reading, sleep ``interval``; forever."""
    return ["bash", "-c", f'while :; do {shlex.join(tool)}; echo "{FRAME_END} $?"; sleep {interval:g}; done']


def find_tool(path: str | None = None) -> tuple[str, ...] | None:
    """The best SMI tool found on ``PATH`` (:data:`TOOLS` order), or None."""
    for argv in TOOLS:
        if shutil.which(argv[0], path=path):
            return argv
    return None


__all__ = ["AMD_SMI_JSON", "FRAME_END", "NVIDIA_QUERY", "NVIDIA_SMI_CSV", "ROCM_SMI_JSON", "TOOLS", "amd_smi_monitor",
           "find_tool", "nvidia_stream", "stream_loop"]
