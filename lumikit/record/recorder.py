"""The job-side GPU recorder: one process per node, the GPUs read every N seconds, appended to ``gpu/<node>.jsonl``.

It writes, it never interprets: after a :class:`SessionHeader` line (``record_format = "lumikit-readings-1"``,
the GCDs Slurm gave the job, LUMI's ``/sys/cray/pm_counters`` at the start), each line is one sample as parsed
numbers per GCD (:mod:`lumikit.smi.readings`: about 300 bytes for 8 GCDs, where ``amd-smi metric --json``
prints about 40 kB), the first one with the tool's raw output kept for provenance; a tool output the parsers do not
read is kept raw (``{"t", "exit_status", "stdout"}``), so nothing is lost. The pm_counters are sampled every
:data:`PM_EVERY_S` seconds. Each line goes out in one ``write`` call (at most the last one is torn by a kill).
``gpu/<node>.jsonl.end``, written at the start at a fixed size and rewritten in place at the end (so a full disk
cannot stop that), says how the record ended: ``stopped``, ``disk full`` or ``write failed``, with the last
pm_counters reading; ``recording`` there after the job ended means the recorder was killed. Where no tool exists
the file holds the header alone with ``kind = "absent"`` and which tools were looked for on which node.

The GPUs are read through the cheapest source found (:mod:`lumikit.smi.sources`): the amdsmi (or pynvml) library in
this process, else a stream, else the tool started per sample, with the interval raised to its run time; the
header's ``sampler`` and ``source`` say which, and the interval is never below 0.5 s.

``python -m lumikit.record sample --run-dir RUN [--interval 2] [--library MODULE] [--command ... --kind generated]``
"""
from __future__ import annotations

import errno
import importlib
import json
import math
import os
import shlex
import signal
import socket
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Mapping, Sequence

from ..errors import LumikitError
from ..smi.readings import FORMAT as READINGS_FORMAT
from ..smi.readings import encode
from ..smi.record_layout import GPU_DIR
from ..smi.sessions import SessionHeader, header_dict
from ..smi.sources import (MIN_INTERVAL_S, TOOLS, EndOfSource, PmCountersSource, Sample, Source, UnreadOutput,
                           choose_source, find_tool)

#: The most of a tool's raw output one sample keeps (rocm-smi's fullest view prints about 40 kB), the raw output a
#: whole record keeps before each sample keeps only its first :data:`RAW_SMALL_CHARS`.
RAW_SAMPLE_CHARS, RAW_TOTAL_CHARS, RAW_SMALL_CHARS = 256 * 1024, 16 << 20, 4096

STOP_FILE = ".stop"
#: How often a recorder looks for the stop file while a sample is under way, and how long it then lets that sample
#: finish before ending a call that hangs (a tool call on LUMI takes 0.5-3 s).
STOP_POLL_S, STOP_GRACE_S = 0.2, 5.0
DEFAULT_INTERVAL_S = 2.0
#: The environment variable a launch uses to tell the job (and ``lumikit.mark``) its run folder.
RUN_DIR_ENV = "LUMIKIT_RUN_DIR"
#: The pm_counters are kept with a sample at most this often (their energies are counters: the start and end
#: readings give the totals; the samples between are for a record cut short).
PM_EVERY_S = 30.0
END_SUFFIX, END_BYTES = ".end", 2048
#: Blanks kept after the header's JSON, so notes found at the first sample fit when it is rewritten in place.
HEADER_ROOM = 1024
#: Where the job's GCDs on this node are named, best first (physical numbers, as Slurm gave them).
GPU_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


def node_name() -> str:
    """This node's name as Slurm knows it (``SLURMD_NODENAME``; lumi-sim's nodes share one host name), else the
    host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0] or "localhost"


def choose_tool(path: str | None = None) -> tuple[str, ...] | None:
    """The best SMI tool found on ``PATH`` (:data:`TOOLS` order), or None (the per-call last resort: the
    recorder first tries a library and a stream, :func:`lumikit.smi.sources.choose_source`)."""
    return find_tool(path)


def record_path(run_dir: str | os.PathLike[str], node: str) -> Path:
    """``RUN/gpu/<node>.jsonl``; a second recording of the same node (a requeued job) gets ``<node>.2.jsonl``."""
    folder = Path(run_dir) / GPU_DIR
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in node) or "node"
    path, n = folder / f"{safe}.jsonl", 1
    while path.exists():
        n += 1
        path = folder / f"{safe}.{n}.jsonl"
    return path


def _line(obj: dict) -> bytes:
    """One record line: compact JSON, keys sorted, no NaN, a newline."""
    return (json.dumps(obj, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


def _write_line(fd: int, obj: dict) -> None:
    """One JSON line in one ``write`` (an O_APPEND file: a kill tears at most this line)."""
    data = _line(obj)
    while data:
        data = data[os.write(fd, data):]


def header_line(header: SessionHeader) -> dict:
    return header_dict(header)


def job_gpus(env: Mapping[str, str] | None = None) -> tuple[tuple[int, ...], str]:
    """The node's GCDs Slurm gave the job (``"4,5"``, ``"0-3"``) and the variable they came from; ((), "")."""
    env = os.environ if env is None else env
    for name in GPU_VARIABLES:
        raw = env.get(name, "").strip()
        out: list[int] = []
        for part in raw.split(","):
            lo, _, hi = part.strip().partition("-")
            if lo.isdigit() and (not hi or hi.isdigit()):
                out.extend(range(int(lo), int(hi or lo) + 1))
            else:
                out = []
                break
        if out:
            return tuple(sorted(set(out))), name
    return (), ""


class Recorder:
    """Sample this node's GPUs every ``interval`` seconds into ``path`` until :meth:`stop` (or ``max_samples``).

    The source is ``source`` where given, else the cheapest found (:func:`lumikit.smi.sources.choose_source`:
    ``command`` where given, else the amdsmi / pynvml library in this process, else a stream, else a tool per
    sample). The interval is at least :data:`MIN_INTERVAL_S`; a tool started per sample is timed once at the
    start and the interval raised to at least its run time. The header says which source was used and why the
    interval is what it is (``sampler``: how, name, notes; the notes are in ``description`` too).
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, node: str | None = None,
                 interval: float = DEFAULT_INTERVAL_S, command: Sequence[str] | None = None,
                 kind: str | None = None, site: str = "lumi", tool_path: str | None = None,
                 stream: bool = False, source: Source | None = None, library: ModuleType | None = None) -> None:
        if not (isinstance(interval, (int, float)) and interval > 0 and math.isfinite(interval)):
            raise LumikitError(f"the record interval must be positive seconds, got {interval!r}")
        self.node = node or node_name()
        self.asked_interval = float(interval)
        self.interval = max(self.asked_interval, MIN_INTERVAL_S)
        self.notes: list[str] = []
        if self.asked_interval < MIN_INTERVAL_S:
            self.notes.append(f"interval {self.asked_interval:g} s asked; sampled every {MIN_INTERVAL_S:g} s, "
                              "the recorder's floor")
        self.source: Source | None = source if source is not None else choose_source(
            command, stream=stream, interval=self.interval, site=site, path=tool_path, module=library)
        self.argv: tuple[str, ...] = tuple(getattr(self.source, "argv", ()))
        generated = "generated" in getattr(self.source, "name", "")
        self.kind = "absent" if self.source is None else (kind or ("generated" if generated else "recorded"))
        self.site = site
        self.path = record_path(run_dir, self.node)
        #: The batch script creates it after the job's step: every node's recorder ends after its next sample.
        self.stop_file = Path(run_dir) / GPU_DIR / STOP_FILE
        self.samples = 0
        self.stream = self.source is not None and self.source.paced
        self.pm = PmCountersSource()
        self._stop = threading.Event()
        self._end_fd = -1
        self.started = time.time()
        #: A tool started per sample is timed at its first call (then the header is amended in place).
        self._untimed = self.source is not None and self.source.how == "per-call"
        self.header = self._header()
        self.pm_every = max(1, round(PM_EVERY_S / self.interval))
        self.ended: str | None = None  # why writing stopped ("disk full", "write failed"), None while it goes on
        self._raw_kept = False
        self._raw_chars = 0  # characters of the tools' raw output kept so far (see _capped)
        self._e0: dict[int, float] | None = None  # the source's energy counters at the first sample
        self._fd = -1
        self._end_path = Path(str(self.path) + END_SUFFIX)
        try:
            self._end_fd = os.open(self._end_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError:  # no room even for the end file: the record itself will say what it can
            self._end_fd = -1
        self._end({"state": "recording", "started": self.started})
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._pm_start = dict(self.pm.read().counters or {})
        head = self._head_bytes()
        # room for the notes of the first call's timing: the header is rewritten in place, never moved
        self._head_size = len(head) + HEADER_ROOM
        self._write_raw(head.ljust(self._head_size) + b"\n")

    def _head_bytes(self) -> bytes:
        """The header line's JSON (without its newline): the session header, the sampler, pm_counters at start."""
        head = header_line(self.header)
        if self.source is not None:
            head["sampler"] = {"how": self.source.how, "name": self.source.name,
                               "interval_asked_s": self.asked_interval, "notes": self.notes}
        if self._pm_start:
            head["pm_start"] = self._pm_start
        return _line(head)[:-1]

    def _time_the_tool(self) -> None:
        """After a per-call tool's first call: raise the interval to its run time and say so in the header."""
        self._untimed = False
        took = getattr(self.source, "last_run_s", None) or 0.0
        self.notes.append(f"{self.argv[0] if self.argv else 'the tool'} is started once per sample (no library "
                          f"or stream here); one call took {took:.2f} s")
        if took > self.interval:
            raised = math.ceil(took * 10) / 10
            self.notes.append(f"interval raised from {self.interval:g} s to {raised:g} s: a tool started per "
                              "sample cannot sample faster than it runs")
            self.interval = raised
            self.pm_every = max(1, round(PM_EVERY_S / self.interval))
        self.header = self._header()
        data = self._head_bytes()
        if len(data) > self._head_size:
            return  # no room (cannot happen with the notes above): the first header stays
        try:
            fd = os.open(self.path, os.O_WRONLY)  # not O_APPEND: pwrite there would append on Linux
            try:
                os.pwrite(fd, data.ljust(self._head_size), 0)
            finally:
                os.close(fd)
        except OSError:
            pass  # the header written at the start stays; the samples' times still show the pace

    def _header(self) -> SessionHeader:
        """The record's first line: what was sampled, how, and which GCDs are the job's."""
        src = self.source
        if src is None:
            description = (f"none of {', '.join(t[0] for t in TOOLS)} was found on PATH on node {self.node}, and "
                           "neither the amdsmi nor the pynvml Python library started: nothing was sampled, "
                           "nothing is invented")
            source = ""
        else:
            source = shlex.join(self.argv) if self.argv and src.how != "library" else src.name
            what = self.argv[0] if self.argv else src.name
            if self.kind == "generated":
                description = (f"generated: a stand-in for the GPUs of node {self.node}, which has no GPU "
                               f"({source}); not a reading of real hardware")
            else:
                description = f"the GPUs of node {self.node} as {what} gave them every {self.interval:g} s"
            if self.notes:
                description += "; " + "; ".join(self.notes)
        gpus, gpus_from = job_gpus()
        return SessionHeader(name=self.node, description=description, command=self.argv, interval_s=self.interval,
                             site=self.site, started=self.started, kind=self.kind, source=source, job_gpus=gpus,
                             job_gpus_from=gpus_from, record_format=READINGS_FORMAT if src is not None else "")

    def _end(self, state: dict) -> None:
        """Rewrite the end file in place (its bytes were written at the start: a full disk cannot stop this)."""
        data = json.dumps(state, sort_keys=True, allow_nan=False).encode()[:END_BYTES]
        if self._end_fd < 0:
            return
        try:
            os.pwrite(self._end_fd, data.ljust(END_BYTES), 0)
        except OSError:
            pass  # nothing else can be said; the card then finds "recording" and says the recorder did not end

    def _write(self, obj: dict) -> bool:
        """Append one JSON line (see :meth:`_write_raw`)."""
        return self._write_raw(_line(obj))

    def _write_raw(self, data: bytes) -> bool:
        """Append one line in one ``write``; on a full disk (or another write error) stop recording and say why in
        the end file."""
        if self.ended:
            return False
        try:
            while data:
                data = data[os.write(self._fd, data):]
            return True
        except OSError as exc:
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            self.ended = "disk full" if full else "write failed"
            self._end({"state": self.ended, "samples": self.samples, "end": round(time.time(), 3),
                       "why": f"{os.strerror(exc.errno) if exc.errno else exc} writing {self.path.name}"})
            self._stop.set()
            return False

    def _read(self) -> Sample | Exception:
        """The source's next sample, or what went wrong (kept as a line: a tool's unread output, an error)."""
        assert self.source is not None
        try:
            return self.source.read()
        except EndOfSource:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the source becomes a line in the record
            return exc

    def sample(self) -> None:
        """Read the source once and append the sample (raises :class:`EndOfSource` when a stream has ended)."""
        when = time.time()
        item = self._read()
        if self.source is not None and self.source.paced:
            when = time.time()  # a stream's reading: when it arrived (the read waited for it)
        if self._untimed:
            self._time_the_tool()
        if isinstance(item, Exception) and self._stop.is_set():
            return  # a call ended by the stop itself (see _watch_stop): not a reading of the GPUs
        self._frame(item, when)

    def _frame(self, item: Sample | Exception, when: float) -> None:
        """One sample: the numbers per GCD where the source read them, else what the tool printed."""
        from ..smi.interpret import main_group

        line: dict = {"t": round(when - self.started, 3)}
        if isinstance(item, Exception):
            line.update(exit_status=getattr(item, "exit_status", None), stdout=self._capped(getattr(item, "raw", "")),
                        tool=self.argv[0] if self.argv else getattr(self.source, "name", ""))
            if not isinstance(item, UnreadOutput):
                line["error"] = f"{type(item).__name__}: {item}"[:300]
        else:
            energies = dict(item.energies or {})
            if energies and self._e0 is None:  # counters run from the driver's start: keep them small
                self._e0 = dict(energies)
                line["e0"] = energies
            indices, rows = encode(main_group(item.snapshot), {g: j - (self._e0 or {}).get(g, 0.0)
                                                               for g, j in energies.items()})
            line["r"] = rows
            if indices is not None:
                line["i"] = indices
            if item.exit_status:
                line["x"] = item.exit_status
            if not self._raw_kept and item.raw is not None:
                line["raw"], self._raw_kept = self._capped(item.raw), True
        if self.samples % self.pm_every == 0:
            pm = self.pm.read_energies()
            if pm:
                line["pm"] = pm
        if self._write(line):
            self.samples += 1

    def _capped(self, text: str | None) -> str:
        """A tool's raw output as the record keeps it: whole up to :data:`RAW_SAMPLE_CHARS` per sample until the
        record holds :data:`RAW_TOTAL_CHARS` of it, then its first :data:`RAW_SMALL_CHARS`, with a note of what
        was left out (a runaway tool printing megabytes a call once grew a record to 640 MB in 6 s)."""
        text = text or ""
        cap = RAW_SAMPLE_CHARS if self._raw_chars < RAW_TOTAL_CHARS else RAW_SMALL_CHARS
        kept = text if len(text) <= cap else (text[:cap] + f"\n[... {len(text) - cap:,} more characters left out: "
                                                            f"the record keeps at most {cap:,} of a tool's output]")
        self._raw_chars += len(kept)
        return kept

    def _done(self, max_samples: int | None, parent: int | None) -> bool:
        """Whether to stop after this sample: asked to, enough samples, the parent gone, or the stop file there."""
        return (self._stop.is_set() or (max_samples is not None and self.samples >= max_samples)
                or (parent is not None and os.getppid() != parent) or self.stop_file.exists())

    def run(self, *, max_samples: int | None = None, parent: int | None = None) -> int:
        """Sample until stopped (SIGTERM/SIGINT through :meth:`stop`, ``max_samples``, ``parent`` gone, or
        ``gpu/.stop`` created); returns the number of samples. An absent source returns at once (the header
        says why); a stream is read as fast as it gives readings (it keeps its own interval)."""
        try:
            if self.source is None:
                return 0
            threading.Thread(target=self._watch_stop, args=(parent,), daemon=True,
                             name="lumikit-record-stop").start()
            next_at = time.monotonic()
            while not self._stop.is_set():
                try:
                    self.sample()
                except EndOfSource:
                    break
                if self._done(max_samples, parent):
                    break
                if self.source.paced:
                    continue
                next_at += self.interval
                delay = next_at - time.monotonic()
                if delay < 0:
                    next_at, delay = time.monotonic(), 0.0
                self._stop.wait(delay)
            return self.samples
        finally:
            self._stop.set()  # the stop watcher ends with the loop
            self.close()

    def _watch_stop(self, parent: int | None) -> None:
        """Once the stop file appears (or the parent ends), give the sample under way :data:`STOP_GRACE_S` to end
        (the loop then stops after it, as always), then end a call that still hangs: a hung SMI tool would
        otherwise hold the job's end until the call's own time limit (a 5 s job ended at 18 s on lumi-sim)."""
        while not self._stop.wait(STOP_POLL_S):
            if self.stop_file.exists() or (parent is not None and os.getppid() != parent):
                if self._stop.wait(STOP_GRACE_S):
                    return  # the loop ended by itself after its sample
                self._stop.set()
                if self.source is not None:
                    self.source.cancel()
                return

    def stop(self, *_: object) -> None:
        self._stop.set()
        if self.source is not None and self.source.paced:
            self.source.cancel()  # its stdout ends: the loop returns after the last complete reading

    def close(self) -> None:
        if self.source is not None:
            self.source.cancel()
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._end_fd >= 0:
            if not self.ended:
                state: dict = {"state": "stopped", "samples": self.samples, "end": round(time.time(), 3)}
                pm = self.pm.read().counters
                if pm:
                    state["pm_end"] = dict(pm)
                self._end(state)
            os.close(self._end_fd)
            self._end_fd = -1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lumikit.record sample --run-dir RUN [--interval S] [--kind K] [--command TOOL ARGS...]``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m lumikit.record", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sample", help="record this node's GPUs into RUN/gpu/<node>.jsonl until stopped")
    s.add_argument("--run-dir", default=os.environ.get(RUN_DIR_ENV), help=f"the run folder (default: ${RUN_DIR_ENV})")
    s.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S)
    s.add_argument("--node", help="the node's name (default: $SLURMD_NODENAME, else the host name)")
    s.add_argument("--site", default="lumi")
    s.add_argument("--kind", choices=("recorded", "generated"),
                   help="what the tool's readings are (default: recorded; a stand-in's are generated)")
    s.add_argument("--max-samples", type=int)
    s.add_argument("--stop-with-parent", action="store_true", help="stop when the process that started this ends")
    s.add_argument("--stream", action="store_true",
                   help="the command is a stream: it prints a reading and '@@lumikit-sample STATUS' per interval "
                        "({interval} in it becomes --interval)")
    s.add_argument("--library", metavar="MODULE",
                   help="read the GPUs through this Python module with amdsmi's API (a stand-in such as "
                        "lumikit.testing.fake_amdsmi; default: amdsmi itself where it can be imported)")
    s.add_argument("--command", nargs=argparse.REMAINDER,
                   help="the tool to run (default: a library, a stream or a tool found here, cheapest first)")
    args = p.parse_args(argv)
    if not args.run_dir:
        p.error(f"give --run-dir or set {RUN_DIR_ENV}")
    library = None
    if args.library:
        try:
            library = importlib.import_module(args.library)
        except ImportError as exc:
            p.error(f"--library {args.library}: cannot be imported ({exc}); give a module with amdsmi's API")
    every = max(args.interval, MIN_INTERVAL_S) if args.interval > 0 else args.interval
    command = [c.replace("{interval}", f"{every:g}") for c in args.command or ()]
    try:
        rec = Recorder(args.run_dir, node=args.node, interval=args.interval, command=command or None,
                       kind=args.kind, site=args.site, stream=args.stream, library=library)
    except LumikitError as exc:
        p.error(str(exc))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, rec.stop)
    rec.run(max_samples=args.max_samples, parent=os.getppid() if args.stop_with_parent else None)
    return 0
