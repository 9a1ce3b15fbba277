"""One container for what a rocprofv3 run recorded, whatever the file: kernels, memory copies and API calls.

The rocpd database (:mod:`.rocpd`) and the Perfetto trace (:mod:`.pftrace`) both come out as :class:`Activities`;
its kernel table has the columns of :func:`~lumikit.rocprof.traces.read_kernel_trace` (``name``,
``kernel_class``, ``start_ns``, ``end_ns``, ``duration_ns`` ...), so the ranked statistics are the same function
as for a CSV kernel trace.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..errors import ParseError
from ..kernels import classify_kernel
from .stats import stats_from_durations

#: Columns every table of :class:`Activities` starts with.
KERNEL_COLUMNS = ["name", "kernel_class", "start_ns", "end_ns", "duration_ns"]
COPY_COLUMNS = ["name", "start_ns", "end_ns", "duration_ns", "size_bytes"]
API_COLUMNS = ["name", "category", "start_ns", "end_ns", "duration_ns"]


def _times(values: pd.Series, what: str, source: str) -> pd.Series:
    """Start or end times as int64 nanoseconds; a missing, non-numeric or out-of-range one is damage."""
    numbers = pd.to_numeric(values, errors="coerce").astype("float64")
    bad = ~numbers.between(0, 2.0**63 - 1024)  # NaN is never between
    if bad.any():
        raise ParseError(f"{int(bad.sum())} {what} without a time in nanoseconds from 0 to 2**63 (first: "
                         f"{str(values[bad].iloc[0])[:40]!r}); the file is damaged: profile again",
                         source=source)
    return pd.to_numeric(values).astype("int64")


def _table(rows: pd.DataFrame | None, first: list[str], source: str = "<activities>",
           what: str = "activities") -> pd.DataFrame:
    """Order the columns, derive the duration, sort by start; an empty table still has the columns."""
    if rows is None or rows.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c in ("name", "kernel_class", "category") else "int64")
                             for c in first})
    out = rows.copy()
    for col in ("start_ns", "end_ns"):
        out[col] = _times(out[col], what, source)
    out["duration_ns"] = out["end_ns"] - out["start_ns"]
    if "kernel_class" in first:
        out["kernel_class"] = [classify_kernel(str(n)) for n in out["name"]]
    for col in first:
        if col not in out:
            out[col] = pd.NA
    return out[first + [c for c in out.columns if c not in first]].sort_values("start_ns", kind="stable") \
        .reset_index(drop=True)


@dataclass
class Activities:
    """Kernel dispatches, memory copies and host API calls of one or more processes, with where they came from."""

    kernels: pd.DataFrame
    copies: pd.DataFrame
    api: pd.DataFrame
    source: str
    processes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["hostname", "pid", "command"]))
    generation: str = "v3"
    #: What a reader flagged on the way (negative durations, an unknown schema version, tables read as empty).
    notes: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, kernels: pd.DataFrame | None, copies: pd.DataFrame | None, api: pd.DataFrame | None,
              source: str, processes: pd.DataFrame | None = None, generation: str = "v3") -> "Activities":
        acts = cls(kernels=_table(kernels, KERNEL_COLUMNS, source, "kernel dispatches"),
                   copies=_table(copies, COPY_COLUMNS, source, "memory copies"),
                   api=_table(api, API_COLUMNS, source, "API calls"), source=source, generation=generation)
        if processes is not None:
            acts.processes = processes.reset_index(drop=True)
        for name in ("kernels", "copies", "api"):
            getattr(acts, name).attrs.update(source=source, generation=generation)
        return acts

    def kernel_stats(self) -> pd.DataFrame:
        """Kernels ranked by total GPU time: the table of ``lumikit rocprof stats``."""
        table = stats_from_durations(self.kernels[["name", "duration_ns"]])
        table.attrs.update(source=self.source, generation=self.generation, notes=list(self.notes))
        return table

    def copy_stats(self) -> pd.DataFrame:
        """Memory copies by direction (``MEMORY_COPY_HOST_TO_DEVICE`` ...) ranked by total time."""
        table = stats_from_durations(self.copies[["name", "duration_ns"]], kind="copy")
        table.attrs.update(source=self.source, generation=self.generation)
        return table

    def api_stats(self) -> pd.DataFrame:
        """Host API calls (HIP, HSA, markers, RCCL) ranked by total time."""
        table = stats_from_durations(self.api[["name", "duration_ns"]], kind="api")
        table.attrs.update(source=self.source, generation=self.generation)
        return table

    def summary(self) -> dict:
        """Counts and totals per activity, and the processes and nodes they came from (JSON-ready)."""
        def part(t: pd.DataFrame) -> dict:
            return {"count": int(len(t)), "total_ns": int(t["duration_ns"].sum()) if len(t) else 0}
        out = {"source": self.source, "generation": self.generation, "kernels": part(self.kernels),
               "copies": {**part(self.copies), "bytes": int(pd.to_numeric(self.copies["size_bytes"],
                                                                          errors="coerce").fillna(0).sum())},
               "api": part(self.api), "processes": int(len(self.processes))}
        if "hostname" in self.processes and len(self.processes):
            out["nodes"] = sorted({str(h) for h in self.processes["hostname"].dropna()})
        return out
