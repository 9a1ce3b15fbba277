"""Decode chunks of trace events into compact columns: the part of loading that runs in parser processes.

Only complete events (``ph == "X"``) are kept, and only the fields the analyses need. The decoding uses msgspec
into slotted records holding only those fields, about twice as fast as building every event as a dict, and a union
tagged by ``ph`` builds nothing at all for the flow, metadata and instant events around them (a third faster
again); the records are turned into columns by C-level ``attrgetter``/``zip`` passes rather than a Python loop per
field. Columns are standard-library ``array.array`` objects (numbers) and integer codes into the chunk's own name
tables: this module imports neither numpy nor pandas, so the parser processes start before the main process has
imported numpy (it does so while they parse). :mod:`lumikit.trace.columns` glues the chunks into a rank's table.
"""
from __future__ import annotations

import gc
from array import array
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Union

import msgspec

#: The columns of an event table, in order, with their dtypes (name and cat are categoricals).
INT_COLUMNS = ("pid", "tid", "stream", "correlation", "external_id", "bytes")
FLOAT_COLUMNS = ("ts", "dur")
_NAN = float("nan")


@dataclass
class ColumnChunk:
    """The events of one chunk as arrays (``array.array``: int64 "q", float64 "d", int32 "i" codes);
    ``names``/``cats`` are the chunk's own code tables."""

    names: list[str]
    cats: list[str]
    name_code: array
    cat_code: array
    arrays: dict[str, array]
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
        try:
            return int(value)
        except OverflowError:  # an infinite float
            return default
    return default


def _ints(values: tuple | list) -> array:
    try:
        return array("q", values)
    except (TypeError, OverflowError):
        pass
    # Mixed column (stream ids as "0x0" beside integers): convert each distinct value once, then look every
    # value up (dict lookups driven from C, no Python loop per event).
    try:
        lookup = {v: to_int(v) for v in dict.fromkeys(values)}
        fixed = map(lookup.__getitem__, values)
    except TypeError:  # an unhashable value (a list where an id belongs) counts as missing
        fixed = map(to_int, values)
    try:
        return array("q", fixed)
    except OverflowError:  # integers beyond 64 bits count as missing
        return array("q", (v if -2**63 <= v < 2**63 else -1 for v in map(to_int, values)))


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


def _floats(values: tuple | list) -> array:
    try:
        return array("d", values)
    except (TypeError, OverflowError):
        return array("d", map(to_float, values))


def _codes(values: tuple | list) -> tuple[array, list[str]]:
    """Integer codes for a list of strings, and the distinct strings in order of first appearance."""
    try:
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    except TypeError:  # an unhashable name (a list or an object): use its text
        values = [str(v) for v in values]
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    return array("i", map(index.__getitem__, values)), [v if v.__class__ is str else str(v) for v in index]


class _Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the analyses use; msgspec skips every other key without building it."""

    stream: Any = -1
    correlation: Any = -1
    external_id: Any = msgspec.field(default=-1, name="External id")
    bytes: Any = -1  # absent (-1): ``size`` counts (rocprof-style copies write it instead)
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
    args: _Args | list | str | int | float | bool | None = _NO_ARGS  # anything but an object counts as no args


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
    return decode_array(b"[" + chunk + b"]")


def decode_array(body: bytes | bytearray | memoryview) -> tuple[list, int]:
    """:func:`decode_complete_events` on a whole JSON array (``b'[{..},{..}]'``), as a worker reads it."""
    try:
        events = _FAST_DECODER.decode(body)
    except msgspec.ValidationError:
        events = _DECODER.decode(body)
        return [e for e in events if e.ph == "X"], len(events)
    return [e for e in events if e.__class__ is _Complete], len(events)


_FIELDS = attrgetter("name", "cat", "pid", "tid", "ts", "dur", "args")
_ARG_FIELDS = attrgetter("stream", "correlation", "external_id", "bytes", "size")


def parse_chunk(chunk: bytes) -> ColumnChunk:
    """Parse one array body (``b'{..},{..}'``) into columns; raises ``msgspec.DecodeError`` if it is broken."""
    return parse_array(b"[" + chunk + b"]")


def parse_array(body: bytes | bytearray | memoryview) -> ColumnChunk:
    """Parse a whole JSON array of events (``b'[{..},{..}]'``) into columns (see :func:`parse_chunk`)."""
    was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of fresh objects would trigger full collections for nothing
    try:
        kept, n_all = decode_array(body)
        n = len(kept)
        if n == 0:
            arrays = {c: array("q") for c in INT_COLUMNS} | {c: array("d") for c in FLOAT_COLUMNS}
            return ColumnChunk([], [], array("i"), array("i"), arrays, n_all)
        names, cats, pids, tids, tss, durs, args = zip(*map(_FIELDS, kept))  # one C-level pass per chunk
        del kept
        name_code, name_list = _codes(names)
        cat_code, cat_list = _codes(cats if all(cats) else [c or "" for c in cats])
        arrays = {"pid": _ints(pids), "tid": _ints(tids), "ts": _floats(tss), "dur": _floats(durs)}
        try:
            stream, correlation, external_id, nbytes, size = zip(*map(_ARG_FIELDS, args))
        except AttributeError:  # an event whose args are not an object (a list, a string, null): no args
            args = [a if a.__class__ is _Args else _NO_ARGS for a in args]
            stream, correlation, external_id, nbytes, size = zip(*map(_ARG_FIELDS, args))
        arrays["stream"] = _ints(stream)
        arrays["correlation"] = _ints(correlation)
        arrays["external_id"] = _ints(external_id)
        if size.count(-1) != n:  # some event has "size" (rocprof-style copies): it counts where "bytes" is absent
            nbytes = [s if b == -1 else b for b, s in zip(nbytes, size)]
        arrays["bytes"] = _ints(nbytes)
        return ColumnChunk(name_list, cat_list, name_code, cat_code, arrays, n_all)
    finally:
        if was_enabled:
            gc.enable()
