"""Interval arithmetic over GPU activities: busy time, temporal and idle-time breakdowns, overlap.

Pure numpy functions over a GPU table (:func:`lumikit.trace.tables.gpu_columns`, or the same in pandas), with Holistic Trace
Analysis' definitions so the numbers can be compared with HTA's: the span runs from the first GPU activity's start
to the last one's end; idle is the part of the span with nothing running; compute is the time with at least one
compute kernel running; non-compute is the rest of the busy time (communication and memory only).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .columns import Columns, as_columns

if TYPE_CHECKING:
    import pandas as pd


def merge_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping [start, end) intervals; returns sorted, disjoint starts and ends."""
    if len(start) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(start, kind="stable")
    s, e = np.asarray(start, dtype=float)[order], np.asarray(end, dtype=float)[order]
    reach = np.maximum.accumulate(e)
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new_group)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last]


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    """Total time covered by at least one interval."""
    s, e = merge_intervals(start, end)
    return float((e - s).sum())


def intersection_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Time covered by both sets of intervals (each given as start and end arrays)."""
    sa, ea = merge_intervals(*a)
    sb, eb = merge_intervals(*b)
    if len(sa) == 0 or len(sb) == 0:
        return 0.0
    times = np.concatenate([sa, ea, sb, eb])
    delta = np.concatenate([np.ones(len(sa)), -np.ones(len(ea)), np.full(len(sb), 2.0), np.full(len(eb), -2.0)])
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(delta[order])
    widths = np.diff(times)
    return float(widths[running[:-1] == 3].sum())


def _spans(gpu: Columns, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the activities relative to the table's first start, the ends as start + ``dur``.

    Epoch timestamps in float microseconds (about 1.7e15) sit on a 0.25 µs grid, so an ``end`` column computed
    as ``ts + dur`` there is off by up to 0.125 µs and a union of back-to-back kernels could come out longer than
    their durations add up to; relative to the first start the sums stay exact. Lengths do not change.
    """
    ts, dur = gpu["ts"], gpu["dur"]
    if mask is not None:
        ts, dur = ts[mask], dur[mask]
    base = float(gpu["ts"].min()) if len(gpu["ts"]) else 0.0
    start = ts - base
    return start, start + dur


def temporal_breakdown(gpu: "Columns | pd.DataFrame") -> dict[str, float]:
    """Idle / compute / non-compute time (µs) over the GPU span, and the span itself."""
    g = as_columns(gpu)
    if g.empty:
        return {"span_us": 0.0, "idle_us": 0.0, "compute_us": 0.0, "non_compute_us": 0.0}
    start, end = _spans(g)
    span = float(end.max() - start.min())
    busy = union_length(start, end)
    compute = union_length(*_spans(g, g.label_mask("kclass", ("compute",))))
    return {"span_us": span, "idle_us": span - busy, "compute_us": compute, "non_compute_us": busy - compute}


def comm_comp_overlap(gpu: "Columns | pd.DataFrame") -> float:
    """Share of communication time during which a compute kernel also runs (NaN without communication)."""
    g = as_columns(gpu)
    comm = _spans(g, g.label_mask("kclass", ("communication",)))
    total = union_length(*comm)
    if total == 0:
        return float("nan")
    comp = _spans(g, g.label_mask("kclass", ("compute",)))
    return intersection_length(comm, comp) / total


def idle_breakdown(gpu: "Columns | pd.DataFrame", consecutive_kernel_delay: float = 30.0) -> "pd.DataFrame":
    """Idle gaps between consecutive activities of each stream, split as HTA does (µs, per stream).

    host_wait: the host launched the next activity only after the stream had drained (the CPU was late);
    kernel_wait: a short gap (< ``consecutive_kernel_delay`` µs) between back-to-back activities, launch overhead;
    other: everything else (synchronisation, waiting on another stream ...). Overlaps on one stream count as 0.
    Times are taken relative to the table's first start, as in :func:`_spans`, so gaps are exact on epoch
    timestamps (no 0.25 µs grid).
    """
    import pandas as pd

    if isinstance(gpu, Columns):
        from .tables import gpu_frame

        gpu = gpu_frame(gpu)
    base = float(gpu["ts"].min()) if len(gpu) else 0.0
    rows = []
    for (device, stream), g in gpu.sort_values("ts", kind="stable").groupby(["device", "stream"], sort=True):
        ts = g["ts"].to_numpy(dtype=float) - base
        end, launch = ts + g["dur"].to_numpy(dtype=float), g["launch_ts"].to_numpy(dtype=float) - base
        prev_end = end[:-1]
        gap = np.clip(ts[1:] - prev_end, 0, None)
        host = launch[1:] > prev_end  # NaN launch (no correlation) compares False
        kernel = ~host & (gap < consecutive_kernel_delay)
        other = ~host & ~kernel
        rows.append({"device": int(device), "stream": int(stream), "host_wait_us": float(gap[host].sum()),
                     "kernel_wait_us": float(gap[kernel].sum()), "other_us": float(gap[other].sum())})
    return pd.DataFrame(rows, columns=["device", "stream", "host_wait_us", "kernel_wait_us", "other_us"])
