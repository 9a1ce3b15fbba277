"""Execute one notebook (Jupytext ``.py`` or ``.ipynb``) with nbclient and return what each code cell did.

The kernel is the Python running this code (not whatever ``python3`` kernelspec a user has installed), each cell has
a time limit, and the working directory is the notebook's own folder, as when a learner opens it in JupyterLab.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import ipykernel.kernelspec
import jupytext
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from ...errors import LumikitError
from ..conventions import CHECK_TAG, DEFAULT_CELL_TIMEOUT_S, SOLUTION_TAG
from ..framework import PASS_MIMETYPE, WRONG_MIMETYPE
from .recipes import CELL_BREAK

CURRENT_ENV_KERNEL = "lumikit-current-env"
#: The tag of the cells ``probe=True`` adds after each check cell (they try the check's known-wrong answers).
PROBE_TAG = "lumikit-probe"
CellStatus = Literal["ok", "error", "timeout", "not run"]


@dataclass(frozen=True)
class CellResult:
    """One executed code cell: its position among all cells (1-based), tags, outcome and run time."""

    number: int
    tags: tuple[str, ...]
    source: str
    status: CellStatus
    ename: str | None = None
    evalue: str | None = None
    passes: int = 0
    seconds: float = 0.0
    #: With ``run_notebook(probe=True)``: what the check's known-wrong answers did (see .probe).
    probe: dict[str, Any] | None = None

    @property
    def first_line(self) -> str:
        """The cell's first non-blank line, to name it in a report."""
        return next((line.strip() for line in self.source.splitlines() if line.strip()), "")


@dataclass(frozen=True)
class NotebookRun:
    """The outcome of executing one notebook: per-cell results, wall time and, if it stopped early, why."""

    path: Path
    cells: tuple[CellResult, ...]
    seconds: float
    stopped: str | None = None

    def tagged(self, tag: str) -> list[CellResult]:
        """The code cells carrying ``tag`` (``check``, ``exercise``, ``solution``)."""
        return [cell for cell in self.cells if tag in cell.tags]


class _CurrentEnvKernelSpecs(KernelSpecManager):
    """Kernel specs plus one for the Python running lumikit, whatever kernels the user has installed."""

    def get_kernel_spec(self, kernel_name: str) -> Any:
        if kernel_name == CURRENT_ENV_KERNEL:
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())
        return super().get_kernel_spec(kernel_name)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """A notebook from a Jupytext percent ``.py`` or an ``.ipynb`` file."""
    if not path.is_file():
        raise LumikitError(f"{path}: no such notebook. Fix: check the path (NN_name.py or NN_name.ipynb)")
    if path.suffix == ".py":
        return jupytext.read(path, fmt="py:percent")
    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    raise LumikitError(f"{path}: not a notebook. Fix: give a Jupytext .py or an .ipynb file")


def run_notebook(path: Path, *, cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
                 startup_timeout_s: float = 60.0, probe: bool = False,
                 env: dict[str, str] | None = None) -> NotebookRun:
    """Execute every code cell of ``path`` in a fresh kernel, going on after errors, and report each cell.

    A cell that runs past ``cell_timeout_s`` stops the notebook: it is reported as ``timeout`` and the cells
    after it as ``not run``. With ``probe``, each check cell is followed by a cell that tries the check's
    known-wrong answers; its report lands in the check cell's ``probe``. ``env`` is added to the kernel's environment.
    """
    path = Path(path)
    notebook = read_notebook(path)
    if probe:
        _add_probe_cells(notebook)
    stopped: tuple[CellStatus, str, str] | None = None  # (status of the cell it stopped at, ename, why)
    started = time.perf_counter()
    # Local (ipc) sockets in a private folder: no open TCP ports, and no files left in the notebook's folder.
    with tempfile.TemporaryDirectory(prefix="lumikit-kernel-") as sockets:
        manager = AsyncKernelManager(kernel_name=CURRENT_ENV_KERNEL, kernel_spec_manager=_CurrentEnvKernelSpecs(),
                                     transport="ipc", ip=os.path.join(sockets, "kernel"))
        client = NotebookClient(notebook, km=manager, timeout=cell_timeout_s, startup_timeout=startup_timeout_s,
                                allow_errors=True, interrupt_on_timeout=False, record_timing=True,
                                resources={"metadata": {"path": str(path.resolve().parent)}})
        try:
            client.execute(env={**os.environ, **(env or {})})
        except CellTimeoutError:
            stopped = ("timeout", "CellTimeoutError", f"a cell ran longer than {cell_timeout_s:g} s")
        except DeadKernelError as exc:
            stopped = ("error", "DeadKernelError", f"the kernel died ({exc})")
        except RuntimeError as exc:  # nbclient's words for a kernel that did not start in time
            stopped = ("error", "RuntimeError", f"the kernel did not start ({exc})")
        finally:
            _shutdown(client)
    elapsed = time.perf_counter() - started
    reason, pending = (stopped[2] if stopped else None), stopped
    cells: list[CellResult] = []
    number = 0
    for cell in notebook.cells:
        if PROBE_TAG in cell.metadata.get("tags", ()):
            if cells:  # attach the probe's report to the check cell it follows
                cells[-1] = replace(cells[-1], probe=_probe_report(cell))
            continue
        number += 1
        if cell.cell_type != "code":
            continue
        result = _cell_result(number, cell)
        if pending and result.status == "not run":  # the first cell that did not finish is where it stopped
            result = CellResult(number, result.tags, result.source, *pending)
            pending = None
        cells.append(result)
    return NotebookRun(path, tuple(cells), elapsed, reason)


def _add_probe_cells(notebook: nbformat.NotebookNode) -> None:
    """Insert after every check cell a cell trying the check's known-wrong answers (see :mod:`.probe`)."""
    out, answered = [], []
    for cell in notebook.cells:
        out.append(cell)
        if SOLUTION_TAG in cell.metadata.get("tags", ()):
            answered.append(cell.source)  # the solution the check's messages are held against (recipe leaks)
        if cell.cell_type == "code" and CHECK_TAG in cell.metadata.get("tags", ()):
            source = (f"__import__('lumikit.checks.instructor.probe', fromlist=['probe_cell'])"
                      f".probe_cell({cell.source!r}, solution={CELL_BREAK.join(answered)!r})")
            out.append(nbformat.v4.new_code_cell(source, metadata={"tags": [PROBE_TAG]}))
            answered = []
    notebook.cells = out


def _probe_report(cell: nbformat.NotebookNode) -> dict[str, Any]:
    """The probe cell's report, or a report of why there is none (the cell raised, or did not run)."""
    for output in cell.get("outputs", []):
        if WRONG_MIMETYPE in output.get("data", {}):
            return dict(output["data"][WRONG_MIMETYPE])
        if output.get("output_type") == "error":
            return {"exercise": "", "outcomes": [],
                    "problem": f"trying the wrong answers raised {output.get('ename')}: {output.get('evalue')}"}
    return {"exercise": "", "outcomes": [], "problem": "the wrong answers were not tried (the cell did not run)"}


def _shutdown(client: NotebookClient) -> None:
    """Stop the kernel at once (it may still be busy with a cell that timed out)."""
    manager = client.km
    if manager is not None and manager.has_kernel:
        run_sync(manager.shutdown_kernel)(now=True)


def _cell_result(number: int, cell: nbformat.NotebookNode) -> CellResult:
    tags = tuple(cell.metadata.get("tags", ()))
    timing = cell.metadata.get("execution", {})
    if "shell.execute_reply" not in timing:
        status: CellStatus = "ok" if not cell.source.strip() else "not run"
        return CellResult(number, tags, cell.source, status)
    seconds = _seconds_between(timing.get("iopub.execute_input") or timing.get("shell.execute_reply.started"),
                               timing["shell.execute_reply"])
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    passes = sum(1 for o in cell.get("outputs", []) if PASS_MIMETYPE in o.get("data", {}))
    if errors:
        return CellResult(number, tags, cell.source, "error", errors[0].get("ename"), errors[0].get("evalue"),
                          passes, seconds)
    return CellResult(number, tags, cell.source, "ok", passes=passes, seconds=seconds)


def _seconds_between(start: str | None, end: str) -> float:
    if not start:
        return 0.0
    try:
        return max(0.0, (datetime.fromisoformat(end.replace("Z", "+00:00"))
                         - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds())
    except ValueError:
        return 0.0
