"""Load Kineto/Chrome traces (a file, a ``.json.gz``, or a folder of per-rank files) into per-rank tables.

Files are found and mapped to ranks first (``distributedInfo.rank``, else the file name, else an explicit
mapping; two files never land silently on one rank), then every file is cut into chunks of whole events that
worker processes parse in parallel (an uncompressed file as byte ranges each worker reads itself, a gzip file
streamed through this process). The result is a :class:`Trace`: one compact event table per rank plus each file's
metadata. Tables are numpy :class:`~lumikit.trace.columns.Columns`; the pandas view (``RankTrace.events``) is
built on first use, so a command that only summarises never imports pandas.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import re
import threading
import warnings
import zlib
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

import msgspec

from ..errors import TraceError
from ..files import regular_file
from . import handoff
from .columns import (ColumnChunk, Columns, NestedTooDeep, TableBuilder, compiled_reader_enabled, parse_array,
                      parse_chunk)
from .handoff import SharedColumns, StoredChunk, store_if_shared
from .reader import CHUNK_BYTES, FileRange, MalformedChunk, TraceStream, open_bytes, salvage_hint

if TYPE_CHECKING:
    import pandas as pd

TRACE_SUFFIXES = (".json", ".json.gz")
#: The most bytes of trace per worker task (several reader chunks parsed in a row; see ``_parse_pieces``
#: and ``_batch_bytes``).
BATCH_BYTES = 8 * CHUNK_BYTES
#: A rank written in a file name: only an explicit marker (``rank3``, ``rank-3``, ``rank_3``), never a name that
#: merely ends in digits (``trace_1694039959.json`` is a time stamp, ``result_493459.json`` a job id).
_RANK_IN_NAME = (re.compile(r"(?<![a-z])rank[-_]?(\d+)(?!\d)", re.IGNORECASE),)


@dataclass
class RankTrace:
    """One rank's trace: its event table (complete events only) and the file's top-level metadata."""

    rank: int
    path: Path
    columns: Columns
    metadata: dict = field(default_factory=dict)
    n_events: int = 0  # all events in the file, including metadata, flows and instants
    truncated: bool = False
    _frame: "pd.DataFrame | None" = field(default=None, repr=False, compare=False)

    @property
    def events(self) -> "pd.DataFrame":
        """The event table in pandas (built from :attr:`columns` on first use, sharing its arrays)."""
        if self._frame is None:
            self._frame = self.columns.to_frame()
        return self._frame


@dataclass
class Trace:
    """A loaded trace: ranks in increasing order, each with its table."""

    ranks: dict[int, RankTrace]

    @property
    def rank_ids(self) -> list[int]:
        """The ranks, in increasing order."""
        return sorted(self.ranks)

    def __getitem__(self, rank: int) -> RankTrace:
        try:
            return self.ranks[rank]
        except KeyError:
            raise TraceError(f"rank {rank} is not in this trace (ranks: {self.rank_ids})") from None

    @property
    def files(self) -> dict[int, Path]:
        """The rank -> file mapping (what HTA's ``TraceAnalysis(trace_files=...)`` needs)."""
        return {r: self.ranks[r].path for r in self.rank_ids}


def is_trace_name(path: Path) -> bool:
    """Whether a file name looks like a trace (``.json`` or ``.json.gz``)."""
    return path.name.endswith(TRACE_SUFFIXES)


def rank_from_name(path: Path) -> int | None:
    """The rank written in a file name with an explicit marker (``rank-3``, ``rank3``, ``worker_rank3``), or None:
    digits alone at the end of a name (a time stamp, a job id) name no rank."""
    for pattern in _RANK_IN_NAME:
        m = pattern.search(path.name)
        if m:
            return int(m.group(1))
    return None


def _head(path: Path, size: int = 1 << 16) -> bytes:
    with open_bytes(path) as fh:
        try:
            return fh.read(size)
        except (EOFError, OSError, zlib.error):
            return b""


def rank_from_content(path: Path) -> int | None:
    """``distributedInfo.rank`` from the start of the file (compact or spaced JSON), or None."""
    head = _head(path)
    m = re.search(rb'"distributedInfo"\s*:\s*(\{[^{}]*?"rank"\s*:\s*(\d+))', head)
    return int(m.group(2)) if m else None


def looks_like_trace(path: Path) -> bool:
    """Whether a JSON file is a Chrome trace (has ``traceEvents`` near the top, or is a bare event array)."""
    head = _head(path).lstrip()
    return b'"traceEvents"' in head or head[:1] == b"["


def is_rocprof_v1_json(path: Path) -> bool:
    """Whether a JSON file is rocprof v1's ``results.json`` (it opens with an empty event: ``{ "traceEvents":[{}``),
    which has its own reader (``lumikit rocprof stats``) and no PyTorch steps or ranks."""
    return _head(path, 256).replace(b" ", b"").replace(b"\n", b"").startswith(b'{"traceEvents":[{}')


def find_trace_files(path: Path | str, rank_map: Mapping[int, str | Path] | None = None) -> dict[int, Path]:
    """Map ranks to trace files under ``path`` (a file or a folder; run folders are searched recursively).

    ``rank_map`` ({rank: file}) overrides discovery. Non-trace JSON files are skipped with a warning; two files
    claiming one rank raise :class:`TraceError` that tells how to map them explicitly.
    """
    if rank_map:
        files = {int(r): Path(p) for r, p in rank_map.items()}
        for p in files.values():
            if not p.is_file():
                raise TraceError(f"{p}: no such trace file (from the rank mapping)")
        return dict(sorted(files.items()))
    root = Path(path)
    if root.is_file():
        rank = rank_from_content(root)
        if rank is None:
            rank = rank_from_name(root) or 0
        return {rank: root}
    if not root.is_dir():
        if os.path.lexists(root):  # a FIFO or a device: say which, never open it
            regular_file(root, "a trace file (.json/.json.gz) or a run folder")
        raise TraceError(f"{root}: no such file or folder; give a trace file (.json/.json.gz) or a run folder")
    candidates = sorted(p for p in root.rglob("*") if p.is_file() and is_trace_name(p))
    found: dict[int, Path] = {}
    unranked: list[Path] = []
    for p in candidates:
        if not looks_like_trace(p):
            warnings.warn(f"{p}: skipped, not a trace file (no traceEvents)", stacklevel=2)
            continue
        if is_rocprof_v1_json(p):
            warnings.warn(f"{p}: skipped, a rocprof v1 results.json, not a PyTorch profiler trace; read it with "
                          f"`lumikit rocprof stats {p}`", stacklevel=2)
            continue
        rank = rank_from_content(p)
        if rank is None:
            rank = rank_from_name(p)
        if rank is None:
            unranked.append(p)
            continue
        if rank in found:
            raise TraceError(f"{found[rank]} and {p} both claim rank {rank}; pass an explicit mapping "
                             f"(rank_map={{0: ..., 1: ...}}, command line: --rank-map 0=FILE,1=FILE) "
                             f"or move one of them out of {root}")
        found[rank] = p
    if unranked:
        if len(unranked) > 1 or 0 in found:
            names = ", ".join(p.name for p in unranked)
            raise TraceError(f"{root}: cannot tell the rank of {names} (no distributedInfo.rank, no rank in the "
                             f"file name); pass an explicit mapping (rank_map={{0: FILE, 1: FILE}})")
        found[0] = unranked[0]
    if not found:
        raise TraceError(f"{root}: no trace files found (*.json, *.json.gz with traceEvents)")
    return dict(sorted(found.items()))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: 7 in an Open OnDemand session on a 128-thread
    node, where ``os.cpu_count()`` says 128)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _default_workers() -> int:
    """Parser processes: one per usable core, at most 8 (the reading process itself mostly waits)."""
    return max(1, min(8, usable_cores()))


#: One core's parse speed (bytes of trace per second) by reader, and what starting a pool of parser processes costs
#: (seconds) by start method: measured on CI's 2-core machine (2026-11-26, traces of 2 to 236 MB, one process against
#: two workers). A forked worker starts in about 20 ms; forkserver and spawn start fresh interpreters that import
#: lumikit and numpy, about 250 ms, which is why a Jupyter kernel parses a 78 MB trace faster alone (0.16 s against
#: 0.31 s with two workers, compiled reader).
PARSE_BYTES_PER_S = {"compiled": 500e6, "msgspec": 250e6}
POOL_START_S = {"fork": 0.02, "forkserver": 0.25, "spawn": 0.25}
#: The share of the ideal speed-up parser processes reach (the loading process merges their columns meanwhile).
PARALLEL_EFFICIENCY = 0.75


def parallel_pays(nbytes: int, workers: int, method: str, reader: str) -> bool:
    """Whether ``workers`` parser processes load ``nbytes`` of trace sooner than this process alone: the time they
    save (one process's parse time, spread over the workers at ``PARALLEL_EFFICIENCY``) must be at least twice what
    starting them costs."""
    if workers <= 1:
        return False
    alone = nbytes / PARSE_BYTES_PER_S[reader]
    saved = alone * (1 - 1 / max(1.0, PARALLEL_EFFICIENCY * workers))
    return saved >= 2 * POOL_START_S[method]


def _threads_in_process() -> int:
    """Python threads of this process (a Jupyter kernel runs several: heartbeat, IOPub, control)."""
    return threading.active_count()


def fork_is_safe() -> bool:
    """Whether forking parser processes is safe here: one Python thread, and not inside a Jupyter kernel or a
    process that imported torch (whose thread pools and locks a forked child would inherit half-held). numpy's
    BLAS pool alone is fork-safe (OpenBLAS re-initialises in the child)."""
    import sys

    return _threads_in_process() == 1 and not ({"ipykernel", "torch"} & set(sys.modules))


def _expected_bytes(paths: Iterable[Path]) -> int:
    """Rough uncompressed size of the files (gzip traces shrink about tenfold)."""
    return sum(p.stat().st_size * (10 if p.name.endswith(".gz") else 1) for p in paths)


def start_method() -> str:
    """How to start parser processes: ``fork`` (fast) only from a single-threaded process; forking a threaded one
    (a Jupyter kernel, a process that imported torch) can deadlock the child on a lock another thread held, so
    there ``forkserver`` (or ``spawn``) starts clean processes instead."""
    methods = mp.get_all_start_methods()
    if "fork" in methods and fork_is_safe():
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(start_method()))


def _parse_pieces(path: Path, pieces: list[bytes | FileRange],
                  region: tuple[int, int] | None = None) -> list[ColumnChunk | StoredChunk]:
    """Parse consecutive chunks of one file in a worker (a few megabytes per task, so work crosses between
    processes a dozen times per 100 MB rather than a hundred); the columns go back through the shared mapping
    when the task was given a slice of it (see :mod:`lumikit.trace.handoff`)."""
    return store_if_shared([_parse_or_explain(path, piece) for piece in pieces], region)


def _parse_or_explain(path: Path, piece: bytes | FileRange) -> ColumnChunk:
    """Parse a chunk (bytes, or a byte range of the file read here, in the worker) into columns."""
    try:
        return parse_array(piece.read_array()) if isinstance(piece, FileRange) else parse_chunk(piece)
    except NestedTooDeep as exc:
        raise TraceError(f"{path}: {exc}; no profiler writes such args: is it the right file?") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise MalformedChunk(f"{path}: malformed trace events ({exc}); the file may be truncated or corrupted; "
                             f"{salvage_hint(path)}") from None



def load_trace(path: Path | str, *, ranks: Iterable[int] | None = None,
               rank_map: Mapping[int, str | Path] | None = None, salvage: bool = False,
               workers: int | None = None, progress: bool = False) -> Trace:
    """Load a trace file or a folder of per-rank traces into per-rank event tables.

    ``ranks`` keeps only those ranks; ``rank_map`` ({rank: file}) names the files explicitly; ``salvage=True``
    keeps the complete events of a truncated file instead of raising; ``workers`` is the number of parser
    processes (default: one per usable core, up to 8, where :func:`parallel_pays` for this trace, else 1: this
    process parses alone).
    """
    try:
        return _load_trace(path, ranks=ranks, rank_map=rank_map, salvage=salvage, workers=workers, progress=progress)
    except MalformedChunk:  # a cut inside an event's args, or damage: read again, checking each chunk's cut
        return _load_trace(path, ranks=ranks, rank_map=rank_map, salvage=salvage, workers=workers, progress=progress,
                           careful=True)


def _load_trace(path: Path | str, *, ranks: Iterable[int] | None, rank_map: Mapping[int, str | Path] | None,
                salvage: bool, workers: int | None, progress: bool, careful: bool = False) -> Trace:
    """:func:`load_trace`; ``careful`` reads every file with :attr:`TraceStream.careful`."""
    files = find_trace_files(path, rank_map)
    if ranks is not None:
        wanted = set(int(r) for r in ranks)
        missing = wanted - set(files)
        if missing:
            raise TraceError(f"{path}: no trace for rank(s) {sorted(missing)} (ranks found: {sorted(files)})")
        files = {r: p for r, p in files.items() if r in wanted}
    if workers is None:
        workers = _default_workers()
        reader = "compiled" if compiled_reader_enabled() else "msgspec"
        if not parallel_pays(_expected_bytes(files.values()), workers, start_method(), reader):
            workers = 1
    workers = max(1, workers)
    bar = _progress(files, progress)
    builders = {r: TableBuilder() for r in files}
    streams = {r: TraceStream(p, salvage=salvage, chunk_bytes=CHUNK_BYTES, careful=careful) for r, p in files.items()}
    pool: ProcessPoolExecutor | None = None
    pending: deque[tuple[int, int, Future]] = deque()
    shared = SharedColumns.for_text(_expected_bytes(files.values())) \
        if workers > 1 and start_method() == "fork" else None
    handoff.CURRENT = shared  # before the pool forks: its workers inherit the mapping
    left = _expected_bytes(files.values())  # bytes of trace not yet handed to a worker (roughly, for gzip)
    open_tasks = dict.fromkeys(files, 0)  # per rank: tasks handed out and not yet collected
    read_all: set[int] = set()  # ranks whose every piece was handed out
    tables: dict[int, Columns] = {}

    def collect() -> None:
        rank = _collect(pending.popleft(), builders, bar, shared)
        open_tasks[rank] -= 1
        if rank in read_all and not open_tasks[rank]:
            tables[rank] = builders[rank].build_columns()  # while the workers parse the next ranks

    helpers: list[threading.Thread] = []  # the threads the pool starts in this process

    def submit(rank: int, work: list[bytes | FileRange], size: int) -> None:
        nonlocal pool
        first = pool is None
        if first:
            pool = _pool(workers)
            before = set(threading.enumerate())
        region = shared.reserve(size) if shared is not None else None
        pending.append((rank, size, pool.submit(_parse_pieces, streams[rank].path, work, region)))
        if first:  # the pool starts its manager thread with the first task
            helpers.extend(t for t in threading.enumerate() if t not in before)
        open_tasks[rank] += 1
        while len(pending) > 2 * workers:
            collect()

    try:
        for rank, stream in streams.items():
            batch: list[bytes | FileRange] = []
            batch_size = 0
            for piece in stream.pieces():
                size = piece.stop - piece.start if isinstance(piece, FileRange) else len(piece)
                left -= size
                if workers == 1:
                    builders[rank].add(_parse_or_explain(stream.path, piece))
                    _tick(bar, size)
                    continue
                batch.append(piece)
                batch_size += size
                del piece
                if batch_size >= _batch_bytes(left, workers) or not isinstance(batch[-1], FileRange):
                    submit(rank, batch, batch_size)
                    batch, batch_size = [], 0
            if batch:
                submit(rank, batch, batch_size)
            read_all.add(rank)
        if pool is not None:  # the workers leave once the last results are in, while the last table is built here
            pool.shutdown(wait=False)
        while pending:
            collect()
    finally:
        handoff.CURRENT = None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # after an error: drop the tasks not yet started
            for thread in helpers:  # joined before returning (shutdown forgets them once told not to wait): a
                thread.join()  # thread left running would make the next load in this process fork-unsafe
        if bar is not None:
            bar.close()
    out = {}
    for rank, stream in streams.items():
        if stream.truncated:
            warnings.warn(f"{stream.path}: {stream.damage or 'truncated trace'}, kept the {builders[rank].n_events} "
                          f"complete events; {stream.lost_bytes:,} bytes after the last one were dropped",
                          stacklevel=2)
        columns = tables[rank] if rank in tables else builders[rank].build_columns()
        out[rank] = RankTrace(rank=rank, path=stream.path, columns=columns, metadata=stream.metadata,
                              n_events=builders[rank].n_events, truncated=stream.truncated)
    if shared is not None:
        shared.close()  # every view of it was copied into the tables
    return Trace(out)


def _batch_bytes(left: int, workers: int) -> int:
    """Bytes of trace per worker task: ``BATCH_BYTES`` while much is left, then smaller and smaller (down to one
    reader chunk), so the workers run out of work together instead of one finishing a large last task alone."""
    return min(BATCH_BYTES, max(CHUNK_BYTES, left // (2 * workers)))


def _collect(item: tuple[int, int, Future], builders: dict[int, TableBuilder], bar,
             shared: SharedColumns | None) -> int:
    """Add a finished task's chunks to its rank's table; returns the rank."""
    rank, size, future = item
    for chunk in future.result():
        builders[rank].add(shared.load(chunk) if shared is not None else chunk)
    _tick(bar, size)
    return rank


def _progress(files: Mapping[int, Path], enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    total = _expected_bytes(files.values())
    return tqdm(total=total, unit="B", unit_scale=True, desc="parsing trace")


def _tick(bar, size: int) -> None:
    if bar is not None:
        bar.update(size)
