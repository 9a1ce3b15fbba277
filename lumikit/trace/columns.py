"""Turn chunks of trace events into compact columns, and glue the chunks of one rank into a table.

Only complete events (``ph == "X"``) are kept, and only the fields the analyses need. Names and categories
become integer codes (a pandas Categorical at the end), numbers become numpy arrays: a 300 MB trace ends up as a
table of a few tens of megabytes. ``parse_chunk`` runs in worker processes; it decodes with msgspec into slotted
records holding only those fields, about twice as fast as building every event as a dict, and a union tagged by
``ph`` builds nothing at all for the flow, metadata and instant events around them (a third faster again); the
records are then turned into one tuple per field in a single C-level pass (``astuple`` and a transpose) that numpy
converts, with no Python loop per event.

Where the optional compiled reader (``_fastevents``, built from ``_fastevents.c`` at install time) is present, a
chunk in the common shape (no escapes in names, ids as integers or ``"0x.."`` strings, known phases) is read by it
instead, to the same columns about two and a half times faster; it hands back every other chunk, and then the msgspec
path above reads it. ``LUMIKIT_COMPILED_READER=0`` turns it off.

A rank's table is a :class:`Columns` (numpy arrays, names as integer codes): what the analyses compute on, with
no pandas import; ``Columns.to_frame()`` gives the pandas table notebooks show.
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, Union

import msgspec
import numpy as np
from msgspec.structs import astuple

try:
    from . import _fastevents  # the optional compiled reader (see setup.py)
except ImportError:  # not built (no C compiler where lumikit was installed): the msgspec path reads everything
    _fastevents = None

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


def _ints(values: Sequence, n: int) -> np.ndarray:
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


def _floats(values: Sequence, n: int) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(to_float, values), dtype=np.float64, count=n)


def _codes(values: Sequence) -> tuple[np.ndarray, list[str]]:
    """Integer codes for a list of strings, and the distinct strings in order of first appearance."""
    try:
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    except TypeError:  # an unhashable name (a list or an object): use its text
        values = [str(v) for v in values]
        index = {s: i for i, s in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
    return codes, [v if v.__class__ is str else str(v) for v in index]


#: ``bytes`` when an event has none: then ``size`` counts (rocprof-style copies write ``size`` instead).
_NO_BYTES = -(2**62)


class _Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the analyses use; msgspec skips every other key without building it."""

    stream: Any = -1
    correlation: Any = -1
    external_id: Any = msgspec.field(default=-1, name="External id")
    bytes: Any = _NO_BYTES
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


class NestedTooDeep(msgspec.DecodeError):
    """An event nested deeper than the decoder follows (Python's recursion limit, ~1000 levels): valid JSON that
    no profiler writes, refused as such rather than as a truncated file."""


def decode_array(body: bytes | bytearray | memoryview) -> tuple[list, int]:
    """:func:`decode_complete_events` on a whole JSON array (``b'[{..},{..}]'``), as a worker reads it."""
    try:
        try:
            events = _FAST_DECODER.decode(body)
        except msgspec.ValidationError:
            events = _DECODER.decode(body)
            return [e for e in events if e.ph == "X"], len(events)
    except RecursionError:
        raise NestedTooDeep("an event is nested deeper than the reader follows (about 1,000 levels)") from None
    return [e for e in events if e.__class__ is _Complete], len(events)


#: The kept fields in record order: ``astuple`` of a record (either decoder's) starts with these.
_KEPT_FIELDS = _Kept.__struct_fields__
_ARGS_FIELDS = _Args.__struct_fields__


def _fields(records: Sequence, names: tuple[str, ...]) -> dict[str, tuple]:
    """Each field of the records as one tuple of values, in a single C-level pass (``astuple`` per record, then a
    transpose), cheaper than pulling every field through its own ``attrgetter`` map."""
    values = zip(*map(astuple, records))
    return dict(zip(names, values))


def parse_chunk(chunk: bytes) -> ColumnChunk:
    """Parse one array body (``b'{..},{..}'``) into columns; raises ``msgspec.DecodeError`` if it is broken."""
    return parse_array(b"[" + chunk + b"]")


def compiled_reader_enabled() -> bool:
    """Whether chunks go to the compiled reader first: it is built, and ``LUMIKIT_COMPILED_READER`` is not ``0``."""
    return _fastevents is not None and os.environ.get("LUMIKIT_COMPILED_READER", "1") != "0"


def parse_array(body: bytes | bytearray | memoryview) -> ColumnChunk:
    """Parse a whole JSON array of events (``b'[{..},{..}]'``) into columns (see :func:`parse_chunk`): by the
    compiled reader where it is built and takes the chunk, else by msgspec."""
    if compiled_reader_enabled():
        got = _fastevents.parse(body)
        if got is not None:
            return _chunk_from_compiled(got)
    return parse_array_msgspec(body)


def _chunk_from_compiled(got: tuple) -> ColumnChunk:
    """The compiled reader's tuple (counts, code tables, one buffer per column) as a :class:`ColumnChunk`."""
    n_all, names, cats, name, cat, *cols = got
    arrays = {c: np.frombuffer(buf, np.float64 if c in FLOAT_COLUMNS else np.int64)
              for c, buf in zip(("pid", "tid", "ts", "dur", "stream", "correlation", "external_id"), cols)}
    nbytes, size = (np.frombuffer(buf, np.int64) for buf in cols[7:])
    absent = nbytes == _NO_BYTES
    arrays["bytes"] = np.where(absent, size, nbytes) if absent.any() else nbytes
    return ColumnChunk(names, cats, np.frombuffer(name, np.int32), np.frombuffer(cat, np.int32), arrays, n_all)


def parse_array_msgspec(body: bytes | bytearray | memoryview) -> ColumnChunk:
    """:func:`parse_array` by msgspec alone: reads every chunk the format allows (and raises on broken JSON)."""
    was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of fresh objects would trigger full collections for nothing
    try:
        kept, n_all = decode_array(body)
        n = len(kept)
        if n == 0:
            empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
            arrays = {c: empty_i for c in INT_COLUMNS} | {c: empty_f for c in FLOAT_COLUMNS}
            return ColumnChunk([], [], np.empty(0, np.int32), np.empty(0, np.int32), arrays, n_all)
        field = _fields(kept, _KEPT_FIELDS)
        del kept
        name_code, name_list = _codes(field["name"])
        cats = field["cat"]
        cat_code, cat_list = _codes(cats if all(cats) else [c or "" for c in cats])
        arrays = {"pid": _ints(field["pid"], n), "tid": _ints(field["tid"], n), "ts": _floats(field["ts"], n),
                  "dur": _floats(field["dur"], n)}
        args = field["args"]
        try:
            arg = _fields(args, _ARGS_FIELDS)
        except TypeError:  # an event whose args are not an object (a list, a string, null): no args
            arg = _fields([a if a.__class__ is _Args else _NO_ARGS for a in args], _ARGS_FIELDS)
        arrays["stream"] = _ints(arg["stream"], n)
        arrays["correlation"] = _ints(arg["correlation"], n)
        arrays["external_id"] = _ints(arg["external_id"], n)
        nbytes = _ints(arg["bytes"], n)
        absent = nbytes == _NO_BYTES
        arrays["bytes"] = np.where(absent, _ints(arg["size"], n), nbytes) if absent.any() else nbytes
        return ColumnChunk(name_list, cat_list, name_code, cat_code, arrays, n_all)
    finally:
        if was_enabled:
            gc.enable()


class Columns:
    """Equal-length numpy columns by name, some holding integer codes into a list of labels (a pandas
    categorical without pandas; code -1 is no label). What the analyses compute on; ``to_frame()`` is the same
    table in pandas, for notebooks."""

    def __init__(self, data: Mapping[str, np.ndarray], labels: Mapping[str, Sequence[str]] | None = None) -> None:
        self.data = dict(data)
        self.labels = {k: list(v) for k, v in (labels or {}).items()}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def __contains__(self, name: str) -> bool:
        return name in self.data

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0

    @property
    def empty(self) -> bool:
        """Whether the table has no rows (as ``DataFrame.empty``)."""
        return len(self) == 0

    def label_mask(self, name: str, wanted: Iterable[str] | Any) -> np.ndarray:
        """Rows whose label in column ``name`` is one of ``wanted`` (or satisfies it, when it is a predicate),
        tested once per label rather than once per row."""
        labels = self.labels[name]
        test = wanted if callable(wanted) else set(wanted).__contains__
        ok = np.fromiter((bool(test(label)) for label in labels), dtype=bool, count=len(labels))
        return np.append(ok, False)[self.data[name]]  # code -1 (no label) lands on the appended False

    def take(self, index: np.ndarray) -> "Columns":
        """The rows selected by a boolean mask or an index array, same labels."""
        return Columns({k: v[index] for k, v in self.data.items()}, self.labels)

    def to_frame(self) -> "pd.DataFrame":
        """The pandas table: labelled columns become categoricals (no copy of the numeric columns)."""
        import pandas as pd

        data: dict[str, object] = {}
        for name, values in self.data.items():
            if name in self.labels:
                labels = self.labels[name]
                data[name] = pd.Categorical.from_codes(values, categories=labels) if labels else \
                    pd.Categorical([None] * len(values))
            else:
                data[name] = values
        return pd.DataFrame(data, copy=False)

    @classmethod
    def from_frame(cls, frame: "pd.DataFrame") -> "Columns":
        """The columns of a pandas table (categoricals as codes and labels; anything else as its numpy array)."""
        data, labels = {}, {}
        for name in frame.columns:
            col = frame[name]
            if hasattr(col, "cat"):
                data[name] = col.cat.codes.to_numpy().astype(np.int32, copy=False)
                labels[name] = [str(c) for c in col.cat.categories]
            else:
                data[name] = col.to_numpy()
        return cls(data, labels)


def as_columns(table: "Columns | pd.DataFrame") -> Columns:
    """A :class:`Columns` view of a table given either way (the analyses accept both)."""
    return table if isinstance(table, Columns) else Columns.from_frame(table)


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

    def build_columns(self) -> Columns:
        """The rank's events as :class:`Columns`, sorted by start time. Columns are moved out of the chunks one at
        a time through one scratch buffer, so the peak stays near one copy of the table."""
        parts = self._parts
        self._parts = []
        n = sum(len(p) for p in parts)
        scratch = {np.dtype(np.int64): np.empty(n, np.int64), np.dtype(np.int32): np.empty(n, np.int32)}
        scratch[np.dtype(np.float64)] = scratch[np.dtype(np.int64)].view(np.float64)

        def column(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
            out = scratch[np.dtype(dtype)]
            if arrays:
                np.concatenate(arrays, out=out, casting="unsafe")
            return out

        order = np.argsort(column([p.arrays["ts"] for p in parts], np.float64), kind="stable")
        data: dict[str, np.ndarray] = {}
        for name, attr in (("name", "name_code"), ("cat", "cat_code")):
            data[name] = column([getattr(p, attr) for p in parts], np.int32)[order]
        for col, dtype in (("pid", np.int64), ("tid", np.int64), ("ts", np.float64), ("dur", np.float64),
                           ("stream", np.int64), ("correlation", np.int64), ("external_id", np.int64),
                           ("bytes", np.int64)):
            data[col] = column([p.arrays.pop(col) for p in parts], dtype)[order]
        return Columns(data, {"name": list(self._names), "cat": list(self._cats)})

    def build(self) -> "pd.DataFrame":
        """The rank's event table in pandas (see :meth:`build_columns`)."""
        return self.build_columns().to_frame()
