"""rocprofv3 outputs as the event tables the trace analyses read: idle causes and the critical path on rocpd.

One process of a database becomes one rank of a :class:`~lumikit.trace.loader.Trace`, with the columns the Kineto
loader gives (:mod:`lumikit.trace.columns`), so ``lumikit trace idle`` and ``lumikit trace critical-path`` run the
same code on a ``.db`` as on a torch profiler trace. rocprofv3's JSON output and its CSV files are read into the
same columns (:mod:`.rocprofv3_outputs`), so every output format of every current version feeds the analyses:

* HIP API calls (``rocpd_region`` rows whose event category starts with ``HIP_``) are runtime calls (category
  ``cuda_runtime``, as Kineto files them on ROCm too); RCCL API calls are CPU ops; HSA calls (nested inside the HIP
  calls), markers and other domains are left out and counted in ``metadata["rocpd"]["skipped_regions"]``. A rocpd
  database records no host work between those calls (no Python, no CPU ops): the gaps between a thread's HIP calls
  are the host time the profiler did not see, and the analyses can count them as such;
* kernel dispatches are ``kernel`` rows and memory copies ``gpu_memcpy`` rows on (GPU index, stream);
* a GPU activity and the HIP call that enqueued it share ``rocpd_event.stack_id``: rocprofv3 writes the internal
  correlation id there for both (and the external one, a roctx or user id, in ``correlation_id``; a database
  without ``stack_id`` is linked by ``correlation_id``);
* ``rocpd_arg`` holds each HIP call's arguments as text (name, type, value). Handles are matched as opaque text,
  never parsed: a call's ``stream`` argument gets the stream id of the GPU work launched with the same handle (so a
  ``hipStreamSynchronize`` waits on an exact stream), and its ``event`` argument becomes a code in an extra
  ``event`` column (so a ``hipStreamWaitEvent`` or ``hipEventSynchronize`` finds the ``hipEventRecord`` of the same
  event). Where the arguments are missing (rocprofv3 without ``--hip-trace`` arguments, or an older writer), the
  analyses fall back on the inference they use for Kineto traces, and label it.

Every layout of :mod:`.rocpd_sql` is read (3.0, track, timestamp), under its time and row budgets; only integer
columns of the large tables cross into Python, in chunks, and names are looked up once per id (numpy), so a 100 MB
database reads in about a second. A run whose databases hold no HIP calls is refused before its activities are
read when the analysis needs them.

Sources: rocprofiler-sdk's rocpd writer (``source/lib/output/generateRocpd.cpp``: ``stack_id`` =
internal correlation id, one ``rocpd_arg`` row per argument with ``position``, ``type``, ``name``, ``value``) and
its HIP argument structs (``source/include/rocprofiler-sdk/hip/api_args.h``: the arguments are named ``stream``
and ``event`` in every call used here). How a handle's value is written (``0x...`` or otherwise) is not relied on;
only that one handle is written the same way each time.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import LumikitError, ParseError, TraceError
from ..trace.columns import Columns
from ..trace.loader import RankTrace, Trace
from .rocpd_sql import (ANCHOR, BAD_TIME, NO_TIME, Budget, Layout, as_int, connect, fetch, fetch_ints, layouts,
                        checked_time, fast_int, lookup, room_for, text, unreadable)

#: The ``rocpd_arg`` names read: HIP's stream and event handles (``api_args.h`` names them so in every call).
HANDLE_ARGS = ("stream", "event")
#: The Kineto categories the rows get: host calls, and GPU work.
RUNTIME, CPU_OP, KERNEL, COPY = "cuda_runtime", "cpu_op", "kernel", "gpu_memcpy"
CATEGORIES = [RUNTIME, CPU_OP, KERNEL, COPY]
#: What tells the process of each rank apart in a note.
ROCPD_KEY = "rocpd"


@dataclass
class Part:
    """The activities of one source (a table suffix of a database, one process of a JSON file, one process's CSV
    files) as integer arrays: times in ns, names as codes into ``names``, processes as keys into ``procs``
    (key -> (hostname, pid)). Host calls have a class (0 runtime, 1 CPU op, -1 left out); GPU work a kind
    (2 kernel, 3 copy). ``stream_args``/``event_args`` map a host call's ``arg_key`` to a handle code."""

    source: Path
    link: str
    names: list[str]
    procs: dict[int, tuple[str, int]]
    host: dict[str, np.ndarray]
    gpu: dict[str, np.ndarray]
    stream_args: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (_empty(), _empty()))
    event_args: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (_empty(), _empty()))
    notes: list[str] = field(default_factory=list)


HOST_FIELDS = ("start", "end", "proc", "tid", "name", "cls", "link", "arg_key")
GPU_FIELDS = ("start", "end", "proc", "device", "stream", "link", "bytes", "name", "kind")


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


def rocpd_databases(path: str | os.PathLike[str]) -> list[Path]:
    """The rocprofv3 outputs ``path`` stands for: itself when it is a database (a SQLite file), a rocprofv3 JSON
    output or a ``*_kernel_trace.csv``; the databases of a run folder that holds no torch trace JSON (one ``.db``
    per process), else its rocprofv3 JSON files, else its kernel trace CSVs; else ``[]`` (a Kineto trace or a
    folder of them)."""
    from .rocprofv3_outputs import is_rocprofv3_json
    from .rocpd_sql import is_sqlite

    p = Path(path)
    if p.is_file():
        if is_sqlite(p) or is_rocprofv3_json(p) or p.name.lower().endswith("kernel_trace.csv"):
            return [p]
        return []
    if p.is_dir():
        from .outputs import find_outputs

        outputs = find_outputs(p)
        v3_json = [j for j in p.rglob("*.json") if is_rocprofv3_json(j)]
        if any(j for j in p.rglob("*.json") if j not in v3_json) or any(p.rglob("*.json.gz")):
            return []
        databases = [d for d in outputs.databases if is_sqlite(d)]
        return databases or sorted(v3_json) or list(outputs.kernel_traces)
    return []


# --- rocpd databases --------------------------------------------------------------------------------------------

def _small(con: sqlite3.Connection, lay: Layout, table: str, cols: tuple[str, ...], budget: Budget,
           texts: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """A lookup table (ids and a few columns) as arrays; missing columns come back as -1 (or None for text)."""
    have = lay.cols(table)
    if not lay.has(table) or "id" not in have:
        return {c: np.zeros(0, dtype=object if c in texts else np.int64) for c in ("id",) + cols}
    exprs = [as_int("id")] + [(text(c) if c in have else "NULL") if c in texts else as_int(c if c in have else "NULL")
                              for c in cols]
    rows = fetch(con, f'SELECT {", ".join(exprs)} FROM {lay.t(table)}', budget)
    out = {}
    for i, c in enumerate(("id",) + cols):
        values = [r[i] for r in rows]
        out[c] = np.array(values, dtype=object) if c in texts else np.array(values, dtype=np.int64)
    return out


def _category_classes(con: sqlite3.Connection, lay: Layout, budget: Budget) -> tuple[np.ndarray, np.ndarray]:
    """Category ids and the host class each stands for: HIP runtime 0, RCCL 1, anything else -1."""
    where = lay.category_names()
    if where is None:
        return _empty(), _empty()
    table, col = where
    cats = _small(con, lay, table, (col,), budget, texts=(col,))
    names = [str(n or "") for n in cats[col]]
    cls = np.array([0 if n.startswith("HIP_") else 1 if n.startswith("RCCL") else -1 for n in names], dtype=np.int64)
    return cats["id"], cls


def _hip_category_ids(con: sqlite3.Connection, lay: Layout, budget: Budget) -> list[int]:
    ids, cls = _category_classes(con, lay, budget)
    return [int(i) for i in ids[cls == 0]]


def has_hip_calls(con: sqlite3.Connection, lay: Layout, budget: Budget) -> bool:
    """Whether the tables of one suffix hold a HIP API call, found without reading the activities (a database of
    a million dispatches and no calls is refused in milliseconds)."""
    if not lay.has("rocpd_region"):
        return False
    region = lay.t("rocpd_region")
    if not lay.has("rocpd_event") or "event_id" not in lay.cols("rocpd_region") or lay.category_names() is None:
        return bool(fetch(con, f"SELECT 1 FROM {region} LIMIT 1", budget))
    hip = _hip_category_ids(con, lay, budget)
    if not hip:
        return False
    marks = ", ".join(str(i) for i in hip[:1000])
    return bool(fetch(con, f"""SELECT 1 FROM {region} X JOIN {lay.t('rocpd_event')} E ON E.id = X.event_id
                               WHERE E.category_id IN ({marks}) LIMIT 1""", budget))


def _link(lay: Layout) -> str | None:
    cols = lay.cols("rocpd_event")
    return "stack_id" if "stack_id" in cols else "correlation_id" if "correlation_id" in cols else None


def _activities(con: sqlite3.Connection, lay: Layout, table: str, fields: list[tuple[str, str]], link: str | None,
                budget: Budget) -> dict[str, np.ndarray]:
    """The start, end and integer ``fields`` (name, bare column over X, TR, E) of an activity table, read with its
    time joins, track join and event join."""
    joins, start, end = lay.times(table, checked=False)
    event = ""
    if link and "event_id" in lay.cols(table):
        event = f" LEFT JOIN {lay.t('rocpd_event')} E ON E.id = X.event_id"
    source = f"{lay.t(table)} X{lay.track_join(table)}{joins}{event}"
    lay.require_keyed(("rocpd_track", "rocpd_timestamp", "rocpd_event"), budget.source)
    checked = [checked_time(start), checked_time(end)] + [as_int(e) for _, e in fields]
    fast = [fast_int(start, NO_TIME), fast_int(end, NO_TIME)] + [fast_int(e) for _, e in fields]
    return fetch_ints(con, checked, source, ("start", "end") + tuple(n for n, _ in fields), budget,
                      count_sql=lay.t(table), fast=fast)


def _read_layout(con: sqlite3.Connection, lay: Layout, budget: Budget, path: Path) -> Part:
    """Host calls, GPU work and the handle arguments of the tables of one suffix."""
    for need in ("rocpd_info_kernel_symbol",):
        if not lay.has(need):
            raise ParseError(f"table {need + lay.sfx} is missing: this rocpd database has no kernels to read (was "
                             "the program stopped before rocprofv3 finished writing, or profiled without "
                             "--kernel-trace?)", source=str(path))
    link = _link(lay)
    has_event = link is not None
    ev = (lambda c: f"E.{c}" if has_event and c in lay.cols("rocpd_event") else "NULL")

    strings = _small(con, lay, "rocpd_string", ("string",), budget, texts=("string",))
    symbols = _small(con, lay, "rocpd_info_kernel_symbol", ("display_name", "kernel_name"), budget,
                     texts=("display_name", "kernel_name"))
    threads = _small(con, lay, "rocpd_info_thread", ("tid",), budget)
    processes = _small(con, lay, "rocpd_info_process", ("pid", "nid"), budget)
    nodes = _small(con, lay, "rocpd_info_node", ("hostname",), budget, texts=("hostname",))
    agents = _small(con, lay, "rocpd_info_agent", ("absolute_index", "type_index"), budget)
    agent_type = _small(con, lay, "rocpd_info_agent", ("type",), budget, texts=("type",))
    cat_ids, cat_cls = _category_classes(con, lay, budget)

    # names: strings (ids >= 0) then kernel symbols, as one label list
    string_names = [str(s) if s is not None else "(unnamed)" for s in strings["string"]]
    symbol_names = [str(d if d not in (None, "") else k if k is not None else "(unnamed)")
                    for d, k in zip(symbols["display_name"], symbols["kernel_name"])]
    names = string_names + symbol_names + ["(unnamed call)", "(unnamed)"]
    unnamed_call, unnamed = len(names) - 2, len(names) - 1

    def name_codes(ids: np.ndarray, keys: np.ndarray, offset: int, missing: int) -> np.ndarray:
        codes = lookup(ids, keys, np.arange(offset, offset + len(keys), dtype=np.int64), -1)
        return np.where(codes < 0, missing, codes)

    # processes: the process row id is the key; the node's hostname and the OS pid are the identity
    host_of = lookup(processes["nid"], nodes["id"], np.arange(len(nodes["id"]), dtype=np.int64), -1)
    hostnames = [str(h or "") for h in nodes["hostname"]]
    procs = {int(k): (hostnames[h] if h >= 0 else "", int(p)) for k, p, h in
             zip(processes["id"], processes["pid"], host_of)}

    place = lay.place
    region = {}
    if lay.has("rocpd_region"):
        region = _activities(con, lay, "rocpd_region", [
            ("proc", place("rocpd_region", "pid")), ("thread", place("rocpd_region", "tid")),
            ("name_id", "X.name_id" if "name_id" in lay.cols("rocpd_region") else "NULL"),
            ("link", ev(link or "")), ("category", ev("category_id")),
            ("arg_key", "X.event_id" if "event_id" in lay.cols("rocpd_region") else "NULL")], link, budget)
    else:
        region = {k: _empty() for k in ("start", "end", "proc", "thread", "name_id", "link", "category", "arg_key")}
    host_name = name_codes(region["name_id"], strings["id"], 0, unnamed_call)
    cls = lookup(region["category"], cat_ids, cat_cls, -1)
    if not len(cat_ids):  # no category names: a call is a HIP call when its name says so
        starts_hip = np.array([n.startswith(("hip", "__hip")) for n in names], dtype=bool)
        cls = np.where(starts_hip[host_name], 0, -1)
    host = {"start": region["start"], "end": region["end"], "proc": region["proc"],
            "tid": lookup(region["thread"], threads["id"], threads["tid"], -1), "name": host_name, "cls": cls,
            "link": region["link"], "arg_key": region["arg_key"]}

    kd = _activities(con, lay, ANCHOR, [
        ("proc", place(ANCHOR, "pid")), ("agent", place(ANCHOR, "agent_id")),
        ("stream", place(ANCHOR, "stream_id")),
        ("kernel_id", "X.kernel_id" if "kernel_id" in lay.cols(ANCHOR) else "NULL"),
        ("link", ev(link or ""))], link, budget)
    gpu_index = np.where(agents["type_index"] >= 0, agents["type_index"], agents["absolute_index"])
    kernels = {"start": kd["start"], "end": kd["end"], "proc": kd["proc"],
               "device": lookup(kd["agent"], agents["id"], gpu_index, -1), "stream": kd["stream"],
               "link": kd["link"], "bytes": np.full(len(kd["start"]), -1, dtype=np.int64),
               "name": name_codes(kd["kernel_id"], symbols["id"], len(string_names), unnamed),
               "kind": np.full(len(kd["start"]), 2, dtype=np.int64)}

    mc_cols = lay.cols("rocpd_memory_copy")
    if lay.has("rocpd_memory_copy"):
        mc = _activities(con, lay, "rocpd_memory_copy", [
            ("proc", place("rocpd_memory_copy", "pid")),
            ("stream", place("rocpd_memory_copy", "stream_id")),
            ("size", "X.size" if "size" in mc_cols else "NULL"),
            ("src", "X.src_agent_id" if "src_agent_id" in mc_cols else "NULL"),
            ("dst", "X.dst_agent_id" if "dst_agent_id" in mc_cols else "NULL"),
            ("name_id", "X.name_id" if "name_id" in mc_cols else "NULL"),
            ("link", ev(link or ""))], link, budget)
        gpu_agent = np.array([str(t) == "GPU" for t in agent_type["type"]], dtype=bool)
        dst_gpu = lookup(mc["dst"], agents["id"], gpu_agent, False)
        device = np.where(dst_gpu, lookup(mc["dst"], agents["id"], gpu_index, -1),
                          lookup(mc["src"], agents["id"], gpu_index, -1))
        copies = {"start": mc["start"], "end": mc["end"], "proc": mc["proc"], "device": device,
                  "stream": mc["stream"], "link": mc["link"], "bytes": mc["size"],
                  "name": name_codes(mc["name_id"], strings["id"], 0, unnamed),
                  "kind": np.full(len(mc["start"]), 3, dtype=np.int64)}
        gpu = {k: np.concatenate([kernels[k], copies[k]]) for k in GPU_FIELDS} if len(copies["start"]) else kernels
    else:
        gpu = kernels

    part = Part(path, link or "none", names, procs, host, gpu)
    arg_cols = lay.cols("rocpd_arg")
    if lay.has("rocpd_arg") and {"event_id", "name", "value"} <= arg_cols:
        # one row per distinct handle text, with the keys of the calls that name it: no handle string per call
        where = f"{lay.t('rocpd_arg')} A WHERE A.name IN ('stream', 'event')"
        n = int(fetch(con, f"SELECT count(*) FROM {where}", budget)[0][0])
        budget.count(n)
        with room_for(con, n):
            rows = fetch(con, f"""SELECT A.name = 'event', count(*), group_concat({as_int('A.event_id')}, ',')
                                  FROM {where} GROUP BY A.name, {text('A.value')}""", budget)
        for is_event in (0, 1):
            mine = [r for r in rows if r[0] == is_event]
            keys = [np.fromstring(r[2] or "", dtype=np.int64, sep=",") for r in mine]
            codes = [np.full(len(k), i, dtype=np.int64) for i, k in enumerate(keys)]
            pair = (np.concatenate(keys) if keys else _empty(), np.concatenate(codes) if codes else _empty())
            if is_event:
                part.event_args = pair
            else:
                part.stream_args = pair
    return part


def _read_database(path: Path, host_calls: bool) -> list[Part]:
    con, budget = connect(path)
    try:
        lays = layouts(con, str(path))
        if host_calls and not any(has_hip_calls(con, lay, budget) for lay in lays):
            raise TraceError(f"{path}: no HIP API calls in this rocpd database, so there is no host side to put "
                             "on a path; profile with `rocprofv3 --hip-trace --kernel-trace --memory-copy-trace`")
        return [_read_layout(con, lay, budget, path) for lay in lays]
    except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError) as exc:
        raise unreadable(exc, str(path), budget) from None
    finally:
        con.close()


# --- columns ----------------------------------------------------------------------------------------------------

def _check_times(start: np.ndarray, end: np.ndarray, what: str, source: str) -> None:
    """A missing, non-integer (inf, text) or negative time is damage, named in one line."""
    bad = (start < 0) | (end < 0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = start[first] if start[first] < 0 else end[first]
        shown = "missing" if value == NO_TIME else "not an integer" if value == BAD_TIME else str(int(value))
        raise ParseError(f"{int(bad.sum())} {what} without a time in nanoseconds from 0 to 2**63 (first: "
                         f"{shown}); the file is damaged: profile again", source=source)


def _stream_of_handles(host: dict[str, np.ndarray], handle: np.ndarray, gpu: dict[str, np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Each stream handle's GPU stream: the stream of the work its launches enqueued (handles whose launches went
    to more than one stream are left out). Returns (handle codes, stream ids)."""
    calls = (handle >= 0) & (host["link"] >= 0)
    work = (gpu["link"] >= 0) & (gpu["stream"] >= 0)
    if not calls.any() or not work.any():
        return _empty(), _empty()
    h = lookup(gpu["link"][work], host["link"][calls], handle[calls], -1)
    hs, ss = h[h >= 0], gpu["stream"][work][h >= 0]
    if not len(hs):
        return _empty(), _empty()
    width = int(ss.max()) + 1
    pairs = np.unique(hs * width + ss)  # (handle, stream) as one integer: a 1-D unique
    handles, counts = np.unique(pairs // width, return_counts=True)
    keep = np.isin(pairs // width, handles[counts == 1])
    return pairs[keep] // width, pairs[keep] % width


def _process_columns(part: Part, hmask: np.ndarray, gmask: np.ndarray, base_ns: int) -> tuple[Columns, dict]:
    """One process's Kineto-shaped columns (times in µs after ``base_ns``) and what was read or left out."""
    def pick(table: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
        return table if mask.all() else {k: v[mask] for k, v in table.items()}  # one process: no copy

    h = pick(part.host, hmask)
    kept = h["cls"] >= 0
    skipped = int((~kept).sum())
    h = pick(h, kept)
    g = pick(part.gpu, gmask)
    _check_times(h["start"], h["end"], "API calls", str(part.source))
    _check_times(g["start"], g["end"], "GPU activities", str(part.source))

    stream_handle = lookup(h["arg_key"], *part.stream_args, -1) if len(part.stream_args[0]) else \
        np.full(len(h["start"]), -1, dtype=np.int64)
    event_handle = lookup(h["arg_key"], *part.event_args, -1) if len(part.event_args[0]) else \
        np.full(len(h["start"]), -1, dtype=np.int64)
    handles, streams = _stream_of_handles(h, stream_handle, g)
    host_stream = lookup(stream_handle, handles, streams, -1)
    events_used = np.unique(event_handle[event_handle >= 0])
    host_event = lookup(event_handle, events_used, np.arange(len(events_used), dtype=np.int64), -1)

    n_host, n_gpu = len(h["start"]), len(g["start"])
    raw_names = np.concatenate([h["name"], g["name"]])
    present = np.bincount(raw_names, minlength=len(part.names)) > 0 if len(raw_names) else \
        np.zeros(len(part.names), dtype=bool)
    used = np.flatnonzero(present)  # the names this process uses, in id order (a count, not a sort)
    inverse = (np.cumsum(present) - 1)[raw_names] if len(raw_names) else np.zeros(0, dtype=np.int64)
    labels = [part.names[int(i)] for i in used]
    # two ids with the same text (a string and a symbol) become one label
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(label, len(first)) for label in labels], dtype=np.int32)
    name_code = remap[inverse] if len(inverse) else np.zeros(0, dtype=np.int32)
    start = np.concatenate([h["start"], g["start"]])
    end = np.concatenate([h["end"], g["end"]])
    order = np.argsort(start, kind="stable")
    cat_code = np.concatenate([h["cls"], g["kind"]]).astype(np.int32)
    data = {
        "name": name_code.astype(np.int32),
        "cat": cat_code,
        "pid": np.concatenate([np.full(n_host, part.procs.get(int(h["proc"][0]), ("", -1))[1] if n_host else -1,
                                       dtype=np.int64), g["device"]]),
        "tid": np.concatenate([h["tid"], g["stream"]]),
        "ts": (start - base_ns) / 1000.0,
        "dur": (end - start) / 1000.0,
        "stream": np.concatenate([host_stream, g["stream"]]),
        "correlation": np.concatenate([h["link"], g["link"]]),
        "external_id": np.full(n_host + n_gpu, -1, dtype=np.int64),
        "bytes": np.concatenate([np.full(n_host, -1, dtype=np.int64), g["bytes"]]),
        "event": np.concatenate([host_event, np.full(n_gpu, -1, dtype=np.int64)]),
    }
    for k in list(data):  # one column at a time, so only one unsorted column is alive beside the sorted ones
        data[k] = data[k][order]
    columns = Columns(data, {"name": list(first), "cat": CATEGORIES})
    read = {"host_calls": int(n_host), "kernels": int((g["kind"] == 2).sum()), "copies": int((g["kind"] == 3).sum()),
            "skipped_regions": skipped, "calls_with_stream": int((host_stream >= 0).sum()),
            "calls_with_event": int((host_event >= 0).sum()), "stream_handles": int(len(handles)),
            "event_handles": int(len(events_used))}
    return columns, read


def build_trace(parts: list[Part], files: list[Path], ranks: Iterable[int] | None = None, *,
                host_calls: bool = False) -> Trace:
    """The parts of one or more outputs as a :class:`Trace`: one rank per process (by host and pid), times in µs
    from the earliest activity of all of them (so ranks share one clock)."""
    firsts = []
    for p in parts:
        for t in (p.host["start"], p.gpu["start"]):
            ok = t[t >= 0]
            if len(ok):
                firsts.append(int(ok.min()))
    if not firsts:
        raise TraceError(f"{', '.join(map(str, files))}: no HIP calls, kernels or copies in this rocprofv3 output; "
                         "profile with `rocprofv3 --hip-trace --kernel-trace --memory-copy-trace`")
    base = min(firsts)
    processes = []
    for p in parts:
        keys = np.unique(np.concatenate([p.host["proc"], p.gpu["proc"]]))
        unknown = [int(k) for k in keys if int(k) not in p.procs]
        if unknown:
            raise TraceError(f"{p.source}: {len(unknown)} process ids of its activities are not in its process "
                             f"table (first: {unknown[0]}), so its ranks cannot be told apart; the file is damaged "
                             "or was cut short: profile again")
        by_identity: dict[tuple[str, int], list[int]] = {}
        for k in keys:
            by_identity.setdefault(p.procs[int(k)], []).append(int(k))
        for (host, pid), ks in by_identity.items():
            processes.append((host, pid, p, np.array(ks, dtype=np.int64)))
    processes.sort(key=lambda t: (t[0], t[1]))
    wanted = None if ranks is None else set(ranks)
    if wanted is not None and not wanted <= set(range(len(processes))):
        raise TraceError(f"rank {sorted(wanted - set(range(len(processes))))[0]} is not in this rocprofv3 output "
                         f"(ranks: {list(range(len(processes)))}, one per process, by host and pid)")
    out: dict[int, RankTrace] = {}
    for rank, (host, pid, p, ks) in enumerate(processes):
        if wanted is not None and rank not in wanted:
            continue
        columns, read = _process_columns(p, np.isin(p.host["proc"], ks), np.isin(p.gpu["proc"], ks), base)
        meta = {ROCPD_KEY: {"host": host, "pid": pid, "base_ns": base, "link": p.link, **read}}
        if p.notes:
            meta[ROCPD_KEY]["notes"] = list(p.notes)
        if host_calls and not read["host_calls"]:
            raise TraceError(f"{p.source}: process {pid} (rank {rank}) has no HIP API calls, so there is no host "
                             "side to put on a path; profile with `rocprofv3 --hip-trace --kernel-trace "
                             "--memory-copy-trace`")
        out[rank] = RankTrace(rank, p.source, columns, metadata=meta, n_events=len(columns))
    return Trace(out)


def rocpd_trace(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                ranks: Iterable[int] | None = None, *, host_calls: bool = False) -> Trace:
    """One or more rocprofv3 outputs (rocpd databases of any layout, JSON outputs, kernel trace CSVs with their
    HIP API and memory copy CSVs beside them) as a :class:`~lumikit.trace.loader.Trace`: one rank per process,
    ranked by (host, pid), times in µs from the earliest activity of all of them. With ``host_calls``, outputs
    without HIP calls (a run profiled without ``--hip-trace``) are refused before their activities are read, and
    a rank without them after, naming the fix.

    Each rank's ``metadata["rocpd"]`` says which process it is and what was read: ``host_calls``, ``kernels``,
    ``copies``, ``skipped_regions`` (HSA calls, markers), ``calls_with_stream`` / ``calls_with_event`` (calls whose
    handle argument was matched) and the ``link`` column used.
    """
    from .rocprofv3_outputs import is_rocprofv3_json, read_csv_parts, read_json_parts
    from .rocpd_sql import is_sqlite

    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no rocprofv3 outputs given")
    parts: list[Part] = []
    for path in files:
        if path.name.lower().endswith(".csv"):
            parts += read_csv_parts(path, host_calls=host_calls)
        elif path.name.lower().endswith(".json") and is_rocprofv3_json(path):
            parts += read_json_parts(path, host_calls=host_calls)
        elif is_sqlite(path) or not path.name.lower().endswith(".json"):
            parts += _read_database(path, host_calls)
        else:
            raise ParseError("not a rocprofv3 JSON output (that starts with {\"rocprofiler-sdk-tool\"); give the "
                             "file `rocprofv3 --output-format json` writes, or its .db", source=str(path))
    return build_trace(parts, files, ranks, host_calls=host_calls)


def rocpd_note(trace: Trace) -> str:
    """One sentence on what the analyses of a rocprofv3 output counted and which arguments they read."""
    parts = []
    for rank in trace.rank_ids:
        m = trace[rank].metadata.get(ROCPD_KEY, {})
        parts.append(f"rank {rank} = {m.get('host') or 'host'}:{m.get('pid')} ({m.get('calls_with_stream', 0)} "
                     f"calls with a stream argument matched, {m.get('calls_with_event', 0)} with an event)")
    links = {trace[r].metadata.get(ROCPD_KEY, {}).get("link", "stack_id") for r in trace.rank_ids}
    how = "rocpd_event.stack_id" if links == {"stack_id"} else "the correlation id"
    return (f"the whole run (rocprofv3 output has no ProfilerStep annotations); GPU work linked to its HIP call by "
            f"{how}; host time between HIP calls is not traced; " + "; ".join(parts))
