"""The job's Python: the interpreter every command lumikit starts inside a job runs with (workloads, probes, the
GPU recorder), so each finds lumikit and the course's packages exactly as the job's ranks do.

It is this kernel's own interpreter, by its full path: on LUMI the workbook's venv, built inside the course
container and run there (the job's command goes through the same ``singularity exec`` as the ranks); off LUMI the
project's ``.venv``. Never a bare ``python3``: a container that sets its own PATH would find its own Python, which
has no lumikit (``No module named 'lumikit'``).
"""
from __future__ import annotations

import sys


def job_python() -> str:
    """The full path of the interpreter a job's lumikit commands run with (this kernel's own)."""
    return sys.executable


__all__ = ["job_python"]
