"""Noise-aware comparisons: interleaved order, ranges, and verdicts built from the numbers."""
from __future__ import annotations

import pytest

from lumikit.errors import LumikitError
from lumikit.measure import compare, interleaved, measured, timed


def test_interleaved_runs_round_by_round() -> None:
    order: list[str] = []
    got = interleaved({"a": lambda: order.append("a") or 1.0, "b": lambda: order.append("b") or 2.0}, repeats=3)
    assert order == ["a", "b"] * 3
    assert got["a"].values == (1.0, 1.0, 1.0) and got["b"].median == 2.0


def test_separated_ranges_and_a_large_effect_are_beyond_noise() -> None:
    c = compare(measured("ddp", [190, 200, 210]), measured("single", [100, 105, 110]))
    assert not c.within_noise and c.verdict("faster", "slower") == "ddp faster than single"
    assert "beyond noise: ddp faster than single" in c.sentence(higher="faster", lower="slower")
    assert "1.90x" in c.sentence()


def test_overlapping_ranges_or_a_small_effect_are_within_noise() -> None:
    overlap = compare(measured("a", [90, 200, 210]), measured("b", [100, 105, 110]))
    assert overlap.within_noise and "ranges overlap" in overlap.sentence()
    small = compare(measured("a", [111, 112, 113]), measured("b", [100, 101, 102]))
    assert small.within_noise and "less than 20%" in small.sentence()
    assert compare(measured("a", [300]), measured("b", [100])).within_noise   # one run proves nothing


def test_timed_and_empty_measurements() -> None:
    assert timed(lambda: None)() >= 0.0
    with pytest.raises(LumikitError, match="no measurements for 'x'"):
        measured("x", [])
