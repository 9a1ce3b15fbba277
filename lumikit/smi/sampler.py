"""A background sampler: read a source every N seconds, keep a ring buffer, append every sample to a CSV.

Sources: a command run once per sample (``["rocm-smi", "--json"]``), a stream (one long-lived process printing a
reading per interval: on LUMI one ``srun --jobid ID --overlap`` step per node of a running job, see
:func:`watch_job`), a Python library where installed (``amdsmi``, ``pynvml``), or the replay of a session
(generated or recorded). Errors from the source become ``sampler.state == "error"`` with ``sampler.last_error``;
the thread keeps sampling. ``stop()`` wakes the thread through an Event (it never sleeps blindly), kills a command
still running, and returns within one interval.
"""
from __future__ import annotations

import csv
import json
import os
import queue
import shlex
import shutil
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..errors import LaunchError, LumikitError
from ..site import Site
from .model import DEVICE_FIELDS, DeviceReading, Snapshot
from .parse import parse_smi
from .sessions import Frame, Session, list_sessions, read_session

ROCM_SMI_JSON = ("rocm-smi", "--showtemp", "--showpower", "--showmaxpower", "--showclocks", "--showperflevel",
                 "--showuse", "--showmemuse", "--showmeminfo", "vram", "--json")
AMD_SMI_JSON = ("amd-smi", "metric", "--json")
NVIDIA_SMI_CSV = ("nvidia-smi", "--query-gpu=timestamp,index,name,pci.bus_id,temperature.gpu,power.draw,power.limit,"
                  "clocks.sm,clocks.mem,fan.speed,pstate,utilization.gpu,memory.used,memory.total", "--format=csv")
CSV_COLUMNS = ("time", "format", *DEVICE_FIELDS)


@dataclass(frozen=True)
class Sample:
    """What one read of a source gave: the snapshot, and the raw text when the source printed one."""

    snapshot: Snapshot
    raw: str | None = None
    exit_status: int | None = None


class EndOfSource(Exception):
    """A finite source (a replay) has nothing more to give."""


class Source(Protocol):
    name: str

    def read(self) -> Sample: ...

    def cancel(self) -> None: ...


class CommandSource:
    """Run a command (argv list, never a shell) and parse what it prints.

    A non-zero exit with parseable output is a good sample (rocm-smi 5 on LUMI exits 2 while printing a valid
    table); a non-zero exit with nothing parseable is an error that carries the command's stderr.
    """

    def __init__(self, argv: Sequence[str], *, timeout: float = 30.0, site: str | Site | None = "lumi") -> None:
        if isinstance(argv, str) or not argv:
            raise LumikitError("a command source takes an argv list such as ['rocm-smi', '--json'], not a string")
        self.argv = [str(a) for a in argv]
        self.name = " ".join(self.argv)
        self.timeout = timeout
        self.site = site
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def read(self) -> Sample:
        try:
            with self._lock:
                self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = self._proc.communicate(timeout=self.timeout)
        except FileNotFoundError:
            raise LaunchError(f"command not found: {self.argv[0]!r}; is it installed and on PATH here? (on LUMI, "
                              "run it on the compute node: srun --jobid <id> --overlap ...)") from None
        except subprocess.TimeoutExpired:
            self.cancel()
            raise LaunchError(f"{self.name!r} did not answer within {self.timeout:g} s") from None
        finally:
            with self._lock:
                proc, self._proc = self._proc, None
        status = proc.returncode if proc is not None else None
        try:
            snap = parse_smi(out, source=self.argv[0], timestamp=time.time(), site=self.site)
        except LumikitError as exc:
            if status:
                tail = (err or out).strip().splitlines()[-1:] or ["(no output)"]
                raise LaunchError(f"{self.name!r} exited with status {status}: {tail[0][:200]}") from None
            raise exc
        if snap.timestamp is None:
            snap = snap.with_timestamp(time.time())
        return Sample(snapshot=replace(snap, exit_status=status), raw=out, exit_status=status)

    def cancel(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()


#: The line a stream prints after each reading, with the tool's exit status: ``@@lumikit-sample 0``.
FRAME_END = "@@lumikit-sample"


def stream_loop(tool: Sequence[str], interval: float) -> list[str]:
    """A shell loop for a compute node: run ``tool``, mark the end of its reading, sleep ``interval``; forever."""
    return ["bash", "-c", f'while :; do {shlex.join(tool)}; echo "{FRAME_END} $?"; sleep {interval:g}; done']


class StreamSource:
    """One long-lived process (started at the first read) that prints a reading, then a :data:`FRAME_END` line,
    every interval: the gentle way to watch a job's node, one Slurm step for the whole watch.

    ``read`` gives the next reading (waiting at most ``timeout`` seconds); when the process ends the source is
    finished (:class:`EndOfSource`), after one :class:`LaunchError` with its stderr if it never gave a reading.
    ``cancel`` ends the process (and so its Slurm step).
    """

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

    def _start(self) -> None:
        try:
            self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env=self.env, start_new_session=True)
        except FileNotFoundError:
            raise LaunchError(f"command not found: {self.argv[0]!r}; is it installed and on PATH here?") from None
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        threading.Thread(target=self._read_stdout, name=f"lumikit-stream:{self.name[:40]}", daemon=True).start()

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        lines: list[str] = []
        for line in self._proc.stdout:
            if line.startswith(FRAME_END):
                status = line[len(FRAME_END):].strip()
                self._queue.put(("".join(lines), int(status) if status.lstrip("-").isdigit() else None, time.time()))
                lines = []
            else:
                lines.append(line)
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
                self._start()
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
        snap = parse_smi(text, source=self.name, timestamp=when, site=self.site)
        if snap.timestamp is None:
            snap = snap.with_timestamp(when)
        self.frames += 1
        return Sample(snapshot=replace(snap, exit_status=status), raw=text, exit_status=status)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            proc = self._proc
        self._queue.put(self._END)
        if proc is not None and proc.poll() is None:
            proc.terminate()  # srun ends its step on SIGTERM
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


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


class ReplaySource:
    """Replay a session (a shipped generated one, or one recorded with ``lumikit smi record``).

    ``speed=None`` gives the session's next frame on every read (deterministic, for tests and ``--count``);
    ``speed=k`` gives the frame at ``k`` times the elapsed wall time since the first read. ``loop``
    starts over at the end instead of ending.
    """

    def __init__(self, session: str | os.PathLike[str], *, speed: float | None = 1.0, loop: bool = False) -> None:
        sess = read_session(session)
        if not sess.frames:
            raise LumikitError(f"session {sess.header.name!r} has no frames to replay")
        self.session = sess
        self.name = f"replay:{sess.header.label}"
        # a run record may hold failed tool calls (nothing printed): those frames are passed over, and counted
        self.frames: list[Frame] = []
        self.snapshots: list[Snapshot] = []
        base = sess.header.started  # a run record: samples at their clock time (started + t)
        for i, fr in enumerate(sess.frames):
            try:
                snap = parse_smi(fr.stdout, source=f"{sess.header.label} frame {i}", site=sess.header.site)
            except LumikitError:
                continue
            self.frames.append(fr)
            self.snapshots.append(snap.with_timestamp(fr.t + base if base is not None else fr.t))
        self.skipped = len(sess.frames) - len(self.frames)
        if not self.frames:
            raise LumikitError(f"session {sess.header.name!r}: none of its {len(sess.frames)} frames is a reading "
                               "(every tool call failed?); nothing to replay")
        self.speed = speed
        self.loop = loop
        self._next = 0
        self._t0: float | None = None

    def _position(self) -> int:
        if self.speed is None:
            i = self._next
            self._next += 1
            return i
        now = time.monotonic()
        if self._t0 is None:
            self._t0 = now
        t = (now - self._t0) * self.speed
        span = self.frames[-1].t
        if t > span and self.loop and span > 0:
            t %= span
        elif t > span + max(self.session.header.interval_s, 1e-9):
            return len(self.snapshots)
        return max(0, max((i for i, f in enumerate(self.frames) if f.t <= t), default=0))

    def read(self) -> Sample:
        i = self._position()
        if i >= len(self.snapshots):
            if not self.loop:
                raise EndOfSource(self.name)
            i %= len(self.snapshots)
            self._next = i + 1
        frame: Frame = self.frames[i]
        return Sample(snapshot=self.snapshots[i], raw=frame.stdout, exit_status=frame.exit_status)

    def cancel(self) -> None:
        return None


class LibrarySource:
    """Read the GPUs through a Python library: ``amdsmi`` (ROCm 6+) or ``pynvml`` (NVIDIA), whichever the
    constructor is told to use; both give the same snapshot fields as the command-line tools."""

    def __init__(self, library: str) -> None:
        if library not in ("amdsmi", "pynvml"):
            raise LumikitError(f"unknown library {library!r}; use 'amdsmi' or 'pynvml'")
        try:
            self._lib = __import__(library)
        except ImportError:
            raise LumikitError(f"the Python library {library!r} is not installed here; use a command or a "
                               "replay source instead") from None
        self.library = library
        self.name = f"library:{library}"
        (self._lib.amdsmi_init if library == "amdsmi" else self._lib.nvmlInit)()

    def read(self) -> Sample:
        devices = self._read_amdsmi() if self.library == "amdsmi" else self._read_nvml()
        return Sample(snapshot=Snapshot(devices=tuple(devices), format=self.library, timestamp=time.time(),
                                        source=self.name))

    def _read_nvml(self) -> list[DeviceReading]:
        nv = self._lib
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            util = nv.nvmlDeviceGetUtilizationRates(h)
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            out.append(DeviceReading(
                index=i, temp_c=float(nv.nvmlDeviceGetTemperature(h, 0)),
                power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                power_cap_w=nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
                sclk_mhz=float(nv.nvmlDeviceGetClockInfo(h, 1)), mclk_mhz=float(nv.nvmlDeviceGetClockInfo(h, 2)),
                gpu_busy_pct=float(util.gpu), vram_used_bytes=int(mem.used), vram_total_bytes=int(mem.total),
                vram_pct=round(100.0 * mem.used / mem.total, 1) if mem.total else None))
        return out

    def _read_amdsmi(self) -> list[DeviceReading]:
        am = self._lib
        out = []
        for i, h in enumerate(am.amdsmi_get_processor_handles()):
            act = am.amdsmi_get_gpu_activity(h)
            power = am.amdsmi_get_power_info(h)
            vram = am.amdsmi_get_gpu_vram_usage(h)
            watts = power.get("average_socket_power", power.get("current_socket_power"))
            used = int(vram["vram_used"]) * 2**20
            total = int(vram["vram_total"]) * 2**20
            out.append(DeviceReading(
                index=i, power_w=float(watts) if isinstance(watts, (int, float)) else None,
                gpu_busy_pct=float(act["gfx_activity"]) if isinstance(act.get("gfx_activity"), (int, float))
                else None, vram_used_bytes=used, vram_total_bytes=total,
                vram_pct=round(100.0 * used / total, 1) if total else None))
        return out

    def cancel(self) -> None:
        return None


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


# ---- run records: the GPU record a launched run keeps in its folder (gpu/<node>.jsonl) --------------------------

#: The most bytes one poll reads from one node's file (a record grows by ~2 kB per sample; a bigger jump is
#: read over the next polls, so a huge or hostile file never stalls a notebook).
MAX_POLL_BYTES = 8 << 20


def _natural(name: str) -> list[Any]:
    """Sort key putting ``nid5002`` before ``nid10001``."""
    import re
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def record_folder(run: Any) -> Path:
    """The ``gpu/`` folder of a run (a :class:`lumikit.launch.Run`, a run folder path, or the ``gpu/`` folder)."""
    from ..record import GPU_DIR

    path = Path(getattr(run, "path", run))
    return path if path.name == GPU_DIR and not (path / GPU_DIR).is_dir() else path / GPU_DIR


def record_files(run: Any) -> dict[str, Path]:
    """``{node: file}`` of a run's GPU record (``gpu/<node>.jsonl``, see :func:`lumikit.record.record_files`),
    in node order; empty when the run has none."""
    from ..record import record_files as files

    found = {p.name[: -len(".jsonl")]: p for p in files(record_folder(run).parent)}
    return {n: found[n] for n in sorted(found, key=_natural)}


@dataclass
class _NodeTail:
    """What has been read of one node's file: where the next read starts, the header, frames and snapshots."""

    path: Path
    inode: int = -1
    offset: int = 0
    header: Any = None                              # SessionHeader once the first line is read
    frames: list[Frame] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    pending: int = 0                                # bytes of a last line not yet ended by a newline
    notes: list[str] = field(default_factory=list)
    broken: bool = False                            # not a lumikit session: read no further


class RecordTail:
    """Follow a run's GPU record: each :meth:`poll` reads only the bytes each ``gpu/<node>.jsonl`` gained since
    the last poll (no Slurm call, one ``stat`` per file when nothing changed) and parses only the new frames.

    A line not yet ended (a writer mid-line, or a job killed mid-write) waits for its newline; a damaged line in
    the middle is skipped and noted (a live view keeps going). ``snapshots(node)`` carry epoch timestamps
    (``header.started + t``) when the header has ``started``, else seconds since the start.
    """

    def __init__(self, run: Any, *, parse: bool = True) -> None:
        self.parse = parse  # False: headers and frames only (a listing), no snapshot parsed
        self.folder = record_folder(run)
        self.run_path = self.folder.parent
        self.title = f"run {self.run_path.name}"
        self._tails: dict[str, _NodeTail] = {}

    @property
    def nodes(self) -> list[str]:
        return list(self._tails)

    def poll(self) -> int:
        """Read what the record gained; returns the number of new frames over all nodes."""
        new = 0
        for node, path in record_files(self.folder).items():
            tail = self._tails.get(node)
            if tail is None:
                tail = self._tails[node] = _NodeTail(path)
            tail.path = path
            new += self._read(node, tail)
        if len(self._tails) > 1:
            self._tails = {n: self._tails[n] for n in sorted(self._tails, key=_natural)}
        return new

    def _read(self, node: str, tail: _NodeTail) -> int:
        import stat as stat_mod

        from .sessions import _frame, _header

        if tail.broken:
            return 0
        try:
            st = tail.path.stat()
        except FileNotFoundError:  # removed between listing and stat
            return 0
        if not stat_mod.S_ISREG(st.st_mode):
            tail.broken = True
            tail.notes.append(f"{tail.path}: not a regular file (a FIFO or device?); not read")
            return 0
        if st.st_ino != tail.inode or st.st_size < tail.offset:  # a new file (or one cut shorter): start over
            if tail.inode != -1:
                tail.notes.append(f"{tail.path}: replaced or cut shorter; read again from its start")
            tail.inode, tail.offset, tail.header = st.st_ino, 0, None
            tail.frames, tail.snapshots = [], []
        if st.st_size == tail.offset:
            return 0
        with tail.path.open("rb") as fh:
            fh.seek(tail.offset)
            data = fh.read(min(st.st_size - tail.offset, MAX_POLL_BYTES))
        end = data.rfind(b"\n")
        if end < 0:
            tail.pending = len(data)
            return 0
        tail.pending = len(data) - end - 1
        start_line = tail.offset
        tail.offset += end + 1
        added = 0
        for raw in data[: end + 1].split(b"\n")[:-1]:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            if tail.header is None:
                try:
                    head = json.loads(line)
                    tail.header = _header(head, tail.path, line)
                except (ValueError, RecursionError, LumikitError) as exc:
                    tail.broken = True
                    tail.notes.append(f"{tail.path}: {exc if isinstance(exc, LumikitError) else 'no JSON header'}; "
                                      "not a GPU record file")
                    return added
                continue
            frame = _frame(line)
            if frame is None:
                tail.notes.append(f"{tail.path}: a damaged line near byte {start_line} skipped ({len(line)} chars)")
                continue
            tail.frames.append(frame)
            added += 1
            if not self.parse:
                continue
            base = tail.header.started
            try:
                snap = parse_smi(frame.stdout, source=f"{node} frame {len(tail.frames) - 1}",
                                 site=tail.header.site)
            except LumikitError:
                continue  # a failed tool call (e.g. exit status 2, nothing printed): a gap in the pictures
            tail.snapshots.append(snap.with_timestamp(frame.t + base if base is not None else frame.t))
        return added

    def header(self, node: str) -> Any:
        """The node's :class:`~lumikit.smi.sessions.SessionHeader` (None before its first line is read)."""
        return self._tails[node].header

    def frames(self, node: str) -> list[Frame]:
        return self._tails[node].frames

    def snapshots(self, node: str) -> list[Snapshot]:
        """The node's parsed samples so far (frames whose tool call failed leave a gap)."""
        return self._tails[node].snapshots

    def notes(self) -> list[str]:
        """What reading had to skip, and a last line still waiting for its end."""
        out = [n for t in self._tails.values() for n in t.notes]
        out += [f"{t.path}: its last {t.pending} bytes are a line not yet ended (a writer mid-line or a killed "
                "job); the complete samples before it are shown" for t in self._tails.values() if t.pending]
        return out

    def sessions(self) -> dict[str, Session]:
        """``{node: Session}`` of what has been read (the same type every session reader returns)."""
        return {n: Session(header=t.header, frames=list(t.frames), notes=list(t.notes))
                for n, t in self._tails.items() if t.header is not None}

    def kinds(self) -> dict[str, str]:
        """``{node: kind}``: generated, recorded, or absent (no SMI tool existed on that node)."""
        return {n: t.header.kind for n, t in self._tails.items() if t.header is not None}

    def run_state(self) -> str | None:
        """The run's state from its manifest (None when unreadable): a final state means the record is complete."""
        try:
            data = json.loads((self.run_path / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        state = data.get("state") if isinstance(data, dict) else None
        return state if isinstance(state, str) else None


class StaticRecord:
    """Sessions already read (``{node: Session}``: an Omnistat export, a packed reference run) behind the same
    interface as :class:`RecordTail`, so the record dashboard shows them like a finished run's record."""

    def __init__(self, sessions: Mapping[str, Session], *, name: str = "sessions",
                 folder: str | os.PathLike[str] = ".") -> None:
        self._sessions = {n: sessions[n] for n in sorted(sessions, key=_natural)}
        self._snaps: dict[str, list[Snapshot]] = {}
        self.folder = Path(folder)
        self.run_path = Path(name)
        self.title = name
        self._read = False

    @property
    def nodes(self) -> list[str]:
        return list(self._sessions) if self._read else []

    def poll(self) -> int:
        if self._read:
            return 0
        self._read = True
        for node, sess in self._sessions.items():
            base = sess.header.started
            self._snaps[node] = [s.with_timestamp((s.timestamp or 0.0) + base if base is not None else s.timestamp)
                                 for s in sess.snapshots()]
        return sum(len(s.frames) for s in self._sessions.values())

    def header(self, node: str) -> Any:
        return self._sessions[node].header

    def frames(self, node: str) -> list[Frame]:
        return self._sessions[node].frames

    def snapshots(self, node: str) -> list[Snapshot]:
        return self._snaps.get(node, [])

    def notes(self) -> list[str]:
        return [n for s in self._sessions.values() for n in s.notes]

    def sessions(self) -> dict[str, Session]:
        return dict(self._sessions)

    def kinds(self) -> dict[str, str]:
        return {n: s.header.kind for n, s in self._sessions.items()} if self._read else {}

    def run_state(self) -> str | None:
        return None  # not a launched run: nothing to follow


def record_replay_sources(run: Any, *, speed: float | None = None) -> list["ReplaySource"]:
    """One :class:`ReplaySource` per node of a run's GPU record (nodes with samples), for ``smi watch --replay``."""
    sources = []
    for node, path in record_files(run).items():
        sess = read_session(path)
        if sess.frames:
            sources.append(ReplaySource(path, speed=speed))
    if not sources:
        raise LumikitError(f"{Path(getattr(run, 'path', run))}: no GPU record with samples (no gpu/<node>.jsonl, or "
                           "only headers: the nodes had no SMI tool); launch with the record on (the default for "
                           "jobs with GPUs) or replay a shipped session: `lumikit smi sessions`")
    return sources


def is_run_record(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a run folder (or its ``gpu/`` folder) holding a GPU record."""
    p = Path(path)
    return p.is_dir() and bool(record_files(p))


def default_runs_dir() -> Path:
    """Where ``lumikit run`` puts run folders: ``$LUMIKIT_RUNS_DIR``, else ``runs/`` of the current folder (the
    clone, where the workbook's notebooks and CLI run)."""
    return Path(os.environ.get("LUMIKIT_RUNS_DIR") or "runs")


def record_listing(runs_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One row per run folder under ``runs_dir`` that holds a GPU record: run, nodes, kind (generated /
    recorded / absent), samples per node, first sample time (epoch or None) and source."""
    base = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    for folder in folders:
        if not record_files(folder):
            continue
        tail = RecordTail(folder, parse=False)
        while tail.poll():
            pass
        headers = {n: tail.header(n) for n in tail.nodes if tail.header(n) is not None}
        starts = [h.started for h in headers.values() if h.started is not None]
        rows.append({"run": folder.name, "path": str(folder), "nodes": list(headers),
                     "kind": "/".join(sorted({h.kind for h in headers.values()})) or "unreadable",
                     "samples": {n: len(tail.frames(n)) for n in headers},
                     "started": min(starts) if starts else None,
                     "source": "; ".join(sorted({h.source for h in headers.values() if h.source})) or "-",
                     "notes": tail.notes()})
    return rows
