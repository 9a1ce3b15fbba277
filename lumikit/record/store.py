"""Reading a node's GPU record one line at a time, in either form it was written in, and its end-state file.

Lines: a header (:class:`~lumikit.smi.sessions.SessionHeader`), then samples, either compact
(``{"t", "r", "i"?, "x"?, "pm"?, "raw"?}``, :mod:`lumikit.smi.readings`) or as the tool printed them (``{"t",
"exit_status", "stdout"}``, records written before ``record_format`` existed). :meth:`RecordFile.chunks` yields
them as blocks of numbers and never holds the file in memory, so a record of any size is read (never refused).

``gpu/<node>.jsonl.end`` (written by the recorder, a fixed size, rewritten in place so that a full disk cannot
stop it): ``{"state": "recording" | "stopped" | "disk full" | "write failed", ...}``; a record whose end file still
says ``recording`` after the job ended was not stopped cleanly (a killed recorder).
"""
from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import LumikitError, ParseError
from ..files import load_json_bounded, open_regular, read_bytes
from ..smi.readings import COLUMNS, decode, encode, energy_counters
from ..smi.sessions import SessionHeader, _header
from .recorder import END_BYTES, END_SUFFIX

MAX_LINE_BYTES = 64 * 2**20  # far above one tool output (amd-smi metric --json of 8 GCDs: about 40 kB)
#: The longest header line read (the recorder's is a few kB, padded by HEADER_ROOM): a longer first line is no
#: record (a 3 GB file of zeros is refused after reading this much, not 64 MB).
MAX_HEADER_BYTES = 2**20
#: pm_counters readings beyond this magnitude are dropped as damaged (a node's energy counter in joules stays
#: below 1e15 for centuries).
MAX_PM_VALUE = 1e18

Decoded = list[tuple[int, tuple[float | None, ...]]]


@dataclass
class Sample:
    """One sample as numbers: seconds since the record started, the tool's exit status, per device the values
    of :data:`lumikit.smi.readings.COLUMNS`, and the pm_counters readings taken with it (or None)."""

    t: float
    status: int | None
    devices: Decoded
    pm: dict[str, float] | None = None


@dataclass
class Chunk:
    """A block of consecutive samples with the same devices, as lists ready for one ``numpy.array`` call: times,
    device numbers, per sample per device the :data:`~lumikit.smi.readings.COLUMNS` values (None: not printed),
    and the pm_counters readings taken with them."""

    ts: list[float] = field(default_factory=list)
    indices: tuple[int, ...] = ()
    rows: list[list[list[Any]]] = field(default_factory=list)
    pm: list[tuple[float, dict[str, float]]] = field(default_factory=list)


    def array(self) -> Any:
        """The values as a samples x devices x COLUMNS float array (NaN: not printed): at once where every row is
        complete, else row by row (a short row padded, a value that is not a number read as none)."""
        import numpy as np

        try:
            vals = np.array(self.rows, dtype=float)
            if vals.ndim == 3 and vals.shape[2] == _WIDTH:
                return vals
        except (TypeError, ValueError, OverflowError):  # an integer of hundreds of digits: row by row
            pass
        try:  # rows whose trailing values were not printed (the recorder leaves them out)
            pad = [None] * _WIDTH
            vals = np.array([[row[:_WIDTH] + pad[len(row):] for row in rows] for rows in self.rows], dtype=float)
            if vals.ndim == 3:
                return vals
        except (TypeError, ValueError, OverflowError):
            pass
        return np.array([[v for _, v in decode(self.indices, [row if isinstance(row, list) else [] for row in rows])]
                         for rows in self.rows], dtype=float).reshape(len(self.rows), len(self.indices), _WIDTH)


CHUNK = 4096
_WIDTH = len(COLUMNS)
_RANGES = [tuple(range(n)) for n in range(65)]


def chunks_of(samples: Iterable[Sample], size: int = CHUNK) -> Iterator[Chunk]:
    """Samples grouped into :class:`Chunk` blocks (a new block where the devices change)."""
    chunk = Chunk()
    for s in samples:
        indices = tuple(i for i, _ in s.devices)
        if chunk.ts and (indices != chunk.indices or len(chunk.ts) >= size):
            yield chunk
            chunk = Chunk()
        chunk.indices = indices
        chunk.ts.append(s.t)
        chunk.rows.append([list(v) for _, v in s.devices])
        if s.pm:
            chunk.pm.append((s.t, s.pm))
    if chunk.ts:
        yield chunk


@dataclass
class RecordFile:
    """A record file opened for streaming: its header, what reading had to leave out, and its end state."""

    path: Path
    header: SessionHeader
    site: str
    notes: list[str] = field(default_factory=list)
    failed: int = 0          # samples whose tool printed nothing readable (a failed call)
    damaged: int = 0         # lines in the middle that are not a sample
    torn: bool = False       # the last line was cut short (a killed writer)
    dropped: int = 0         # values outside the readers' bounds (an energy counter past 1e18 J, a unit not a string)
    first_raw: str | None = None
    head: dict[str, Any] = field(default_factory=dict)

    def chunks(self, size: int = CHUNK) -> Iterator[Chunk]:
        """The samples in :class:`Chunk` blocks: compact lines go straight into lists (no per-sample objects), the
        tool's own output is parsed first (records written before the compact format)."""
        with open_regular(self.path, "a GPU record file (RUN/gpu/<node>.jsonl)") as fh:
            fh.readline(MAX_LINE_BYTES)  # the header, read by open_record
            chunk = Chunk()
            line = fh.readline(MAX_LINE_BYTES)
            while line:
                following = fh.readline(MAX_LINE_BYTES)
                got = self._compact(line, last=not following)
                if got is None:
                    got = next(iter(self._sample_of(line, last=not following)), None)
                    if got is not None:
                        got = (got.t, tuple(i for i, _ in got.devices), [list(v) for _, v in got.devices], got.pm)
                if got is not None:
                    t, indices, rows, pm = got
                    if chunk.ts and (indices != chunk.indices or len(chunk.ts) >= size):
                        yield chunk
                        chunk = Chunk()
                    chunk.indices = indices
                    chunk.ts.append(t)
                    chunk.rows.append(rows)
                    if pm:
                        chunk.pm.append((t, pm))
                line = following
            if chunk.ts:
                yield chunk

    def _compact(self, raw: bytes, last: bool) -> tuple[float, tuple[int, ...], list[list[Any]], Any] | None:
        """A compact line as (t, devices, padded rows, pm); None for anything else (then read the slow way)."""
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(rec, dict):
            return None
        r, t = rec.get("r"), rec.get("t")
        if not isinstance(r, list) or not r or isinstance(t, bool) or not isinstance(t, (int, float)):
            return None
        idx = rec.get("i")
        indices = _RANGES[len(r)] if idx is None and len(r) < len(_RANGES) else \
            tuple(idx) if isinstance(idx, list) else tuple(range(len(r))) if idx is None else ()
        if len(indices) != len(r) or (idx is not None and not all(type(i) is int for i in indices)):
            return None
        rows = r  # numpy checks the values (rows of other lengths or non-numbers: see Chunk.array)
        if self.first_raw is None and isinstance(rec.get("raw"), str):
            self.first_raw = rec["raw"]
        return float(t), indices, rows, pm_readings(rec.get("pm"))

    def _sample_of(self, raw: bytes, last: bool) -> Iterator[Sample]:
        from ..smi.interpret import main_group
        from ..smi.parse import parse_smi

        return self._sample(raw, parse_smi, main_group, last=last)

    def _sample(self, raw: bytes, parse_smi: Any, main_group: Any, last: bool) -> Iterator[Sample]:
        if not raw.strip():
            return
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            rec = None
        t = rec.get("t") if isinstance(rec, dict) else None
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not (isinstance(rec.get("r"), list) or
                                                                          isinstance(rec.get("stdout"), str)):
            if isinstance(rec, dict) and "end" in rec:
                return  # an end line (none written today; a later writer may add one)
            if last and not raw.endswith(b"\n"):
                self.torn = True
            else:
                self.damaged += 1
            return
        if isinstance(rec.get("r"), list):
            if self.first_raw is None and isinstance(rec.get("raw"), str):
                self.first_raw = rec["raw"]
            try:
                devices = decode(rec.get("i"), rec["r"])
            except ParseError:
                self.damaged += 1
                return
            status = rec.get("x", 0)
        else:
            status = rec.get("exit_status")
            if self.first_raw is None:
                self.first_raw = rec["stdout"]
            try:
                snap = parse_smi(rec["stdout"], source=self.header.name, site=self.site)
            except LumikitError:
                self.failed += 1
                return
            lost: list[int] = []
            idx, rows = encode(main_group(snap), energy_counters(rec["stdout"], lost))
            self.dropped += len(lost)
            devices = decode(idx, rows)
        if not devices:
            self.failed += 1
            return
        yield Sample(t=float(t), status=status if isinstance(status, int) else None, devices=devices,
                     pm=pm_readings(rec.get("pm")))

    def estimate(self) -> int:
        """About how many samples the file holds (its size over the length of its first lines)."""
        try:
            with open_regular(self.path, "a GPU record file") as fh:
                head = fh.read(1 << 16)
                size = os.fstat(fh.fileno()).st_size
        except (LumikitError, OSError):
            return 0
        lines = max(1, head.count(b"\n") - 1)
        return int(size / max(1, len(head) / (lines + 1)))

    def end_state(self) -> dict[str, Any]:
        """The recorder's end-state file (``{}`` where there is none: a record written before it existed)."""
        path = Path(str(self.path) + END_SUFFIX)
        if not path.is_file():
            return {}
        try:
            data = load_json_bounded(read_bytes(path, "a record's end file", limit=END_BYTES * 4) or b"{}",
                                     str(path), max_depth=8)
        except LumikitError:
            return {"state": "unreadable"}
        if not isinstance(data, dict):
            return {"state": "unreadable"}
        if "pm_end" in data:
            data["pm_end"] = pm_readings(data["pm_end"])
        return data


def open_record(path: str | Path, site: str | None = None) -> RecordFile:
    """Open one ``gpu/<node>.jsonl`` and read its header (a :class:`ParseError` naming it when it is none)."""
    p = Path(path)
    with open_regular(p, "a GPU record file (RUN/gpu/<node>.jsonl)") as fh:
        first = fh.readline(MAX_HEADER_BYTES + 1)
    if len(first) > MAX_HEADER_BYTES:
        raise ParseError(f"a first line longer than {MAX_HEADER_BYTES >> 20} MB, where a record's header is a few "
                         "kB; is this a record file (RUN/gpu/<node>.jsonl)?", source=str(p), line_no=1)
    text = first.decode("utf-8", errors="replace")
    if not text.strip():
        raise ParseError("an empty record file (the recorder wrote no header)", source=str(p))
    try:
        head = load_json_bounded(text, str(p), max_depth=16)
    except ParseError as exc:
        raise ParseError(f"the first line is not a JSON header ({exc.message})", source=str(p), line_no=1,
                         line=text[:200]) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        header = _header(head, p, text)
    head = dict(head)
    if "pm_start" in head:
        head["pm_start"] = pm_readings(head["pm_start"])
    return RecordFile(path=p, header=header, site=site or header.site, head=head)


def pm_readings(value: Any) -> dict[str, float] | None:
    """A record's pm_counters readings (``{"energy": joules, ..., "time": epoch}``) as finite numbers; values of
    another type or beyond :data:`MAX_PM_VALUE` are left out (a damaged line); None when no reading is left or
    the time is not among them (a reading that cannot be placed in time)."""
    if not isinstance(value, dict):
        return None
    out = {}
    for k, v in value.items():
        if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                number = float(v)
            except OverflowError:  # an integer of hundreds of digits
                continue
            if math.isfinite(number) and abs(number) <= MAX_PM_VALUE:
                out[k] = number
    return out if "time" in out and len(out) > 1 else None


__all__ = ["CHUNK", "Chunk", "END_BYTES", "END_SUFFIX", "RecordFile", "Sample", "chunks_of", "open_record",
           "pm_readings"]
