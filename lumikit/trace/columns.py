"""A rank's table of complete events: numpy columns glued from parsed chunks (:mod:`lumikit.trace.parse`).

Names and categories are integer codes into label lists (a pandas Categorical when handed out), numbers numpy
arrays: a 300 MB trace ends up as a table of a few tens of megabytes. A rank's table is a :class:`Columns`: what
the analyses compute on, with no pandas import; ``Columns.to_frame()`` gives the pandas table notebooks show.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .parse import FLOAT_COLUMNS, INT_COLUMNS, ColumnChunk, decode_complete_events, parse_array, parse_chunk

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Columns", "TableBuilder", "as_columns", "ColumnChunk", "INT_COLUMNS", "FLOAT_COLUMNS",
           "decode_complete_events", "parse_array", "parse_chunk"]


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
        if len(chunk):  # the chunk's codes arrive as array.array (see lumikit.trace.parse)
            chunk.name_code = names[np.frombuffer(chunk.name_code, dtype=np.int32)]
            chunk.cat_code = cats[np.frombuffer(chunk.cat_code, dtype=np.int32)]
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
