"""One node's record summed up in one pass over its samples (constant memory but for a power series and a thinned
set of snapshots for the findings): per GCD busy %, clocks, VRAM and computing time; per package power and energy;
what had to be dropped and why.

Rules (the card prints them): computing = busy % at or above the site's ``busy_pct``, unless the package's own
power is known and below the midpoint of the site's idle and one-GCD levels (busy but waiting); energy = the
trapezoid of the package power, or the tool's energy counter where it keeps one (:mod:`lumikit.record.integrate`);
values outside what hardware can print (a negative power, 1e300 W, 140 % busy), samples whose time runs backwards
and counter resets are left out and counted.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..site import PowerThresholds
from ..smi.interpret import interpret
from ..smi.model import Snapshot
from ..smi.readings import COLUMNS, to_devices
from .integrate import Running
from .packages import NodeLayout, package_power
from .store import Sample

BUSY, POWER, SCLK, MCLK, TEMP, VPCT, VMIB, ENERGY = range(len(COLUMNS))
#: What hardware can print, per column; a value outside is damage and is left out (and counted).
PLAUSIBLE = ((0.0, 100.0), (0.0, 5000.0), (0.0, 10000.0), (0.0, 10000.0), (-60.0, 200.0), (0.0, 100.0),
             (0.0, 1e7), (0.0, 1e15))
#: At most this many samples (evenly spread) are judged for the findings: enough for "held in half of them".
FINDING_SAMPLES = 2000
GIB_PER_MIB = 1 / 1024
MAX_PACKAGE_W = 5000.0


@dataclass
class GcdAcc:
    n: int = 0
    busy: list[float] = field(default_factory=lambda: [0.0, 0, -math.inf])   # sum, count, max
    sclk: list[float] = field(default_factory=lambda: [0.0, 0, -math.inf])
    own_power: list[float] = field(default_factory=lambda: [0.0, 0, -math.inf])
    vram_gib: float | None = None
    vram_pct: float | None = None
    computing: Running | None = None


@dataclass
class PackageAcc:
    power: list[float] = field(default_factory=lambda: [0.0, 0, -math.inf])
    energy: Running | None = None
    counter_prev: float | None = None
    counter_segments: int = 0


@dataclass
class NodeSummary:
    """What one pass over a node's samples found."""

    gcds: dict[int, GcdAcc] = field(default_factory=dict)
    packages: dict[int, PackageAcc] = field(default_factory=dict)
    times: array = field(default_factory=lambda: array("d"))
    power: array = field(default_factory=lambda: array("d"))   # the node's package power per sample (NaN: none)
    samples: int = 0
    dropped: dict[str, list[Any]] = field(default_factory=dict)  # what -> [count, example]
    kept: list[Snapshot] = field(default_factory=list)
    stride: int = 1
    first_t: float | None = None
    last_t: float | None = None
    first_pm: dict[str, float] | None = None
    last_pm: dict[str, float] | None = None
    counter_resets: int = 0
    layout: NodeLayout | None = None
    cover: Running | None = None  # fed at every sample: the window's edges and gaps


def _add(acc: list[float], v: float) -> None:
    acc[0] += v
    acc[1] += 1
    if v > acc[2]:
        acc[2] = v


def mean_max(acc: list[float]) -> tuple[float | None, float | None]:
    return (acc[0] / acc[1], acc[2]) if acc[1] else (None, None)


def summarise(samples: Iterable[Sample], layout_of: Any, th: PowerThresholds, window: tuple[float, float],
              interval: float) -> NodeSummary:
    """One pass over ``samples``; ``layout_of(device numbers)`` gives the node's :class:`NodeLayout` at the first
    sample; ``window`` is the job's (start, end) on the record's clock (``end`` may be ``inf``: not known)."""
    out = NodeSummary()
    start, end = window
    low_w = (th.idle_below_w + th.one_gcd_busy_w) / 2
    prev_t = -math.inf
    out.cover = Running(start, end, interval)
    for s in samples:
        if s.t <= prev_t:
            _drop(out, "samples whose time does not move forward (a clock stepped back)", s.t)
            continue
        prev_t = s.t
        rows = {i: _clean(out, vals) for i, vals in s.devices}
        if out.layout is None:
            out.layout = layout_of(sorted(rows))
        lay = out.layout
        out.samples += 1
        out.cover.add(s.t, 0.0)
        if out.first_t is None:
            out.first_t = s.t
        out.last_t = s.t
        if s.pm:
            out.first_pm = out.first_pm or s.pm
            out.last_pm = s.pm
        power = {i: v[POWER] for i, v in rows.items()}
        pkg_w: dict[int, float | None] = {}
        node_w = 0.0
        seen_w = False
        for p, members in lay.members.items():
            w = package_power(power, members)
            pkg_w[p] = w
            pacc = out.packages.setdefault(p, PackageAcc())
            if pacc.energy is None:
                pacc.energy = Running(start, end, interval)
            if w is None:
                continue
            seen_w, node_w = True, node_w + w
            _add(pacc.power, w)
            counters = [rows[d][ENERGY] for d in members if d in rows]
            counter = sum(c for c in counters if c is not None) if any(c is not None for c in counters) else None
            increase = None
            if counter is not None and pacc.counter_prev is not None:
                inc = counter - pacc.counter_prev
                dt = s.t - (pacc.energy._prev[0] if pacc.energy._prev else s.t)
                if 0 <= inc <= MAX_PACKAGE_W * max(dt, 0.0):
                    increase = inc
                else:
                    out.counter_resets += 1
            pacc.counter_prev = counter
            pacc.energy.add(s.t, w, increase)
        out.times.append(s.t)
        out.power.append(node_w if seen_w else math.nan)
        for i, v in rows.items():
            g = out.gcds.setdefault(i, GcdAcc())
            if g.computing is None:
                g.computing = Running(start, end, interval)
            g.n += 1
            busy = v[BUSY]
            if busy is not None:
                _add(g.busy, busy)
            if v[SCLK] is not None:
                _add(g.sclk, v[SCLK])
            if v[POWER] is not None:
                _add(g.own_power, v[POWER])
            gib = v[VMIB] * GIB_PER_MIB if v[VMIB] is not None else None
            if gib is not None and (g.vram_gib is None or gib > g.vram_gib):
                g.vram_gib = gib
            if v[VPCT] is not None and (g.vram_pct is None or v[VPCT] > g.vram_pct):
                g.vram_pct = v[VPCT]
            if busy is not None:
                w = pkg_w.get(lay.package.get(i, -1)) if i in lay.package else v[POWER]
                computing = busy >= th.busy_pct and (w is None or w >= low_w)
                g.computing.add(s.t, 1.0 if computing else 0.0)
        _keep(out, rows, lay)
    return out


def _clean(out: NodeSummary, vals: tuple[float | None, ...]) -> tuple[float | None, ...]:
    if all(v is None or lo <= v <= hi for v, (lo, hi) in zip(vals, PLAUSIBLE)):
        return vals
    clean = []
    for name, v, (lo, hi) in zip(COLUMNS, vals, PLAUSIBLE):
        if v is not None and not lo <= v <= hi:
            _drop(out, f"{name} readings outside {lo:g}..{hi:g}", v)
            v = None
        clean.append(v)
    return tuple(clean)


def _drop(out: NodeSummary, what: str, example: Any) -> None:
    entry = out.dropped.setdefault(what, [0, example])
    entry[0] += 1


def _keep(out: NodeSummary, rows: dict[int, tuple[float | None, ...]], lay: NodeLayout) -> None:
    """Keep every ``stride``-th sample as a snapshot for the findings, halving them when there are too many."""
    if (out.samples - 1) % out.stride:
        return
    devices = []
    for d in to_devices(sorted(rows.items())):
        pkg = lay.package.get(d.index)
        members = lay.members.get(pkg, []) if pkg is not None else []
        reads = [m for m in members if (rows[m][POWER] or 0) > 0]
        # an MI250X's second GCD prints 0 W: its package power is on the other one (interpret expects None)
        power = d.power_w if d.index in reads or not reads else None
        devices.append(replace(d, package=pkg if len(members) > 1 else None, power_w=power))
    out.kept.append(Snapshot(devices=tuple(devices), format="record"))
    if len(out.kept) > 2 * FINDING_SAMPLES:
        out.kept = out.kept[::2]
        out.stride *= 2


def findings(out: NodeSummary, th: PowerThresholds, min_fraction: float = 0.5) -> list[Any]:
    """interpret's findings that hold in at least ``min_fraction`` of the kept snapshots."""
    from collections import Counter

    from ..smi.interpret import KINDS

    counts: Counter = Counter()
    latest: dict[Any, Any] = {}
    for snap in out.kept:
        for f in interpret(snap, th):
            counts[(f.kind, f.devices)] += 1
            latest[(f.kind, f.devices)] = f
    n = len(out.kept)
    keep = [latest[k] for k, c in counts.items() if n and c / n >= min_fraction]
    return sorted(keep, key=lambda f: (KINDS.index(f.kind), f.devices))


def runnings(out: NodeSummary) -> list[Running]:
    """Every integral of the summary (to set a window's end once the record's last sample is known)."""
    found = [g.computing for g in out.gcds.values()] + [p.energy for p in out.packages.values()] + [out.cover]
    return [r for r in found if r is not None]


__all__ = ["runnings", "FINDING_SAMPLES", "NodeSummary", "PLAUSIBLE", "findings", "mean_max", "summarise"]
