"""Rewrite a generated rocpd database (the 3.0 layout of :mod:`.rocprof_outputs` / :mod:`.rocpd_calls`) into the
newer layouts rocprofiler-sdk writes, with the same activities, so a test or a benchmark can check that every
layout reads to the same numbers:

* ``"track"`` (ROCm/rocm-systems ``versions/4.1.0/rocpd_tables.sql``): activities lose ``nid``/``pid``/``tid``/
  ``agent_id``/``queue_id``/``stream_id`` for a ``track_id`` into ``rocpd_track``; categories move to
  ``rocpd_info_category``; ``schema_version`` 4.1.0;
* ``"timestamp"`` (rocm-systems schema 4.0): as ``"track"``, and ``start``/``end`` become ``start_id``/``end_id``
  into ``rocpd_timestamp(id, value, phase, track_id)``; ``schema_version`` 4.0.0;
* ``"develop"`` (ROCm/rocprofiler-sdk develop, commit 19d33bb3): the timestamp layout with categories still in
  ``rocpd_string``, still saying ``schema_version`` "3".

Generated data: say so wherever it is shown. The unsuffixed views are dropped (the readers never use them).
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

LAYOUTS = ("track", "timestamp", "develop")
_COMMON = ["id", "guid"]
_ACTIVITIES = {
    "rocpd_region": (["name_id"], ["event_id", "extdata"], "NULL", "NULL"),
    "rocpd_kernel_dispatch": (["kernel_id", "dispatch_id"],
                              ["private_segment_size", "group_segment_size", "workgroup_size_x", "workgroup_size_y",
                               "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z", "region_name_id",
                               "event_id", "extdata"], "agent_id", "queue_id"),
    "rocpd_memory_copy": (["name_id"], ["dst_agent_id", "dst_address", "src_agent_id", "src_address", "size",
                                        "region_name_id", "event_id", "extdata"], "NULL", "queue_id"),
}


def convert_layout(path: str | os.PathLike[str], layout: str) -> Path:
    """Rewrite the database at ``path`` in place into ``layout`` (one of :data:`LAYOUTS`); returns the path."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: give one of {LAYOUTS}")
    con = sqlite3.connect(path)
    try:
        for (view,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            con.execute(f'DROP VIEW "{view}"')
        sfxs = [n[len("rocpd_kernel_dispatch"):] for (n,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch%'")]
        for sfx in sfxs:
            _convert(con, sfx, layout)
        con.commit()
        con.execute("VACUUM")
    finally:
        con.close()
    return Path(path)


def _has(con: sqlite3.Connection, table: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _convert(con: sqlite3.Connection, sfx: str, layout: str) -> None:
    stamps = layout in ("timestamp", "develop")
    con.execute(f'''CREATE TABLE "rocpd_track{sfx}" (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL,
                    nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, queue_id INTEGER,
                    stream_id INTEGER, name_id INTEGER, extdata JSONB DEFAULT '{{}}' NOT NULL)''')
    if stamps:
        con.execute(f'''CREATE TABLE "rocpd_timestamp{sfx}" (id INTEGER PRIMARY KEY AUTOINCREMENT,
                        guid TEXT NOT NULL, value BIGINT NOT NULL, phase INTEGER, track_id INTEGER)''')
    next_stamp = 1
    for table, (head, tail, agent, queue) in _ACTIVITIES.items():
        old = f"{table}{sfx}"
        if not _has(con, old):
            continue
        cols = {r[1] for r in con.execute(f'PRAGMA table_info("{old}")')}
        stream = "stream_id" if "stream_id" in cols else "NULL"
        tid = "tid" if "tid" in cols else "NULL"
        con.execute(f'ALTER TABLE "{old}" RENAME TO "{old}_old"')
        place = f"nid, pid, {tid}, {agent}, {queue}, {stream}"
        con.execute(f'''INSERT INTO "rocpd_track{sfx}" (guid, nid, pid, tid, agent_id, queue_id, stream_id)
                        SELECT DISTINCT guid, {place} FROM "{old}_old"
                        EXCEPT SELECT guid, nid, pid, tid, agent_id, queue_id, stream_id FROM "rocpd_track{sfx}"''')
        times = ["start_id INTEGER NOT NULL", "end_id INTEGER NOT NULL"] if stamps else \
            ["start BIGINT NOT NULL", '"end" BIGINT NOT NULL']
        keep = [c for c in head + tail if c in cols]
        con.execute(f'''CREATE TABLE "{old}" (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL,
                        track_id INTEGER NOT NULL, {", ".join(f'"{c}"' for c in head if c in cols)},
                        {", ".join(times)}, {", ".join(f'"{c}"' for c in tail if c in cols)})''')
        match = (f'T.guid = O.guid AND T.nid IS O.nid AND T.pid IS O.pid'
                 f' AND T.tid IS {"O.tid" if tid != "NULL" else "NULL"}'
                 f' AND T.agent_id IS {"O." + agent if agent != "NULL" else "NULL"}'
                 f' AND T.queue_id IS {"O." + queue if queue != "NULL" else "NULL"}'
                 f' AND T.stream_id IS {"O." + stream if stream != "NULL" else "NULL"}')
        if stamps:
            con.execute(f'''INSERT INTO "rocpd_timestamp{sfx}" (id, guid, value, phase, track_id)
                            SELECT {next_stamp} + 2 * (O.id - 1), O.guid, O.start, 1, T.id FROM "{old}_old" O
                            JOIN "rocpd_track{sfx}" T ON {match}
                            UNION ALL
                            SELECT {next_stamp} + 2 * (O.id - 1) + 1, O.guid, O."end", 2, T.id FROM "{old}_old" O
                            JOIN "rocpd_track{sfx}" T ON {match}''')
            time_values = f"{next_stamp} + 2 * (O.id - 1), {next_stamp} + 2 * (O.id - 1) + 1"
            next_stamp += 2 * int(con.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{old}_old"').fetchone()[0])
        else:
            time_values = 'O.start, O."end"'
        head_sel = ", ".join(f'O."{c}"' for c in head if c in cols)
        tail_sel = ", ".join(f'O."{c}"' for c in keep if c in tail)
        con.execute(f'''INSERT INTO "{old}" SELECT O.id, O.guid, T.id, {head_sel}, {time_values}, {tail_sel}
                        FROM "{old}_old" O JOIN "rocpd_track{sfx}" T ON {match}''')
        con.execute(f'DROP TABLE "{old}_old"')
    if layout in ("track", "timestamp") and _has(con, f"rocpd_event{sfx}"):
        # categories as their own table: the event's category_id now points into rocpd_info_category
        con.execute(f'''CREATE TABLE "rocpd_info_category{sfx}" (id INTEGER PRIMARY KEY AUTOINCREMENT,
                        guid TEXT NOT NULL, name TEXT NOT NULL, extdata JSONB DEFAULT '{{}}' NOT NULL)''')
        con.execute(f'''INSERT INTO "rocpd_info_category{sfx}" (id, guid, name)
                        SELECT DISTINCT S.id + 1000, S.guid, S.string FROM "rocpd_string{sfx}" S
                        JOIN "rocpd_event{sfx}" E ON E.category_id = S.id''')
        con.execute(f'UPDATE "rocpd_event{sfx}" SET category_id = category_id + 1000 WHERE category_id IS NOT NULL')
    version = {"track": "4.1.0", "timestamp": "4.0.0", "develop": "3"}[layout]
    if _has(con, f"rocpd_metadata{sfx}"):
        con.execute(f"UPDATE \"rocpd_metadata{sfx}\" SET value = ? WHERE tag = 'schema_version'", (version,))
