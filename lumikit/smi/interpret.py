"""What a snapshot means: activity per package from power, per GCD from busy % and clocks, and findings.

The course rule of thumb: read power, not GPU%. On an MI250X the package power (printed on the even GCD) is
about 300 W with one GCD busy and about 500 W with both; an idle GCD drops to ~800 MHz. The thresholds come from
the site profile (``[power]`` in ``lumikit/sites/lumi.toml``), never from code.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..site import PowerThresholds, Site, load_site
from .model import DeviceReading, Snapshot

KINDS = ("starved", "busy-without-power", "one-gcd-of-package", "memory-full")
FULL_BUSY_PCT = 95.0  # "GPU% at 100": the reading that looks perfect and may be a GPU spinning on a wait


@dataclass(frozen=True)
class Finding:
    """One thing worth telling the learner: its ``kind`` (one of :data:`KINDS`), the devices concerned and a
    one-line explanation."""

    kind: str
    devices: tuple[int, ...]
    message: str


def _thresholds(site: str | Site | PowerThresholds | None) -> PowerThresholds:
    if isinstance(site, PowerThresholds):
        return site
    return load_site(site if site is not None else "lumi").power


def _names(indices: Iterable[int]) -> str:
    idx = sorted(indices)
    return f"GCD {idx[0]}" if len(idx) == 1 else "GCDs " + ",".join(str(i) for i in idx)


def _verb(indices: Sequence[int], singular: str, plural: str) -> str:
    return singular if len(indices) == 1 else plural


def main_group(snapshot: Snapshot) -> list[DeviceReading]:
    """The devices to judge: all of them, or the largest task's when ``srun --label`` gave several views."""
    groups: dict[int | None, list[DeviceReading]] = {}
    for d in snapshot.devices:
        groups.setdefault(d.task, []).append(d)
    return max(groups.values(), key=len) if groups else []


def packages_of(devices: Sequence[DeviceReading]) -> dict[int, tuple[DeviceReading, ...]]:
    """Package -> its GCDs: from ``package`` where the parser set it, else from the MI250X signature in the
    output itself (every odd device prints no power, its even neighbour does) as local pairs (0,1), (2,3)..."""
    if any(d.package is not None for d in devices):
        out: dict[int, list[DeviceReading]] = {}
        for d in devices:
            if d.package is not None:
                out.setdefault(d.package, []).append(d)
        return {k: tuple(v) for k, v in sorted(out.items())}
    by_index = {d.index: d for d in devices}
    pairs = {}
    for d in devices:
        if d.index % 2 == 0:
            odd = by_index.get(d.index + 1)
            if odd is None or d.power_w is None or odd.power_w is not None:
                return {}
            pairs[d.index // 2] = (d, odd)
    if len(pairs) * 2 != len(devices):
        return {}
    return pairs


def package_power(gcds: Sequence[DeviceReading]) -> float | None:
    """The package's power: the sum of what its GCDs print (the odd one prints ``N/A``)."""
    vals = [d.power_w for d in gcds if d.power_w is not None]
    return sum(vals) if vals else None


def package_activity(power_w: float | None, th: PowerThresholds) -> str:
    """``idle`` / ``one`` / ``both`` GCDs busy by package power (``unknown`` without a reading); the boundary
    between one and both is the midpoint of the two site levels."""
    if power_w is None:
        return "unknown"
    if power_w < th.idle_below_w:
        return "idle"
    return "both" if power_w >= (th.one_gcd_busy_w + th.both_gcds_busy_w) / 2 else "one"


def gcd_activity(d: DeviceReading, th: PowerThresholds) -> str:
    """``busy`` (GPU% at or above the site's ``busy_pct``), ``idle-low-clock`` (below, with the clock down at
    the idle level), ``idle``, or ``unknown`` (no GPU% printed)."""
    if d.gpu_busy_pct is None:
        return "unknown"
    if d.gpu_busy_pct >= th.busy_pct:
        return "busy"
    if d.sclk_mhz is not None and d.sclk_mhz <= th.low_sclk_mhz:
        return "idle-low-clock"
    return "idle"


def _reading(value: float | None, unit: str) -> str:
    """A reading for a sentence: ``800 MHz``, or ``? MHz`` where the tool printed none (a line it repeated, N/A)."""
    return f"{value:.0f} {unit}" if value is not None else f"? {unit}"


def interpret(snapshot: Snapshot, site: str | Site | PowerThresholds | None = "lumi") -> list[Finding]:
    """The findings for one snapshot, in the order of :data:`KINDS`."""
    th = _thresholds(site)
    devices = main_group(snapshot)
    act = {d.index: gcd_activity(d, th) for d in devices}
    busy = {i for i, a in act.items() if a == "busy"}
    low_idle = {i for i, a in act.items() if a == "idle-low-clock"}
    findings: list[Finding] = []

    starved: set[int] = set()
    if len(busy) >= 2 and 0 < len(low_idle) < len(busy):
        starved = low_idle
        sample = next(d for d in devices if d.index == min(low_idle))
        findings.append(Finding("starved", tuple(sorted(low_idle)),
                                f"{_names(low_idle)} idle at {_reading(sample.sclk_mhz, 'MHz')} / "
                                f"{_reading(sample.gpu_busy_pct, '%')} "
                                f"while {_names(busy)} {_verb(busy, 'is', 'are')} busy: that rank is starved "
                                "(waiting for input data) and holds the others back at every all-reduce"))

    packages = packages_of(devices)
    low_power_w = (th.idle_below_w + th.one_gcd_busy_w) / 2
    for pkg, gcds in packages.items():
        power = package_power(gcds)
        full = [d.index for d in gcds if d.gpu_busy_pct is not None and d.gpu_busy_pct >= FULL_BUSY_PCT]
        if full and power is not None and power < low_power_w:
            pct = max(d.gpu_busy_pct or 0.0 for d in gcds)
            findings.append(Finding("busy-without-power", tuple(full),
                                    f"{_names(full)} {_verb(full, 'shows', 'show')} {pct:.0f} % busy but "
                                    f"package {pkg} draws only {power:.0f} W (below {low_power_w:.0f} W): "
                                    "the GPU is waiting (on data or communication), not computing"))
    for pkg, gcds in packages.items():
        pkg_busy = [d.index for d in gcds if act.get(d.index) == "busy"]
        pkg_idle = [d.index for d in gcds if act.get(d.index) in ("idle", "idle-low-clock")]
        if len(pkg_busy) == 1 and pkg_idle and not starved.intersection(pkg_idle):
            power = package_power(gcds)
            watts = f" ({power:.0f} W, {package_activity(power, th)} GCD's worth)" if power is not None else ""
            findings.append(Finding("one-gcd-of-package", (pkg_busy[0], *pkg_idle),
                                    f"only GCD {pkg_busy[0]} of package {pkg} works{watts}; its pair "
                                    f"{_names(pkg_idle)} idles: the MI250X runs at half its capacity"))
    full_mem = [d.index for d in devices if d.vram_pct is not None and d.vram_pct >= th.memory_full_pct]
    if full_mem:
        top = max(d.vram_pct or 0.0 for d in devices if d.index in full_mem)
        findings.append(Finding("memory-full", tuple(full_mem),
                                f"{_names(full_mem)} {_verb(full_mem, 'has', 'have')} up to {top:.0f} % of VRAM allocated "
                                f"(at or above {th.memory_full_pct:.0f} %): a larger batch will run out of memory"))
    return findings


def interpret_window(snapshots: Sequence[Snapshot], site: str | Site | PowerThresholds | None = "lumi",
                     min_fraction: float = 0.5) -> list[Finding]:
    """Findings that hold in at least ``min_fraction`` of the snapshots (steadier than one frame: a GCD that
    idles for one sample between steps is not starved). Messages are those of the latest occurrence."""
    if not snapshots:
        return []
    th = _thresholds(site)
    counts: Counter[tuple[str, tuple[int, ...]]] = Counter()
    latest: dict[tuple[str, tuple[int, ...]], Finding] = {}
    for snap in snapshots:
        for f in interpret(snap, th):
            key = (f.kind, f.devices)
            counts[key] += 1
            latest[key] = f
    n = len(snapshots)
    keep = [latest[k] for k, c in counts.items() if c / n >= min_fraction]
    return sorted(keep, key=lambda f: (KINDS.index(f.kind), f.devices))


def activity_table(snapshot: Snapshot, site: str | Site | PowerThresholds | None = "lumi") -> list[dict[str, object]]:
    """One row per device: index, package, GCD activity, package power and package activity (for pictures)."""
    th = _thresholds(site)
    devices = main_group(snapshot)
    pkg_of = {d.index: (p, gcds) for p, gcds in packages_of(devices).items() for d in gcds}
    rows = []
    for d in devices:
        pkg, gcds = pkg_of.get(d.index, (None, (d,)))
        power = package_power(gcds) if pkg is not None else d.power_w
        rows.append({"index": d.index, "package": pkg, "activity": gcd_activity(d, th), "package_power_w": power,
                     "package_activity": package_activity(power, th) if pkg is not None else "unknown"})
    return rows
