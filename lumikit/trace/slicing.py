"""Cut a smaller trace (chosen steps, ranks, time window) that Perfetto opens comfortably.

The window of a step range runs from the host start of the first step to the end of the last GPU activity of the
last step (kernels finish after the host has moved on). Events overlapping the window are kept as they are, every
metadata (``M``) event and every top-level key are kept, and the result is written as Chrome trace JSON (gzip-
compressed when the name ends in ``.gz``, plain for ``.json``), atomically, never over an existing file unless asked.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import orjson

from ..errors import TraceError
from ..files import atomic_path
from .loader import Trace, load_trace
from .reader import TraceStream
from .tables import gpu_table, step_table


@dataclass(frozen=True)
class Window:
    """A time window in trace microseconds, [start, end)."""

    start: float
    end: float


def step_window(trace: Trace, rank: int, first: int, last: int) -> Window:
    """The window covering steps ``first``..``last`` of a rank, host and GPU side."""
    events = trace[rank].events
    steps = step_table(events)
    chosen = steps[(steps["step"] >= first) & (steps["step"] <= last)]
    if chosen.empty:
        raise TraceError(f"rank {rank}: no ProfilerStep in {first}-{last} (steps found: "
                         f"{', '.join(str(s) for s in steps['step']) or 'none'}); pick steps from that list")
    start, end = float(chosen["start"].min()), float(chosen["end"].max())
    gpu = gpu_table(events)
    in_steps = gpu[(gpu["step"] >= first) & (gpu["step"] <= last)]
    if not in_steps.empty:
        start = min(start, float(in_steps["ts"].min()))
        end = max(end, float(in_steps["end"].max()))
    return Window(start, end)


def _keep(ev: dict, window: Window) -> bool:
    ph = ev.get("ph")
    if ph == "M":
        return True
    ts = ev.get("ts")
    if not isinstance(ts, (int, float)):
        return False
    dur = ev.get("dur", 0) if ph == "X" else 0
    if not isinstance(dur, (int, float)):
        dur = 0
    return ts < window.end and ts + dur >= window.start


def write_slice(src: Path, out: Path, window: Window, *, force: bool = False) -> int:
    """Write the events of ``src`` that overlap ``window`` to ``out`` (gzip for ``.gz``, else plain JSON);
    returns the number of events."""
    if out.exists() and not force:
        raise TraceError(f"{out} exists; pass force=True (command line: --force) to overwrite it")
    stream = TraceStream(Path(src))
    kept = 0
    with atomic_path(out) as tmp:
        chunks = stream.chunks()
        first_chunk = next(chunks, b"")  # reading the first chunk fills the metadata written before the events
        with (gzip.open(tmp, "wb", compresslevel=6) if out.name.endswith(".gz") else open(tmp, "wb")) as fh:
            fh.write(b"{\n")
            for key, value in stream.metadata.items():
                if key not in ("traceEvents", "traceName"):
                    # spaced like Kineto, so HTA's '"rank": N' pattern finds the rank too
                    fh.write(orjson.dumps(key) + b": " + orjson.dumps(value).replace(b'"rank":', b'"rank": ') + b",\n")
            fh.write(b'"traceEvents": [\n')
            first = True
            for chunk in _chain(first_chunk, chunks):
                try:
                    events = orjson.loads(b"[" + chunk + b"]")
                except orjson.JSONDecodeError as exc:
                    raise TraceError(f"{src}: events that cannot be copied into a slice ({exc}); the file is "
                                     f"damaged: copy or record the trace again") from None
                for ev in events:
                    if isinstance(ev, dict) and _keep(ev, window):
                        fh.write((b"" if first else b",\n") + orjson.dumps(ev))
                        first = False
                        kept += 1
            fh.write(b"\n],\n" + b'"traceName": ' + orjson.dumps(str(out)) + b"\n}\n")
    return kept


def _chain(first: bytes, rest):
    if first:
        yield first
    yield from rest


def slice_trace(path: Path | str | None, out: Path | str, *, steps: tuple[int, int] | None = None,
                ranks: Iterable[int] | None = None, start_us: float | None = None, end_us: float | None = None,
                force: bool = False, rank_map: Mapping[int, str | Path] | None = None,
                trace: Trace | None = None) -> list[Path]:
    """Write a slice of a trace: steps ``(first, last)``, some ranks, and/or a window in trace µs.

    With one rank, ``out`` may be a file name ending in ``.json.gz`` (compressed) or ``.json`` (plain);
    otherwise ``out`` is a folder that gets one ``rank<N>.slice.pt.trace.json.gz`` per rank. ``trace`` reuses an
    already loaded trace. Returns the files written.
    """
    if steps is None and start_us is None and end_us is None:
        raise TraceError("nothing to cut: give steps (e.g. --steps 3-4) and/or --start-us/--end-us")
    if trace is None:
        if path is None:
            raise TraceError("slice_trace needs a trace path or a loaded trace")
        trace = load_trace(path, ranks=ranks, rank_map=rank_map)
    chosen = trace.rank_ids if ranks is None else sorted(int(r) for r in ranks)
    out = Path(out)
    single_file = len(chosen) == 1 and out.name.endswith((".json", ".json.gz"))
    written = []
    for rank in chosen:
        window = step_window(trace, rank, *steps) if steps else Window(float("-inf"), float("inf"))
        window = Window(window.start if start_us is None else max(window.start, start_us),
                        window.end if end_us is None else min(window.end, end_us))
        if window.end <= window.start:
            raise TraceError(f"rank {rank}: the window is empty ({window.start} to {window.end} µs); "
                             f"check --start-us/--end-us against the trace's timestamps")
        target = out if single_file else out / f"rank{rank}.slice.pt.trace.json.gz"
        write_slice(trace[rank].path, target, window, force=force)
        written.append(target)
    return written
