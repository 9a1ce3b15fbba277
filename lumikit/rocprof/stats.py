"""rocprof statistics tables: v1 ``results.stats.csv`` / ``.hip_stats.csv`` / ``.hsa_stats.csv`` / ``.copy_stats.csv``
and rocprofv3 ``*_kernel_stats.csv`` / ``*_hip_api_stats.csv`` / ``*_memory_copy_stats.csv`` / ``*_domain_stats.csv``.

Both generations write one row per name with ``"Name","Calls","TotalDurationNs","AverageNs","Percentage"``;
rocprofv3 adds ``MinNs,MaxNs,StdDev``. Every reader here returns the same ranked table, so a notebook never cares
which rocprof made the file.
"""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import read_text, write_new
from ..kernels import classify_kernel
from ..sniff import looks_like_sentence

#: Column names of rocprof's statistics files -> our column names.
STATS_COLUMNS = {
    "Name": "name", "Calls": "calls", "TotalDurationNs": "total_ns", "AverageNs": "average_ns",
    "Percentage": "percent", "MinNs": "min_ns", "MaxNs": "max_ns", "StdDev": "stddev_ns",
}
#: The columns of every table this module returns, in order.
TABLE_COLUMNS = ["rank", "name", "kernel_class", "calls", "total_ns", "average_ns", "percent",
                 "min_ns", "max_ns", "stddev_ns"]
#: Kinds of statistics whose rows are GPU activities (they get a kernel class); the others are host API calls.
GPU_KINDS = ("kernel", "copy")

# Substrings of a file name -> the kind of statistics inside (first match wins; v1 and v3 spellings).
_KIND_BY_NAME = (
    ("hip_api_stats", "hip_api"), ("hip_stats", "hip_api"),
    ("hsa_api_stats", "hsa_api"), ("hsa_stats", "hsa_api"),
    ("rccl_api_stats", "rccl_api"),
    ("memory_copy_stats", "copy"), ("copy_stats", "copy"),
    ("memory_allocation_stats", "memory_allocation"), ("scratch_memory_stats", "scratch_memory"),
    ("marker_api_stats", "marker_api"), ("api_stats", "api"),
    ("domain_stats", "domain"),
    ("kernel_stats", "kernel"),
)
_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def stats_kind(path: str | os.PathLike[str]) -> str:
    """What a statistics file holds, from its name: kernel, copy, domain, or a kind of API (hip_api, hsa_api, ...).

    Any other name (v1 ``results.stats.csv``, a renamed file) is taken for kernel statistics.
    """
    name = Path(path).name.lower()
    for key, kind in _KIND_BY_NAME:
        if key in name:
            return kind
    return "kernel"


def _number(text: str, source: str, line_no: int, line: str) -> float:
    """A number at the start of a cell; trailing debris (a pasted ``> ``) is ignored, nothing else is."""
    m = _NUMBER.match(text)
    if not m:
        raise ParseError(f"expected a number, found {text!r}", source=source, line_no=line_no, line=line)
    return float(m.group(1))


def parse_rocprof_stats(text: str, source: str = "<text>", kind: str = "kernel") -> pd.DataFrame:
    """The ranked table of one rocprof statistics CSV given as text (see :func:`read_rocprof_stats`)."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines)
                      if ln.lstrip().startswith(('"Name"', "Name,"))), None)
    if header_at is None:
        raise ParseError('no rocprof statistics header ("Name","Calls","TotalDurationNs",...) found; '
                         "give a results.stats.csv (rocprof --stats) or *_kernel_stats.csv (rocprofv3 --stats)"
                         + looks_like_sentence(text, unless="statistics"), source=source)
    header = next(csv.reader([lines[header_at].strip()]))
    header = [h for h in header if h]
    unknown = [h for h in header if h not in STATS_COLUMNS]
    missing = [h for h in ("Name", "Calls", "TotalDurationNs") if h not in header]
    if missing or unknown:
        raise ParseError(f"unexpected statistics columns (missing {missing}, unknown {unknown})",
                         source=source, line_no=header_at + 1, line=lines[header_at])
    rows: list[dict[str, object]] = []
    notes: list[str] = []
    body = lines[header_at + 1:]
    last_line = header_at + 1 + max((i + 1 for i, ln in enumerate(body) if ln.strip()), default=0)
    try:
        records = list(csv.reader(io.StringIO("\n".join(body))))
    except csv.Error as exc:
        raise ParseError(f"not a CSV ({exc})", source=source) from None
    for offset, cells in enumerate(records):
        line_no = header_at + 2 + offset
        if not cells or all(not c.strip() for c in cells):
            continue
        if cells[-1] == "" and len(cells) == len(header) + 1:  # trailing comma
            cells = cells[:-1]
        raw = lines[line_no - 1] if line_no - 1 < len(lines) else ",".join(cells)
        try:
            if len(cells) != len(header):
                raise ParseError(f"{len(cells)} cells where the header has {len(header)}",
                                 source=source, line_no=line_no, line=raw)
            row: dict[str, object] = {"name": cells[header.index("Name")]}
            for col, cell in zip(header, cells):
                if col != "Name":
                    row[STATS_COLUMNS[col]] = _number(cell, source, line_no, raw)
            _check_calls(row["calls"], source, line_no, raw)  # type: ignore[arg-type]
        except ParseError:
            cut = len(cells) != len(header) or not text.endswith("\n")
            if cut and offset == len(records) - 1 and line_no >= last_line:  # a file cut in its last row
                notes.append(f"{source}: the last row (line {line_no}) is cut short or damaged; kept the "
                             f"{len(rows)} rows before it")
                break
            raise
        rows.append(row)
    table = pd.DataFrame(rows, columns=["name"] + [STATS_COLUMNS[h] for h in header if h != "Name"])
    if "Percentage" in header:
        notes += _partial_note(table["percent"], source)
    table = _finish(table, kind)
    table.attrs.update(source=source, kind=kind, generation="v3" if "MinNs" in header else "v1", notes=notes)
    return table


def _partial_note(percent: pd.Series, source: str) -> list[str]:
    """A note when the file's own percentages do not add up to 100 (beyond their rounding to 2 decimals): rows
    are missing (an excerpt, a file cut at a row boundary) or repeated, so totals and shares cover only what is
    here."""
    values = percent.to_numpy(dtype="float64")
    if not len(values) or not np.isfinite(values).all():
        return []
    total, slack = float(values.sum()), max(0.1, 0.005 * len(values))
    if total < 100 - slack:
        return [f"{source}: the rows' Percentage add up to {total:.1f} %, not 100: the file holds only part of the "
                "table (an excerpt, or cut short at a row boundary); totals and class shares cover these "
                f"{len(values)} rows only"]
    if total > 100 + slack:
        return [f"{source}: the rows' Percentage add up to {total:.1f} %, more than 100: rows are repeated, or two "
                "files were pasted together"]
    return []


def _check_calls(calls: float, source: str, line_no: int, line: str) -> None:
    """A call count is a whole number that fits in 64 bits: refused otherwise (never wrapped or rounded)."""
    if not np.isfinite(calls) or calls != int(calls) or not 0 <= calls < 2**63:
        raise ParseError(f"a call count of {calls:g} is not a whole number from 0 to 2**63 - 1; is the file damaged?",
                         source=source, line_no=line_no, line=line)


def read_rocprof_stats(path: str | os.PathLike[str], kind: str | None = None) -> pd.DataFrame:
    """Read one rocprof (v1 or v3) statistics CSV into a table ranked by total time.

    Columns: ``rank`` (1 = most time), ``name``, ``kernel_class`` (compute / communication / memory for GPU
    activities, missing for host API calls), ``calls``, ``total_ns``, ``average_ns``, ``percent`` (of the file's
    total), ``min_ns``, ``max_ns``, ``stddev_ns`` (missing for rocprof v1). ``table.attrs`` holds ``source``,
    ``kind`` (from the file name unless given) and ``generation`` ("v1" or "v3"). Text before the header line
    (a pasted shell prompt) is skipped.
    """
    p = Path(path)
    text = read_text(p, "a rocprof statistics CSV or a run folder")
    return parse_rocprof_stats(text, source=str(p), kind=kind or stats_kind(p))


def _finish(table: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Fill derived columns, classify GPU activities, rank by total time and order the columns."""
    table = table.copy()
    for col in ("calls", "total_ns", "average_ns", "percent", "min_ns", "max_ns", "stddev_ns"):
        if col not in table:
            table[col] = np.nan
    table["calls"] = table["calls"].astype("int64")
    table["total_ns"] = table["total_ns"].astype("float64")
    if table["average_ns"].isna().all() and len(table):
        table["average_ns"] = table["total_ns"] / table["calls"].where(table["calls"] > 0)
    total = table["total_ns"].sum()
    if table["percent"].isna().all() and len(table):
        table["percent"] = 100.0 * table["total_ns"] / total if total > 0 else 0.0
    if kind == "copy":
        table["kernel_class"] = "memory"
    elif kind in GPU_KINDS:
        table["kernel_class"] = [classify_kernel(n) for n in table["name"]]
    else:
        table["kernel_class"] = pd.Series([pd.NA] * len(table), dtype="object")
    table = table.sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)
    table["rank"] = np.arange(1, len(table) + 1)
    return table[TABLE_COLUMNS]


def stats_from_durations(activities: pd.DataFrame, kind: str = "kernel") -> pd.DataFrame:
    """The ranked statistics table of individual activities (columns ``name`` and ``duration_ns``).

    This is how a kernel trace (rocprofv3 ``kernel_trace.csv``, rocprof v1 ``results.json``) becomes the same
    table as a statistics file; the standard deviation is the population one.
    """
    if activities.empty:
        table = pd.DataFrame(columns=["name", "calls", "total_ns", "average_ns", "min_ns", "max_ns", "stddev_ns"])
    else:
        activities = activities.assign(duration_ns=activities["duration_ns"].astype("float64"))  # sums never wrap
        grouped = activities.groupby("name", sort=False)["duration_ns"]
        table = grouped.agg(calls="count", total_ns="sum", average_ns="mean", min_ns="min", max_ns="max",
                            stddev_ns=lambda s: float(np.std(s.to_numpy(dtype=float)))).reset_index()
    table = _finish(table, kind)
    table.attrs.update(kind=kind)
    return table


def write_rocprof_stats(table: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a table of this module back in rocprofv3's ``kernel_stats.csv`` layout (every field quoted but the
    numbers, as rocprof writes it), so the readers treat it like rocprof's own file; refuses to overwrite."""
    columns = {ours: theirs for theirs, ours in STATS_COLUMNS.items()}
    out = table[list(columns)].rename(columns=columns)
    return write_new(path, out.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC))


def combine_stats(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """One table from several (one per process or rank): calls and times summed, min/max kept, re-ranked.

    The standard deviation cannot be combined from the summaries and is left missing.
    """
    tables = [t for t in tables]
    if not tables:
        raise LumikitError("no statistics tables to combine")
    if len(tables) == 1:
        return tables[0]
    kinds = {t.attrs.get("kind", "kernel") for t in tables}
    kind = kinds.pop() if len(kinds) == 1 else "kernel"
    both = pd.concat(tables, ignore_index=True)
    merged = both.groupby("name", sort=False).agg(calls=("calls", "sum"), total_ns=("total_ns", "sum"),
                                                 min_ns=("min_ns", "min"), max_ns=("max_ns", "max")).reset_index()
    merged["average_ns"] = merged["total_ns"] / merged["calls"].where(merged["calls"] > 0)
    merged["stddev_ns"] = np.nan
    out = _finish(merged, kind)
    out.attrs.update(kind=kind, source=", ".join(str(t.attrs.get("source", "?")) for t in tables),
                     notes=[note for t in tables for note in t.attrs.get("notes", [])],
                     generation="/".join(sorted({str(t.attrs.get("generation", "?")) for t in tables})))
    return out


def class_totals(table: pd.DataFrame) -> pd.DataFrame:
    """Time per kernel class of a ranked table: ``total_ns``, ``calls`` and ``share`` (0-1), largest first.

    Every class appears (with zero time when absent), so charts and checks can rely on all three rows.
    """
    from ..kernels import CLASSES

    gpu = table.dropna(subset=["kernel_class"])
    sums = gpu.groupby("kernel_class")[["total_ns", "calls"]].sum()
    sums = sums.reindex(list(CLASSES), fill_value=0)
    total = float(sums["total_ns"].sum())
    sums["share"] = sums["total_ns"] / total if total > 0 else 0.0
    sums.index.name = "kernel_class"
    return sums.sort_values("total_ns", ascending=False, kind="stable")
