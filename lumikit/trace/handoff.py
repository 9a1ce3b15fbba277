"""How parsed columns travel back from the parser processes: through one anonymous shared mapping.

Pickling a task's columns (about 2 MB per 8 MB of trace) and sending them down a pipe cost the workers and the
loading process about 0.1 s of CPU per 100 MB, most of it page faults on fresh buffers at both ends. When the
workers are forked, the loader maps one anonymous shared region before the pool starts (untouched pages cost
nothing); each task is given a slice of it, the worker writes its columns there and hands back only where they
are, and the loading process reads them as numpy views, copied once, into the rank's table. A task whose columns
do not fit its slice, or a pool started without fork (Jupyter kernels use forkserver), hands back pickled arrays
as before.
"""
from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

from .columns import FLOAT_COLUMNS, INT_COLUMNS, ColumnChunk

#: Bytes of one event's columns: six int64, two float64 and two int32 codes.
ROW_BYTES = 8 * (len(INT_COLUMNS) + len(FLOAT_COLUMNS)) + 4 * 2
#: A complete event's JSON is longer than this (its keys alone take more), so slices sized by it rarely overflow.
MIN_EVENT_BYTES = 40


def rows_bytes(text_bytes: int, spare_rows: int) -> int:
    """Room for the columns of ``text_bytes`` of trace at the most events it can hold, plus ``spare_rows``
    (a multiple of 8 bytes, since ``ROW_BYTES`` is)."""
    return (text_bytes // MIN_EVENT_BYTES + spare_rows) * ROW_BYTES


#: The mapping of the load in progress, inherited by the workers it forks (None elsewhere).
CURRENT: "SharedColumns | None" = None


@dataclass
class StoredChunk:
    """A parsed chunk whose columns a worker wrote into the shared mapping: (offset, dtype, length) per column."""

    names: list[str]
    cats: list[str]
    n_events: int
    places: dict[str, tuple[int, str, int]]


class SharedColumns:
    """One anonymous shared mapping, cut into a slice per task (a bump allocator in the loading process)."""

    def __init__(self, nbytes: int) -> None:
        self.size = nbytes
        self._map = mmap.mmap(-1, nbytes)
        self._next = 0

    @classmethod
    def for_text(cls, text_bytes: int) -> "SharedColumns | None":
        """A mapping for about ``text_bytes`` of trace, or None where the system refuses one that large."""
        try:
            return cls(max(mmap.PAGESIZE, rows_bytes(text_bytes, spare_rows=1024)))
        except (OSError, ValueError, OverflowError):
            return None

    def reserve(self, text_bytes: int) -> tuple[int, int] | None:
        """A slice (offset, size) for the columns of ``text_bytes`` of trace, or None when the mapping is full."""
        size = rows_bytes(text_bytes, spare_rows=64)
        if self._next + size > self.size:
            return None
        start, self._next = self._next, self._next + size
        return start, size

    def store(self, chunks: list[ColumnChunk], region: tuple[int, int]) -> list[ColumnChunk | StoredChunk]:
        """In a worker: write the chunks' columns into ``region`` and return where they are (or the chunks
        themselves when they do not fit)."""
        start, size = region
        if sum(len(c) for c in chunks) * ROW_BYTES > size:
            return list(chunks)
        offset, out = start, []
        for c in chunks:
            places = {}
            for col, values in (("name_code", c.name_code), ("cat_code", c.cat_code), *c.arrays.items()):
                values = np.ascontiguousarray(values)
                np.frombuffer(self._map, dtype=values.dtype, count=len(values), offset=offset)[:] = values
                places[col] = (offset, values.dtype.str, len(values))
                offset += -(-values.nbytes // 8) * 8
            out.append(StoredChunk(c.names, c.cats, c.n_events, places))
        return out

    def load(self, item: ColumnChunk | StoredChunk) -> ColumnChunk:
        """In the loading process: a chunk as numpy views of the mapping (a pickled chunk passes through)."""
        if isinstance(item, ColumnChunk):
            return item
        view = {col: np.frombuffer(self._map, dtype=np.dtype(dt), count=n, offset=off)
                for col, (off, dt, n) in item.places.items()}
        return ColumnChunk(item.names, item.cats, view.pop("name_code"), view.pop("cat_code"), view, item.n_events)

    def close(self) -> None:
        """Unmap (when no view of it is left; otherwise the last view's end frees it)."""
        try:
            self._map.close()
        except BufferError:
            pass


def store_if_shared(chunks: list[ColumnChunk], region: tuple[int, int] | None) -> list[ColumnChunk | StoredChunk]:
    """In a worker: the chunks, written to the inherited mapping when this task was given a slice of it."""
    if region is None or CURRENT is None:
        return chunks
    return CURRENT.store(chunks, region)
