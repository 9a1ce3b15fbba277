"""rocprofv3's default output since ROCm 7.0: the rocpd SQLite database (one ``.db`` per process).

Every table carries a per-database suffix (``rocpd_kernel_dispatch_<uuid with underscores>``) and unsuffixed views
select from them; rows of one process share a ``guid``. A merged database holds several suffixes, so the reader
takes each suffix's tables (falling back on the views when there are no suffixed tables) and joins on ``id`` and
``guid``, as rocpd's own ``kernels`` / ``memory_copies`` / ``regions`` views do. Several files (ranks, nodes) are
read one after the other into one :class:`~lumikit.rocprof.activities.Activities`.
Schema: ROCprofiler-SDK ``rocpd_tables.sql`` (schema version 3), "Using rocpd output format" documentation;
``tests/rocprof/test_rocpd_upstream.py`` checks the reader against rocprofiler-sdk's own SQL and ``kernels`` /
``memory_copies`` / ``regions`` views wherever ROCm 7 is installed.
"""
from __future__ import annotations

import os
import re
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote

import numpy as np
import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import open_regular, regular_file
from .activities import Activities

_SUFFIX = re.compile(r"^[A-Za-z0-9_]*$")
_ANCHOR = "rocpd_kernel_dispatch"
#: Tables without which a database has no kernels to read: a missing one is named in the error.
REQUIRED = ("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol")
#: Tables the reader uses when they are there, with the columns it reads: a database without one (rocprofv3 run
#: without --memory-copy-trace or --hip-trace, or an older writer) reads as if the table were empty.
OPTIONAL = {
    "rocpd_string": ("id", "guid", "string"),
    "rocpd_info_node": ("id", "guid", "hostname"),
    "rocpd_info_process": ("id", "guid", "nid", "pid", "command", "start", "end"),
    "rocpd_info_thread": ("id", "guid", "tid"),
    "rocpd_info_agent": ("id", "guid", "type", "absolute_index", "type_index"),
    "rocpd_event": ("id", "guid", "category_id", "correlation_id"),
    "rocpd_region": ("id", "guid", "nid", "pid", "tid", "start", "end", "name_id", "event_id"),
    "rocpd_memory_copy": ("id", "guid", "nid", "pid", "start", "end", "size", "name_id", "src_agent_id",
                          "dst_agent_id", "event_id"),
}
#: Every table the reader uses (more exist: rocpd_arg, rocpd_pmc_event, rocpd_sample, ...).
TABLES = REQUIRED + tuple(OPTIONAL)
#: The ``schema_version`` values of ``rocpd_metadata`` this reader was written against (ROCprofiler-SDK 1.0, ROCm 7).
KNOWN_SCHEMA_VERSIONS = ("3",)
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_rocpd(path: str | os.PathLike[str]) -> bool:
    """Whether a file is a SQLite database (rocpd or not: the tables are checked when it is read)."""
    try:
        with open_regular(path) as fh:
            return fh.read(16) == SQLITE_MAGIC
    except (OSError, LumikitError):
        return False


def _connect(path: Path) -> sqlite3.Connection:
    regular_file(path, "a rocprofv3 database (<pid>_results.db) or a run folder")  # sqlite reads by pages: any size
    if not is_rocpd(path):
        raise ParseError("not a SQLite database; give the .db that rocprofv3 writes by default (ROCm 7), "
                         "or re-run with --output-format csv", source=str(path))
    con = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)  # "?" or "#" in a name stay
    con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")  # a damaged name is not a crash
    # a damaged file meets SQLite's extra page checks, and its schema can run no SQL functions of its own
    con.execute("PRAGMA cell_size_check = ON")
    con.execute("PRAGMA trusted_schema = OFF")
    return con


def suffixes(con: sqlite3.Connection, source: str = "<db>", schema: str = "main") -> list[str]:
    """The table suffixes (``_<uuid>``) of a rocpd database (``schema``: an ATTACHed one's name); ``[""]`` when only
    the unsuffixed names exist."""
    rows = con.execute(f'SELECT name, type FROM "{schema}".sqlite_master WHERE name LIKE ?',
                       (_ANCHOR + "%",)).fetchall()
    tables = sorted(n[len(_ANCHOR):] for n, t in rows if t == "table" and n != _ANCHOR)
    found = [s for s in tables if _SUFFIX.match(s)]
    if found:
        return found
    if any(n == _ANCHOR for n, _ in rows):
        return [""]
    return _no_anchor(source)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}


def _exists(con: sqlite3.Connection, name: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _join(alias: str, table: str, on: str, sfx: str, guid: bool) -> str:
    cond = f"{alias}.id = {on}" + (f" AND {alias}.guid = {on.split('.')[0]}.guid" if guid else "")
    return f'LEFT JOIN "{table}{sfx}" {alias} ON {cond}'


def _region_joins(sfx: str, guid: bool) -> str:
    """The joins of a query on ``rocpd_region`` (alias X): its name (T), thread (TH), event (E), the event's
    category (C, matched on the region's guid), process (P) and node (N)."""
    return "\n".join([_join("T", "rocpd_string", "X.name_id", sfx, guid),
                      _join("TH", "rocpd_info_thread", "X.tid", sfx, guid),
                      _join("E", "rocpd_event", "X.event_id", sfx, guid),
                      _join("C", "rocpd_string", "E.category_id", sfx, guid).replace("E.guid", "X.guid"),
                      _join("P", "rocpd_info_process", "X.pid", sfx, guid),
                      _join("N", "rocpd_info_node", "X.nid", sfx, guid)])


def _schema_version(con: sqlite3.Connection, sfx: str, schema: str = "main") -> str | None:
    """The ``schema_version`` of ``rocpd_metadata`` (suffixed or not), or None when the database has none."""
    for t in ("rocpd_metadata" + sfx, "rocpd_metadata"):
        if con.execute(f'SELECT 1 FROM "{schema}".sqlite_master WHERE name = ?', (t,)).fetchone():
            row = con.execute(f'SELECT value FROM "{schema}"."{t}" WHERE tag = \'schema_version\'').fetchone()
            return str(row[0])[:20] if row else None
    return None


def refuse_newer_schema(con: sqlite3.Connection, sfx: str, source: str, schema: str = "main") -> None:
    """Refuse, naming it as such, a database written in a newer rocpd schema than :data:`KNOWN_SCHEMA_VERSIONS`
    whose dispatches no longer carry ``start``/``end`` (schema 4 keeps times in ``rocpd_timestamp``, referenced by
    ``start_id``/``end_id``, with a ``track_id``): not a damaged file, one this reader cannot read yet."""
    columns = {row[1] for row in con.execute(f'PRAGMA "{schema}".table_info("{_ANCHOR + sfx}")')}
    if not columns or "start" in columns:
        return
    version = _schema_version(con, sfx, schema)
    newer = [c for c in ("start_id", "end_id", "track_id") if c in columns]
    if newer or (version or "").isdigit() and int(version or 0) > max(int(v) for v in KNOWN_SCHEMA_VERSIONS):
        raise ParseError(f"rocpd schema version {version or '(not given)'}, newer than this reader knows "
                         f"({', '.join(KNOWN_SCHEMA_VERSIONS)}): its dispatches keep their times in rocpd_timestamp "
                         f"({', '.join(newer) or 'no start/end columns'}); the file is not damaged. Convert it with "
                         "the rocpd tool of the same ROCm (`rocpd convert -i FILE.db --output-format csv`) and give "
                         "the CSV files", source=source)


def _require(con: sqlite3.Connection, sfx: str, source: str, schema: str = "main") -> None:
    """Refuse a database that lacks a table the kernels need, naming it (or written in a newer schema)."""
    refuse_newer_schema(con, sfx, source, schema)
    for t in REQUIRED:
        if not con.execute(f'SELECT 1 FROM "{schema}".sqlite_master WHERE name = ?', (t + sfx,)).fetchone():
            raise ParseError(f"table {t + sfx} is missing: this rocpd database has no kernels to read (was the "
                             "program stopped before rocprofv3 finished writing, or profiled without "
                             "--kernel-trace?)", source=source)


def _stand_in_missing(con: sqlite3.Connection, sfx: str) -> list[str]:
    """Empty temporary tables for the optional tables a database lacks (so the joins read nothing); their names."""
    missing = []
    for t, cols in OPTIONAL.items():
        if not _exists(con, t + sfx):
            con.execute(f'CREATE TEMP TABLE IF NOT EXISTS "{t + sfx}" ({", ".join(chr(34) + c + chr(34) for c in cols)})')
            missing.append(t + sfx)
    return missing


def schema_notes(con: sqlite3.Connection, sfx: str, source: str, schema: str = "main") -> list[str]:
    """Warnings about a database's ``schema_version`` (missing or not one of :data:`KNOWN_SCHEMA_VERSIONS`)."""
    table = next((t for t in ("rocpd_metadata" + sfx, "rocpd_metadata")
                  if con.execute(f'SELECT 1 FROM "{schema}".sqlite_master WHERE name = ?', (t,)).fetchone()), None)
    if table is None:
        return []
    row = con.execute(f'SELECT value FROM "{schema}"."{table}" WHERE tag = \'schema_version\'').fetchone()
    version = str(row[0]) if row else None
    if version is None or version in KNOWN_SCHEMA_VERSIONS:
        return []
    return [f"{source}: rocpd schema version {version[:20]!r} is not one this reader knows "
            f"({', '.join(KNOWN_SCHEMA_VERSIONS)}); the numbers may be wrong if tables changed meaning"]


def _negative_note(count: int, what: str, source: str) -> list[str]:
    return [f"{source}: {count} {what} end before they start (negative durations; kept as recorded, they lower "
            "the totals): a clock problem in the profiler, compare with the Perfetto view"] if count else []


def _read_suffix(con: sqlite3.Connection, sfx: str, source: str) -> dict[str, pd.DataFrame]:
    """Kernels, copies, API regions and processes of the tables with one suffix."""
    _require(con, sfx, source)
    missing = _stand_in_missing(con, sfx)
    guid = "guid" in _columns(con, _ANCHOR + sfx)
    node = _join("N", "rocpd_info_node", "X.nid", sfx, guid)
    proc = _join("P", "rocpd_info_process", "X.pid", sfx, guid)
    event = _join("E", "rocpd_event", "X.event_id", sfx, guid)
    kernels = pd.read_sql_query(
        f"""SELECT COALESCE(S.display_name, S.kernel_name) AS name, X.start AS start_ns, X."end" AS end_ns,
                   A.absolute_index AS agent_id, A.type_index AS gpu_index, X.queue_id, X.stream_id,
                   X.dispatch_id, E.correlation_id, P.pid, N.hostname, S.kernel_name AS symbol,
                   X.grid_size_x, X.grid_size_y, X.grid_size_z,
                   X.workgroup_size_x, X.workgroup_size_y, X.workgroup_size_z
            FROM "{_ANCHOR}{sfx}" X
            {_join("S", "rocpd_info_kernel_symbol", "X.kernel_id", sfx, guid)}
            {_join("A", "rocpd_info_agent", "X.agent_id", sfx, guid)}
            {event} {proc} {node}""", con)
    copies = pd.read_sql_query(
        f"""SELECT T.string AS name, X.start AS start_ns, X."end" AS end_ns, X.size AS size_bytes,
                   SA.absolute_index AS src_agent_id, DA.absolute_index AS dst_agent_id,
                   SA.type AS src_type, DA.type AS dst_type, E.correlation_id, P.pid, N.hostname
            FROM "rocpd_memory_copy{sfx}" X
            {_join("T", "rocpd_string", "X.name_id", sfx, guid)}
            {_join("SA", "rocpd_info_agent", "X.src_agent_id", sfx, guid)}
            {_join("DA", "rocpd_info_agent", "X.dst_agent_id", sfx, guid)}
            {event} {proc} {node}""", con)
    api = pd.read_sql_query(
        f"""SELECT T.string AS name, C.string AS category, X.start AS start_ns, X."end" AS end_ns,
                   E.correlation_id, P.pid, TH.tid, N.hostname
            FROM "rocpd_region{sfx}" X
            {_region_joins(sfx, guid)}""", con)
    processes = pd.read_sql_query(
        f"""SELECT N.hostname, X.pid, X.command, X.start AS start_ns, X."end" AS end_ns
            FROM "rocpd_info_process{sfx}" X {node}""", con)
    notes = schema_notes(con, sfx, source) + ([f"{source}: no table {', '.join(missing)} (not traced, or an older "
                                                 "rocprofv3): read as empty"] if missing else [])
    return {"kernels": kernels, "copies": copies, "api": api, "processes": processes, "notes": notes}


def read_rocpd(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Activities:
    """Read one rocpd database or several (one per process; ranks and nodes) into one :class:`Activities`.

    Kernel names are the symbols' display names (demangled, as rocprofv3's CSV shows them); the kernel table
    also has ``agent_id`` (the agent's absolute index), ``gpu_index``, ``queue_id``, ``stream_id``, ``pid`` and
    ``hostname``, so per-device and per-process views need no second reader.
    """
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no rocpd databases given")
    parts: dict[str, list[pd.DataFrame]] = {"kernels": [], "copies": [], "api": [], "processes": []}
    notes: list[str] = []
    for path in files:
        con = _connect(path)
        try:
            for sfx in suffixes(con, str(path)):
                read = _read_suffix(con, sfx, str(path))
                notes += read.pop("notes")
                for key, table in read.items():
                    parts[key].append(table)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:  # damaged page or text
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied while "
                             "rocprofv3 was still writing?", source=str(path)) from None
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


def _attached(files: list[Path], batch: int = 8) -> Iterator[tuple[sqlite3.Connection, list[tuple[str, Path]]]]:
    """Connections with up to ``batch`` databases ATTACHed read-only (SQLite allows 10), as (schema, path) pairs."""
    for i in range(0, len(files), batch):
        group = files[i:i + batch]
        for path in group:
            _connect(path).close()  # the same checks (and messages) as one database
        con = sqlite3.connect(":memory:")
        con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
        schemas = []
        try:
            for j, path in enumerate(group):
                uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
                try:
                    con.execute(f"ATTACH DATABASE ? AS db{j}", (uri,))
                    con.execute(f"SELECT count(*) FROM db{j}.sqlite_master").fetchone()  # a damaged header fails here
                except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged schema's text, too
                    raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied "
                                     "while rocprofv3 was still writing?", source=str(path)) from None
                schemas.append((f"db{j}", path))
            yield con, schemas
        finally:
            con.close()


def _no_anchor(source: str) -> list[str]:
    raise ParseError(f"no {_ANCHOR} table: not a rocprofv3 (rocpd) database (an .rpd of rocmProfileData has "
                     "another schema); profile with `rocprofv3 --kernel-trace` (ROCm 7 writes rocpd by default)",
                     source=source)


#: What :func:`rocpd_stats` groups for each kind: table, grouping column, name table and name expression.
_STATS_SOURCES = {
    "kernel": (_ANCHOR, "kernel_id", "rocpd_info_kernel_symbol", "COALESCE(S.display_name, S.kernel_name)"),
    "copy": ("rocpd_memory_copy", "name_id", "rocpd_string", "S.string"),
    "api": ("rocpd_region", "name_id", "rocpd_string", "S.string"),
}
_WHAT = {"kernel": "kernel dispatches", "copy": "memory copies", "api": "API calls"}


def _in_schema(con: sqlite3.Connection, schema: str, name: str) -> bool:
    return con.execute(f'SELECT 1 FROM "{schema}".sqlite_master WHERE name = ?', (name,)).fetchone() is not None


def rocpd_stats(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], kind: str = "kernel"
                ) -> pd.DataFrame:
    """The ranked table of kernels (``kind="kernel"``), memory copies (``"copy"``, by direction) or API calls
    (``"api"``) of one or more rocpd databases, added up inside SQLite.

    The same table as :meth:`Activities.kernel_stats` and friends (names, calls, total/average/min/max, population
    standard deviation), without reading every row into memory: databases are ATTACHed a few at a time, each
    suffix's rows are grouped by their name id, and the small per-id rows are summed by name in one query. Copies
    add ``bytes``. ``table.attrs["notes"]`` flags negative durations and unknown schema versions.
    """
    from .stats import _finish

    if kind not in _STATS_SOURCES:
        raise LumikitError(f"kind={kind!r}: give 'kernel', 'copy' or 'api'")
    table_name, key, names, name_sql = _STATS_SOURCES[kind]
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no rocpd databases given")
    size = 'TOTAL(size)' if kind == "copy" else "0"
    pieces: list[pd.DataFrame] = []
    notes: list[str] = []
    for con, schemas in _attached(files):
        parts = []
        for schema, path in schemas:
            try:
                for sfx in suffixes(con, str(path), schema):
                    _require(con, sfx, str(path), schema)
                    if kind == "kernel":
                        notes += schema_notes(con, sfx, str(path), schema)
                    if not (_in_schema(con, schema, table_name + sfx) and _in_schema(con, schema, names + sfx)):
                        continue  # not traced: no rows of this kind
                    parts.append(
                        f"""SELECT {name_sql} AS name, G.*
                            FROM (SELECT {key}, COUNT(*) AS calls, TOTAL("end" - start) AS total_ns,
                                         MIN("end" - start) AS min_ns, MAX("end" - start) AS max_ns,
                                         TOTAL(("end" - start) * 1.0 * ("end" - start)) AS sumsq,
                                         SUM("end" < start) AS negative, {size} AS bytes
                                  FROM "{schema}"."{table_name}{sfx}" GROUP BY {key}) G
                            LEFT JOIN "{schema}"."{names}{sfx}" S ON S.id = G.{key}""")
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied "
                                 "while rocprofv3 was still writing?", source=str(path)) from None
        if not parts:
            continue
        query = f"""SELECT name, SUM(calls) AS calls, SUM(total_ns) AS total_ns, MIN(min_ns) AS min_ns,
                           MAX(max_ns) AS max_ns, SUM(sumsq) AS sumsq, SUM(negative) AS negative,
                           SUM(bytes) AS bytes
                    FROM ({" UNION ALL ".join(parts)}) GROUP BY name"""
        try:
            pieces.append(pd.read_sql_query(query, con))
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied while "
                             "rocprofv3 was still writing?", source=", ".join(str(p) for _, p in schemas)) from None
    columns = ["name", "calls", "total_ns", "min_ns", "max_ns", "sumsq", "negative", "bytes"]
    both = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame(columns=columns)
    both["name"] = both["name"].fillna(f"(unknown {kind} name)")
    table = both.groupby("name", sort=False).agg(calls=("calls", "sum"), total_ns=("total_ns", "sum"),
                                                min_ns=("min_ns", "min"), max_ns=("max_ns", "max"),
                                                sumsq=("sumsq", "sum"), negative=("negative", "sum"),
                                                bytes=("bytes", "sum")).reset_index()
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
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    tables = {"kernels": rocpd_stats(files, "kernel"), "copies": rocpd_stats(files, "copy"),
              "api": rocpd_stats(files, "api")}

    def part(t: pd.DataFrame) -> dict:
        return {"count": int(t["calls"].sum()), "total_ns": int(t["total_ns"].sum())}
    hosts: set[str] = set()
    processes = 0
    for path in files:
        con = _connect(path)
        try:
            for sfx in suffixes(con, str(path)):
                refuse_newer_schema(con, sfx, str(path))
                _stand_in_missing(con, sfx)
                processes += con.execute(f'SELECT COUNT(*) FROM "rocpd_info_process{sfx}"').fetchone()[0]
                hosts |= {h for (h,) in con.execute(f'SELECT hostname FROM "rocpd_info_node{sfx}"') if h}
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]})", source=str(path)) \
                from None
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
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    keys = ["hostname", "pid"] + (["agent_id", "gpu_index"] if by == "agent" else [])
    out = []
    for path in files:
        con = _connect(path)
        try:
            for sfx in suffixes(con, str(path)):
                _require(con, sfx, str(path))
                _stand_in_missing(con, sfx)
                group = "X.pid" + (", X.agent_id" if by == "agent" else "")
                agent = (", A.absolute_index AS agent_id, A.type_index AS gpu_index" if by == "agent" else "")
                out.append(pd.read_sql_query(
                    f"""SELECT N.hostname, P.pid{agent}, G.calls, G.total_ns
                        FROM (SELECT {group}, MIN(X.nid) AS nid, COUNT(*) AS calls,
                                     SUM(CAST(X."end" - X.start AS REAL)) AS total_ns
                              FROM "{_ANCHOR}{sfx}" X GROUP BY {group}) G
                        LEFT JOIN "rocpd_info_process{sfx}" P ON P.id = G.pid
                        LEFT JOIN "rocpd_info_node{sfx}" N ON N.id = G.nid
                        {"LEFT JOIN " + chr(34) + "rocpd_info_agent" + sfx + chr(34) + " A ON A.id = G.agent_id"
                         if by == "agent" else ""}""", con))
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied while "
                             "rocprofv3 was still writing?", source=str(path)) from None
        finally:
            con.close()
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=keys + ["calls", "total_ns"])
    table = table.groupby(keys, dropna=False, sort=True)[["calls", "total_ns"]].sum().reset_index()
    return table
