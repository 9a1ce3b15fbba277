"""The ladder's picture: one bar per rung at its median samples/s, whiskers from its slowest to its fastest repeat."""
from __future__ import annotations

from lumikit.ladder.plots import ladder_bars


def test_bars_stand_at_the_medians_and_whiskers_span_min_to_max() -> None:
    data = {"model": "lm", "size": "tiny", "measured_on": "this CPU (test)", "rungs": [
        {"rung": "fp32", "speedup": 1.0, "samples_per_s": {"median": 10.0, "min": 9.0, "max": 12.0}},
        {"rung": "bf16", "speedup": 2.0, "samples_per_s": {"median": 20.0, "min": 15.0, "max": 21.0}}]}
    ax = ladder_bars(data).axes[0]
    assert [p.get_height() for p in ax.patches] == [10.0, 20.0]
    whiskers = ax.collections[0].get_segments()  # the error bars, one vertical segment per rung
    assert [(seg[0][1], seg[1][1]) for seg in whiskers] == [(9.0, 12.0), (15.0, 21.0)]
    assert [t.get_text() for t in ax.texts] == ["1.00x", "2.00x"]
    assert "this CPU (test)" in ax.get_title() and [t.get_text() for t in ax.get_xticklabels()] == ["fp32", "bf16"]
