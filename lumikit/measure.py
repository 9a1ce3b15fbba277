"""Timings that mean something: repeat and interleave the runs, keep the spread, and say when a difference is
within noise.

A laptop or a shared CI machine is noisy: one run of A against one run of B mostly measures what else ran at that
moment. :func:`interleaved` runs A, B, C, A, B, C, ... so that slow spells hit every variant; :func:`compare` calls
a difference real only when the ranges of the two do not overlap *and* the medians differ by more than
``min_effect``; its sentence is built from the numbers, so the text never contradicts them.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .errors import LumikitError

MIN_EFFECT = 0.20   # medians closer than 20 % are called "within noise" on a shared machine


@dataclass(frozen=True)
class Measured:
    """Repeated measurements of one variant: the values, their median and range."""

    label: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def lo(self) -> float:
        return min(self.values)

    @property
    def hi(self) -> float:
        return max(self.values)

    def describe(self, fmt: str = "{:.3g}", unit: str = "") -> str:
        """``label: median (lo-hi over n runs)``."""
        u = f" {unit}" if unit else ""
        return (f"{self.label}: {fmt.format(self.median)}{u} (range {fmt.format(self.lo)}-{fmt.format(self.hi)}"
                f" over {len(self.values)} runs)")


def measured(label: str, values: Sequence[float]) -> Measured:
    """A :class:`Measured` of at least one value."""
    vals = tuple(float(v) for v in values)
    if not vals:
        raise LumikitError(f"no measurements for {label!r}; run it at least once")
    return Measured(label, vals)


def interleaved(runs: Mapping[str, Callable[[], float]], repeats: int = 3) -> dict[str, Measured]:
    """Call every run once per round, ``repeats`` rounds (A B C A B C ...); each call returns its measurement."""
    got: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            got[name].append(float(run()))
    return {name: measured(name, vals) for name, vals in got.items()}


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """A run that returns the seconds ``fn()`` took."""
    def run() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    return run


@dataclass(frozen=True)
class Comparison:
    """``a`` against ``b``: the ratio of medians and whether it is beyond the noise."""

    a: Measured
    b: Measured
    min_effect: float = MIN_EFFECT

    @property
    def ratio(self) -> float:
        return self.a.median / self.b.median

    @property
    def ranges_overlap(self) -> bool:
        return not (self.a.lo > self.b.hi or self.b.lo > self.a.hi)

    @property
    def within_noise(self) -> bool:
        small = abs(math.log(self.ratio)) < math.log(1 + self.min_effect)
        return self.ranges_overlap or small or min(len(self.a.values), len(self.b.values)) < 2

    def verdict(self, higher: str = "higher", lower: str = "lower") -> str:
        """``within noise``, or ``<a> <higher|lower> than <b>`` (the words for a larger / smaller value)."""
        if self.within_noise:
            return "within noise"
        return f"{self.a.label} {higher if self.ratio > 1 else lower} than {self.b.label}"

    def sentence(self, *, unit: str = "", fmt: str = "{:.3g}", higher: str = "higher", lower: str = "lower") -> str:
        """One sentence with both measurements, the ratio and the verdict, built from the numbers alone."""
        why = ("the ranges overlap" if self.ranges_overlap else
               f"the medians differ by less than {self.min_effect:.0%}")
        tail = (f"within noise ({why})" if self.within_noise else
                f"beyond noise: {self.verdict(higher, lower)}")
        return (f"{self.a.describe(fmt, unit)} against {self.b.describe(fmt, unit)}: "
                f"{self.ratio:.2f}x, {tail}.")


def compare(a: Measured, b: Measured, *, min_effect: float = MIN_EFFECT) -> Comparison:
    """Compare two measured variants (see :class:`Comparison`)."""
    return Comparison(a, b, min_effect)


def middle(values: Sequence[float], keep: float = 0.8) -> list[float]:
    """The middle ``keep`` share of ``values`` (sorted; the slowest and fastest ends dropped), at least one value.

    Many steps of one run carry a few outliers (a garbage collection, another job's burst); their min-max range
    says little, the middle 80 % says how much the run's steps really vary.
    """
    ordered = sorted(float(v) for v in values)
    drop = int(len(ordered) * (1 - keep) / 2 + 1e-9)  # 10 values, keep 0.8: drop 1 at each end
    return ordered[drop:len(ordered) - drop] or ordered


def noise_note(a: Measured, b: Measured, *, on_lumi: str, unit: str = "", fmt: str = "{:.3g}",
               min_effect: float = MIN_EFFECT) -> str:
    """One clause for a check's passed line: ``within noise on this machine (...); on LUMI expect ...``, or
    ``beyond noise on this machine (...)``, built from the two measurements alone."""
    comparison = compare(a, b, min_effect=min_effect)
    sentence = comparison.sentence(unit=unit, fmt=fmt).rstrip(".")
    if comparison.within_noise:
        return f"within noise on this machine ({sentence}); on LUMI expect {on_lumi}"
    return f"beyond noise on this machine ({sentence})"


def outlier_note(label: str, value: float, others: Measured, *, on_lumi: str, unit: str = "", fmt: str = "{:.3g}",
                 min_effect: float = MIN_EFFECT) -> str:
    """One value (a first step) against the spread of the rest: beyond noise only when it is above their whole
    range and more than ``min_effect`` above their median."""
    u = f" {unit}" if unit else ""
    text = f"{label} {fmt.format(value)}{u} against {others.describe(fmt, unit)}"
    if value > others.hi and value > others.median * (1 + min_effect):
        return f"beyond noise on this machine ({text})"
    return f"within noise on this machine ({text}); on LUMI expect {on_lumi}"
