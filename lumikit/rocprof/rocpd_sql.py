"""Opening a rocpd database safely and recognising its layout from its tables and columns, not its version string.

A database is data from whoever wrote it, so every query runs on a connection that cannot write, runs no SQL
function the schema defines (``trusted_schema=OFF``), refuses values larger than :data:`MAX_VALUE_BYTES`, and is
stopped by a progress handler once it passes a time budget that grows with the file's size; the readers count the
rows they fetch against a row budget of the same kind. Only real tables (``sqlite_master.type = 'table'``, not
virtual) are ever named in a query: a view or a CTE in the file, however it is named, is never run.

Three layouts are in use (rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql``):

* ROCm 7.0-7.2 (``schema_version`` 3.0.x; ROCm/rocm-systems ``versions/3.0.0``): activities carry ``nid``, ``pid``,
  ``tid``, ``agent_id``, ``queue_id``, ``stream_id`` and ``start``/``end``; ``rocpd_event.category_id`` points into
  ``rocpd_string``;
* a track layout (ROCm/rocm-systems ``versions/4.1.0/rocpd_tables.sql``, commit a195360b): activities carry a
  ``track_id`` into ``rocpd_track`` (``nid``, ``pid``, ``tid``, ``agent_id``, ``queue_id``, ``stream_id``) and keep
  ``start``/``end``; categories live in ``rocpd_info_category(name)``;
* a timestamp layout (schema 4.0 in ROCm/rocm-systems; ROCm/rocprofiler-sdk develop at commit 19d33bb3 writes it
  while still saying ``schema_version "3"``): ``track_id`` as above, and ``start_id``/``end_id`` into
  ``rocpd_timestamp(id, value)``.

:class:`Layout` holds what one table suffix has, and gives the SQL expressions for each field whichever layout it is.
"""
from __future__ import annotations

import os
import re
import sqlite3
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote

import numpy as np

from ..errors import LumikitError, ParseError
from ..files import open_regular, regular_file

SQLITE_MAGIC = b"SQLite format 3\x00"
ANCHOR = "rocpd_kernel_dispatch"
#: The largest single value (a name, a blob) the reader lets SQLite hand back: names are kilobytes at most.
MAX_VALUE_BYTES = 1 << 20
#: Characters of a name kept (kernel names of templates run to a few thousand).
NAME_CHARS = 4096
#: Table suffixes (processes) one file may hold: a merge of a large job stays well under this.
MAX_SUFFIXES = 512
#: Tables one file may list before it is refused as not rocprofv3's.
MAX_TABLES = 40 * MAX_SUFFIXES
#: The time budget of one database: a base plus so much per MB of file (a 100 MB database reads in about a second).
BASE_SECONDS, SECONDS_PER_MB = 6.0, 0.1
#: The row budget: rows fetched from one database may not exceed this many per byte of the file (plus a base): a
#: real row takes more than 8 bytes on disk, so only a query that multiplies rows (duplicate ids) can pass it.
ROWS_PER_BYTE, BASE_ROWS = 1 / 8, 100_000
_SUFFIX = re.compile(r"^[A-Za-z0-9_]*$")
#: The int64 stand-ins for a missing time and a time that is not an integer (REAL, inf, text, blob).
NO_TIME, BAD_TIME = -(2**63), -(2**63) + 1


class Budget:
    """The time and row budget of the reads of one database (or one batch of attached ones)."""

    def __init__(self, size_bytes: int, source: str) -> None:
        mb = size_bytes / 1e6
        self.seconds = BASE_SECONDS + SECONDS_PER_MB * mb
        self.rows = int(BASE_ROWS + ROWS_PER_BYTE * size_bytes)
        self.deadline = time.monotonic() + self.seconds
        self.fetched = 0
        self.source = source
        self.stopped = False

    def progress(self) -> int:
        """SQLite's progress handler: a non-zero answer interrupts the running statement."""
        if time.monotonic() > self.deadline:
            self.stopped = True
            return 1
        return 0

    def count(self, rows: int) -> None:
        """Count fetched rows; past the budget the read ends with one line."""
        self.fetched += rows
        if self.fetched > self.rows:
            raise ParseError(f"more rows than a database of this size can hold ({self.fetched:,} fetched, budget "
                             f"{self.rows:,}): its tables repeat ids or are not rocprofv3's; not read further",
                             source=self.source)

    def stopped_error(self) -> ParseError:
        return ParseError(f"reading stopped after {self.seconds:.0f} s (the time budget for a database of this "
                          "size): its tables are not laid out as rocprofv3 writes them (a view, a huge or "
                          "repeated table?); not read further", source=self.source)


def is_sqlite(path: str | os.PathLike[str]) -> bool:
    """Whether a file starts as a SQLite database does (rocpd or not: the tables are checked when it is read)."""
    try:
        with open_regular(path) as fh:
            return fh.read(16) == SQLITE_MAGIC
    except (OSError, LumikitError):
        return False


def _guard(con: sqlite3.Connection, budget: Budget) -> None:
    """The limits every connection to a database runs under (see the module's docstring)."""
    con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")  # a damaged name is not a crash
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 10)
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("PRAGMA cell_size_check = ON")
    con.execute("PRAGMA query_only = ON")
    con.set_progress_handler(budget.progress, 20_000)


def uri(path: Path) -> str:
    """A read-only URI for ``path`` ("?" or "#" in a name stay); ``immutable`` (no locks, no journal read) unless a
    journal or WAL beside it says a writer may still be at work."""
    resolved = path.resolve()
    busy = any(Path(f"{resolved}{ext}").exists() for ext in ("-wal", "-journal", "-shm"))
    return f"file:{quote(str(resolved))}?mode=ro" + ("" if busy else "&immutable=1")


def connect(path: Path, what: str = "a rocprofv3 database (<pid>_results.db) or a run folder"
            ) -> tuple[sqlite3.Connection, Budget]:
    """A guarded read-only connection to one database, with its budget."""
    regular_file(path, what)  # sqlite reads by pages: any size
    if not is_sqlite(path):
        raise ParseError("not a SQLite database; give the .db that rocprofv3 writes by default (ROCm 7), "
                         "or re-run with --output-format csv", source=str(path))
    budget = Budget(path.stat().st_size, str(path))
    try:
        con = sqlite3.connect(uri(path), uri=True)
        _guard(con, budget)
    except sqlite3.DatabaseError as exc:
        raise unreadable(exc, str(path), budget) from None
    return con, budget


def attach_all(paths: list[Path]) -> tuple[sqlite3.Connection, Budget, list[tuple[str, Path]]]:
    """An in-memory connection with up to 10 databases ATTACHed read-only, one budget for all of them."""
    for p in paths:
        con, _ = connect(p)  # the same checks (and messages) as one database
        con.close()
    budget = Budget(sum(p.stat().st_size for p in paths), ", ".join(map(str, paths)))
    con = sqlite3.connect(":memory:")
    _guard(con, budget)
    con.execute("PRAGMA query_only = OFF")  # ATTACH is refused under query_only; the files are still read-only
    schemas = []
    for j, p in enumerate(paths):
        try:
            con.execute(f"ATTACH DATABASE ? AS db{j}", (uri(p),))
            con.execute(f"SELECT count(*) FROM db{j}.sqlite_master").fetchone()  # a damaged header fails here
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            con.close()
            raise unreadable(exc, str(p), budget) from None
        schemas.append((f"db{j}", p))
    con.execute("PRAGMA query_only = ON")
    return con, budget, schemas


def unreadable(exc: BaseException, source: str, budget: Budget | None = None) -> ParseError:
    """The one-line error for a SQLite failure: the budget's, a too-large value, or damage."""
    if budget is not None and budget.stopped:
        return budget.stopped_error()
    text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    if "too big" in text:
        return ParseError(f"a value larger than {MAX_VALUE_BYTES >> 20} MB ({text}): not a name rocprofv3 writes; "
                          "not read further", source=source)
    return ParseError(f"unreadable rocpd database ({text}); was it copied while rocprofv3 was still writing?",
                      source=source)


@dataclass
class Layout:
    """The tables of one suffix (one process of a rocprofv3 run, or all of them in an older merge) and their
    columns; ``schema`` is ``main`` or an ATTACHed database's name."""

    sfx: str
    schema: str = "main"
    columns: dict[str, frozenset[str]] = field(default_factory=dict)
    keyed: set[str] = field(default_factory=set)  # tables whose ``id`` is the INTEGER PRIMARY KEY (rowid)

    def has(self, table: str) -> bool:
        return table in self.columns

    def cols(self, table: str) -> frozenset[str]:
        return self.columns.get(table, frozenset())

    def t(self, table: str) -> str:
        """The quoted full name of a base table."""
        return f'"{self.schema}"."{table}{self.sfx}"'

    @property
    def timestamps(self) -> bool:
        """Whether activities keep their times in ``rocpd_timestamp`` (``start_id``/``end_id``)."""
        return "start_id" in self.cols(ANCHOR) or ("start" not in self.cols(ANCHOR) and self.has("rocpd_timestamp"))

    @property
    def tracks(self) -> bool:
        """Whether activities are placed by a ``track_id`` into ``rocpd_track``."""
        return "track_id" in self.cols(ANCHOR) and self.has("rocpd_track")

    @property
    def name(self) -> str:
        """The layout in words, for notes."""
        return ("timestamp" if self.timestamps else "track" if self.tracks else "3.0") + " layout"

    def times(self, table: str, alias: str = "X", checked: bool = True) -> tuple[str, str, str]:
        """The joins and the (start, end) expressions of an activity table (int64 ns, or the stand-ins; with
        ``checked=False`` the bare columns)."""
        cols = self.cols(table)
        wrap = checked_time if checked else (lambda e: e)
        if "start_id" in cols and self.has("rocpd_timestamp"):
            joins = (f" LEFT JOIN {self.t('rocpd_timestamp')} TS0 ON TS0.id = {alias}.start_id"
                     f" LEFT JOIN {self.t('rocpd_timestamp')} TS1 ON TS1.id = {alias}.end_id")
            return joins, wrap("TS0.value"), wrap("TS1.value")
        start = f"{alias}.start" if "start" in cols else "NULL"
        end = f'{alias}."end"' if "end" in cols else "NULL"
        return "", wrap(start), wrap(end)

    def place(self, table: str, column: str, alias: str = "X") -> str:
        """Where an activity's ``nid``/``pid``/``tid``/``agent_id``/``queue_id``/``stream_id`` is read: its own
        column, or its track's (alias TR, see :meth:`track_join`); NULL when neither has it."""
        if column in self.cols(table):
            return f"{alias}.{column}"
        if "track_id" in self.cols(table) and column in self.cols("rocpd_track"):
            return f"TR.{column}"
        return "NULL"

    def require_keyed(self, tables: Iterable[str], source: str) -> None:
        """Refuse lookup tables whose ``id`` is not their INTEGER PRIMARY KEY (rocprofv3 declares it so): a join on
        a repeated id would multiply rows."""
        for t in tables:
            if self.has(t) and t not in self.keyed:
                raise ParseError(f"table {t + self.sfx} has no INTEGER PRIMARY KEY id, as rocprofv3 writes it: not a "
                                 "rocprofv3 database, or one rewritten by another tool; not read", source=source)

    def track_join(self, table: str, alias: str = "X") -> str:
        if "track_id" in self.cols(table) and self.has("rocpd_track"):
            return f" LEFT JOIN {self.t('rocpd_track')} TR ON TR.id = {alias}.track_id"
        return ""

    def category_names(self) -> tuple[str, str] | None:
        """The table and column holding the names ``rocpd_event.category_id`` points at."""
        if self.has("rocpd_info_category") and "name" in self.cols("rocpd_info_category"):
            return "rocpd_info_category", "name"
        if self.has("rocpd_string") and "string" in self.cols("rocpd_string"):
            return "rocpd_string", "string"
        return None


def checked_time(expr: str) -> str:
    """A time column as int64 ns: an integer as it is, NULL as :data:`NO_TIME`, anything else as :data:`BAD_TIME`
    (an infinite REAL is not clamped into a plausible number)."""
    if expr == "NULL":
        return str(NO_TIME)
    return (f"(CASE typeof({expr}) WHEN 'integer' THEN {expr} WHEN 'null' THEN {NO_TIME} "
            f"ELSE {BAD_TIME} END)")


def as_int(expr: str) -> str:
    """An id column as an integer, -1 when it is missing or not an integer (a text or blob is never loaded: typeof
    reads only its header)."""
    return "-1" if expr == "NULL" else f"(CASE typeof({expr}) WHEN 'integer' THEN {expr} ELSE -1 END)"


def text(expr: str) -> str:
    """A name column cut to :data:`NAME_CHARS` characters inside SQLite."""
    return f"substr(CAST({expr} AS TEXT), 1, {NAME_CHARS})"


def _tables(con: sqlite3.Connection, schema: str, source: str) -> dict[str, str]:
    """Real tables named ``rocpd_*`` (name -> its SQL), virtual tables left out; too many is refused."""
    rows = con.execute(f"""SELECT name, substr(sql, 1, 40) FROM "{schema}".sqlite_master
                           WHERE type = 'table' AND name LIKE 'rocpd\\_%' ESCAPE '\\' LIMIT {MAX_TABLES + 1}"""
                       ).fetchall()
    if len(rows) > MAX_TABLES:
        raise ParseError(f"more than {MAX_TABLES} rocpd tables: not a database rocprofv3 writes; not read",
                         source=source)
    return {n: s for n, s in rows if not str(s or "").upper().lstrip().startswith("CREATE VIRTUAL")}


#: The base tables the readers may use (others are never named).
KNOWN_TABLES = ("rocpd_metadata", "rocpd_string", "rocpd_info_node", "rocpd_info_process", "rocpd_info_thread",
                "rocpd_info_agent", "rocpd_info_category", "rocpd_info_queue", "rocpd_info_stream",
                "rocpd_info_kernel_symbol", "rocpd_track", "rocpd_timestamp", "rocpd_event", "rocpd_arg",
                "rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy", "rocpd_info_pmc", "rocpd_pmc_event")


def layouts(con: sqlite3.Connection, source: str, schema: str = "main") -> list[Layout]:
    """One :class:`Layout` per table suffix of a database (``""`` when its tables carry none), each with the columns
    of the known tables it has. A database without a ``rocpd_kernel_dispatch`` table is refused, naming it."""
    try:
        tables = _tables(con, schema, source)
        found = sorted(n[len(ANCHOR):] for n in tables if n.startswith(ANCHOR))
        sfxs = [s for s in found if _SUFFIX.match(s) and (s == "" or s.startswith("_"))]
        if not sfxs:
            raise ParseError(f"no {ANCHOR} table: not a rocprofv3 (rocpd) database (an .rpd of rocmProfileData has "
                             "another schema; a view of that name is not read); profile with `rocprofv3 "
                             "--kernel-trace` (ROCm 7 writes rocpd by default)", source=source)
        if len(sfxs) > MAX_SUFFIXES:
            raise ParseError(f"{len(sfxs)} table suffixes (more than {MAX_SUFFIXES} processes in one file): not a "
                             "database rocprofv3 writes; not read", source=source)
        suffixed = [s for s in sfxs if s]
        out = []
        for sfx in suffixed or [""]:
            lay = Layout(sfx, schema)
            for base in KNOWN_TABLES:
                if base + sfx in tables:
                    info = con.execute(f'PRAGMA "{schema}".table_info("{base + sfx}")').fetchall()
                    lay.columns[base] = frozenset(r[1] for r in info)
                    if [(r[1], str(r[2]).upper()) for r in info if r[5]] == [("id", "INTEGER")]:
                        lay.keyed.add(base)
            out.append(lay)
        return out
    except sqlite3.DatabaseError as exc:
        raise unreadable(exc, source) from None


def fetch(con: sqlite3.Connection, sql: str, budget: Budget, params: Iterable = (),
          chunk: int = 100_000) -> list[tuple]:
    """Every row of a query, counted against the budget as it comes (never more than one chunk past it)."""
    cur = con.execute(sql, tuple(params))
    rows: list[tuple] = []
    while True:
        part = cur.fetchmany(chunk)
        if not part:
            return rows
        budget.count(len(part))
        rows.extend(part)


@contextmanager
def room_for(con: sqlite3.Connection, rows: int) -> Iterator[None]:
    """Let one query build a text of ``rows`` integers (``group_concat``), then put the value limit back."""
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(max(22 * rows + 64, MAX_VALUE_BYTES), 2**31 - 1))
    try:
        yield
    finally:
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)


def fetch_ints(con: sqlite3.Connection, exprs: list[str], source_sql: str, names: tuple[str, ...], budget: Budget,
               count_sql: str | None = None, fast: list[str] | None = None) -> dict[str, np.ndarray]:
    """Integer expressions over ``source_sql`` (a FROM clause with its joins) as int64 arrays by name.

    The rows are counted first (against the budget; ``count_sql``, the base table alone, where the joins are on
    primary keys and cannot add rows); then SQLite writes each column as one comma-separated text
    (``group_concat``, every column fed the rows in the same order) that numpy parses, so no Python object is built
    per row: a million rows cross in a fraction of a second. The value-size limit is raised for that one query to
    what the counted rows need, and put back. Every expression must be non-NULL (see :func:`as_int`). ``fast``: the
    same columns without the per-value type checks (``ifnull``), tried first; when a value is not an integer the
    counts disagree and the checked expressions are run instead (they name the damage)."""
    n = int(con.execute(f"SELECT count(*) FROM {count_sql or source_sql}").fetchone()[0])
    budget.count(n)
    if n == 0:
        return {k: np.zeros(0, dtype=np.int64) for k in names}
    # rows in slices of the base table's rowids, so the texts of one slice are all that is alive at a time
    ranges = [""]
    if count_sql is not None:
        lo, hi = con.execute(f"SELECT min(rowid), max(rowid) FROM {count_sql}").fetchone()
        if lo is not None and (hi - lo) < 4 * n + SLICE_ROWS:  # not too sparse to slice
            ranges = [f" WHERE X.rowid BETWEEN {a} AND {a + SLICE_ROWS - 1}" for a in range(lo, hi + 1, SLICE_ROWS)]
    for attempt in ([fast] if fast else []) + [exprs]:
        try:
            out = _slices(con, attempt, source_sql, names, ranges, min(n, SLICE_ROWS))
        except sqlite3.DataError:  # a value too big for the fast texts: the checked expressions never load it
            if attempt is exprs:
                raise
            continue
        bad = [k for k, v in out.items() if len(v) != n]
        if not bad:
            return out
        if attempt is exprs:
            raise ParseError(f"{bad[0]}: {len(out[bad[0]])} values for {n} rows (a value that is not an integer); "
                             "the file is damaged: profile again", source=budget.source)
    raise AssertionError("unreachable")


#: Rows per slice of :func:`fetch_ints` (a few MB of text per column).
SLICE_ROWS = 1 << 18


def _slices(con: sqlite3.Connection, exprs: list[str], source_sql: str, names: tuple[str, ...], ranges: list[str],
            rows: int) -> dict[str, np.ndarray]:
    inner = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
    outer = ", ".join(f"group_concat(c{i}, ',')" for i in range(len(exprs)))
    parts: dict[str, list[np.ndarray]] = {k: [] for k in names}
    with room_for(con, rows), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy warns when a text stops parsing early
        for where in ranges:
            row = con.execute(f"SELECT {outer} FROM (SELECT {inner} FROM {source_sql}{where})").fetchone()
            for name, joined in zip(names, row):
                try:
                    parts[name].append(np.fromstring(joined, dtype=np.int64, sep=",") if joined else
                                       np.zeros(0, dtype=np.int64))
                except ValueError:  # a value that is not an integer: the counts disagree
                    parts[name].append(np.zeros(0, dtype=np.int64))
    return {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}


def fast_int(expr: str, default: int = -1) -> str:
    """An integer column as it is, ``default`` when NULL (no type check: see :func:`fetch_ints`)."""
    return str(default) if expr == "NULL" else f"ifnull({expr}, {default})"


def lookup(ids: np.ndarray, keys: np.ndarray, values: np.ndarray, missing: object = -1) -> np.ndarray:
    """``values`` of each id of ``ids`` by ``keys`` (a small table's ids), ``missing`` where an id is unknown;
    vectorised (a sort and a search), so a million ids cost milliseconds."""
    out = np.full(len(ids), missing, dtype=values.dtype if len(values) else np.asarray([missing]).dtype)
    if not len(keys) or not len(ids):
        return out
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    pos = np.searchsorted(sk, ids)
    pos_c = np.minimum(pos, len(sk) - 1)
    hit = sk[pos_c] == ids
    out[hit] = values[order][pos_c[hit]]
    return out


def schema_version(con: sqlite3.Connection, lay: Layout, budget: Budget) -> str | None:
    """The ``schema_version`` of ``rocpd_metadata`` (cut to 20 characters), or None."""
    if "value" not in lay.cols("rocpd_metadata") or "tag" not in lay.cols("rocpd_metadata"):
        return None
    rows = fetch(con, f"SELECT {text('value')} FROM {lay.t('rocpd_metadata')} WHERE tag = 'schema_version' "
                      "LIMIT 1", budget)
    return str(rows[0][0])[:20] if rows else None
