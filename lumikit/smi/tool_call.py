"""One call of an SMI tool with a deadline: past it, the tool and every process it started are killed.

A wedged driver hangs ``amd-smi``; a tool that forks a helper (a daemon, a ``sh -c`` wrapper) would leave that
helper running after the tool alone is killed. The tool runs in its own process group, and the deadline ends
the whole group (the supervisor of a local run still finds it there: it stays in the run's session).
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Sequence

#: The exit status a call gets when its deadline ended it (``timeout``'s convention).
TIMED_OUT = 124


def call_tool(argv: Sequence[str], deadline_s: float) -> tuple[str, int]:
    """``argv``'s stdout and exit status, or ``("", 124)`` after killing its process group at ``deadline_s``;
    FileNotFoundError when the tool is not there."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            text=True, errors="replace", process_group=0)
    try:
        out, _ = proc.communicate(timeout=deadline_s)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the tool and its children: its group is its own
        except ProcessLookupError:
            pass
        proc.stdout.close()  # a child that escaped the group may hold the pipe: do not wait for its end
        proc.wait()
        return "", TIMED_OUT
