"""rocprofv3's default output since ROCm 7.0: the rocpd SQLite database (one ``.db`` per process).

Every table carries a per-database suffix (``rocpd_kernel_dispatch_<uuid with underscores>``) and unsuffixed views
select from them; rows of one process share a ``guid``. A merged database holds several suffixes, so the reader
takes each suffix's base tables (never the views: see :mod:`.rocpd_sql`, which opens every database read-only and
under a time and row budget, and recognises the 3.0, track and timestamp layouts from their columns). Several
files (ranks, nodes) are read one after the other into one :class:`~lumikit.rocprof.activities.Activities`.
Schema: ROCprofiler-SDK ``rocpd_tables.sql`` (the layouts and the commits read are named in :mod:`.rocpd_sql`),
"Using rocpd output format" documentation; ``tests/rocprof/test_rocpd_upstream.py`` checks the reader against
rocprofiler-sdk's own SQL and ``kernels`` / ``memory_copies`` / ``regions`` views wherever ROCm 7 is installed.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..errors import LumikitError, ParseError
from .activities import Activities
from .rocpd_sql import (ANCHOR, SQLITE_MAGIC, Budget, Layout, attach_all, connect, fetch, is_sqlite, layouts,
                        schema_version, text, unreadable)

__all__ = ["read_rocpd", "rocpd_stats", "rocpd_kernel_stats", "rocpd_summary", "rocpd_totals", "is_rocpd",
           "suffixes", "SQLITE_MAGIC"]

#: Tables without which a database has no kernels to read: a missing one is named in the error.
REQUIRED = ("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol")
#: The major ``schema_version`` values of ``rocpd_metadata`` this reader was written against (3.0.x of ROCm 7,
#: 4.x of rocm-systems; the layout itself is recognised from the columns, whatever the version says).
KNOWN_SCHEMA_VERSIONS = ("3", "4")

is_rocpd = is_sqlite


def _connect(path: Path) -> sqlite3.Connection:
    """A guarded read-only connection (see :func:`.rocpd_sql.connect`)."""
    return connect(path)[0]


def suffixes(con: sqlite3.Connection, source: str = "<db>", schema: str = "main") -> list[str]:
    """The table suffixes (``_<uuid>``) of a rocpd database (``schema``: an ATTACHed one's name); ``[""]`` when only
    unsuffixed tables exist. Views are never counted."""
    return [lay.sfx for lay in layouts(con, source, schema)]


def _exists(con: sqlite3.Connection, name: str) -> bool:
    """Whether a real table (not a view) of that name exists."""
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _layout(con: sqlite3.Connection, sfx: str, source: str, schema: str = "main") -> Layout:
    return next(lay for lay in layouts(con, source, schema) if lay.sfx == sfx)


def refuse_newer_schema(con: sqlite3.Connection, sfx: str, source: str, schema: str = "main") -> None:
    """For readers that know only the 3.0 layout (the counters): refuse, naming it, a track or timestamp layout."""
    lay = _layout(con, sfx, source, schema)
    if lay.timestamps or lay.tracks:
        raise ParseError(f"rocpd {lay.name}: hardware counters are read from the 3.0 layout only; convert with the "
                         "rocpd tool of the same ROCm (`rocpd convert -i FILE.db --output-format csv`) and give the "
                         "counter CSV", source=source)


#: The tables the queries join by id: each must have its id as INTEGER PRIMARY KEY, or a join could multiply rows.
JOINED = ("rocpd_info_kernel_symbol", "rocpd_info_agent", "rocpd_string", "rocpd_info_process", "rocpd_info_node",
          "rocpd_info_thread", "rocpd_event", "rocpd_track", "rocpd_timestamp", "rocpd_info_category")


def _require(lay: Layout, source: str) -> None:
    """Refuse a database that lacks a table the kernels need, naming it, or whose joined tables could multiply
    rows."""
    lay.require_keyed(JOINED, source)
    for t in REQUIRED:
        if not lay.has(t):
            raise ParseError(f"table {t + lay.sfx} is missing: this rocpd database has no kernels to read (was the "
                             "program stopped before rocprofv3 finished writing, or profiled without "
                             "--kernel-trace?)", source=source)


def schema_notes(version: str | None, source: str) -> list[str]:
    """Warnings about a database's ``schema_version`` (missing or not one of :data:`KNOWN_SCHEMA_VERSIONS`)."""
    if version is None or version.split(".")[0] in KNOWN_SCHEMA_VERSIONS:
        return []
    return [f"{source}: rocpd schema version {version[:20]!r} is not one this reader knows "
            f"({', '.join(KNOWN_SCHEMA_VERSIONS)}); the tables were read by their columns, the numbers may be wrong "
            "if they changed meaning"]


def _negative_note(count: int, what: str, source: str) -> list[str]:
    return [f"{source}: {count} {what} end before they start (negative durations; kept as recorded, they lower "
            "the totals): a clock problem in the profiler, compare with the Perfetto view"] if count else []


def _frame(con: sqlite3.Connection, sql: str, columns: list[str], budget: Budget) -> pd.DataFrame:
    rows = fetch(con, sql, budget)
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame({c: [] for c in columns})


def _lj(lay: Layout, alias: str, table: str, on: str) -> str:
    """A LEFT JOIN of a lookup table by id (an empty stand-in when the database lacks the table)."""
    if not lay.has(table):
        return f" LEFT JOIN (SELECT NULL AS id) {alias} ON 0"
    return f" LEFT JOIN {lay.t(table)} {alias} ON {alias}.id = {on}"


def _col(lay: Layout, alias: str, table: str, col: str, as_text: bool = False) -> str:
    if col not in lay.cols(table):
        return "NULL"
    return text(f"{alias}.{col}") if as_text else f"{alias}.{col}"


def _x(lay: Layout, table: str, col: str) -> str:
    return f"X.{col}" if col in lay.cols(table) else "NULL"


def _read_layout(con: sqlite3.Connection, lay: Layout, source: str, budget: Budget) -> dict:
    """Kernels, copies, API regions and processes of the tables with one suffix."""
    _require(lay, source)
    kd, mc, rg = ANCHOR, "rocpd_memory_copy", "rocpd_region"
    sym, ag, st, pr, nd, th, ev = ("rocpd_info_kernel_symbol", "rocpd_info_agent", "rocpd_string",
                                   "rocpd_info_process", "rocpd_info_node", "rocpd_info_thread", "rocpd_event")

    def place(table: str) -> tuple[str, str]:
        joins = lay.track_join(table) + _lj(lay, "P", pr, lay.place(table, "pid")) + \
            _lj(lay, "N", nd, lay.place(table, "nid") if lay.place(table, "nid") != "NULL" else "P.nid")
        return joins, f"{_col(lay, 'P', pr, 'pid')}, {_col(lay, 'N', nd, 'hostname', True)}"

    tj, start, end = lay.times(kd)
    pj, who = place(kd)
    kernels = _frame(con, f"""
        SELECT COALESCE({_col(lay, 'S', sym, 'display_name', True)}, {_col(lay, 'S', sym, 'kernel_name', True)}),
               {start}, {end}, {_col(lay, 'A', ag, 'absolute_index')}, {_col(lay, 'A', ag, 'type_index')},
               {lay.place(kd, 'queue_id')}, {lay.place(kd, 'stream_id')}, {_x(lay, kd, 'dispatch_id')},
               {_col(lay, 'E', ev, 'correlation_id')}, {who}, {_col(lay, 'S', sym, 'kernel_name', True)},
               {', '.join(_x(lay, kd, c) for c in ('grid_size_x', 'grid_size_y', 'grid_size_z', 'workgroup_size_x',
                                                    'workgroup_size_y', 'workgroup_size_z'))}
        FROM {lay.t(kd)} X {tj} {pj}
        {_lj(lay, 'S', sym, 'X.kernel_id')} {_lj(lay, 'A', ag, lay.place(kd, 'agent_id'))}
        {_lj(lay, 'E', ev, 'X.event_id')}""",
        ["name", "start_ns", "end_ns", "agent_id", "gpu_index", "queue_id", "stream_id", "dispatch_id",
         "correlation_id", "pid", "hostname", "symbol", "grid_size_x", "grid_size_y", "grid_size_z",
         "workgroup_size_x", "workgroup_size_y", "workgroup_size_z"], budget)
    copies = None
    if lay.has(mc):
        tj, start, end = lay.times(mc)
        pj, who = place(mc)
        copies = _frame(con, f"""
            SELECT {_col(lay, 'T', st, 'string', True)}, {start}, {end}, {_x(lay, mc, 'size')},
                   {_col(lay, 'SA', ag, 'absolute_index')}, {_col(lay, 'DA', ag, 'absolute_index')},
                   {_col(lay, 'SA', ag, 'type', True)}, {_col(lay, 'DA', ag, 'type', True)},
                   {_col(lay, 'E', ev, 'correlation_id')}, {who}
            FROM {lay.t(mc)} X {tj} {pj} {_lj(lay, 'T', st, 'X.name_id')}
            {_lj(lay, 'SA', ag, 'X.src_agent_id')} {_lj(lay, 'DA', ag, 'X.dst_agent_id')}
            {_lj(lay, 'E', ev, 'X.event_id')}""",
            ["name", "start_ns", "end_ns", "size_bytes", "src_agent_id", "dst_agent_id", "src_type", "dst_type",
             "correlation_id", "pid", "hostname"], budget)
    api = None
    if lay.has(rg):
        tj, start, end = lay.times(rg)
        pj, who = place(rg)
        cat = lay.category_names()
        cat_join = _lj(lay, "C", cat[0], "E.category_id") if cat else ""
        cat_col = _col(lay, "C", cat[0], cat[1], True) if cat else "NULL"
        api = _frame(con, f"""
            SELECT {_col(lay, 'T', st, 'string', True)}, {cat_col}, {start}, {end},
                   {_col(lay, 'E', ev, 'correlation_id')}, {who}, {_col(lay, 'TH', th, 'tid')}
            FROM {lay.t(rg)} X {tj} {pj} {_lj(lay, 'T', st, 'X.name_id')}
            {_lj(lay, 'TH', th, lay.place(rg, 'tid'))} {_lj(lay, 'E', ev, 'X.event_id')} {cat_join}""",
            ["name", "category", "start_ns", "end_ns", "correlation_id", "pid", "hostname", "tid"], budget)
        api = api[["name", "category", "start_ns", "end_ns", "correlation_id", "pid", "tid", "hostname"]]
    processes = _frame(con, f"""
        SELECT {_col(lay, 'N', nd, 'hostname', True)}, {_x(lay, pr, 'pid')}, {text(_x(lay, pr, 'command'))},
               {_x(lay, pr, 'start')}, {_x(lay, pr, 'end')}
        FROM {lay.t(pr)} X {_lj(lay, 'N', nd, _x(lay, pr, 'nid'))}""",
        ["hostname", "pid", "command", "start_ns", "end_ns"], budget) if lay.has(pr) else None
    missing = [t + lay.sfx for t in (mc, rg, st, pr, nd, th, ag, ev) if not lay.has(t)]
    notes = schema_notes(schema_version(con, lay, budget), source)
    notes += [f"{source}: no table {', '.join(missing)} (not traced, or an older rocprofv3): read as empty"] \
        if missing else []
    return {"kernels": kernels, "copies": copies, "api": api, "processes": processes, "notes": notes}


def _files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no rocpd databases given")
    return files


def read_rocpd(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Activities:
    """Read one rocpd database or several (one per process; ranks and nodes) into one :class:`Activities`.

    Kernel names are the symbols' display names (demangled, as rocprofv3's CSV shows them); the kernel table
    also has ``agent_id`` (the agent's absolute index), ``gpu_index``, ``queue_id``, ``stream_id``, ``pid`` and
    ``hostname``, so per-device and per-process views need no second reader.
    """
    files = _files(paths)
    parts: dict[str, list[pd.DataFrame]] = {"kernels": [], "copies": [], "api": [], "processes": []}
    notes: list[str] = []
    for path in files:
        con, budget = connect(path)
        try:
            for lay in layouts(con, str(path)):
                read = _read_layout(con, lay, str(path), budget)
                notes += read.pop("notes")
                for key, table in read.items():
                    if table is not None:
                        parts[key].append(table)
        except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError) as exc:
            raise unreadable(exc, str(path), budget) from None
        finally:
            con.close()
    source = ", ".join(str(p) for p in files)
    joined = {k: pd.concat(v, ignore_index=True) if v else None for k, v in parts.items()}
    acts = Activities.build(joined["kernels"], joined["copies"], joined["api"], source=source,
                            processes=joined["processes"], generation="v3 rocpd")
    for what, table in (("kernel dispatches", acts.kernels), ("memory copies", acts.copies),
                        ("API calls", acts.api)):
        notes += _negative_note(int((table["duration_ns"] < 0).sum()), what, source)
    acts.notes = notes
    return acts


#: What :func:`rocpd_stats` groups for each kind: table, grouping column, name table and name column(s).
_STATS_SOURCES = {
    "kernel": (ANCHOR, "kernel_id", "rocpd_info_kernel_symbol", ("display_name", "kernel_name")),
    "copy": ("rocpd_memory_copy", "name_id", "rocpd_string", ("string",)),
    "api": ("rocpd_region", "name_id", "rocpd_string", ("string",)),
}
_WHAT = {"kernel": "kernel dispatches", "copy": "memory copies", "api": "API calls"}


def _stats_query(lay: Layout, kind: str) -> str | None:
    """One suffix's rows of ``kind`` grouped by name id inside SQLite, with their names (None: not traced)."""
    table, key, names, name_cols = _STATS_SOURCES[kind]
    if not lay.has(table) or key not in lay.cols(table):
        return None
    joins, start, end = lay.times(table)
    size = "X.size" if kind == "copy" and "size" in lay.cols(table) else "0"
    name_sql = "COALESCE(" + ", ".join(_col(lay, "S", names, c, True) for c in name_cols) + ", NULL)"
    return f"""SELECT {name_sql} AS name, G.*
               FROM (SELECT k, COUNT(*) AS calls, TOTAL(e - s) AS total_ns, MIN(e - s) AS min_ns,
                            MAX(e - s) AS max_ns, TOTAL((e - s) * 1.0 * (e - s)) AS sumsq,
                            SUM(e < s) AS negative, SUM(s < 0 OR e < 0) AS bad, TOTAL(b) AS bytes
                     FROM (SELECT X.{key} AS k, {start} AS s, {end} AS e, {size} AS b FROM {lay.t(table)} X {joins})
                     GROUP BY k) G
               {_lj(lay, 'S', names, 'G.k')}"""


def rocpd_stats(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], kind: str = "kernel"
                ) -> pd.DataFrame:
    """The ranked table of kernels (``kind="kernel"``), memory copies (``"copy"``, by direction) or API calls
    (``"api"``) of one or more rocpd databases, added up inside SQLite.

    The same table as :meth:`Activities.kernel_stats` and friends (names, calls, total/average/min/max, population
    standard deviation), without reading every row into memory: databases are ATTACHed a few at a time, each
    suffix's rows are grouped by their name id, and the small per-id rows are summed by name. Copies add
    ``bytes``. ``table.attrs["notes"]`` flags negative durations and unknown schema versions; a time that is not
    an integer (an infinite REAL, text) is damage, named in one line.
    """
    from .stats import _finish

    if kind not in _STATS_SOURCES:
        raise LumikitError(f"kind={kind!r}: give 'kernel', 'copy' or 'api'")
    files = _files(paths)
    pieces: list[pd.DataFrame] = []
    notes: list[str] = []
    columns = ["name", "key", "calls", "total_ns", "min_ns", "max_ns", "sumsq", "negative", "bad", "bytes"]
    for i in range(0, len(files), 8):
        con, budget, schemas = attach_all(files[i:i + 8])
        try:
            for schema, path in schemas:
                try:
                    for lay in layouts(con, str(path), schema):
                        _require(lay, str(path))
                        if kind == "kernel":
                            notes += schema_notes(schema_version(con, lay, budget), str(path))
                        sql = _stats_query(lay, kind)
                        if sql is not None:
                            piece = _frame(con, sql, columns, budget)
                            if int(pd.to_numeric(piece["bad"]).fillna(0).sum()):
                                raise ParseError(f"{int(piece['bad'].sum())} {_WHAT[kind]} without a time in "
                                                 "nanoseconds (missing, infinite or not an integer): the file is "
                                                 "damaged: profile again", source=str(path))
                            pieces.append(piece)
                except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError) as exc:
                    raise unreadable(exc, str(path), budget) from None
        finally:
            con.close()
    both = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame({c: [] for c in columns})
    both["name"] = both["name"].fillna(f"(unknown {kind} name)")
    for c in columns[2:]:
        both[c] = pd.to_numeric(both[c]).astype("float64")
    table = both.groupby("name", sort=False).agg(calls=("calls", "sum"), total_ns=("total_ns", "sum"),
                                                min_ns=("min_ns", "min"), max_ns=("max_ns", "max"),
                                                sumsq=("sumsq", "sum"), negative=("negative", "sum"),
                                                bytes=("bytes", "sum")).reset_index()
    table["calls"] = table["calls"].astype("int64")
    table["average_ns"] = table["total_ns"] / table["calls"]
    table["stddev_ns"] = np.sqrt(np.maximum(table["sumsq"].astype(float) / table["calls"]
                                            - table["average_ns"].astype(float) ** 2, 0.0))
    source = ", ".join(str(p) for p in files)
    notes += _negative_note(int(table["negative"].sum()), _WHAT[kind], source)
    nbytes = dict(zip(table["name"], table["bytes"]))
    out = _finish(table.drop(columns=["sumsq", "negative", "bytes"]), kind)
    if kind == "copy":
        out["bytes"] = [int(nbytes[n]) for n in out["name"]]
    out.attrs.update(kind=kind, source=source, generation="v3 rocpd", notes=notes)
    return out


def rocpd_kernel_stats(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ranked kernel table of one or more rocpd databases (:func:`rocpd_stats` of the kernels)."""
    return rocpd_stats(paths, "kernel")


def rocpd_summary(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> tuple[dict, dict]:
    """What ``lumikit rocprof summary`` prints for databases, added up inside SQLite: the report of
    :meth:`Activities.summary` (counts, totals, copied bytes, processes and nodes) and the three ranked tables."""
    files = _files(paths)
    tables = {"kernels": rocpd_stats(files, "kernel"), "copies": rocpd_stats(files, "copy"),
              "api": rocpd_stats(files, "api")}

    def part(t: pd.DataFrame) -> dict:
        total = float(t["total_ns"].sum())
        return {"count": int(t["calls"].sum()), "total_ns": int(total) if np.isfinite(total) else None}
    hosts: set[str] = set()
    processes = 0
    for path in files:
        con, budget = connect(path)
        try:
            for lay in layouts(con, str(path)):
                lay.require_keyed(JOINED, str(path))
                if lay.has("rocpd_info_process"):
                    processes += int(fetch(con, f"SELECT COUNT(*) FROM {lay.t('rocpd_info_process')}", budget)[0][0])
                if "hostname" in lay.cols("rocpd_info_node"):
                    hosts |= {h for (h,) in fetch(con, f"SELECT {text('hostname')} FROM {lay.t('rocpd_info_node')}",
                                                  budget) if h}
        except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError) as exc:
            raise unreadable(exc, str(path), budget) from None
        finally:
            con.close()
    report = {"source": ", ".join(str(p) for p in files), "generation": "v3 rocpd", "kernels": part(tables["kernels"]),
              "copies": {**part(tables["copies"]), "bytes": int(tables["copies"]["bytes"].sum())
                         if "bytes" in tables["copies"] else 0},
              "api": part(tables["api"]), "processes": int(processes)}
    if hosts:
        report["nodes"] = sorted(hosts)
    notes = [n for t in tables.values() for n in t.attrs.get("notes", [])]
    if notes:
        report["notes"] = notes
    return report, tables


def rocpd_totals(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 by: str = "agent") -> pd.DataFrame:
    """Kernel time per GPU agent (``by="agent"``) or per process (``by="process"``), added up inside SQLite.

    Columns: ``hostname``, ``pid``, then for agents ``agent_id`` (absolute index) and ``gpu_index``; then
    ``calls`` and ``total_ns``. Sorted by host, process and agent.
    """
    if by not in ("agent", "process"):
        raise LumikitError(f"by={by!r}: give 'agent' or 'process'")
    files = _files(paths)
    keys = ["hostname", "pid"] + (["agent_id", "gpu_index"] if by == "agent" else [])
    out = []
    for path in files:
        con, budget = connect(path)
        try:
            for lay in layouts(con, str(path)):
                _require(lay, str(path))
                joins, start, end = lay.times(ANCHOR)
                pid, nid, agent = (lay.place(ANCHOR, c) for c in ("pid", "nid", "agent_id"))
                nid = nid if nid != "NULL" else "NULL"
                group = "p" + (", a" if by == "agent" else "")
                agent_cols = (f", {_col(lay, 'A', 'rocpd_info_agent', 'absolute_index')}, "
                              f"{_col(lay, 'A', 'rocpd_info_agent', 'type_index')}") if by == "agent" else ""
                sql = f"""SELECT {_col(lay, 'N', 'rocpd_info_node', 'hostname', True)},
                                 {_col(lay, 'P', 'rocpd_info_process', 'pid')}{agent_cols}, G.calls, G.total_ns
                          FROM (SELECT p, a, MIN(n) AS n, COUNT(*) AS calls, TOTAL(e - s) AS total_ns
                                FROM (SELECT {pid} AS p, {agent} AS a, {nid} AS n, {start} AS s, {end} AS e
                                      FROM {lay.t(ANCHOR)} X {lay.track_join(ANCHOR)} {joins})
                                GROUP BY {group}) G
                          {_lj(lay, 'P', 'rocpd_info_process', 'G.p')}
                          {_lj(lay, 'N', 'rocpd_info_node', 'COALESCE(G.n, P.nid)')}
                          {_lj(lay, 'A', 'rocpd_info_agent', 'G.a') if by == 'agent' else ''}"""
                out.append(_frame(con, sql, keys + ["calls", "total_ns"], budget))
        except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError) as exc:
            raise unreadable(exc, str(path), budget) from None
        finally:
            con.close()
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=keys + ["calls", "total_ns"])
    table = table.groupby(keys, dropna=False, sort=True)[["calls", "total_ns"]].sum().reset_index()
    return table
