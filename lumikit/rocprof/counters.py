"""Hardware counters from ``rocprofv3 --pmc``: the ``*_counter_collection.csv`` file and the rocpd database tables.

rocprofv3 writes one row per (kernel dispatch, counter) in both places: the CSV has ``Dispatch_Id``,
``Kernel_Name``, ``Counter_Name``, ``Counter_Value``, ``Start_Timestamp``, ``End_Timestamp`` (``Agent_Id`` is a
number in older releases, ``"Agent 1"`` in newer ones; ``Kernel_Id`` and ``Accum_VGPR_Count`` are missing in the
oldest layout), the database ``rocpd_pmc_event`` (a value per event) with ``rocpd_info_pmc`` (the counter's name)
and the dispatch of the same event. Both readers return the same long table; :func:`counters_per_kernel` adds
each counter up per kernel, and :func:`waves_per_cu` says how much of the GPU a kernel could have used at all.

Why it matters: ``GRBM_GUI_ACTIVE`` counts the cycles the GPU had work, which is what ``rocm-smi``'s GPU% shows:
one wave on one compute unit keeps it at 100 %. ``SQ_WAVES`` counts the waves launched; an MI250X GCD has 110
compute units, so a kernel with fewer waves than that left most of the GCD idle while GPU% read 100.
"""
from __future__ import annotations

import csv
import io
import os
import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import LumikitError, ParseError

#: Columns of the long counter table, in order.
COLUMNS = ["dispatch_id", "agent", "pid", "tid", "kernel", "counter", "value", "start_ns", "end_ns", "duration_ns",
           "grid_size", "workgroup_size", "vgpr", "sgpr", "lds_bytes", "scratch_bytes"]
_CSV = {"Dispatch_Id": "dispatch_id", "Agent_Id": "agent", "Process_Id": "pid", "Thread_Id": "tid",
        "Kernel_Name": "kernel", "Counter_Name": "counter", "Counter_Value": "value",
        "Start_Timestamp": "start_ns", "End_Timestamp": "end_ns", "Grid_Size": "grid_size",
        "Workgroup_Size": "workgroup_size", "VGPR_Count": "vgpr", "SGPR_Count": "sgpr",
        "LDS_Block_Size": "lds_bytes", "Scratch_Size": "scratch_bytes"}
_REQUIRED = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")
_AGENT = re.compile(r"^\s*(?:Agent\s*)?(\d+)\s*$")
#: Compute units of one MI250X GCD (the count ``rocminfo`` prints for gfx90a on LUMI-G).
MI250X_GCD_CUS = 110


def _agent(value: object) -> int | None:
    m = _AGENT.match(str(value))
    return int(m.group(1)) if m else None


def parse_counter_csv(text: str, source: str = "<text>") -> pd.DataFrame:
    """The long counter table of a ``*_counter_collection.csv`` given as text (see :func:`read_counter_csv`)."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if '"Counter_Name"' in ln or "Counter_Name," in ln), None)
    if header_at is None:
        raise ParseError('no rocprofv3 counter header ("Correlation_Id",...,"Counter_Name","Counter_Value",...); '
                         "give the *_counter_collection.csv that `rocprofv3 --pmc COUNTER ... --output-format csv` "
                         "writes (in pass_N/ or pmc_N/ folders)", source=source)
    rows = list(csv.reader(io.StringIO("\n".join(lines[header_at:]))))
    header = [h.strip() for h in rows[0]]
    missing = [h for h in _REQUIRED if h not in header]
    if missing:
        raise ParseError(f"counter CSV without the columns {missing}", source=source, line_no=header_at + 1,
                         line=lines[header_at])
    body = [r for r in rows[1:] if r and any(c.strip() for c in r)]
    for offset, r in enumerate(body):
        if len(r) != len(header):
            raise ParseError(f"{len(r)} cells where the header has {len(header)}", source=source,
                             line_no=header_at + 2 + offset, line=",".join(r)[:200])
    raw = pd.DataFrame(body, columns=header)
    table = pd.DataFrame({ours: raw[theirs] for theirs, ours in _CSV.items() if theirs in raw})
    table["agent"] = [_agent(a) for a in table["agent"]] if "agent" in table else None
    for col in ("dispatch_id", "pid", "tid", "start_ns", "end_ns", "grid_size", "workgroup_size", "vgpr", "sgpr",
                "lds_bytes", "scratch_bytes"):
        if col in table:
            table[col] = pd.to_numeric(table[col], errors="coerce").astype("Int64")
    table["value"] = pd.to_numeric(table["value"], errors="coerce")
    bad = table["value"].isna()
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise ParseError(f"{int(bad.sum())} counter values are not numbers (first: {raw['Counter_Value'][first]!r})",
                         source=source, line_no=header_at + 2 + first)
    return _finish(table, source)


def read_counter_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read rocprofv3's ``<pid>_counter_collection.csv``: one row per (dispatch, counter), columns
    :data:`COLUMNS` (``agent`` as a number whichever way the file spells it, times in ns)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise LumikitError(f"{p}: no such file; give a rocprofv3 *_counter_collection.csv or a rocpd .db") from None
    return parse_counter_csv(text, source=str(p))


def read_counter_db(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The same long table from a rocpd database (``rocpd_pmc_event`` joined to ``rocpd_info_pmc`` and the
    dispatch of the same event); a database profiled without ``--pmc`` has no such rows and is refused."""
    from .rocpd import _connect, _exists, suffixes

    p = Path(path)
    con = _connect(p)
    frames = []
    try:
        for sfx in suffixes(con, str(p)):
            if not (_exists(con, "rocpd_pmc_event" + sfx) and _exists(con, "rocpd_info_pmc" + sfx)):
                continue
            frames.append(pd.read_sql_query(
                f"""SELECT K.dispatch_id, A.absolute_index AS agent, P.pid, T.tid,
                           COALESCE(S.display_name, S.kernel_name) AS kernel, I.name AS counter,
                           E.value, K.start AS start_ns, K."end" AS end_ns,
                           K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
                           K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
                           S.arch_vgpr_count AS vgpr, S.sgpr_count AS sgpr,
                           K.group_segment_size AS lds_bytes, K.private_segment_size AS scratch_bytes
                    FROM "rocpd_pmc_event{sfx}" E
                    JOIN "rocpd_info_pmc{sfx}" I ON I.id = E.pmc_id
                    JOIN "rocpd_kernel_dispatch{sfx}" K ON K.event_id = E.event_id
                    LEFT JOIN "rocpd_info_kernel_symbol{sfx}" S ON S.id = K.kernel_id
                    LEFT JOIN "rocpd_info_agent{sfx}" A ON A.id = K.agent_id
                    LEFT JOIN "rocpd_info_process{sfx}" P ON P.id = K.pid
                    LEFT JOIN "rocpd_info_thread{sfx}" T ON T.id = K.tid""", con))
    except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError) as exc:
        raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200]})", source=str(p)) from None
    finally:
        con.close()
    if not frames or all(f.empty for f in frames):
        raise LumikitError(f"{p}: no hardware counters in this database; profile with `rocprofv3 --pmc "
                           "GRBM_GUI_ACTIVE SQ_WAVES -- python train.py`")
    return _finish(pd.concat(frames, ignore_index=True), str(p))


def _finish(table: pd.DataFrame, source: str) -> pd.DataFrame:
    for col in COLUMNS:
        if col not in table and col != "duration_ns":
            table[col] = pd.NA
    table["duration_ns"] = table["end_ns"] - table["start_ns"]
    table = table[COLUMNS].sort_values(["dispatch_id", "counter"], kind="stable").reset_index(drop=True)
    table.attrs["source"] = source
    return table


def read_counters(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A counter CSV or a rocpd database, by its first bytes."""
    from .rocpd import is_rocpd

    return read_counter_db(path) if is_rocpd(path) else read_counter_csv(path)


def counters_per_kernel(table: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel: ``dispatches``, ``duration_ns`` (summed over its dispatches, each counted once) and
    one column per counter (summed over the dispatches), largest duration first."""
    once = table.drop_duplicates("dispatch_id")
    base = once.groupby("kernel", sort=False).agg(dispatches=("dispatch_id", "size"),
                                                  duration_ns=("duration_ns", "sum"))
    values = table.pivot_table(index="kernel", columns="counter", values="value", aggfunc="sum", sort=False)
    out = base.join(values).sort_values("duration_ns", ascending=False, kind="stable")
    out.columns.name = None
    return out.reset_index()


def waves_per_cu(table: pd.DataFrame, compute_units: int = MI250X_GCD_CUS) -> pd.DataFrame:
    """Per dispatch with ``SQ_WAVES``: the waves launched per compute unit (below 1: most of the GCD had nothing to
    run), beside ``GRBM_GUI_ACTIVE`` (busy cycles, what GPU% counts) when it was collected."""
    wide = table.pivot_table(index=["dispatch_id", "kernel"], columns="counter", values="value", aggfunc="sum")
    if "SQ_WAVES" not in wide:
        raise LumikitError("no SQ_WAVES counter in this table; collect it with `rocprofv3 --pmc SQ_WAVES "
                           "GRBM_GUI_ACTIVE ...`")
    out = pd.DataFrame({"waves": wide["SQ_WAVES"], "waves_per_cu": wide["SQ_WAVES"] / compute_units})
    if "GRBM_GUI_ACTIVE" in wide:
        out["busy_cycles"] = wide["GRBM_GUI_ACTIVE"]
    return out.reset_index()
