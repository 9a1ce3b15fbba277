"""Pictures of log tables: throughput and loss over time, and the HIP calls of a log over time."""
from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..plotting import CLASS_COLOURS, axes_or_new, figure, legend_outside, mark_generated
from .progress import training_series


def plot_throughput(table: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Training throughput: the main tqdm bar's it/s against elapsed seconds, else images/sec per epoch."""
    ax = axes_or_new(ax, (8, 3))
    train = training_series(table)
    if not train.empty:
        ax.plot(train["elapsed_s"], train["rate"], ".-", ms=3, lw=0.8)
        ax.set_xlabel("elapsed (s)")
        ax.set_ylabel(train["unit"].iloc[0])
    else:
        tp = table[(table["kind"] == "throughput") & table["epoch"].notna()]
        for series, rows in tp.groupby("series"):
            ax.plot(rows["epoch"], rows["rate"], "o-", label=series)
        ax.set_xlabel("epoch")
        ax.set_ylabel(tp["unit"].iloc[0] if len(tp) else "throughput")
        if len(tp):
            ax.legend(fontsize=8)
    ax.set_title("Throughput")
    return ax.figure


def plot_loss(table: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Loss per split (train, eval, validation) against the training step, or the epoch where steps are unknown."""
    ax = axes_or_new(ax, (8, 3))
    rows = table[table["loss"].notna()]
    x = "step" if rows["step"].notna().any() else "epoch"
    for split, part in rows.groupby("split"):
        ax.plot(part[x].astype(float), part["loss"], "o-", label=split)
    ax.set_xlabel(x)
    ax.set_ylabel("loss")
    ax.set_title("Loss")
    if len(rows):
        ax.legend(fontsize=8)
    return ax.figure


def plot_progress(table: pd.DataFrame) -> Figure:
    """Throughput above loss, the two pictures a learner checks after a training run."""
    fig = figure(figsize=(8, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    plot_throughput(table, top)
    plot_loss(table, bottom)
    return fig


def plot_hip_calls(table: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Each kernel launch and copy of a HIP log as a tick over time (ms since the first call), one row per class."""
    ax = axes_or_new(ax, (8, 2.5))
    if len(table):
        t0 = float(table["ts_us"].min())
        classes = ["compute", "communication", "memory"]
        for y, cls in enumerate(classes):
            part = table[table["kernel_class"] == cls]
            ax.scatter((part["ts_us"].astype(float) - t0) / 1e3, [y] * len(part), marker="|", s=200,
                       color=CLASS_COLOURS[cls])
        ax.set_yticks(range(len(classes)), classes)
    ax.set_xlabel("time since first call (ms)")
    ax.set_title("HIP launches and copies")
    return ax.figure


def plot_busbw(benches: dict, site: object = "lumi", ax: Axes | None = None) -> Figure:
    """Bus bandwidth against message size for rccl-tests outputs ({label: CollectiveBenchmark}), each with a dashed
    line at the peak of the link its ranks crossed (:func:`lumikit.logs.collbench.link_for`)."""
    from .collbench import is_generated, link_for

    ax = axes_or_new(ax, (8, 3.5))
    for i, (label, bench) in enumerate(benches.items()):
        colour = f"C{i}"
        sizes = [r.size_bytes for r in bench.rows if r.busbw is not None]
        ax.plot(sizes, [r.busbw for r in bench.rows if r.busbw is not None], "o-", ms=3, color=colour,
                label=label + (" (generated)" if is_generated(bench) else ""))
        verdict = link_for(bench, site)
        if verdict.peak_gb_s:
            ax.axhline(verdict.peak_gb_s, ls="--", lw=0.8, color=colour)
            ax.annotate(f"{verdict.link} {verdict.peak_gb_s:g} GB/s", (sizes[0] if sizes else 1, verdict.peak_gb_s),
                        fontsize=7, color=colour, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("all_reduce_perf: bus bandwidth per size against the link's peak")
    legend_outside(ax, fontsize=8)
    if any(is_generated(bench) for bench in benches.values()):
        mark_generated(ax, "rccl-tests output")
    return ax.figure
