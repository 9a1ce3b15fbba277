"""``lumikit smi parse | watch | record``: the GPU views on the command line (a thin edge over lumikit.smi)."""
from __future__ import annotations

import argparse
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from .. import reference
from ..errors import LumikitError
from ..files import MAX_READ_ENV, max_read_bytes, read_text
from ..json_output import print_json
from ..text import printable
from .interpret import activity_table, interpret
from .model import Snapshot
from .parse import parse_smi
from .record_tail import default_runs_dir, is_run_record, record_listing, record_replay_sources
from .sampler import Sampler
from .sources import CommandSource, ReplaySource, Sample, Source, watch_job
from .sessions import Frame, SessionHeader, SessionWriter, read_session, session_listing


def register(subparsers: Any) -> None:
    smi = subparsers.add_parser("smi", help="parse, watch and record rocm-smi / amd-smi / nvidia-smi output")
    sub = smi.add_subparsers(dest="smi_command", required=True, metavar="ACTION")

    p = sub.add_parser("parse", help="parse one tool output into a snapshot")
    p.add_argument("file", help="a saved output of rocm-smi, amd-smi, nvidia-smi or gpu_check ('-' for stdin)")
    p.add_argument("--json", action="store_true", help="print the snapshot as JSON (a 'devices' list)")
    p.add_argument("--site", default="lumi", help="site profile for the GCD -> package pairs (default: lumi)")
    p.set_defaults(func=cmd_parse)

    w = sub.add_parser("watch", help="a refreshing table of a launched run's GPUs, a live command or a session's replay")
    w.add_argument("run", nargs="?", help="a run folder (as `lumikit run` prints it): watch that job's node(s) "
                                          "through one long-lived `srun --overlap` step per node")
    _add_source_args(w, required=False)
    w.add_argument("--node", action="append", metavar="NAME", help="with RUN: only this node (repeatable)")
    w.add_argument("--count", type=int, default=None, help="stop after this many samples")
    w.set_defaults(func=cmd_watch)

    ls = sub.add_parser("sessions", help="list the shipped sessions and the GPU records of your runs: generated or "
                                         "recorded, and their source")
    ls.add_argument("--runs", metavar="DIR", default=None,
                    help="the folder of run folders to list GPU records from (default: $LUMIKIT_RUNS_DIR or ./runs)")
    ls.set_defaults(func=cmd_sessions)

    r = sub.add_parser("record", help="record a session (raw tool output per sample) from a live source")
    _add_source_args(r)
    r.add_argument("--duration", type=float, required=True, help="seconds to record")
    r.add_argument("-o", "--output", required=True, help="the session file to write (.jsonl)")
    r.add_argument("--force", action="store_true", help="overwrite an existing file")
    r.set_defaults(func=cmd_record)


def _add_source_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument("--replay", metavar="NAME", help="a shipped session name, a session file, or a run folder "
                                                      "(replays its GPU record, every node)")
    src.add_argument("--command", metavar="'CMD ...'",
                     help="the command to run each time, e.g. 'srun --jobid 123 --overlap rocm-smi --json'")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    p.add_argument("--speed", type=float, default=None,
                   help="replay speed factor (default: one frame of the session per interval)")


def _source(args: argparse.Namespace) -> Source:
    if args.replay:
        return ReplaySource(args.replay, speed=args.speed)
    argv = shlex.split(args.command)
    if not argv:
        raise LumikitError("--command is empty; give the tool to run, e.g. --command 'rocm-smi --json'")
    return CommandSource(argv)


def cmd_parse(args: argparse.Namespace) -> int:
    if args.file == "-":
        limit = max_read_bytes()  # `< /dev/zero` never ends: read at most the limit
        data = getattr(sys.stdin, "buffer", sys.stdin).read(limit + 1)
        if len(data) > limit:
            raise LumikitError(f"<stdin>: more than {limit >> 20} MB, the limit for input read whole; save the "
                               f"output to a file, or raise the limit with {MAX_READ_ENV}")
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        source = "<stdin>"
    else:
        path = Path(args.file)
        text = read_text(path, "the path of a saved rocm-smi / amd-smi / nvidia-smi output")
        source = str(path)
    snap = parse_smi(text, source=source, site=args.site)
    if args.json:
        print_json(snap.to_dict())
    else:
        print(format_table(snap))
    return 0


def _cell(v: Any, fmt: str = "{:.0f}", unit: str = "") -> str:
    return "-" if v is None else (fmt.format(v) + unit if isinstance(v, (int, float)) else str(v))


def when(timestamp: float | None) -> str:
    """``  at 2025-11-25 12:00:04 CET`` for an epoch time (this machine's zone), ``  t=4.0 s`` for seconds since a
    session's start, nothing when unknown: never epoch seconds."""
    if timestamp is None:
        return ""
    if timestamp < 1e8:
        return f"  t={timestamp:.1f} s"
    return f"  at {clock_time(timestamp)}"


def clock_time(epoch: float) -> str:
    """``2025-11-25 12:00:04 CET``: an epoch time as this machine's clock reads it."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(epoch))


def format_table(snap: Snapshot) -> str:
    """A plain table of one snapshot plus its findings (what ``watch`` prints each time)."""
    act = {r["index"]: r for r in activity_table(snap)}
    head = f"{'task':>4} {'GCD':>3} {'pkg':>3} {'temp':>6} {'power':>7} {'sclk':>8} {'busy':>5} {'vram':>5}  activity"
    lines = [f"{snap.format}  {printable(snap.source)}{when(snap.timestamp)}", head]
    for d in snap.devices:
        a = printable(act.get(d.index, {}).get("activity", ""))
        lines.append(f"{_cell(d.task):>4} {d.index:>3} {_cell(d.package):>3} {_cell(d.temp_c, unit='C'):>6} "
                     f"{_cell(d.power_w, unit='W'):>7} {_cell(d.sclk_mhz, unit='MHz'):>8} "
                     f"{_cell(d.gpu_busy_pct, unit='%'):>5} {_cell(d.vram_pct, unit='%'):>5}  {a}")
    for note in snap.notes:
        lines.append(f"note: {printable(note)}")
    for f in interpret(snap):
        lines.append(f"finding [{f.kind}]: {printable(f.message)}")
    return "\n".join(lines)


def _run(sampler: Sampler, done: threading.Event, duration: float | None) -> None:
    """Run the sampler until ``done`` is set, the source ends, ``duration`` seconds pass or Ctrl-C."""
    deadline = None if duration is None else time.monotonic() + duration
    sampler.start()
    try:
        while sampler.running:
            left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if left <= 0 or done.wait(left):
                break
    except KeyboardInterrupt:
        pass
    finally:
        sampler.stop()


def _run_sources(args: argparse.Namespace) -> list[Source]:
    """``watch RUN``: one stream per node of that run's job (see :func:`lumikit.smi.sampler.watch_job`)."""
    from ..launch import open_run

    if args.replay or args.command:
        raise LumikitError("give a run folder, or --replay, or --command: one source at a time")
    return watch_job(open_run(args.run), interval=args.interval, nodes=args.node)


def cmd_watch(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    clear = stream.isatty()
    done = threading.Event()
    shown = [0]
    lock = threading.Lock()
    if getattr(args, "run", None):
        sources = _run_sources(args)
    elif args.replay and is_run_record(args.replay):
        sources = list(record_replay_sources(args.replay, speed=args.speed))
        for src in sources:
            h = src.session.header
            stream.write(f"replaying the GPU record of {Path(args.replay).resolve().name}, node {h.name}: "
                         f"{h.kind}, {len(src.session.frames)} samples"
                         f"{'' if h.started is None else ' from ' + clock_time(h.started)}; source: "
                         f"{h.source or '-'}\n")
        stream.write("\n")
    elif args.replay:
        sources = [_source(args)]
        h = sources[0].session.header
        stream.write(f"replaying session {printable(h.name)}: {h.kind}, {len(sources[0].frames)} frames; source: "
                     f"{printable(h.source or '-')}\n\n")
    elif args.command:
        sources = [_source(args)]
    else:
        raise LumikitError("nothing to watch: give a run folder, --replay NAME or --command 'rocm-smi --json'")

    notes_shown: set[str] = set()

    def show(sample: Sample) -> None:
        with lock:
            if args.count is not None and shown[0] >= args.count * len(sources):
                return  # a sampler thread got one more in before the watch stopped: --count means count
            if clear and len(sources) == 1:
                stream.write("\x1b[H\x1b[2J")
            table = format_table(sample.snapshot).split("\n")
            if not clear:  # a scrolling log says each note once; a refreshing screen keeps it in view
                table = [line for line in table if not (line.startswith("note: ") and line in notes_shown)]
                notes_shown.update(line for line in table if line.startswith("note: "))
            stream.write("\n".join(table) + "\n\n")
            stream.flush()
            shown[0] += 1
            if args.count is not None and shown[0] >= args.count * len(sources):
                done.set()

    samplers = [Sampler(src, interval=args.interval, on_sample=[show]) for src in sources]
    for extra in samplers[1:]:
        extra.start()
    try:
        _run(samplers[0], done, None)
    finally:
        for extra in samplers[1:]:
            extra.stop()
    errors = [s.last_error for s in samplers if s.last_error]
    if shown[0] == 0 and errors:
        raise LumikitError(f"no sample could be read: {errors[0]}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    """Print each shipped session with its kind (generated / recorded), size, format and source."""
    for row in session_listing():
        print(f"{row['name']:<22} {row['kind']:<10} {row['samples']:>4} samples  {row['format']:<17} "
              f"{row['description']}")
        print(f"{'':<22} source: {row['source']}")
    print("\nreal single outputs to compare with (lumikit.reference):")
    for ref in reference.catalogue():
        if ref.kind in ("rocm-smi", "amd-smi"):
            print(f"{ref.name:<22} real       1 sample   {ref.what}")
            print(f"{'':<22} source: {ref.source_line}")
    runs_dir = Path(args.runs) if getattr(args, "runs", None) else default_runs_dir()
    rows = record_listing(runs_dir)
    print(f"\nGPU records of runs in {runs_dir}/ (replay one with `lumikit smi watch --replay RUN`):")
    if not rows:
        print("  none (a run launched with GPUs keeps one in its gpu/ folder)")
    for row in rows:
        samples = ", ".join(f"{n} {k}" for n, k in row["samples"].items())
        print(f"{row['run']:<40} {row['kind']:<10} {len(row['nodes'])} nodes ({samples} samples){when(row['started'])}")
        print(f"{'':<40} source: {row['source']}")
        for note in row["notes"][:3]:
            print(f"{'':<40} note: {note}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    source = _source(args)
    command = tuple(shlex.split(args.command)) if args.command else ("replay", args.replay)
    if args.replay:  # a copy of a replay is what it replays: generated stays generated
        replayed = read_session(args.replay).header
        kind, origin = replayed.kind, f"replay of {replayed.name}: {replayed.source}"
    else:
        kind, origin = "recorded", f"recorded from `{' '.join(command)}`"
    header = SessionHeader(name=Path(args.output).name.split(".")[0], description=f"{kind}: {origin}",
                           command=command, interval_s=args.interval, kind=kind, source=origin)
    writer = SessionWriter(args.output, header, force=args.force)
    t0: list[float] = []

    def keep(sample: Sample) -> None:
        if sample.raw is None:
            raise LumikitError(f"{source.name} gives no raw text to record; record a command instead")
        ts = sample.snapshot.timestamp or 0.0
        if not t0:
            t0.append(ts)
        writer.add(Frame(t=ts - t0[0], stdout=sample.raw, exit_status=sample.exit_status))

    sampler = Sampler(source, interval=args.interval, on_sample=[keep])
    _run(sampler, threading.Event(), args.duration)
    path = writer.close()
    print(f"wrote {writer.frames} samples to {path}" + (f" (last error: {sampler.last_error})"
                                                        if sampler.last_error else ""))
    return 0 if writer.frames else 1
