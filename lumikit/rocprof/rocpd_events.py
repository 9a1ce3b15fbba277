"""rocprofv3 databases as the event tables the trace analyses read: idle causes and the critical path on rocpd.

One process of a database becomes one rank of a :class:`~lumikit.trace.loader.Trace`, with the columns the Kineto
loader gives (:mod:`lumikit.trace.columns`), so ``lumikit trace idle`` and ``lumikit trace critical-path`` run the
same code on a ``.db`` as on a torch profiler trace:

* HIP API calls (``rocpd_region`` rows whose event category starts with ``HIP_``) are runtime calls (category
  ``cuda_runtime``, as Kineto files them on ROCm too); RCCL API calls are CPU ops; HSA calls (nested inside the HIP
  calls), markers and other domains are left out and counted in ``metadata["rocpd"]["skipped_regions"]``;
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

Sources: rocprofiler-sdk's rocpd writer (``source/lib/output/generateRocpd.cpp``: ``stack_id`` =
internal correlation id, one ``rocpd_arg`` row per argument with ``position``, ``type``, ``name``, ``value``) and
its HIP argument structs (``source/include/rocprofiler-sdk/hip/api_args.h``: the arguments are named ``stream``
and ``event`` in every call used here). No real rocprofv3 database is among the fixtures yet, so how a handle's
value is written (``0x...`` or otherwise) is not relied on; only that one handle is written the same way each time.
Schema 3 (the reader of :mod:`.rocpd`); a schema 4 database is refused with its version, as there.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..errors import LumikitError, ParseError, TraceError
from ..trace.columns import Columns
from ..trace.loader import RankTrace, Trace
from .activities import _times
from .rocpd import _columns, _connect, _exists, _join, _region_joins, _require, _stand_in_missing, suffixes

#: The ``rocpd_arg`` names read: HIP's stream and event handles (``api_args.h`` names them so in every call).
HANDLE_ARGS = ("stream", "event")
#: The Kineto categories the rows get: host calls, and GPU work.
RUNTIME, CPU_OP, KERNEL, COPY = "cuda_runtime", "cpu_op", "kernel", "gpu_memcpy"
#: What tells the process of each rank apart in a note.
ROCPD_KEY = "rocpd"


def rocpd_databases(path: str | os.PathLike[str]) -> list[Path]:
    """The rocpd databases ``path`` stands for: itself when it is one (a SQLite file), the databases of a run folder
    that holds no trace JSON (one ``.db`` per process), else ``[]`` (a trace or a folder of traces)."""
    from .outputs import find_outputs
    from .rocpd import is_rocpd

    p = Path(path)
    if p.is_file():
        return [p] if is_rocpd(p) else []
    if p.is_dir() and not any(p.rglob("*.json")) and not any(p.rglob("*.json.gz")):
        return [d for d in find_outputs(p).databases if is_rocpd(d)]
    return []


def _link_column(con: sqlite3.Connection, sfx: str) -> str:
    """The ``rocpd_event`` column that links GPU work to its HIP call: ``stack_id`` (the internal correlation
    id) where the table has it, else ``correlation_id``."""
    return "stack_id" if "stack_id" in _columns(con, "rocpd_event" + sfx) else "correlation_id"


def _read_suffix(con: sqlite3.Connection, sfx: str, source: str) -> dict[str, pd.DataFrame]:
    """Host calls, GPU work and the handle arguments of the tables with one suffix (times in ns)."""
    _require(con, sfx, source)
    _stand_in_missing(con, sfx)
    guid = "guid" in _columns(con, "rocpd_kernel_dispatch" + sfx)
    link = _link_column(con, sfx) if _exists(con, "rocpd_event" + sfx) else None
    link_sql = f"E.{link}" if link else "NULL"
    event = _join("E", "rocpd_event", "X.event_id", sfx, guid)
    proc = _join("P", "rocpd_info_process", "X.pid", sfx, guid)
    node = _join("N", "rocpd_info_node", "X.nid", sfx, guid)
    regions = pd.read_sql_query(
        f"""SELECT T.string AS name, C.string AS category, X.start AS start_ns, X."end" AS end_ns,
                   P.pid, N.hostname, TH.tid, {link_sql} AS link, X.event_id
            FROM "rocpd_region{sfx}" X
            {_region_joins(sfx, guid)}""", con)
    kernels = pd.read_sql_query(
        f"""SELECT COALESCE(S.display_name, S.kernel_name) AS name, X.start AS start_ns, X."end" AS end_ns,
                   P.pid, N.hostname, COALESCE(A.type_index, A.absolute_index) AS device, X.stream_id AS stream,
                   {link_sql} AS link
            FROM "rocpd_kernel_dispatch{sfx}" X
            {_join("S", "rocpd_info_kernel_symbol", "X.kernel_id", sfx, guid)}
            {_join("A", "rocpd_info_agent", "X.agent_id", sfx, guid)}
            {event} {proc} {node}""", con)
    copy_stream = "X.stream_id" if "stream_id" in _columns(con, "rocpd_memory_copy" + sfx) else "NULL"
    copies = pd.read_sql_query(
        f"""SELECT T.string AS name, X.start AS start_ns, X."end" AS end_ns, X.size AS bytes, P.pid, N.hostname,
                   CASE WHEN DA.type = 'GPU' THEN COALESCE(DA.type_index, DA.absolute_index)
                        ELSE COALESCE(SA.type_index, SA.absolute_index) END AS device,
                   {copy_stream} AS stream, {link_sql} AS link
            FROM "rocpd_memory_copy{sfx}" X
            {_join("T", "rocpd_string", "X.name_id", sfx, guid)}
            {_join("SA", "rocpd_info_agent", "X.src_agent_id", sfx, guid)}
            {_join("DA", "rocpd_info_agent", "X.dst_agent_id", sfx, guid)}
            {event} {proc} {node}""", con)
    if _exists(con, "rocpd_arg" + sfx):
        marks = ", ".join("?" for _ in HANDLE_ARGS)
        args = pd.read_sql_query(f"""SELECT event_id, name, value FROM "rocpd_arg{sfx}" WHERE name IN ({marks})""",
                                 con, params=HANDLE_ARGS)
    else:
        args = pd.DataFrame({"event_id": pd.Series(dtype="int64"), "name": pd.Series(dtype="object"),
                             "value": pd.Series(dtype="object")})
    return {"regions": regions, "kernels": kernels, "copies": copies, "args": args,
            "link": pd.DataFrame({"link": [link or "none"]})}


def _host_categories(regions: pd.DataFrame) -> np.ndarray:
    """The Kineto category of each rocpd region: HIP calls are runtime calls, RCCL calls CPU ops, the rest ``""``
    (left out). A region without a category is a HIP call when its name says so."""
    cat = regions["category"].fillna("").astype(str)
    name = regions["name"].fillna("").astype(str)
    runtime = cat.str.startswith("HIP_") | ((cat == "") & name.str.startswith(("hip", "__hip")))
    return np.where(runtime, RUNTIME, np.where(cat.str.startswith("RCCL"), CPU_OP, "")).astype(object)


def _ints(values: pd.Series) -> np.ndarray:
    """An id column as int64, a missing id as -1."""
    return pd.to_numeric(values, errors="coerce").fillna(-1).to_numpy(np.int64)


def _process_columns(regions: pd.DataFrame, kernels: pd.DataFrame, copies: pd.DataFrame, args: pd.DataFrame,
                     base_ns: int, source: str) -> tuple[Columns, dict]:
    """One process's Kineto-shaped columns (times in µs after ``base_ns``) and what was read or left out."""
    cats = _host_categories(regions)
    kept = cats != ""
    host = regions[kept]
    host_cat = cats[kept].tolist()

    # the handle arguments of the kept calls, by rocpd event id
    handles = args[args["event_id"].isin(host["event_id"])]
    stream_arg = dict(zip(handles.loc[handles["name"] == "stream", "event_id"],
                          handles.loc[handles["name"] == "stream", "value"].astype(str)))
    event_arg = dict(zip(handles.loc[handles["name"] == "event", "event_id"],
                         handles.loc[handles["name"] == "event", "value"].astype(str)))
    # a stream handle's GPU stream: the stream of the work its launches enqueued (one stream id per handle)
    gpu = pd.concat([kernels.assign(cat=KERNEL, bytes=-1), copies.assign(cat=COPY)], ignore_index=True)
    calls = pd.DataFrame({"handle": [stream_arg.get(e) for e in host["event_id"]], "link": _ints(host["link"])})
    work = pd.DataFrame({"link": _ints(gpu["link"]), "stream": _ints(gpu["stream"])})
    launched = calls[calls["handle"].notna() & (calls["link"] >= 0)].merge(work[work["stream"] >= 0], on="link")
    per_handle = launched.groupby("handle")["stream"].agg(lambda s: set(s.tolist()))
    stream_of = {h: int(next(iter(s))) for h, s in per_handle.items() if len(s) == 1}
    event_code = {v: i for i, v in enumerate(dict.fromkeys(event_arg.values()))}

    host_stream = host["event_id"].map(stream_arg).map(stream_of).fillna(-1).to_numpy(np.int64)
    host_event = host["event_id"].map(event_arg).map(event_code).fillna(-1).to_numpy(np.int64)
    n_host, n_gpu = len(host), len(gpu)
    names = pd.concat([host["name"].fillna("(unnamed call)"), gpu["name"].fillna("(unnamed)")],
                      ignore_index=True).astype(str)
    name_code, name_labels = pd.factorize(names)
    start = np.concatenate([_times(t["start_ns"], what, source).to_numpy(np.int64)
                            for t, what in ((host, "API calls"), (gpu, "GPU activities"))])
    end = np.concatenate([_times(t["end_ns"], what, source).to_numpy(np.int64)
                          for t, what in ((host, "API calls"), (gpu, "GPU activities"))])
    order = np.argsort(start, kind="stable")
    cat_labels = [RUNTIME, CPU_OP, KERNEL, COPY]
    cat_code = pd.Series(host_cat + gpu["cat"].tolist(), dtype=object).map(
        {c: i for i, c in enumerate(cat_labels)}).to_numpy(np.int32)
    gpu_device = _ints(gpu["device"])
    gpu_stream = _ints(gpu["stream"])
    data = {
        "name": name_code.astype(np.int32),
        "cat": cat_code,
        "pid": np.concatenate([_ints(host["pid"]), gpu_device]),
        "tid": np.concatenate([_ints(host["tid"]), gpu_stream]),
        "ts": (start - base_ns) / 1000.0,
        "dur": (end - start) / 1000.0,
        "stream": np.concatenate([host_stream, gpu_stream]),
        "correlation": np.concatenate([_ints(host["link"]), _ints(gpu["link"])]),
        "external_id": np.full(n_host + n_gpu, -1, dtype=np.int64),
        "bytes": np.concatenate([np.full(n_host, -1, dtype=np.int64), _ints(gpu["bytes"])]),
        "event": np.concatenate([host_event, np.full(n_gpu, -1, dtype=np.int64)]),
    }
    columns = Columns({k: v[order] for k, v in data.items()}, {"name": list(name_labels), "cat": cat_labels})
    read = {"host_calls": int(n_host), "kernels": int(len(kernels)), "copies": int(len(copies)),
            "skipped_regions": int((~kept).sum()), "calls_with_stream": int((host_stream >= 0).sum()),
            "calls_with_event": int((host_event >= 0).sum()), "stream_handles": len(stream_of),
            "event_handles": len(event_code)}
    return columns, read


def rocpd_trace(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                ranks: Iterable[int] | None = None, *, host_calls: bool = False) -> Trace:
    """One or more rocpd databases as a :class:`~lumikit.trace.loader.Trace`: one rank per process, ranked by
    (host, pid), times in µs from the earliest activity of all of them (so ranks share one clock). With
    ``host_calls``, a rank without HIP calls (a run profiled without ``--hip-trace``) is refused, naming the fix.

    Each rank's ``metadata["rocpd"]`` says which process it is and what was read: ``host_calls``, ``kernels``,
    ``copies``, ``skipped_regions`` (HSA calls, markers), ``calls_with_stream`` / ``calls_with_event`` (calls whose
    handle argument was matched) and the ``link`` column used.
    """
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no rocpd databases given")
    parts: list[tuple[Path, dict[str, pd.DataFrame]]] = []
    for path in files:
        con = _connect(path)
        try:
            for sfx in suffixes(con, str(path)):
                parts.append((path, _read_suffix(con, sfx, str(path))))
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied while "
                             "rocprofv3 was still writing?", source=str(path)) from None
        finally:
            con.close()
    firsts = [pd.to_numeric(t["start_ns"], errors="coerce").min() for _, p in parts
              for t in (p["regions"], p["kernels"], p["copies"])]
    starts = [int(t) for t in firsts if pd.notna(t)]
    if not starts:
        raise TraceError(f"{', '.join(map(str, files))}: no HIP calls, kernels or copies in this rocpd database; "
                         "profile with `rocprofv3 --hip-trace --kernel-trace --memory-copy-trace`")
    base = min(starts)
    processes = []
    for path, p in parts:
        keys = pd.concat([p[k][["hostname", "pid"]] for k in ("regions", "kernels", "copies")], ignore_index=True)
        for (host, pid), _ in keys.fillna({"hostname": ""}).groupby(["hostname", "pid"], sort=True):
            processes.append((str(host), int(pid), path, p))
    processes.sort(key=lambda t: (t[0], t[1]))
    wanted = None if ranks is None else set(ranks)
    if wanted is not None and not wanted <= set(range(len(processes))):
        raise TraceError(f"rank {sorted(wanted - set(range(len(processes))))[0]} is not in this rocpd database "
                         f"(ranks: {list(range(len(processes)))}, one per process, by host and pid)")
    out: dict[int, RankTrace] = {}
    for rank, (host, pid, path, p) in enumerate(processes):
        if wanted is not None and rank not in wanted:
            continue

        def mine(table: pd.DataFrame) -> pd.DataFrame:
            return table[(table["pid"] == pid) & (table["hostname"].fillna("") == host)]
        columns, read = _process_columns(mine(p["regions"]), mine(p["kernels"]), mine(p["copies"]), p["args"], base,
                                         str(path))
        meta = {ROCPD_KEY: {"host": host, "pid": pid, "base_ns": base, "link": str(p["link"]["link"].iloc[0]),
                            **read}}
        if host_calls and not read["host_calls"]:
            raise TraceError(f"{path}: process {pid} (rank {rank}) has no HIP API calls in this rocpd database, so "
                             "there is no host side to put on a path; profile with `rocprofv3 --hip-trace "
                             "--kernel-trace --memory-copy-trace`")
        out[rank] = RankTrace(rank, path, columns, metadata=meta, n_events=len(columns))
    return Trace(out)


def rocpd_note(trace: Trace) -> str:
    """One sentence on what the analyses of a rocpd database counted and which arguments they read."""
    parts = []
    for rank in trace.rank_ids:
        m = trace[rank].metadata.get(ROCPD_KEY, {})
        parts.append(f"rank {rank} = {m.get('host') or 'host'}:{m.get('pid')} ({m.get('calls_with_stream', 0)} "
                     f"calls with a stream argument matched, {m.get('calls_with_event', 0)} with an event)")
    return ("the whole run (a rocpd database has no ProfilerStep annotations); GPU work linked to its HIP call by "
            "rocpd_event.stack_id; " + "; ".join(parts))
