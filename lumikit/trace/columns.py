"""Turn chunks of trace events into compact columns, and glue the chunks of one rank into a table.

Only complete events (``ph == "X"``) are kept, and only the fields the analyses need. Names and categories
become integer codes (a pandas Categorical at the end), numbers become numpy arrays: a 300 MB trace ends up as a
table of a few tens of megabytes. ``parse_chunk`` runs in worker processes; it decodes with msgspec into slotted
records holding only those fields, about twice as fast as building every event as a dict, and a union tagged by
``ph`` builds nothing at all for the flow, metadata and instant events around them (a third faster again).
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import msgspec
import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: The columns of an event table, in order, with their dtypes (name and cat are categoricals).
INT_COLUMNS = ("pid", "tid", "stream", "correlation", "external_id", "bytes")
FLOAT_COLUMNS = ("ts", "dur")
_NAN = float("nan")


@dataclass
class ColumnChunk:
    """The events of one chunk as arrays; ``names``/``cats`` are the chunk's own code tables."""

    names: list[str]
    cats: list[str]
    name_code: np.ndarray
    cat_code: np.ndarray
    arrays: dict[str, np.ndarray]
    n_events: int  # every event in the chunk, X or not

    def __len__(self) -> int:
        return len(self.name_code)


def to_int(value: object, default: int = -1) -> int:
    """An integer from a trace field that may be an int, a float, a decimal or hex string ("0x0")."""
    if value.__class__ is int:
        return value  # type: ignore[return-value]
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            try:
                return int(value)  # leading zeros ("007") are not valid base-0 literals
            except ValueError:
                return default
    if isinstance(value, float) and value == value:
        return int(value)
    return default


def _ints(values: list, n: int) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        pass
    # Mixed column (stream ids as "0x0" beside integers): convert each distinct value once, then look every
    # value up (dict lookups driven from C, no Python loop per event).
    try:
        lookup = {v: to_int(v) for v in dict.fromkeys(values)}
        fixed = map(lookup.__getitem__, values)
    except TypeError:  # an unhashable value (a list where an id belongs) counts as missing
        fixed = map(to_int, values)
    try:
        return np.fromiter(fixed, dtype=np.int64, count=n)
    except OverflowError:  # integers beyond 64 bits count as missing
        return np.fromiter((v if -2**63 <= v < 2**63 else -1 for v in map(to_int, values)), dtype=np.int64,
                           count=n)


def to_float(value: object) -> float:
    """A float from a trace field (a number or a numeric string); anything else (text, an object) is NaN."""
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float range
            return _NAN
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return _NAN
    return _NAN


def _floats(values: list, n: int) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(to_float, values), dtype=np.float64, count=n)


def _codes(values: list) -> tuple[np.ndarray, list[str]]:
    """Integer codes for a list of strings, and the distinct strings in order of first appearance."""
    try:
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    except TypeError:  # an unhashable name (a list or an object): use its text
        values = [str(v) for v in values]
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
    return codes, [v if v.__class__ is str else str(v) for v in index]


class _Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the analyses use; msgspec skips every other key without building it."""

    stream: Any = -1
    correlation: Any = -1
    external_id: Any = msgspec.field(default=-1, name="External id")
    bytes: Any = msgspec.UNSET  # UNSET: absent, so ``size`` counts (rocprof-style copies)
    size: Any = -1


_NO_ARGS = _Args()


class _Kept(msgspec.Struct, gc=False):
    """The fields of an event that we keep (values untyped: traces write ids as ints, floats or strings)."""

    name: Any = ""
    cat: Any = None
    pid: Any = -1
    tid: Any = -1
    ts: Any = _NAN
    dur: Any = 0.0
    args: _Args | list | str | int | float | bool | None = None  # anything but an object counts as no args


class _Event(_Kept):
    """Any event, for the general decoder."""

    ph: Any = None


class _Complete(_Kept, tag_field="ph", tag="X"):
    """A complete event (``"ph": "X"``), for the fast decoder."""


#: The other phases of the Chrome trace event format: decoded as empty records, their fields skipped unbuilt.
OTHER_PHASES = "BEiIbnesStTfpPNODMVvRcC()"
_SKIPPED = tuple(msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=ph, gc=False)
                 for i, ph in enumerate(OTHER_PHASES))
_FAST_DECODER = msgspec.json.Decoder(list[Union[(_Complete, *_SKIPPED)]])  # type: ignore[misc]
_DECODER = msgspec.json.Decoder(list[_Event])


def decode_complete_events(chunk: bytes) -> tuple[list, int]:
    """The complete events (``ph == "X"``) of an array body, as records with name, cat, pid, tid, ts, dur and
    args, and the number of events of every phase.

    The fast path decodes every other known phase into an empty record; an event without ``ph`` or with an
    unknown one sends the chunk through the general decoder instead."""
    body = b"[" + chunk + b"]"
    try:
        events = _FAST_DECODER.decode(body)
    except msgspec.ValidationError:
        events = _DECODER.decode(body)
        return [e for e in events if e.ph == "X"], len(events)
    return [e for e in events if e.__class__ is _Complete], len(events)


def parse_chunk(chunk: bytes) -> ColumnChunk:
    """Parse one array body (``b'{..},{..}'``) into columns; raises ``msgspec.DecodeError`` if it is broken."""
    was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of fresh objects would trigger full collections for nothing
    try:
        kept, n_all = decode_complete_events(chunk)
        n = len(kept)
        if n == 0:
            empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
            arrays = {c: empty_i for c in INT_COLUMNS} | {c: empty_f for c in FLOAT_COLUMNS}
            return ColumnChunk([], [], np.empty(0, np.int32), np.empty(0, np.int32), arrays, n_all)
        name_code, name_list = _codes([e.name for e in kept])
        cat_code, cat_list = _codes([e.cat or "" for e in kept])
        arrays = {"pid": _ints([e.pid for e in kept], n), "tid": _ints([e.tid for e in kept], n),
                  "ts": _floats([e.ts for e in kept], n), "dur": _floats([e.dur for e in kept], n)}
        args = [a if a.__class__ is _Args else _NO_ARGS for a in [e.args for e in kept]]
        del kept
        arrays["stream"] = _ints([a.stream for a in args], n)
        arrays["correlation"] = _ints([a.correlation for a in args], n)
        arrays["external_id"] = _ints([a.external_id for a in args], n)
        arrays["bytes"] = _ints([a.size if a.bytes is msgspec.UNSET else a.bytes for a in args], n)
        return ColumnChunk(name_list, cat_list, name_code, cat_code, arrays, n_all)
    finally:
        if was_enabled:
            gc.enable()


class TableBuilder:
    """Collects the chunks of one rank, in order, and builds its event table."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._cats: dict[str, int] = {}
        self._parts: list[ColumnChunk] = []
        self.n_events = 0

    def add(self, chunk: ColumnChunk) -> None:
        """Re-code the chunk's names and categories into this rank's tables and keep it."""
        names = np.fromiter((self._names.setdefault(s, len(self._names)) for s in chunk.names),
                            dtype=np.int32, count=len(chunk.names))
        cats = np.fromiter((self._cats.setdefault(s, len(self._cats)) for s in chunk.cats),
                           dtype=np.int32, count=len(chunk.cats))
        if len(chunk):
            chunk.name_code = names[chunk.name_code]
            chunk.cat_code = cats[chunk.cat_code]
        chunk.names, chunk.cats = [], []
        self.n_events += chunk.n_events
        self._parts.append(chunk)

    def build(self) -> "pd.DataFrame":
        """The rank's event table, sorted by start time (columns are moved out of the chunks one at a time,
        so the peak stays near one copy of the table)."""
        import pandas as pd  # only here: parsing (in worker processes) does not need it

        parts = self._parts
        self._parts = []
        ts = _take(parts, "ts", np.float64)
        order = np.argsort(ts, kind="stable")
        data: dict[str, object] = {}
        names = _cat(parts, "name_code", np.int32)[order]
        data["name"] = pd.Categorical.from_codes(names, categories=list(self._names)) if self._names \
            else pd.Categorical([])
        cats = _cat(parts, "cat_code", np.int32)[order]
        data["cat"] = pd.Categorical.from_codes(cats, categories=list(self._cats)) if self._cats \
            else pd.Categorical([])
        for col in ("pid", "tid"):
            data[col] = _take(parts, col, np.int64)[order]
        data["ts"] = ts[order]
        del ts
        data["dur"] = _take(parts, "dur", np.float64)[order]
        for col in ("stream", "correlation", "external_id", "bytes"):
            data[col] = _take(parts, col, np.int64)[order]
        return pd.DataFrame(data, copy=False)


def _cat(parts: list[ColumnChunk], attr: str, dtype: type) -> np.ndarray:
    arrays = [getattr(p, attr) for p in parts]
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def _take(parts: list[ColumnChunk], col: str, dtype: type) -> np.ndarray:
    """Concatenate one column of every chunk, releasing the chunks' copies."""
    arrays = [p.arrays.pop(col) for p in parts]
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)
