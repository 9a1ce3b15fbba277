"""The job's Python: the interpreter every command lumikit starts inside a job runs with (workloads, module 01's
ranks, the rehearsal's probe, the GPU recorder and its stand-in tool), so each finds lumikit and the course's
packages exactly as the job's ranks do.

It is this kernel's own interpreter, by its full path: on LUMI the workbook's venv, built inside the course
container and run there (the job's command goes through the same ``singularity exec`` as the ranks); off LUMI the
project's ``.venv``. Never a bare ``python3``: a container that sets its own PATH would find its own Python, which
has no lumikit (``No module named 'lumikit'``). Every such command is built here, by :func:`python_argv` or
:func:`module_argv`; a site profile's tool command names this interpreter as ``{python}`` (:func:`with_python`).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

#: How a site profile's command (``[slurm] record_command``) names the job's Python.
PYTHON_PLACEHOLDER = "{python}"


def job_python() -> str:
    """The full path of the interpreter a job's lumikit commands run with (this kernel's own)."""
    return sys.executable


def host_python() -> str:
    """The job's Python as a program that starts on the bare host and enters the container itself: on LUMI the
    venv's ``host-bin/python`` (``lumi/bin/python``, installed by ``lumi/setup-venv.sh``), which runs this same
    interpreter inside the course container with Slurm's client bound in; elsewhere (no such launcher) the job's
    Python itself. For a job that must call Slurm (the rehearsal's driver), which a plain container step cannot."""
    launcher = Path(sys.prefix) / "host-bin" / "python"
    return str(launcher) if launcher.is_file() else job_python()


def python_argv(*args: str) -> list[str]:
    """``[the job's Python, *args]``: a command for inside a job (``python_argv("-c", CODE)``)."""
    return [job_python(), *args]


def module_argv(module: str, *args: str) -> list[str]:
    """``the job's Python -m MODULE ARGS``: a lumikit module run inside a job (``module_argv("lumikit.record",
    "sample", ...)``)."""
    return python_argv("-m", module, *args)


def with_python(command: Iterable[str], python: str | None = None) -> list[str]:
    """A site profile's command with each ``{python}`` word replaced by the job's Python (or ``python``)."""
    return [(python or job_python()) if word == PYTHON_PLACEHOLDER else word for word in command]


__all__ = ["PYTHON_PLACEHOLDER", "host_python", "job_python", "module_argv", "python_argv", "with_python"]
