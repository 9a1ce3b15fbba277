"""A stand-in ``amd-smi`` that hangs (a wedged driver), and the processes it leaves: for the tests and the benchmark
of how a run ends when its SMI tool never answers. Generated: nothing here is a reading of a real tool.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path


def hung_smi_tool(bin_dir: Path, marker: str, *, log_starts: bool = False) -> Path:
    """Write ``bin_dir/amd-smi``: it starts a child that sleeps, then sleeps itself (neither ever prints); both carry
    ``marker`` on their command lines. ``log_starts``: each start leaves a file in ``bin_dir/started``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    started = ""
    if log_starts:
        (bin_dir / "started").mkdir()
        started = f"open(os.path.join({str(bin_dir / 'started')!r}, str(os.getpid())), 'w').close()\n"
    tool = bin_dir / "amd-smi"
    tool.write_text(f"#!{sys.executable}\n"
                    "import os, subprocess, sys, time\n"
                    + started
                    + f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', {marker!r}])\n"
                    "time.sleep(1000)\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def processes_with(marker: str) -> list[int]:
    """Live processes (this one and zombies excluded) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found
