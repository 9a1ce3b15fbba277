"""Pictures of rocprof tables: the kernel ranking coloured by class, and time per class."""
from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..kernels import CLASSES
from ..plotting import CLASS_COLOURS, axes_or_new
from .names import short_kernel_name
from .stats import class_totals

def plot_kernel_ranking(table: pd.DataFrame, top: int = 15, ax: Axes | None = None, *,
                        title: str | None = None) -> Figure:
    """Horizontal bars of the ``top`` kernels by total time (ms), largest at the top, coloured by class; ``title``
    says what the rows are when they are not GPU kernels (a stand-in file of CPU operators)."""
    ax = axes_or_new(ax, (9, 0.35 * min(top, max(len(table), 1)) + 1.2))
    rows = table.dropna(subset=["kernel_class"]).head(top).iloc[::-1]
    labels = [short_kernel_name(n, 50) for n in rows["name"]]
    colors = [CLASS_COLOURS.get(c, "grey") for c in rows["kernel_class"]]
    ax.barh(range(len(rows)), rows["total_ns"] / 1e6, color=colors)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_xlabel("total time (ms)")
    source = table.attrs.get("source")
    ax.set_title(title or f"Top {len(rows)} kernels" + (f" — {source}" if source and len(str(source)) < 60 else ""))
    present = [c for c in CLASSES if c in set(rows["kernel_class"])]
    ax.legend(handles=[Patch(color=CLASS_COLOURS[c], label=c) for c in present], loc="lower right", fontsize=8)
    return ax.figure


def plot_class_totals(table: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """One bar per kernel class with its share of GPU time, the percentage written on the bar."""
    ax = axes_or_new(ax, (6, 2.2))
    totals = class_totals(table)
    ax.barh(totals.index, totals["total_ns"] / 1e6, color=[CLASS_COLOURS[c] for c in totals.index])
    for y, (ns, share) in enumerate(zip(totals["total_ns"], totals["share"])):
        ax.text(ns / 1e6, y, f" {100 * share:.1f} %", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.margins(x=0.15)  # room for the percentages
    ax.set_xlabel("total time (ms)")
    ax.set_title("GPU time by kernel class")
    return ax.figure
