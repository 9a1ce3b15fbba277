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
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import open_regular, regular_file
from .activities import Activities

_SUFFIX = re.compile(r"^[A-Za-z0-9_]*$")
_ANCHOR = "rocpd_kernel_dispatch"
#: The tables the reader needs (more exist: rocpd_arg, rocpd_pmc_event, rocpd_sample, ...).
TABLES = ("rocpd_string", "rocpd_info_node", "rocpd_info_process", "rocpd_info_agent", "rocpd_info_kernel_symbol",
          "rocpd_event", "rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy")
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


def suffixes(con: sqlite3.Connection, source: str = "<db>") -> list[str]:
    """The table suffixes (``_<uuid>``) of a rocpd database; ``[""]`` when only the unsuffixed names exist."""
    rows = con.execute("SELECT name, type FROM sqlite_master WHERE name LIKE ?", (_ANCHOR + "%",)).fetchall()
    tables = sorted(n[len(_ANCHOR):] for n, t in rows if t == "table" and n != _ANCHOR)
    found = [s for s in tables if _SUFFIX.match(s)]
    if found:
        return found
    if any(n == _ANCHOR for n, _ in rows):
        return [""]
    raise ParseError(f"no {_ANCHOR} table: not a rocprofv3 (rocpd) database (an .rpd of rocmProfileData has "
                     "another schema); profile with `rocprofv3 --kernel-trace` (ROCm 7 writes rocpd by default)",
                     source=source)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}


def _exists(con: sqlite3.Connection, name: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _join(alias: str, table: str, on: str, sfx: str, guid: bool) -> str:
    cond = f"{alias}.id = {on}" + (f" AND {alias}.guid = {on.split('.')[0]}.guid" if guid else "")
    return f'LEFT JOIN "{table}{sfx}" {alias} ON {cond}'


def _read_suffix(con: sqlite3.Connection, sfx: str, source: str) -> dict[str, pd.DataFrame]:
    """Kernels, copies, API regions and processes of the tables with one suffix."""
    for t in TABLES:
        if not _exists(con, t + sfx):
            raise ParseError(f"table {t + sfx} is missing: an incomplete rocpd database (was the program stopped "
                             "before rocprofv3 finished writing?)", source=source)
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
            {_join("T", "rocpd_string", "X.name_id", sfx, guid)}
            {_join("TH", "rocpd_info_thread", "X.tid", sfx, guid)}
            {event}
            {_join("C", "rocpd_string", "E.category_id", sfx, guid).replace("E.guid", "X.guid")}
            {proc} {node}""", con)
    processes = pd.read_sql_query(
        f"""SELECT N.hostname, X.pid, X.command, X.start AS start_ns, X."end" AS end_ns
            FROM "rocpd_info_process{sfx}" X {node}""", con)
    return {"kernels": kernels, "copies": copies, "api": api, "processes": processes}


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
    for path in files:
        con = _connect(path)
        try:
            for sfx in suffixes(con, str(path)):
                for key, table in _read_suffix(con, sfx, str(path)).items():
                    parts[key].append(table)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:  # damaged page or text
            raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]}); was it copied while "
                             "rocprofv3 was still writing?", source=str(path)) from None
        finally:
            con.close()
    source = ", ".join(str(p) for p in files)
    joined = {k: pd.concat(v, ignore_index=True) if v else None for k, v in parts.items()}
    return Activities.build(joined["kernels"], joined["copies"], joined["api"], source=source,
                            processes=joined["processes"], generation="v3 rocpd")
