"""The one integration rule of the report card: every figure (energy, computing time, phases) is the trapezoid of
its samples over the job's own window, fed a block of samples at a time (a record of any length in constant memory).

- Between two samples: the trapezoid, or a counter's own increase where the tool keeps one (the exact integral).
- The edges (job start to the first sample, last sample to job end): the nearest sample's value held, and said
  ("extrapolated"), when the edge is at most :data:`GAP_INTERVALS` intervals long; a longer edge is not covered
  and is flagged (a recorder that started late or stopped early, e.g. killed), never filled in.
- A gap longer than :data:`GAP_INTERVALS` intervals between two samples is bridged by the trapezoid and flagged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

GAP_INTERVALS = 3


@dataclass
class Running:
    """The integral of one quantity over ``[start, end]`` (seconds on the node's clock), fed in time order."""

    start: float
    end: float
    interval: float
    total: float = 0.0
    first: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    gaps: list[tuple[float, float]] = field(default_factory=list)
    from_counter: int = 0      # segments whose integral is a counter's increase
    samples: int = 0
    _prev: tuple[float, float] | None = None

    def add(self, t: float, value: float, increase: float | None = None) -> None:
        """One sample (see :meth:`feed`)."""
        self.feed(np.array([t]), np.array([value]), None if increase is None else np.array([increase]))

    def feed(self, ts: Any, vs: Any, increases: Any = None) -> None:
        """Samples in time order (``ts``, ``vs``: arrays without NaN; ``increases``: the exact integral since the
        previous sample, e.g. joules from an energy counter, NaN where there is none). A segment that crosses the
        window's edge is clipped there."""
        ts, vs = np.asarray(ts, dtype=float), np.asarray(vs, dtype=float)
        if not len(ts):
            return
        inc = np.full(len(ts), np.nan) if increases is None else np.asarray(increases, dtype=float)
        if self._prev is not None:
            ts, vs = np.concatenate(([self._prev[0]], ts)), np.concatenate(([self._prev[1]], vs))
            inc = np.concatenate(([np.nan], inc))
            fresh = slice(1, None)
        else:
            fresh = slice(0, None)
        self._prev = (float(ts[-1]), float(vs[-1]))
        t0, t1, v0, v1, seg_inc = ts[:-1], ts[1:], vs[:-1], vs[1:], inc[1:]
        if len(t0):
            a, b = np.maximum(t0, self.start), np.minimum(t1, self.end)
            valid = (b > a) & (t1 > t0)
            long = valid & (t1 - t0 > GAP_INTERVALS * self.interval)
            self.gaps.extend(zip(t0[long].tolist(), t1[long].tolist()))
            full = valid & (a == t0) & (b == t1) & ~np.isnan(seg_inc)
            self.total += float(seg_inc[full].sum())
            self.from_counter += int(full.sum())
            rest = valid & ~full
            if rest.any():
                span = np.where(t1 > t0, t1 - t0, 1.0)
                va = v0 + (v1 - v0) * (a - t0) / span
                vb = v0 + (v1 - v0) * (b - t0) / span
                self.total += float(((b - a) * (va + vb) / 2)[rest].sum())
            cross_start = np.flatnonzero(valid & (t0 < self.start))
            if len(cross_start) and self.first is None:
                j = cross_start[0]
                self.first = (self.start, float(v0[j] + (v1[j] - v0[j]) * (self.start - t0[j]) / (t1[j] - t0[j])))
        new_t, new_v = ts[fresh], vs[fresh]
        inside = np.flatnonzero((new_t >= self.start) & (new_t <= self.end))
        if len(inside):
            self.samples += len(inside)
            if self.first is None:
                self.first = (float(new_t[inside[0]]), float(new_v[inside[0]]))
            self.last = (float(new_t[inside[-1]]), float(new_v[inside[-1]]))
        if len(t0):
            cross_end = np.flatnonzero((t0 < self.end) & (t1 > self.end) & (t1 > t0))
            if len(cross_end):
                j = cross_end[0]
                self.last = (self.end, float(v0[j] + (v1[j] - v0[j]) * (self.end - t0[j]) / (t1[j] - t0[j])))

    def finish(self) -> dict[str, float | int | None]:
        """The integral with the edges: ``value``, ``covered_s`` (of the window), ``start_edge_s``/``end_edge_s``
        (held, extrapolated), ``late_start_s``/``early_stop_s`` (longer edges, not covered) and ``gaps``."""
        span = max(0.0, self.end - self.start)
        if self.first is None or self.last is None:
            return {"value": None, "covered_s": 0.0, "start_edge_s": 0.0, "end_edge_s": 0.0,
                    "late_start_s": span, "early_stop_s": 0.0, "gaps": len(self.gaps)}
        (first_t, first_v), (last_t, last_v) = self.first, self.last
        limit = GAP_INTERVALS * self.interval
        head, tail = max(0.0, first_t - self.start), max(0.0, self.end - last_t)
        start_edge = head if head <= limit else 0.0
        end_edge = tail if tail <= limit else 0.0
        total = self.total + start_edge * first_v + end_edge * last_v
        return {"value": total, "covered_s": (last_t - first_t) + start_edge + end_edge, "start_edge_s": start_edge,
                "end_edge_s": end_edge, "late_start_s": head - start_edge, "early_stop_s": tail - end_edge,
                "gaps": len(self.gaps)}


def trapezoid_window(ts: Any, vs: Any, start: float, end: float, interval: float) -> float | None:
    """The trapezoid of a stored series (``ts``/``vs``, NaN for no reading) over ``[start, end]`` with the same
    edge rule as :class:`Running` (a phase or the steps of a workload)."""
    ts, vs = np.asarray(ts, dtype=float), np.asarray(vs, dtype=float)
    keep = ~np.isnan(vs)
    run = Running(start, end, interval)
    run.feed(ts[keep], vs[keep])
    return run.finish()["value"]  # type: ignore[return-value]


__all__ = ["GAP_INTERVALS", "Running", "trapezoid_window"]
