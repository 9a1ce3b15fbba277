"""What ``advise`` hands back: a :class:`Finding` per cause and the :class:`Advice` that ranks them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

HIGH_PCT, MEDIUM_PCT = 10.0, 3.0
#: A finding whose what-if saves less than this (% of the step) is left out.
MIN_GAIN_PCT = 0.5
PRIORITIES = ("high", "medium", "low")


@dataclass
class Finding:
    """One cause, what it costs at most, and what to do about it."""

    rule: str
    priority: str
    title: str
    evidence: list[str]
    gain_pct: float | None
    remedy: str
    verify: str
    sources: list[str] = field(default_factory=list)
    first: bool = False  # a setup error or an unreliable measurement: fix it before weighing the others

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Advice:
    """The findings, most valuable first, with what was read and what could not be."""

    path: str
    findings: list[Finding]
    inputs: list[str]
    notes: list[str] = field(default_factory=list)
    generated: bool = False
    gpu_seen: bool = True  # the trace held GPU work (else only host-side rules could speak)

    @property
    def healthy(self) -> bool:
        """No high-priority finding."""
        return not any(f.priority == "high" for f in self.findings)

    def to_dict(self) -> dict:
        return {"path": self.path, "healthy": self.healthy, "generated": self.generated, "gpu_seen": self.gpu_seen,
                "inputs": self.inputs,
                "notes": self.notes, "findings": [f.to_dict() for f in self.findings]}

    def text(self) -> str:
        """The prescription for people: the first remedy first."""
        out = [f"advice for {self.path}" + (" (GENERATED input: not a real run)" if self.generated else "")]
        out.append("read: " + "; ".join(self.inputs))
        if self.healthy and not self.gpu_seen:
            out.append("no high-priority finding among the host-side rules (the trace holds no GPU work to judge)"
                       + (": see the lower ones below" if self.findings else "."))
        elif self.healthy:
            out.append("no high-priority finding: nothing measured here holds a large share of the step"
                       + (" (see the lower ones below)" if self.findings else "."))
        for i, f in enumerate(self.findings, 1):
            gain = "" if f.gain_pct is None else f", worth at most {f.gain_pct:.1f} % of the step"
            out.append(f"{i}. [{f.priority}] {f.title}{gain}")
            out += [f"   evidence: {e}" for e in f.evidence]
            out.append(f"   remedy: {f.remedy}")
            out.append(f"   verify: {f.verify}")
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


def priority_of(gain_pct: float | None, cap: str = "high") -> str:
    """high / medium / low from the gain's upper bound, no higher than ``cap`` (a finding read from names only)."""
    p = "high" if (gain_pct or 0) >= HIGH_PCT else "medium" if (gain_pct or 0) >= MEDIUM_PCT else "low"
    return max(p, cap, key=PRIORITIES.index)


def percent(x: float) -> float:
    """A share (0-1) as a percentage, rounded, never negative."""
    return round(100.0 * max(0.0, x), 2)
