"""The job-side GPU recorder: one process per node, the best SMI tool every N seconds, appended to ``gpu/<node>.jsonl``.

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

``python -m lumikit.record sample --run-dir RUN [--interval 2] [--command ... --kind generated]``
"""
from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import LumikitError
from ..smi.pm_counters import VALUE_FILES, read_counters
from ..smi.readings import FORMAT as READINGS_FORMAT
from ..smi.readings import encode, energy_counters
from ..smi.sampler import AMD_SMI_JSON, FRAME_END, NVIDIA_SMI_CSV, ROCM_SMI_JSON
from ..smi.sessions import SessionHeader, header_dict
from ..smi.tool_call import call_tool

#: The tools, best first: amd-smi (ROCm 6+, also reports an energy counter), rocm-smi, nvidia-smi.
TOOLS: tuple[tuple[str, ...], ...] = (AMD_SMI_JSON, ROCM_SMI_JSON, NVIDIA_SMI_CSV)
GPU_DIR = "gpu"
STOP_FILE = ".stop"
DEFAULT_INTERVAL_S = 2.0
#: The environment variable a launch uses to tell the job (and ``lumikit.mark``) its run folder.
RUN_DIR_ENV = "LUMIKIT_RUN_DIR"
#: The pm_counters are kept with a sample at most this often (their energies are counters: the start and end
#: readings give the totals; the samples between are for a record cut short).
PM_EVERY_S = 30.0
END_SUFFIX, END_BYTES = ".end", 2048
#: Where the job's GCDs on this node are named, best first (physical numbers, as Slurm gave them).
GPU_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


def node_name() -> str:
    """This node's name as Slurm knows it (``SLURMD_NODENAME``; lumi-sim's nodes share one host name), else the
    host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0] or "localhost"


def choose_tool(path: str | None = None) -> tuple[str, ...] | None:
    """The best SMI tool found on ``PATH`` (:data:`TOOLS` order), or None."""
    for argv in TOOLS:
        if shutil.which(argv[0], path=path):
            return argv
    return None


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


def _write_line(fd: int, obj: dict) -> None:
    """One JSON line in one ``write`` (an O_APPEND file: a kill tears at most this line)."""
    data = (json.dumps(obj, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
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


def _pm_energies(pm: Mapping[str, float]) -> dict[str, float]:
    """The energy counters of a pm_counters reading and its time (what a sample keeps)."""
    return {k: v for k, v in pm.items() if k == "time" or k == "generation" or
            (k in VALUE_FILES and k.endswith("energy"))}


class Recorder:
    """Sample ``argv`` every ``interval`` seconds into ``path`` until :meth:`stop` (or ``max_samples``)."""

    def __init__(self, run_dir: str | os.PathLike[str], *, node: str | None = None,
                 interval: float = DEFAULT_INTERVAL_S, command: Sequence[str] | None = None,
                 kind: str | None = None, site: str = "lumi", tool_path: str | None = None,
                 stream: bool = False) -> None:
        if not interval > 0:
            raise LumikitError(f"the record interval must be positive seconds, got {interval!r}")
        self.node = node or node_name()
        self.interval = float(interval)
        self.argv = tuple(command) if command else choose_tool(tool_path)
        self.kind = "absent" if self.argv is None else (kind or "recorded")
        self.site = site
        self.path = record_path(run_dir, self.node)
        #: The batch script creates it after the job's step: every node's recorder ends after its next sample.
        self.stop_file = Path(run_dir) / GPU_DIR / STOP_FILE
        self.samples = 0
        self.stream = stream and self.argv is not None
        self._proc: subprocess.Popen[str] | None = None
        self._stop = threading.Event()
        self._end_fd = -1
        self.started = time.time()
        looked = ", ".join(t[0] for t in TOOLS)
        if self.argv is None:
            description = (f"none of {looked} was found on PATH on node {self.node}: nothing was sampled, "
                           "nothing is invented")
        elif self.kind == "generated":
            description = (f"generated: a stand-in for the SMI tool on node {self.node}, which has no GPU "
                           f"({shlex.join(self.argv)}); not a reading of real hardware")
        else:
            description = f"the GPUs of node {self.node} as {self.argv[0]} printed them every {self.interval:g} s"
        gpus, gpus_from = job_gpus()
        self.header = SessionHeader(name=self.node, description=description, command=self.argv or (),
                                    interval_s=self.interval, site=site, started=self.started, kind=self.kind,
                                    source=shlex.join(self.argv) if self.argv else "", job_gpus=gpus,
                                    job_gpus_from=gpus_from, record_format=READINGS_FORMAT if self.argv else "")
        self.pm_every = max(1, round(PM_EVERY_S / self.interval))
        self.ended: str | None = None  # why writing stopped ("disk full", "write failed"), None while it goes on
        self._raw_kept = False
        self._e0: dict[int, float] | None = None  # the tool's energy counters at the first sample
        self._fd = -1
        self._end_path = Path(str(self.path) + END_SUFFIX)
        try:
            self._end_fd = os.open(self._end_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError:  # no room even for the end file: the record itself will say what it can
            self._end_fd = -1
        self._end({"state": "recording", "started": self.started})
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        head = header_line(self.header)
        pm = read_counters()
        if pm:
            head["pm_start"] = pm
        self._write(head)

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
        """Append one line; on a full disk (or another write error) stop recording and say why in the end file."""
        if self.ended:
            return False
        try:
            _write_line(self._fd, obj)
            return True
        except OSError as exc:
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            self.ended = "disk full" if full else "write failed"
            self._end({"state": self.ended, "samples": self.samples, "end": round(time.time(), 3),
                       "why": f"{os.strerror(exc.errno) if exc.errno else exc} writing {self.path.name}"})
            self._stop.set()
            return False

    def sample(self) -> None:
        """Run the tool once and append its output as a frame."""
        assert self.argv is not None
        when = time.time()
        try:  # a hung tool is killed with its children at the deadline (status 124)
            out, status = call_tool(self.argv, max(30.0, 5 * self.interval))
        except FileNotFoundError:
            out, status = "", 127
        self._frame(out, status, when)

    def _frame(self, out: str, status: int | None, when: float) -> None:
        """One sample: the numbers per GCD where the parsers read the output, else the output itself."""
        from ..smi.interpret import main_group
        from ..smi.parse import parse_smi

        assert self.argv is not None
        line: dict = {"t": round(when - self.started, 3)}
        try:
            snap = parse_smi(out, source=self.node, site=self.site)
        except LumikitError:
            line.update(exit_status=status, stdout=out, tool=self.argv[0])
        else:
            energies = energy_counters(out)
            if energies and self._e0 is None:  # counters run from the driver's start: keep them small
                self._e0 = dict(energies)
                line["e0"] = energies
            indices, rows = encode(main_group(snap), {g: j - (self._e0 or {}).get(g, 0.0)
                                                      for g, j in energies.items()})
            line["r"] = rows
            if indices is not None:
                line["i"] = indices
            if status:
                line["x"] = status
            if not self._raw_kept:
                line["raw"], self._raw_kept = out, True
        if self.samples % self.pm_every == 0:
            pm = read_counters()
            if pm:
                line["pm"] = _pm_energies(pm)
        if self._write(line):
            self.samples += 1

    def _run_stream(self, max_samples: int | None, parent: int | None) -> int:
        """One long-lived tool process that prints a reading and ``@@lumikit-sample STATUS`` per interval (the
        stand-in's ``--stream``): one start-up for the whole record."""
        assert self.argv is not None
        try:
            self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                          errors="replace", stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            self._frame("", 127, time.time())
            return self.samples
        lines: list[str] = []
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(FRAME_END):
                word = line[len(FRAME_END):].strip()
                self._frame("".join(lines), int(word) if word.lstrip("-").isdigit() else None, time.time())
                lines = []
                if self._done(max_samples, parent):
                    break
            else:
                lines.append(line)
        return self.samples

    def _done(self, max_samples: int | None, parent: int | None) -> bool:
        """Whether to stop after this sample: asked to, enough samples, the parent gone, or the stop file there."""
        return (self._stop.is_set() or (max_samples is not None and self.samples >= max_samples)
                or (parent is not None and os.getppid() != parent) or self.stop_file.exists())

    def run(self, *, max_samples: int | None = None, parent: int | None = None) -> int:
        """Sample until stopped (SIGTERM/SIGINT through :meth:`stop`, ``max_samples``, ``parent`` gone, or
        ``gpu/.stop`` created);
        returns the number of samples. An absent tool returns at once (the header says why)."""
        try:
            if self.argv is None:
                return 0
            if self.stream:
                return self._run_stream(max_samples, parent)
            next_at = time.monotonic()
            while not self._stop.is_set():
                self.sample()
                if self._done(max_samples, parent):
                    break
                next_at += self.interval
                delay = next_at - time.monotonic()
                if delay < 0:
                    next_at, delay = time.monotonic(), 0.0
                self._stop.wait(delay)
            return self.samples
        finally:
            self.close()

    def stop(self, *_: object) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # its stdout ends: the stream loop returns after the last complete reading

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._end_fd >= 0:
            if not self.ended:
                state: dict = {"state": "stopped", "samples": self.samples, "end": round(time.time(), 3)}
                pm = read_counters()
                if pm:
                    state["pm_end"] = pm
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
    s.add_argument("--command", nargs=argparse.REMAINDER, help="the tool to run (default: the best one found)")
    args = p.parse_args(argv)
    if not args.run_dir:
        p.error(f"give --run-dir or set {RUN_DIR_ENV}")
    command = [c.replace("{interval}", f"{args.interval:g}") for c in args.command or ()]
    rec = Recorder(args.run_dir, node=args.node, interval=args.interval, command=command or None,
                   kind=args.kind, site=args.site, stream=args.stream)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, rec.stop)
    rec.run(max_samples=args.max_samples, parent=os.getppid() if args.stop_with_parent else None)
    return 0
