"""Pictures of rocprof tables: the kernel ranking coloured by class, time per class, and the roofline."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..kernels import CLASSES
from ..plotting import CLASS_COLOURS, axes_or_new
from .names import short_kernel_name
from .stats import class_totals

if TYPE_CHECKING:
    from .roofline import Roofline


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


def plot_roofline(rl: "Roofline", top: int = 12, ax: Axes | None = None, generated: bool = False) -> Figure:
    """The roofline of a run on log-log axes: FLOP/s against FLOPs per HBM byte, the published peaks as solid
    lines and the measured ceilings dashed (each labelled with its source in the legend below the plot), and one
    point per kernel (the ``top`` longest, labelled). ``generated``: the counters were generated, and the title
    says so."""
    import numpy as np

    ax = axes_or_new(ax, (9, 6.5))
    points = rl.kernels.dropna(subset=["arithmetic_intensity", "flops_per_s"])
    points = points[(points["arithmetic_intensity"] > 0) & (points["flops_per_s"] > 0)].head(top)
    xs = np.array([1e-3, 1e4])
    hbm = [r for r in rl.roofs if r.kind == "bandwidth" and r.name.startswith("HBM")]
    compute = [r for r in rl.roofs if r.kind == "compute"]
    top_peak = max(r.value for r in compute) if compute else 1e15
    sources: dict[str, int] = {}

    def cite(source: str) -> int:
        return sources.setdefault(source, len(sources) + 1)

    for r in hbm:
        line_x = roof_vertices(xs[0], xs[-1], r.value, top_peak)  # the corner drawn: a log axis bends no chord
        ax.plot(line_x, np.minimum(line_x * r.value, top_peak), ls="--" if r.measured else "-", color="black",
                lw=1.2 if r.measured else 1.8, alpha=0.8,
                label=f"{r.name} {r.value / 1e12:.2f} TB/s [{cite(r.source)}]")
    colours = {"BF16 matrix": "#1f77b4", "FP32 matrix": "#ff7f0e", "FP32 vector": "#2ca02c"}
    peak_bw = max((r.value for r in hbm), default=1.6e12)
    for r in compute:
        kind = r.name.split(",")[0]
        if kind not in colours:  # FP16 matrix equals BF16, FP64 matrix and vector equal FP32: one line each
            continue
        same = {"FP32 matrix": " (= FP64 matrix)", "FP32 vector": " (= FP64 vector)"}.get(kind, " (= FP16 matrix)")
        ax.plot([r.value / peak_bw, xs[-1]], [r.value, r.value], ls="--" if r.measured else "-", color=colours[kind],
                lw=1.2 if r.measured else 1.8,
                label=f"{r.name}{'' if r.measured else same} {r.value / 1e12:.1f} TFLOP/s [{cite(r.source)}]")
    ax.scatter(points["arithmetic_intensity"], points["flops_per_s"], s=40, color="#d62728", zorder=5,
               label="kernels (counters)" if rl.passes else "operators (from shapes)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    low = min([1e9, *points["flops_per_s"].tolist()]) / 3
    ax.set_ylim(low, top_peak * 3)
    ax.set_xlabel("arithmetic intensity (FLOPs per HBM byte)")
    device = rl.device or "no device named"
    ax.set_ylabel("FLOP/s (per GCD)" if "GCD" in device else "FLOP/s (per GPU)")
    ax.set_title(("Generated counters: " if generated else "") + f"roofline of {len(points)} kernels, {device}")
    ax.grid(True, which="both", alpha=0.2)
    legend = ax.legend(loc="upper left", bbox_to_anchor=(0, -0.12), fontsize=FOOTNOTE_PT, ncol=1, frameon=False)
    notes = "\n".join(f"[{n}] {s}" for s, n in sources.items())
    label_points(ax, [(short_kernel_name(str(p["kernel"]), 28), p["arithmetic_intensity"], p["flops_per_s"])
                      for _, p in points.iterrows()])
    fig = ax.figure
    fig.draw_without_rendering()
    below = legend.get_window_extent().transformed(ax.transAxes.inverted()).y0  # under the legend, not on it
    ax.text(0, below - 0.03, notes, transform=ax.transAxes, fontsize=FOOTNOTE_PT, va="top", wrap=True)
    return fig


#: The size of the legend and the source footnotes under a figure (readable when the figure is shown at 9 inches).
FOOTNOTE_PT = 9


def roof_vertices(x_min: float, x_max: float, bandwidth: float, peak: float) -> "np.ndarray":
    """The x values at which a bandwidth roof capped at ``peak`` bends: its two ends and the ridge point. A plotted
    line is straight between its points on the axes' own scale, so on log axes a roof given only by its ends would
    cut the corner (a chord of slope 0.72, drawn above the kernels the roof holds)."""
    import numpy as np

    ridge = peak / bandwidth
    return np.array([x_min, *([ridge] if x_min < ridge < x_max else []), x_max], dtype=float)


def label_points(ax: Axes, labelled: list[tuple[str, float, float]], fontsize: float = 8) -> list:
    """Label each point (text, x, y) beside it, trying a few positions around it until the label overlaps no label
    placed before (the largest first); returns the annotations."""
    fig = ax.figure
    offsets = [(4, 4), (4, -12), (-4, 4), (-4, -12), (4, 16), (4, -24), (-4, 16), (-4, -24), (4, 28), (4, -36)]
    placed, out = [], []
    for text, x, y in labelled:
        best = None
        for dx, dy in offsets:
            ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                              ha="left" if dx > 0 else "right")
            fig.draw_without_rendering()
            box = ann.get_window_extent()
            if not any(box.overlaps(other) for other in placed):
                best = (ann, box)
                break
            ann.remove()
        if best is None:  # every place taken: the first one, and the overlap stays visible
            ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=offsets[0], fontsize=fontsize)
            fig.draw_without_rendering()
            best = (ann, ann.get_window_extent())
        placed.append(best[1])
        out.append(best[0])
    return out
