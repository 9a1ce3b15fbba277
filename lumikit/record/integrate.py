"""The one integration rule of the report card: every figure (energy, computing time, phases) is the trapezoid of
its samples over the job's own window, fed one sample at a time (a record of any length in constant memory).

- Between two samples: the trapezoid, or a counter's own increase where the tool keeps one (the exact integral).
- The edges (job start to the first sample, last sample to job end): the nearest sample's value held, and said
  ("extrapolated"), when the edge is at most :data:`GAP_INTERVALS` intervals long; a longer edge is not covered
  and is flagged (a recorder that started late or stopped early, e.g. killed), never filled in.
- A gap longer than :data:`GAP_INTERVALS` intervals between two samples is bridged by the trapezoid and flagged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

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
        """One sample at ``t`` (``increase``: the exact integral since the previous sample, e.g. joules from an
        energy counter; None: the trapezoid). A segment that crosses the window's edge is clipped there."""
        prev, self._prev = self._prev, (t, value)
        if prev is not None and t > prev[0]:
            t0 = prev[0]
            a, b = max(t0, self.start), min(t, self.end)
            if b > a:
                if t - t0 > GAP_INTERVALS * self.interval:
                    self.gaps.append((t0, t))
                if t0 < self.start:
                    self.first = (self.start, _lerp(prev, (t, value), self.start))
                if increase is not None and a == t0 and b == t:
                    self.total += increase
                    self.from_counter += 1
                else:
                    self.total += (b - a) * (_lerp(prev, (t, value), a) + _lerp(prev, (t, value), b)) / 2
                if t > self.end:
                    self.last = (self.end, _lerp(prev, (t, value), self.end))
        if self.start <= t <= self.end:
            self.samples += 1
            if self.first is None:
                self.first = (t, value)
            self.last = (t, value)

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


def _lerp(p0: tuple[float, float], p1: tuple[float, float], t: float) -> float:
    (t0, v0), (t1, v1) = p0, p1
    if t1 == t0:
        return v1
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def trapezoid_window(ts: "list[float] | object", vs: "list[float] | object", start: float, end: float,
                     interval: float) -> float | None:
    """The trapezoid of a stored series (``ts``/``vs``, NaN for no reading) over ``[start, end]`` with the same
    edge rule as :class:`Running` (a phase or the steps of a workload)."""
    run = Running(start, end, interval)
    for t, v in zip(ts, vs):  # type: ignore[call-overload]
        if not math.isnan(v):
            run.add(t, v)
    return run.finish()["value"]  # type: ignore[return-value]


__all__ = ["GAP_INTERVALS", "Running", "trapezoid_window"]
