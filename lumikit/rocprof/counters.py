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
from ..files import read_text, regular_file
from ..text import printable

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
    m = _AGENT.match(str(value)[:40])
    return int(m.group(1)) if m and len(m.group(1)) <= 9 else None  # agent numbers are small; more is damage


#: Integer columns and the largest value each may hold: a value outside [0, limit] (a damaged file) reads as missing.
_INTS = {"dispatch_id": 2**62, "pid": 2**62, "tid": 2**62, "start_ns": 2**62, "end_ns": 2**62, "grid_size": 2**62,
         "workgroup_size": 2**62, "vgpr": 2**31, "sgpr": 2**31, "lds_bytes": 2**62, "scratch_bytes": 2**62}


def _int_column(values: pd.Series, limit: int) -> pd.Series:
    """``values`` as nullable integers: anything that is not a whole number in [0, ``limit``] becomes missing."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.dtype == object:  # integers beyond 64 bits stay Python ints
        numbers = pd.Series([float(v) if isinstance(v, (int, float)) else np.nan for v in numbers],
                            index=values.index)
    as_float = numbers.astype("float64")
    ok = np.isfinite(as_float) & (as_float >= 0) & (as_float <= limit) & (np.floor(as_float) == as_float)
    out = pd.array([int(v) if good else pd.NA for v, good in zip(numbers.where(ok, 0), ok)], dtype="Int64")
    return pd.Series(out, index=values.index)


def _check_values(table: pd.DataFrame, source: str, where: pd.Series | None = None, first_line: int = 0) -> None:
    """Refuse counter values that are not finite numbers, naming how many and the first."""
    bad = ~np.isfinite(table["value"].to_numpy(dtype="float64", na_value=np.nan))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        shown = printable(str(where.iloc[first])[:40]) if where is not None else "?"
        raise ParseError(f"{int(bad.sum())} counter values are not numbers or not finite (first: {shown!r}); "
                         "the file is "
                         "damaged: profile again, or give another pass's file", source=source,
                         line_no=first_line + first if first_line else None)


def parse_counter_csv(text: str, source: str = "<text>") -> pd.DataFrame:
    """The long counter table of a ``*_counter_collection.csv`` given as text (see :func:`read_counter_csv`).

    A last row cut short (a profiler stopped while writing) is left out and noted in ``attrs["notes"]``; a damaged
    row anywhere else is refused with its line."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if '"Counter_Name"' in ln or "Counter_Name," in ln), None)
    if header_at is None:
        raise ParseError('no rocprofv3 counter header ("Correlation_Id",...,"Counter_Name","Counter_Value",...); '
                         "give the *_counter_collection.csv that `rocprofv3 --pmc COUNTER ... --output-format csv` "
                         "writes (in pass_N/ or pmc_N/ folders)", source=source)
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[header_at:]))))
    except csv.Error as exc:
        raise ParseError(f"not a readable CSV ({exc})", source=source) from None
    header = [h.strip() for h in rows[0]]
    missing = [h for h in _REQUIRED if h not in header]
    if missing:
        raise ParseError(f"counter CSV without the columns {missing}", source=source, line_no=header_at + 1,
                         line=printable(lines[header_at][:200]))
    twice = sorted({h for h in header if header.count(h) > 1 and h in _CSV})
    if twice:
        raise ParseError(f"the column {twice[0]!r} appears twice in the header: not a rocprofv3 counter CSV",
                         source=source, line_no=header_at + 1)
    body = [r for r in rows[1:] if r and any(c.strip() for c in r)]
    notes = []
    if body and len(body[-1]) < len(header) and all(len(r) == len(header) for r in body[:-1]):
        body = body[:-1]
        notes.append(f"{source}: the last row is cut short (the file was still being written when it was copied, "
                     "or the run was stopped); read without it")
    for offset, r in enumerate(body):
        if len(r) != len(header):
            raise ParseError(f"{len(r)} cells where the header has {len(header)}", source=source,
                             line_no=header_at + 2 + offset, line=printable(",".join(r)[:200]))
    raw = pd.DataFrame(body, columns=header)
    table = pd.DataFrame({ours: raw[theirs] for theirs, ours in _CSV.items() if theirs in raw})
    table["value"] = pd.to_numeric(table["value"], errors="coerce").astype("float64")
    _check_values(table, source, raw["Counter_Value"], header_at + 2)
    table.attrs["notes"] = notes
    return _finish(table, source)


def read_counter_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read rocprofv3's ``<pid>_counter_collection.csv``: one row per (dispatch, counter), columns
    :data:`COLUMNS` (``agent`` as a number whichever way the file spells it, times in ns).

    Read through :func:`lumikit.files.read_text`: regular files only, at most ``LUMIKIT_MAX_READ_MB``."""
    p = Path(path)
    return parse_counter_csv(read_text(p, "a rocprofv3 *_counter_collection.csv or a rocpd .db"), source=str(p))


def read_counter_db(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The same long table from a rocpd database (``rocpd_pmc_event`` joined to ``rocpd_info_pmc`` and the
    dispatch of the same event); a database profiled without ``--pmc`` has no such rows and is refused."""
    from .rocpd import _connect, _exists, refuse_newer_schema, suffixes

    p = Path(path)
    con = _connect(p)
    frames = []
    try:
        for sfx in suffixes(con, str(p)):
            refuse_newer_schema(con, sfx, str(p))
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
                    LEFT JOIN "rocpd_info_thread{sfx}" T ON T.id = K.tid""", con, coerce_float=False))
    except (sqlite3.DatabaseError, pd.errors.DatabaseError, UnicodeDecodeError, OverflowError) as exc:
        raise ParseError(f"unreadable rocpd database ({str(exc).splitlines()[0][:200] if str(exc) else exc!r})",
                         source=str(p)) from None
    finally:
        con.close()
    if not frames or all(f.empty for f in frames):
        raise LumikitError(f"{p}: no hardware counters in this database; profile with `rocprofv3 --pmc "
                           "GRBM_GUI_ACTIVE SQ_WAVES -- python train.py`")
    table = pd.concat(frames, ignore_index=True)
    table["kernel"] = [k if isinstance(k, str) else "(unnamed kernel)" for k in table["kernel"]]
    table["counter"] = [c if isinstance(c, str) else str(c) for c in table["counter"]]
    table["value"] = pd.to_numeric(table["value"].map(lambda v: v if isinstance(v, (int, float, str)) else None),
                                   errors="coerce").astype("float64")
    _check_values(table, str(p), table["value"])
    return _finish(table, str(p))


def _finish(table: pd.DataFrame, source: str) -> pd.DataFrame:
    notes = list(table.attrs.get("notes", []))
    for col in COLUMNS:
        if col not in table and col != "duration_ns":
            table[col] = pd.NA
    table["agent"] = pd.array([_agent(a) for a in table["agent"]], dtype="Int64")
    for col, limit in _INTS.items():
        table[col] = _int_column(table[col], limit)
    table["duration_ns"] = table["end_ns"] - table["start_ns"]
    negative = int((table["duration_ns"] < 0).fillna(False).sum())
    if negative:
        table.loc[(table["duration_ns"] < 0).fillna(False), "duration_ns"] = pd.NA
        notes.append(f"{source}: {negative} rows end before they start; their durations are left out")
    table = table[COLUMNS].sort_values(["dispatch_id", "counter"], kind="stable").reset_index(drop=True)
    table.attrs["source"] = source
    table.attrs["notes"] = notes
    table.attrs["timestamps"] = bool(table["duration_ns"].notna().any())
    return table


def read_counters(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A counter CSV or a rocpd database, by its first bytes."""
    from .rocpd import is_rocpd

    regular_file(path, "a rocprofv3 *_counter_collection.csv or a rocpd .db")
    return read_counter_db(path) if is_rocpd(path) else read_counter_csv(path)


def counters_per_kernel(table: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel: ``dispatches``, ``duration_ns`` (summed over its dispatches, each counted once; missing
    when the file has no timestamps) and one column per counter (summed over the dispatches), longest first."""
    once = table.drop_duplicates(["dispatch_id", "kernel"])
    base = once.groupby("kernel", sort=False).agg(
        dispatches=("kernel", "size"), duration_ns=("duration_ns", lambda d: d.sum(min_count=1)))  # none: NA
    values = table.pivot_table(index="kernel", columns="counter", values="value", aggfunc="sum", sort=False)
    values.columns = [f"counter {c}" if c in ("kernel", "dispatches", "duration_ns") else c for c in values.columns]
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
