"""A stand-in ``amd-smi`` that hangs (a wedged driver): for the tests and the benchmark of how a run ends when its
SMI tool never answers (``lumikit.testing.processes.processes_with`` finds what it leaves). Generated: nothing here is
a reading of a real tool.
"""
from __future__ import annotations

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
