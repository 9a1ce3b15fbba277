"""The ladder as a picture: samples/s per rung (the median) with its min-max range, so a gain smaller than the
spread shows as bars whose whiskers overlap."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..plotting import figure
from ..text import printable


def ladder_bars(data: dict[str, Any]) -> Figure:
    """One bar per rung of a ``ladder.json`` (read with :func:`lumikit.ladder.read_ladder`): median samples/s,
    min-max error bars, the speed-up over the first rung written above each bar, and where it was measured."""
    rows = data["rungs"]
    names = [printable(r["rung"]) for r in rows]
    median = [r["samples_per_s"]["median"] for r in rows]
    below = [m - r["samples_per_s"]["min"] for m, r in zip(median, rows)]
    above = [r["samples_per_s"]["max"] - m for m, r in zip(median, rows)]
    fig = figure(figsize=(max(4.0, 1.3 * len(rows) + 1.5), 3.4))
    ax = fig.add_subplot()
    ax.bar(names, median, yerr=[below, above], capsize=6, color="#1f77b4", ecolor="#333333")
    for x, (m, hi, row) in enumerate(zip(median, above, rows)):
        ax.annotate(f"{row.get('speedup', m / median[0]):.2f}x", (x, m + hi), textcoords="offset points",
                    xytext=(0, 4), ha="center", fontsize="small")
    ax.set(ylabel="samples/s (median, min-max)", ylim=(0, 1.15 * max(m + a for m, a in zip(median, above))),
           title=f"Ladder: {printable(data.get('model', '?'))} {printable(data.get('size', ''))}, measured on "
                 f"{printable(data.get('measured_on', '?'))}")
    ax.title.set_fontsize("small")
    fig.tight_layout()
    return fig
