"""Stream sources: one long-lived process printing a reading every interval (one start-up for the whole watch).

:class:`StreamSource` reads a framed stream (a reading, then a :data:`~.tools.FRAME_END` line: lumi-sim's stand-in,
or :func:`~.tools.stream_loop` over ``srun --overlap`` for a running job, see :func:`watch_job`);
:class:`NvidiaStreamSource` reads ``nvidia-smi``'s own loop (``--loop-ms``), one CSV row per GPU per reading;
:class:`AmdSmiMonitorSource` reads ``amd-smi monitor --watch``, a table row per GPU per reading.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any, Iterator, Mapping, Sequence

from ...errors import LaunchError, LumikitError
from ...site import Site
from ..amd_smi import MONITOR_HEADER
from ..parse import parse_smi
from ..readings import energy_counters
from .base import EndOfSource, Sample, UnreadOutput
from .tools import FRAME_END, ROCM_SMI_JSON, amd_smi_monitor, nvidia_stream, stream_loop


def framed(lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
    """(reading, exit status) per :data:`FRAME_END` line of a framed stream."""
    block: list[str] = []
    for line in lines:
        if line.startswith(FRAME_END):
            word = line[len(FRAME_END):].strip()
            yield "".join(block), int(word) if word.lstrip("-").isdigit() else None
            block = []
        else:
            block.append(line)


def by_gpu_rows(lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
    """(reading, None) per round of ``nvidia-smi --loop-ms`` rows: a round ends where a GPU index comes back."""
    block: list[str] = []
    seen: set[str] = set()
    for line in lines:
        cells = line.split(",")
        if len(cells) < 2 or not line.strip():
            continue
        gpu = cells[1].strip()
        if gpu in seen:
            yield "".join(block), None
            block, seen = [], set()
        seen.add(gpu)
        block.append(line)
    if block:
        yield "".join(block), None


def by_table_rounds(lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
    """(header + rows, None) per round of ``amd-smi monitor --watch``: a round ends where a GPU index comes back
    or a header line follows rows; each round gets the last header seen (whether or not the tool repeats it)."""
    header = ""
    rows: list[str] = []
    seen: set[str] = set()
    for line in lines:
        if MONITOR_HEADER.match(line):
            if rows:
                yield header + "".join(rows), None
                rows, seen = [], set()
            header = line
            continue
        first = line.split(maxsplit=1)[0] if line.strip() else ""
        if not first.isdigit() or not header:
            continue  # a blank or other line between rounds
        if first in seen:
            yield header + "".join(rows), None
            rows, seen = [], set()
        seen.add(first)
        rows.append(line)
    if rows:
        yield header + "".join(rows), None


class StreamSource:
    """One long-lived process (started at the first read) that prints a reading, then a :data:`FRAME_END` line,
    every interval: the gentle way to watch a job's node, one Slurm step for the whole watch.

    ``read`` gives the next reading (waiting at most ``timeout`` seconds); when the process ends the source is
    finished (:class:`EndOfSource`), after one :class:`LaunchError` with its stderr if it never gave a reading.
    ``cancel`` ends the process (and so its Slurm step).
    """

    how = "stream"
    paced = True
    _END = object()

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, name: str | None = None,
                 timeout: float = 120.0, site: str | Site | None = "lumi") -> None:
        if isinstance(argv, str) or not argv:
            raise LumikitError("a stream source takes an argv list, not a string")
        self.argv = [str(a) for a in argv]
        self.env = dict(env) if env is not None else None
        self.name = name or " ".join(self.argv)
        self.timeout = timeout
        self.site = site
        self.frames = 0
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._ended = False
        self._cancelled = False

    def _readings(self, lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
        return framed(lines)

    def _start(self) -> None:
        try:
            self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          errors="replace", env=self.env, start_new_session=True,
                                          stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise UnreadOutput(f"command not found: {self.argv[0]!r}; is it installed and on PATH here?", "",
                               127) from None
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        threading.Thread(target=self._read_stdout, name=f"lumikit-stream:{self.name[:40]}", daemon=True).start()

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for text, status in self._readings(iter(self._proc.stdout)):
            self._queue.put((text, status, time.time()))
        self._proc.wait()
        self._stderr_thread.join(timeout=5)  # its last lines say why the stream ended
        self._queue.put(self._END)

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.rstrip())

    def read(self) -> Sample:
        with self._lock:
            if self._cancelled or self._ended:
                raise EndOfSource(self.name)
            if self._proc is None:
                self._ended = True  # a stream that cannot start has ended: the next read says so
                self._start()
                self._ended = False
        try:
            item = self._queue.get(timeout=self.timeout)
        except queue.Empty:
            raise LaunchError(f"{self.name!r} gave no reading within {self.timeout:g} s") from None
        if item is self._END:
            self._ended = True
            code = self._proc.returncode if self._proc is not None else None
            if self.frames == 0 and code and not self._cancelled:
                tail = list(self._stderr)[-1:] or ["(no output)"]
                raise LaunchError(f"{self.name!r} ended with status {code} before its first reading: {tail[0][:300]}")
            raise EndOfSource(self.name)
        text, status, when = item
        try:
            snap = parse_smi(text, source=self.name, timestamp=when, site=self.site)
        except LumikitError as exc:
            raise UnreadOutput(str(exc), text, status) from None
        if snap.timestamp is None:
            snap = snap.with_timestamp(when)
        self.frames += 1
        return Sample(snapshot=replace(snap, exit_status=status), raw=text, exit_status=status,
                      energies=energy_counters(text))

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            proc = self._proc
        self._queue.put(self._END)
        if proc is not None and proc.poll() is None:
            self._signal(proc, signal.SIGTERM)  # srun ends its step on SIGTERM; a tool's helpers end with it
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait(timeout=10)

    @staticmethod
    def _signal(proc: subprocess.Popen[str], sig: int) -> None:
        """Signal the stream's process group (it leads its own session), else the process alone."""
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            proc.send_signal(sig)


class NvidiaStreamSource(StreamSource):
    """``nvidia-smi --query-gpu=... --format=csv,noheader --loop-ms=N``: the tool's own loop, one process in all."""

    def __init__(self, interval: float, *, tool: str = "nvidia-smi", **kwargs: Any) -> None:
        kwargs.setdefault("name", "stream: nvidia-smi --query-gpu --loop-ms")
        kwargs.setdefault("timeout", max(120.0, 4 * interval))
        super().__init__((tool, *nvidia_stream(interval)[1:]), **kwargs)

    def _readings(self, lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
        return by_gpu_rows(lines)


class AmdSmiMonitorSource(StreamSource):
    """``amd-smi monitor -p -t -u -m -v --watch N``: the tool's own loop (whole seconds), one process in all. How
    the rounds are separated on LUMI is expected, not seen: a GPU index coming back or the header again."""

    def __init__(self, interval: float, *, tool: str = "amd-smi", **kwargs: Any) -> None:
        kwargs.setdefault("name", "stream: amd-smi monitor --watch")
        kwargs.setdefault("timeout", max(120.0, 4 * interval))
        super().__init__((tool, *amd_smi_monitor(interval)[1:]), **kwargs)

    def _readings(self, lines: Iterator[str]) -> Iterator[tuple[str, int | None]]:
        return by_table_rounds(lines)


def watch_job(run: Any, *, tool: Sequence[str] | None = None, interval: float = 2.0,
              nodes: Sequence[str] | None = None) -> list[StreamSource]:
    """One stream per node of a running Slurm ``run`` (a :class:`lumikit.launch.Run`): a long-lived
    ``srun --jobid ID --overlap`` step on that node printing ``tool``'s reading every ``interval`` seconds.

    ``tool`` defaults to the site's ``[slurm] watch_command``, else ``rocm-smi --json``; ``nodes`` to every node
    of the job. Costs one query for the node list, then one step per node for the whole watch.
    """
    backend = run.backend
    if not hasattr(backend, "watch_steps"):
        raise LumikitError(f"{run.path.name} ran on the {backend.name} backend: there is no Slurm job to attach to; "
                           "watch this machine's GPUs with GpuDashboard() or `lumikit smi watch --command ...`")
    site = backend.site
    tool = list(tool or site.slurm.get("watch_command") or ROCM_SMI_JSON)
    steps = backend.watch_steps(run.folder, stream_loop(tool, interval), nodes=nodes)
    env = backend.env()
    return [StreamSource(argv, env=env, name=f"job {run.job_id} on {node}: {tool[0]}", site=site,
                         timeout=max(120.0, 4 * interval)) for node, argv in steps]


__all__ = ["AmdSmiMonitorSource", "NvidiaStreamSource", "StreamSource", "by_gpu_rows", "by_table_rounds", "framed",
           "watch_job"]
