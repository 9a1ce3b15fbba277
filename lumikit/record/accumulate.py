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
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..site import PowerThresholds
from ..smi.interpret import interpret
import numpy as np

from ..smi.model import DeviceReading, Snapshot
from ..smi.readings import COLUMNS
from .integrate import Running
from .packages import NodeLayout
from .store import Chunk

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
    counter_prev: float = math.nan
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


def mean_max(acc: list[float]) -> tuple[float | None, float | None]:
    return (acc[0] / acc[1], acc[2]) if acc[1] else (None, None)


def summarise(chunks: Iterable[Chunk], layout_of: Any, th: PowerThresholds, window: tuple[float, float],
              interval: float, expected: int = 0) -> NodeSummary:
    """One pass over a node's sample blocks; ``layout_of(device numbers)`` gives the node's :class:`NodeLayout`
    at the first block; ``window`` is the job's (start, end) on the record's clock (``end`` may be ``inf``);
    ``expected``: about how many samples there are (the findings then judge every k-th from the start)."""
    out = NodeSummary()
    out.stride = max(1, -(-expected // FINDING_SAMPLES))
    start, end = window
    out.cover = Running(start, end, interval)
    max_t = -math.inf
    for ch in chunks:
        ts = np.asarray(ch.ts, dtype=float)
        vals = ch.array()
        ahead = np.maximum.accumulate(np.concatenate(([max_t], ts)))[:-1]
        keep = ts > ahead
        if not keep.all():
            _drop(out, "samples whose time does not move forward (a clock stepped back)", float(ts[~keep][0]),
                  int((~keep).sum()))
            ts, vals = ts[keep], vals[keep]
        if not len(ts):
            continue
        max_t = max(max_t, float(ts[-1]))
        _clean(out, vals)
        if out.layout is None:
            out.layout = layout_of(list(ch.indices))
        _block(out, ts, vals, list(ch.indices), th, start, end, interval)
        for t, pm in ch.pm:
            out.first_pm = out.first_pm or pm
            out.last_pm = pm
    return out


def _block(out: NodeSummary, ts: np.ndarray, vals: np.ndarray, indices: list[int], th: PowerThresholds,
           start: float, end: float, interval: float) -> None:
    """Add one block of samples (``vals``: samples x devices x COLUMNS, NaN for no reading)."""
    lay = out.layout or NodeLayout()
    n = len(ts)
    first_index = out.samples
    out.samples += n
    out.first_t = out.first_t if out.first_t is not None else float(ts[0])
    out.last_t = float(ts[-1])
    out.cover.feed(ts, np.zeros(n))
    pos = {d: k for k, d in enumerate(indices)}
    low_w = (th.idle_below_w + th.one_gcd_busy_w) / 2
    pkg_w: dict[int, np.ndarray] = {}
    for p, members in lay.members.items():
        ks = [pos[m] for m in members if m in pos]
        if not ks:
            continue
        watts = vals[:, ks, POWER]
        positive = np.where(watts > 0, watts, np.nan)
        read = ~np.isnan(positive).all(axis=1)
        w = np.where(read, np.nansum(positive, axis=1), np.nan)
        pkg_w[p] = w
        pacc = out.packages.setdefault(p, PackageAcc())
        if pacc.energy is None:
            pacc.energy = Running(start, end, interval)
        if not read.any():
            continue
        _stats(pacc.power, w[read])
        counters = vals[:, ks, ENERGY][read]
        has = ~np.isnan(counters).all(axis=1)
        counter = np.where(has, np.nansum(counters, axis=1), np.nan)
        tt = ts[read]
        prev_t = pacc.energy._prev[0] if pacc.energy._prev is not None else np.nan
        inc = np.diff(np.concatenate(([pacc.counter_prev], counter)))
        dt = np.diff(np.concatenate(([prev_t], tt)))
        ok = (inc >= 0) & (inc <= MAX_PACKAGE_W * dt)
        out.counter_resets += int((~np.isnan(inc) & ~ok).sum())
        pacc.counter_prev = float(counter[-1])
        pacc.energy.feed(tt, w[read], np.where(ok, inc, np.nan))
    if pkg_w:
        stacked = np.vstack(list(pkg_w.values()))
        node = np.where(np.isnan(stacked).all(axis=0), np.nan, np.nansum(stacked, axis=0))
    else:
        node = np.full(n, np.nan)
    out.times.extend(ts.tolist())
    out.power.extend(node.tolist())
    for k, d in enumerate(indices):
        g = out.gcds.setdefault(d, GcdAcc())
        if g.computing is None:
            g.computing = Running(start, end, interval)
        g.n += n
        col = vals[:, k, :]
        busy = col[:, BUSY]
        _stats(g.busy, busy[~np.isnan(busy)])
        _stats(g.sclk, col[:, SCLK][~np.isnan(col[:, SCLK])])
        _stats(g.own_power, col[:, POWER][~np.isnan(col[:, POWER])])
        mib = col[:, VMIB][~np.isnan(col[:, VMIB])]
        if len(mib):
            g.vram_gib = max(g.vram_gib or 0.0, float(mib.max()) * GIB_PER_MIB)
        pct = col[:, VPCT][~np.isnan(col[:, VPCT])]
        if len(pct):
            g.vram_pct = max(g.vram_pct or 0.0, float(pct.max()))
        w = pkg_w.get(lay.package[d]) if d in lay.package and lay.package[d] in pkg_w else col[:, POWER]
        known = ~np.isnan(busy)
        computing = (busy >= th.busy_pct) & (np.isnan(w) | (w >= low_w))
        g.computing.feed(ts[known], computing[known].astype(float))
    for j in range(n):
        if (first_index + j) % out.stride == 0:
            _keep(out, vals[j], indices, lay)


def _stats(acc: list[float], values: np.ndarray) -> None:
    if len(values):
        acc[0] += float(values.sum())
        acc[1] += len(values)
        acc[2] = max(acc[2], float(values.max()))


def _clean(out: NodeSummary, vals: np.ndarray) -> None:
    """Values outside what hardware can print become NaN, counted per column."""
    for c, (name, (lo, hi)) in enumerate(zip(COLUMNS, PLAUSIBLE)):
        col = vals[..., c]
        with np.errstate(invalid="ignore"):
            bad = (col < lo) | (col > hi)
        if bad.any():
            _drop(out, f"{name} readings outside {lo:g}..{hi:g}", float(col[bad][0]), int(bad.sum()))
            col[bad] = np.nan


def _drop(out: NodeSummary, what: str, example: Any, count: int = 1) -> None:
    entry = out.dropped.setdefault(what, [0, example])
    entry[0] += count


def _keep(out: NodeSummary, row: np.ndarray, indices: list[int], lay: NodeLayout) -> None:
    """Keep a sample as a snapshot for the findings, halving the kept ones when there are too many."""
    values = [[None if v != v else v for v in dev] for dev in row.tolist()]  # NaN -> None
    power = {d: values[k][POWER] for k, d in enumerate(indices)}
    devices = []
    for k, d in enumerate(indices):
        busy, watts, sclk, mclk, temp, vpct, mib, _ = values[k]
        pkg = lay.package.get(d)
        members = lay.members.get(pkg, []) if pkg is not None else []
        reads = [m for m in members if (power.get(m) or 0) > 0]
        # an MI250X's second GCD prints 0 W: its package power is on the other one (interpret expects None)
        devices.append(DeviceReading(index=d, gpu_busy_pct=busy, power_w=watts if d in reads or not reads else None,
                                     sclk_mhz=sclk, mclk_mhz=mclk, temp_c=temp, vram_pct=vpct,
                                     vram_used_bytes=int(mib * 2**20) if mib is not None else None,
                                     package=pkg if len(members) > 1 else None))
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
