"""Envelopes of what a real MI250X package prints in each state, derived from the real LUMI snapshots shipped in
``lumikit/data/reference``; the generated sessions are held to them (tests/smi/test_calibration.py).

A package's state is the pair of its GCDs' states (``idle``, ``compute``, ``spin`` = 100 % while waiting in a
collective or a copy). Each envelope is the range of the real readings of that state widened by ``MARGIN``:

- ``idle`` (both GCDs idle): rocm-smi-8gcd-idle, rocm-smi-srun-label, rocm-smi-exit-status-2;
- ``one-compute`` (one GCD computing, the other idle or waiting): rocm-smi-one-gcd-busy;
- ``waiting`` (no GCD computing, at least one at 100 %): rocm-smi-8gcd-one-starved;
- ``both-compute``: no real reading is shipped, so its range runs from the lower bound of ``one-compute`` to the
  real power cap printed on the even GCD (PwrCap 500 W / 560 W).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import reference
from .interpret import packages_of
from .model import Snapshot

MARGIN = 0.10
BUSY_PCT = 95.0          # a GCD at or above this GPU% counts as busy in the real tables
IDLE_SNAPSHOTS = ("rocm-smi-8gcd-idle", "rocm-smi-srun-label", "rocm-smi-exit-status-2")
ONE_COMPUTE_SNAPSHOTS = ("rocm-smi-one-gcd-busy",)
WAITING_SNAPSHOTS = ("rocm-smi-8gcd-one-starved",)


@dataclass(frozen=True)
class Envelope:
    """Ranges a package in one state must stay within, and the real outputs they come from."""

    state: str
    power_w: tuple[float, float]
    busy_sclk_mhz: tuple[float, float] | None   # clock of its busy GCDs (None: it has none)
    idle_sclk_mhz: tuple[float, float] | None   # clock of its idle GCDs
    sources: tuple[str, ...]

    def contains_power(self, watts: float) -> bool:
        return self.power_w[0] <= watts <= self.power_w[1]


def _widen(lo: float, hi: float) -> tuple[float, float]:
    return (round(lo * (1 - MARGIN), 1), round(hi * (1 + MARGIN), 1))


def _packages(names: tuple[str, ...]) -> list[tuple[float, list[tuple[float, float]], float | None]]:
    """(package power, [(GPU%, sclk) of each GCD], cap) of every package in these real snapshots."""
    out = []
    for name in names:
        snap: Snapshot = reference.load(name).parsed()
        for gcds in packages_of(list(snap.devices)).values():
            power = next((d.power_w for d in gcds if d.power_w is not None), None)
            if power is None:
                continue
            cap = next((d.power_cap_w for d in gcds if getattr(d, "power_cap_w", None)), None)
            out.append((power, [(d.gpu_busy_pct or 0.0, d.sclk_mhz or 0.0) for d in gcds], cap))
    return out


def _range(values: list[float]) -> tuple[float, float] | None:
    return _widen(min(values), max(values)) if values else None


def envelopes() -> dict[str, Envelope]:
    """The envelope of each package state, from the real snapshots (see the module docstring)."""
    result = {}
    groups = {"idle": IDLE_SNAPSHOTS, "one-compute": ONE_COMPUTE_SNAPSHOTS, "waiting": WAITING_SNAPSHOTS}
    for state, names in groups.items():
        pkgs = _packages(names)
        if state == "one-compute":  # the package with a busy GCD (its pair idles)
            pkgs = [p for p in pkgs if any(b >= BUSY_PCT for b, _ in p[1])]
        if state == "waiting":      # every package of the starved table waits: none of them computes
            pkgs = [p for p in pkgs if any(b >= BUSY_PCT for b, _ in p[1])]
        busy = [s for p in pkgs for b, s in p[1] if b >= BUSY_PCT]
        idle = [s for p in pkgs for b, s in p[1] if b < BUSY_PCT]
        result[state] = Envelope(state, _range([p[0] for p in pkgs]) or (0.0, 0.0), _range(busy), _range(idle),
                                 names)
    caps = [c for names in groups.values() for p in _packages(names) for c in [p[2]] if c]
    one = result["one-compute"]
    top = max(caps) if caps else 560.0
    result["both-compute"] = Envelope("both-compute", (one.power_w[0], top), one.busy_sclk_mhz, None,
                                      (*ONE_COMPUTE_SNAPSHOTS, "PwrCap of " + ", ".join(IDLE_SNAPSHOTS)))
    return result


def package_state(gcd_states: tuple[str, ...]) -> str:
    """The envelope that applies to a package whose GCDs are in these states (idle / compute / spin)."""
    computing = gcd_states.count("compute")
    if computing == 2:
        return "both-compute"
    if computing == 1:
        return "one-compute"
    return "waiting" if "spin" in gcd_states else "idle"
