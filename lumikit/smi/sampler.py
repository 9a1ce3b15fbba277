"""A background sampler: read a source every N seconds, keep a ring buffer, append every sample to a CSV.

The sources (a library in this process, a stream, a command per sample, a replay) are in
:mod:`lumikit.smi.sources`, one module each behind one interface; following a run's record is
:mod:`lumikit.smi.record_tail`. Both are re-exported here under their old names. Errors from the source become
``sampler.state == "error"`` with ``sampler.last_error``; the thread keeps sampling. ``stop()`` wakes the thread
through an Event (it never sleeps blindly), cancels what the source started, and returns within one interval.
"""
from __future__ import annotations

import csv
import os
import shutil
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import LumikitError
from .model import DEVICE_FIELDS, Snapshot
from .record_tail import (MAX_POLL_BYTES, RecordTail, StaticRecord, default_runs_dir, is_run_record, record_files,
                          record_folder, record_listing, record_replay_sources)
from .sessions import list_sessions
from .sources import (AMD_SMI_JSON, FRAME_END, NVIDIA_SMI_CSV, ROCM_SMI_JSON, CommandSource, EndOfSource,
                      LibrarySource, NvidiaStreamSource, ReplaySource, Sample, Source, StreamSource, stream_loop,
                      watch_job)

CSV_COLUMNS = ("time", "format", *DEVICE_FIELDS)


@dataclass(frozen=True)
class SourceOption:
    """A source the dashboard can offer: a label, and how to make it."""

    label: str
    make: Callable[[], Source]
    live: bool


def available_sources(*, replay_speed: float = 1.0) -> list[SourceOption]:
    """The shipped sessions (replays) and the live sources found on this machine: local rocm-smi / amd-smi /
    nvidia-smi, a stream from this session's own Slurm job (an ``srun --overlap`` step), amdsmi / pynvml. A job the
    notebook launched is watched with :func:`watch_job` (``GpuDashboard(run=run)``)."""
    opts = [SourceOption(f"replay: {n}", (lambda n=n: ReplaySource(n, speed=replay_speed, loop=True)), False)
            for n in list_sessions()]
    job = os.environ.get("SLURM_JOB_ID")
    if job and shutil.which("srun"):
        own = ("srun", f"--jobid={job}", "--overlap", "--nodes=1", "--ntasks=1", *stream_loop(ROCM_SMI_JSON, 2.0))
        opts.append(SourceOption(f"this session's own job {job}: rocm-smi --json",
                                 lambda: StreamSource(own, name=f"job {job}: rocm-smi"), True))
    for argv in (ROCM_SMI_JSON, AMD_SMI_JSON, NVIDIA_SMI_CSV):
        if shutil.which(argv[0]):
            opts.append(SourceOption(f"local: {argv[0]}", (lambda a=argv: CommandSource(a)), True))
    for lib in ("amdsmi", "pynvml"):
        try:
            __import__(lib)
        except ImportError:
            continue
        opts.append(SourceOption(f"library: {lib}", (lambda lib=lib: LibrarySource(lib)), True))
    return opts


class Sampler:
    """Read ``source`` every ``interval`` seconds in a background thread.

    Keeps the last ``capacity`` snapshots (ring buffer); with ``csv_path``, appends one row per device per
    sample and flushes (a killed process loses at most the sample being written). ``on_sample`` callbacks get
    every :class:`Sample` (e.g. a session recorder). ``state`` is ``idle``, ``running``, ``error`` (the last read
    failed: see ``last_error``; sampling goes on), ``finished`` (a replay ended) or ``stopped``.
    """

    def __init__(self, source: Source, *, interval: float = 1.0, capacity: int = 3600,
                 csv_path: str | os.PathLike[str] | None = None,
                 on_sample: Sequence[Callable[[Sample], None]] = ()) -> None:
        if interval <= 0:
            raise LumikitError(f"interval must be positive seconds, got {interval!r}")
        self.source = source
        self.interval = float(interval)
        self.buffer: deque[Snapshot] = deque(maxlen=capacity)
        self.csv_path = Path(csv_path) if csv_path is not None else None
        self.on_sample = list(on_sample)
        self.state = "idle"
        self.last_error: str | None = None
        self.samples = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- control ------------------------------------------------------------------------------------------------
    def start(self) -> "Sampler":
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self.state = "running"
        self._thread = threading.Thread(target=self._run, name=f"lumikit-sampler:{self.source.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> bool:
        """Stop sampling; returns ``True`` once the thread has ended (within one interval)."""
        self._stop.set()
        self.source.cancel()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 0.5)
            ended = not self._thread.is_alive()
        else:
            ended = True
        if self.state in ("running", "error", "idle"):
            self.state = "stopped"
        return ended

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a finite source to end (or ``timeout``); ``True`` when the thread has ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- data ---------------------------------------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        with self._lock:
            return list(self.buffer)

    def latest(self) -> Snapshot | None:
        with self._lock:
            return self.buffer[-1] if self.buffer else None

    # -- the thread ---------------------------------------------------------------------------------------------
    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                sample = self.source.read()
            except EndOfSource:
                self.state = "finished"
                return
            except Exception as exc:  # noqa: BLE001 - any source failure becomes visible state
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.state = "error"
            else:
                if self._stop.is_set():
                    break
                self._record(sample)
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # a slow source: start the next interval now, no burst of catch-up reads
                next_at, delay = time.monotonic(), 0.0
            self._stop.wait(delay)

    def _record(self, sample: Sample) -> None:
        with self._lock:
            self.buffer.append(sample.snapshot)
        self.samples += 1
        if not self._stop.is_set():  # a sample that lands while stop() runs must not undo its "stopped"
            self.state = "running"
        try:
            if self.csv_path is not None:
                append_csv(self.csv_path, sample.snapshot)
            for cb in self.on_sample:
                cb(sample)
        except Exception as exc:  # noqa: BLE001
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.state = "error"


def append_csv(path: Path, snapshot: Snapshot) -> None:
    """Append one row per device (header first when the file is new) and flush."""
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(CSV_COLUMNS)
        for d in snapshot.devices:
            w.writerow([snapshot.timestamp, snapshot.format, *("" if getattr(d, f) is None else getattr(d, f)
                                                               for f in DEVICE_FIELDS)])
        fh.flush()


__all__ = ["AMD_SMI_JSON", "CSV_COLUMNS", "CommandSource", "EndOfSource", "FRAME_END", "LibrarySource",
           "MAX_POLL_BYTES", "NVIDIA_SMI_CSV", "NvidiaStreamSource", "ROCM_SMI_JSON", "RecordTail", "ReplaySource",
           "Sample", "Sampler", "Source", "SourceOption", "StaticRecord", "StreamSource", "append_csv",
           "available_sources", "default_runs_dir", "is_run_record", "record_files", "record_folder",
           "record_listing", "record_replay_sources", "stream_loop", "watch_job"]
