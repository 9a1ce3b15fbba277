"""The one small protocol every backend follows, and the handle a launch returns."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LaunchError, SlurmUnreachable
from ..files import open_regular
from ..jobs.spec import JobSpec
from ..site import Site
from .runfolder import RunFolder
from .states import is_final

if TYPE_CHECKING:
    import pandas as pd

    from ..record.card import ReportCard


def _text_only(bar: Any) -> None:
    """In a notebook tqdm draws its bar as a widget, a 20 px box when the total is unknown, which looks like an
    unticked checkbox before the run's name: hide it, so the line is text only (a terminal bar has no widget)."""
    box = getattr(bar, "container", None)
    for child in getattr(box, "children", ()):
        if type(child).__name__.endswith("Progress"):
            child.layout.display = "none"


class Backend(Protocol):
    """submit / status / cancel / tail / attach; :class:`Run` adds wait on top."""

    name: str
    site: Site

    def submit(self, spec: JobSpec, folder: RunFolder) -> str: ...
    def status(self, folder: RunFolder) -> str: ...
    def cancel(self, folder: RunFolder) -> str: ...
    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]: ...


def python_path_env(env: dict[str, str]) -> dict[str, str]:
    """Put this interpreter's folder first on PATH, so ``python`` in a job is the workbook's Python."""
    bindir = str(Path(sys.executable).parent)
    parts = env.get("PATH", "").split(os.pathsep)
    if parts[:1] != [bindir]:
        env["PATH"] = os.pathsep.join([bindir] + [p for p in parts if p != bindir])
    return env


#: The longest pause between two status queries of a Slurm job, and the shortest after the first minute.
GENTLE_POLL_S = 10.0


def next_poll(pause: float, elapsed: float) -> float:
    """The pause after ``pause`` when a wait has gone on ``elapsed`` seconds: doubled, at most
    :data:`GENTLE_POLL_S`; after the first minute at least that (one controller query per 10 s). A longer pause
    asked for stays."""
    if pause >= GENTLE_POLL_S:
        return pause
    return GENTLE_POLL_S if elapsed >= 60 else min(GENTLE_POLL_S, max(pause, 0.5) * 2)


@dataclass
class Run:
    """A launched job: its folder and its backend. Everything about it is also in ``folder/manifest.json``."""

    folder: RunFolder
    backend: Backend

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def manifest(self) -> dict:
        return self.folder.read()

    @property
    def job_id(self) -> str | None:
        return self.manifest.get("job_id")

    def status(self) -> str:
        return self.backend.status(self.folder)

    def cancel(self) -> str:
        """Cancel the job if it is still this run's and still pending or running; returns what was done, raises
        LaunchError (doing nothing) otherwise."""
        return self.backend.cancel(self.folder)

    def attach_command(self, command: list[str] | None = None) -> list[str]:
        return self.backend.attach_command(self.folder, command or ["/bin/bash"])

    def stdout(self, rank: int = 0) -> str:
        return _read(self.folder.rank_log(rank, "out"))

    def metrics(self, rank: int = 0) -> WorkloadMetrics:
        """What a course workload (``lumikit.workloads``) measured on ``rank``: per-step and per-epoch rows and
        its end-of-run summary, read from the run folder (a run still going gives the rows so far)."""
        return WorkloadMetrics.read(self.path, rank)

    def report(self, show: bool = True) -> "ReportCard":
        """The report card of the run's GPU record (:mod:`lumikit.record.card`): in a notebook a table and a small
        picture of each node's power; ``show=False`` only returns the card (``.text()``, ``.to_dict()``)."""
        from ..record.card import card_of_run

        card = card_of_run(self.path)
        if show:
            _show_card(card)
        return card

    def stderr(self, rank: int = 0) -> str:
        return _read(self.folder.rank_log(rank, "err"))

    def tail(self, lines: int = 20) -> str:
        """The last lines of every log in the run folder, each under its file name."""
        out = []
        for p in self.folder.logs():
            text = _read(p).splitlines()[-lines:]
            if text:
                out.append(f"==> {p.name} <==")
                out.extend(text)
        return "\n".join(out)

    def wait(self, timeout: float | None = None, poll: float = 1.0, progress: bool = True) -> str:
        """Follow the job until it ends (or ``timeout`` seconds pass: LaunchError); returns the final state.

        Shows a progress line (tqdm: in notebooks a widget, in terminals a bar) with the state and elapsed time.
        A backend that asks a shared controller (Slurm) is asked gently: the pause starts at ``poll`` seconds and
        doubles up to :data:`GENTLE_POLL_S`, and after the first minute it is never shorter (see
        :func:`next_poll`); a class of 50 waiting notebooks then costs the controller 5 queries a second.
        """
        from tqdm.auto import tqdm

        start = time.monotonic()
        silent_since: float | None = None  # when Slurm stopped answering (None: it answers)

        def ask() -> str | None:
            """The state, or None while the backend's controller does not answer (said once, then on the bar)."""
            nonlocal silent_since
            try:
                state = self.status()
            except SlurmUnreachable as exc:
                if silent_since is None:
                    silent_since = time.monotonic()
                    _say(f"{self.path.name}: {exc}; still waiting (the job itself may well be running)")
                return None
            if silent_since is not None:
                _say(f"{self.path.name}: Slurm answers again after {time.monotonic() - silent_since:.0f} s")
                silent_since = None
            return state

        state = ask()
        bar = tqdm(total=None, desc=f"{self.path.name}: {state or 'waiting for Slurm'}",
                   bar_format="{desc} [{elapsed}]", disable=not progress, leave=True)
        _text_only(bar)
        try:
            while state is None or not is_final(state):
                shown = state or f"Slurm not answering for {time.monotonic() - (silent_since or start):.0f} s"
                bar.set_description_str(f"{self.path.name}: {shown}")
                if timeout is not None and time.monotonic() - start > timeout:
                    known = state or "in a state Slurm could not tell (it is not answering)"
                    raise LaunchError(f"{self.path.name}: still {known} after {timeout:.0f} s; it keeps running — "
                                      f"cancel it with `lumikit cancel {self.path}` or wait longer")
                pause = poll if timeout is None else max(0.0, min(poll, start + timeout - time.monotonic()))
                while pause > 0:  # the elapsed time keeps ticking between two (rarer) queries
                    time.sleep(min(pause, 1.0))
                    pause -= 1.0
                    bar.refresh()
                state = ask()
                if getattr(self.backend, "queries_controller", False) or state is None:
                    poll = next_poll(poll, time.monotonic() - start)
            bar.set_description_str(f"{self.path.name}: {state}")
        finally:
            bar.close()
        return state

    def result(self, timeout: float | None = None, progress: bool = True) -> str:
        """Wait, and raise LaunchError with the log tail unless the job COMPLETED."""
        state = self.wait(timeout=timeout, progress=progress)
        if state != "COMPLETED":
            m = self.manifest
            why = f"exit code {m['exit_code']}" if m.get("exit_code") is not None else (m.get("reason") or "no exit code")
            raise LaunchError(f"{self.path.name} ended {state} ({why}).\n{self.tail(10)}")
        return state

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, backend={self.backend.name})"


@dataclass(frozen=True)
class WorkloadMetrics:
    """One rank's measurements: ``steps`` (one row per step: ``step``, ``loss``, ``step_time_s``...),
    ``epochs`` (one row per epoch end) and ``result`` (the summary; empty while the run is going)."""

    steps: pd.DataFrame
    epochs: pd.DataFrame
    result: dict

    @classmethod
    def read(cls, folder: Path, rank: int = 0) -> WorkloadMetrics:
        import json

        import pandas as pd

        from ..metrics import metrics_path, read_metrics, result_path

        path = metrics_path(folder, rank)
        if not path.exists():
            raise LaunchError(f"{path}: no metrics. Fix: is this the run folder of a `lumikit.workloads` job, and "
                              f"did rank {rank} start? Look at `run.tail()`.")
        steps, epochs = read_metrics(path)
        summary = result_path(folder, rank)
        result = json.loads(summary.read_text()) if summary.exists() else {}
        return cls(pd.DataFrame(steps), pd.DataFrame(epochs), result)


def _say(line: str) -> None:
    """A line about the wait itself (Slurm went silent, came back) on stderr, where the progress bar lives."""
    print(line, file=sys.stderr, flush=True)


def _show_card(card: "ReportCard") -> None:
    """Display a card: its table and picture where IPython displays them, else its text."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None  # type: ignore[assignment]
    if get_ipython is None or get_ipython() is None or card.absent:
        print(card.text())
        return
    display(card.table())
    import matplotlib.pyplot as plt

    fig = card.figure()
    display(fig)
    plt.close(fig)
    print(card.text())


#: The most of a rank's log that ``stdout``/``stderr``/``tail`` read: its end, where a long job's last lines are.
LOG_READ_LIMIT = 64 << 20


def _read(path: Path) -> str:
    """A rank's log as text ("" before the rank wrote one); a pipe or a device in its place is refused with a
    LumikitError (it could block for ever), and of a larger log only the last :data:`LOG_READ_LIMIT` bytes."""
    if not os.path.lexists(path):
        return ""
    with open_regular(path, "a rank's log file") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > LOG_READ_LIMIT:
            fh.seek(size - LOG_READ_LIMIT)
            return (f"[... the first {size - LOG_READ_LIMIT:,} bytes of {path.name} left out ...]\n"
                    + fh.read(LOG_READ_LIMIT).decode(errors="replace"))
        return fh.read().decode(errors="replace")
