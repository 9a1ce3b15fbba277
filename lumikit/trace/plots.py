"""Pictures of the trace analyses: kernel time by class, per-step timeline by rank and stream, temporal,
overlap and idle-time charts, and the idle gaps by cause on a step's timeline.

Each function takes a :class:`~lumikit.trace.analyses.TraceAnalyzer` and returns a
:class:`matplotlib.figure.Figure` (no pyplot state), which a notebook cell shows and a widget embeds.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
from matplotlib.figure import Figure

from matplotlib.patches import Patch

from ..plotting import CLASS_COLOURS, figure, legend_outside, mark_generated
from .analyses import CLASSES, TraceAnalyzer
from .metrics import merge_intervals
from .synth import is_generated

IDLE_COLOURS = {"host_wait_us": "#ff7f0e", "kernel_wait_us": "#9467bd", "other_us": "#7f7f7f"}


def _finish(fig: Figure, analyzer: TraceAnalyzer) -> Figure:
    """Lay the figure out and, when the trace was generated (:func:`lumikit.trace.synth.is_generated`), say so in
    the image."""
    fig.tight_layout()
    if is_generated(analyzer):
        mark_generated(fig, "trace")
    return fig


def kernel_breakdown_bars(analyzer: TraceAnalyzer, steps: Iterable[int] | None = None) -> Figure:
    """Stacked bars per rank: GPU time (ms, summed durations) in compute, communication and memory work."""
    table = analyzer.get_kernel_breakdown(steps)
    fig = figure(figsize=(max(4, 1.2 * len(analyzer.ranks) + 2), 3.2))
    ax = fig.add_subplot()
    ranks = [str(r) for r in analyzer.ranks]
    bottom = np.zeros(len(ranks))
    for k in CLASSES:
        values = table[table["kclass"] == k].set_index("rank").reindex(analyzer.ranks)["total_us"].fillna(0) / 1e3
        ax.bar(ranks, values.to_numpy(), bottom=bottom, label=k, color=CLASS_COLOURS[k])
        bottom += values.to_numpy()
    ax.set(xlabel="rank", ylabel="GPU time (ms)", title="Kernel time by class")
    legend_outside(ax)
    return _finish(fig, analyzer)


def step_timeline(analyzer: TraceAnalyzer, rank: int, step: int | None = None, highlight: str = "") -> Figure:
    """GPU activities of one rank as bars per (device, stream) lane, coloured by class, with the host's
    ProfilerStep spans on top; ``step`` zooms to one step (time in ms from its start). ``highlight`` keeps the
    activities whose name contains it (case-insensitive) in colour and greys the others out."""
    gpu = analyzer.gpu(rank)
    steps = analyzer.steps(rank)
    if step is not None:
        gpu = gpu[gpu["step"] == step]
        steps = steps[steps["step"] == step]
    origin = float(min(steps["start"].min() if len(steps) else np.inf, gpu["ts"].min() if len(gpu) else np.inf))
    if not np.isfinite(origin):
        origin = 0.0
    lanes = sorted({(int(d), int(s)) for d, s in zip(gpu["device"], gpu["stream"])})
    fig = figure(figsize=(10, 1.2 + 0.45 * (len(lanes) + 1)))
    ax = fig.add_subplot()
    for row, (_, s) in enumerate(steps.iterrows()):
        ax.broken_barh([((s["start"] - origin) / 1e3, s["dur"] / 1e3)], (len(lanes) - 0.4, 0.8),
                       facecolors="#dddddd", edgecolors="#888888")
        ax.text((s["start"] - origin) / 1e3, len(lanes), f" step {int(s['step'])}", va="center", fontsize="small")
    matches = (gpu["name"].astype(str).str.contains(highlight, case=False, regex=False) if highlight
               else np.ones(len(gpu), dtype=bool))
    for lane, (device, stream) in enumerate(lanes):
        in_lane = (gpu["device"] == device) & (gpu["stream"] == stream)
        for k in CLASSES:
            for lit in (False, True):
                part = gpu[in_lane & (gpu["kclass"] == k) & (matches == lit)]
                if len(part):
                    spans = list(zip(((part["ts"] - origin) / 1e3).to_numpy(), (part["dur"] / 1e3).to_numpy()))
                    ax.broken_barh(spans, (lane - 0.4, 0.8), facecolors=CLASS_COLOURS[k] if lit else "#e0e0e0")
    ax.set_yticks(range(len(lanes) + 1), [f"GPU {d} stream {s}" for d, s in lanes] + ["host steps"])
    ax.set_xlabel("time (ms)" + (f" from the start of step {step}" if step is not None else ""))
    shown = f"; in colour: names containing {highlight!r} ({int(np.sum(matches))})" if highlight else ""
    ax.set_title(f"Rank {rank}" + (f", step {step}" if step is not None else ", all steps") + shown)
    legend_outside(ax, [Patch(color=CLASS_COLOURS[k], label=k) for k in CLASSES]
                   + ([Patch(color="#e0e0e0", label="not matching")] if highlight else []))
    return _finish(fig, analyzer)


def temporal_bars(analyzer: TraceAnalyzer, steps: Iterable[int] | None = None) -> Figure:
    """Stacked shares per rank (per rank and device where a process drove several) of idle, compute and
    non-compute time over the GPU span."""
    table = analyzer.get_temporal_breakdown(steps)
    several = table["rank"].duplicated().any()
    fig = figure(figsize=(max(4, 1.2 * len(table) + 2), 3.2))
    ax = fig.add_subplot()
    ranks = [f"{r}/d{d}" if several else str(r) for r, d in zip(table["rank"], table["device"])]
    bottom = np.zeros(len(ranks))
    for key, colour in (("compute", CLASS_COLOURS["compute"]), ("non_compute", "#bcbd22"), ("idle", "#cccccc")):
        values = 100 * table[f"{key}_fraction"].to_numpy()
        ax.bar(ranks, values, bottom=bottom, label=key.replace("_", "-"), color=colour)
        bottom += values
    ax.set(xlabel="rank/device" if several else "rank", ylabel="% of GPU span", ylim=(0, 100),
           title="Where the GPU time goes")
    legend_outside(ax)
    return _finish(fig, analyzer)


def overlap_chart(analyzer: TraceAnalyzer, steps: Iterable[int] | None = None) -> Figure:
    """Per rank, the share of communication time overlapped by computation (higher is better)."""
    table = analyzer.get_comm_comp_overlap(steps)
    fig = figure(figsize=(max(4, 1.2 * len(analyzer.ranks) + 2), 3.0))
    ax = fig.add_subplot()
    ax.bar([str(r) for r in table["rank"]], 100 * table["overlap"].fillna(0).to_numpy(), color="#d62728")
    ax.set(xlabel="rank", ylabel="% of communication overlapped", ylim=(0, 100),
           title="Communication hidden behind computation")
    return _finish(fig, analyzer)


def idle_chart(analyzer: TraceAnalyzer, steps: Iterable[int] | None = None) -> Figure:
    """Idle time (ms) per rank and stream, split into waiting for the host, between kernels, and other."""
    table = analyzer.get_idle_time_breakdown(steps)
    labels = [f"r{r} s{s}" for r, s in zip(table["rank"], table["stream"])]
    fig = figure(figsize=(max(4, 0.9 * len(labels) + 2), 3.2))
    ax = fig.add_subplot()
    bottom = np.zeros(len(labels))
    for key, colour in IDLE_COLOURS.items():
        values = table[key].to_numpy(dtype=float) / 1e3
        ax.bar(labels, values, bottom=bottom, label=key.removesuffix("_us").replace("_", " "), color=colour)
        bottom += values
    ax.set(xlabel="rank / stream", ylabel="idle time (ms)", title="Why the GPU waits")
    legend_outside(ax)
    return _finish(fig, analyzer)


def memory_timeline(view, device: int | None = None, *, generated: bool = False) -> Figure:
    """Live memory over time, stacked by category (a :class:`~lumikit.trace.memory.MemoryView`), with the peak
    marked: the picture behind an out-of-memory error. ``generated`` marks a view of generated events."""
    timeline = view.timeline(device)
    peak = view.peak(device)
    t = timeline["ts"].to_numpy() - timeline["ts"].iloc[0]
    scale = 1e3 if view.time_unit == "µs" else 1.0
    cats = [c for c in timeline.columns[2:] if timeline[c].abs().max() > 0]
    fig = figure(figsize=(8, 3.2))
    ax = fig.add_subplot()
    ax.stackplot(t / scale, *[np.maximum(timeline[c].to_numpy(), 0) / 1e6 for c in cats], labels=cats, step="post")
    ax.axvline(peak["since_start"] / scale, color="black", lw=0.8, ls="--")
    ax.annotate(f"peak {peak['bytes'] / 1e6:.1f} MB", (peak["since_start"] / scale, peak["bytes"] / 1e6),
                xytext=(4, -12), textcoords="offset points", fontsize="small")
    where = "host" if peak["device"] < 0 else f"device {peak['device']}"
    ax.set(xlabel="time since the first event (ms)" if view.time_unit == "µs" else "allocator event",
           ylabel="live memory (MB)", title=f"Memory on {where} by category")
    legend_outside(ax, [*reversed(ax.get_legend_handles_labels()[0])])  # top of the stack first, as drawn
    fig.tight_layout()
    return mark_generated(fig) if generated else fig


def collective_bandwidth_chart(summary, links: dict | None = None) -> Figure:
    """Best bus bandwidth per rank and collective (a :func:`~lumikit.trace.comms.collective_summary` table) against
    the link speeds of the site profile (dashed lines)."""
    fig = figure(figsize=(max(4, 0.9 * len(summary) + 3), 3.2))
    ax = fig.add_subplot()
    labels = [f"r{r} {c}\n{d}" for r, c, d in zip(summary["rank"], summary["collective"], summary["dtype"])]
    ax.bar(labels, summary["best_busbw_gb_s"].to_numpy(dtype=float), color="#d62728", label="best call")
    ax.bar(labels, summary["busbw_gb_s"].to_numpy(dtype=float), color="#ff9896", width=0.5, label="all calls")
    for i, (name, link) in enumerate((links or {}).items()):
        ax.axhline(float(link["gb_s"]), ls="--", lw=0.8, color=f"C{i}", label=f"{name.replace('_', ' ')} "
                                                                             f"{link['gb_s']} GB/s")
    ax.set(ylabel="bus bandwidth (GB/s)", yscale="log", title="Collectives against the node's links")
    legend_outside(ax, fontsize="x-small")
    fig.tight_layout()
    return fig


#: One colour per kind of idle cause (see :mod:`lumikit.trace.idle`).
IDLE_KIND_COLOURS = {"sync drain": "#d62728", "starved": "#ff7f0e", "queued": "#9467bd"}


def idle_causes_timeline(analyzer: TraceAnalyzer, rank: int, step: int | None = None, device: int | None = None,
                         labels: int = 6) -> Figure:
    """One rank's GPU timeline with every idle gap coloured by the kind of its cause (sync drain, starved,
    queued) and the longest ``labels`` gaps named; the host's ProfilerStep spans on top. ``step`` zooms to one
    step (time in ms from its start); ``device`` picks one GPU of a process that drove several."""
    from .idle import idle_causes, kind_of

    reports = idle_causes(analyzer, rank)
    report = next((r for r in reports if device is None or r.device == device), reports[0])
    gpu = analyzer.window_columns(rank)
    if len(reports) > 1:
        gpu = gpu.take(gpu["device"] == report.device)
    steps = analyzer.step_columns(rank)
    gaps = [g for g in report.gaps if step is None or g["step"] == step]
    keep = np.ones(len(gpu), dtype=bool) if step is None else gpu["step"] == step
    step_rows = np.ones(len(steps), dtype=bool) if step is None else steps["step"] == step
    starts = [steps["start"][step_rows].min()] if step_rows.any() else []
    origin = float(min(starts + ([gpu["ts"][keep].min()] if keep.any() else []), default=0.0))
    busy_s, busy_e = merge_intervals(gpu["ts"][keep] - origin, gpu["ts"][keep] - origin + gpu["dur"][keep])
    fig = figure(figsize=(10, 3.2))
    ax = fig.add_subplot()
    for s, e, n in zip(steps["start"][step_rows], steps["end"][step_rows], steps["step"][step_rows]):
        ax.broken_barh([((s - origin) / 1e3, (e - s) / 1e3)], (1.6, 0.8), facecolors="#dddddd", edgecolors="#888888")
        ax.text((s - origin) / 1e3, 2.0, f" step {int(n)}", va="center", fontsize="small")
    ax.broken_barh(list(zip(busy_s / 1e3, (busy_e - busy_s) / 1e3)), (0.6, 0.8), facecolors="#1f77b4")
    for kind, colour in IDLE_KIND_COLOURS.items():
        spans = [((g["start_us"] - origin) / 1e3, g["dur_us"] / 1e3) for g in gaps if kind_of(g["cause"]) == kind]
        if spans:
            ax.broken_barh(spans, (-0.4, 0.8), facecolors=colour)
    named = sorted(gaps, key=lambda g: -g["dur_us"])[:labels]
    for row, g in enumerate(sorted(named, key=lambda g: g["start_us"])):  # two rows, so neighbours do not collide
        ax.text((g["start_us"] - origin + g["dur_us"] / 2) / 1e3, -0.75 - 0.6 * (row % 2), g["cause"][:40],
                ha="center", va="center", fontsize="x-small")
    ax.set_yticks([0, 1, 2], ["GPU idle", "GPU busy", "host steps"])
    ax.set_ylim(-1.7, 2.6)
    ax.set_xlabel("time (ms)" + (f" from the start of step {step}" if step is not None else ""))
    idle = sum(g["dur_us"] for g in gaps)
    ax.set_title(f"Rank {rank}" + (f", step {step}" if step is not None else "") +
                 f": why the GPU waited ({idle / 1e3:.2f} ms idle)")
    legend_outside(ax, [Patch(color=c, label=k) for k, c in IDLE_KIND_COLOURS.items()])
    return _finish(fig, analyzer)


def collective_waits_chart(matched: dict) -> Figure:
    """Each rank's wait in each collective matched across ranks (a :func:`~lumikit.trace.matched.match_collectives`
    result), beside the collective's true time: the rank that never waits is the one the others wait for."""
    rows = matched["matched"]
    ranks = matched["ranks"]
    fig = figure(figsize=(max(5, 0.6 * len(rows) + 3), 3.2))
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    width = 0.8 / max(1, len(ranks) + 1)
    for i, r in enumerate(ranks):
        waits = [m["wait_us"].get(r, m["wait_us"].get(str(r), np.nan)) / 1000 for m in rows]
        ax.bar(x + i * width, waits, width, label=f"rank {r} waits", color=f"C{i % 10}")
    ax.bar(x + len(ranks) * width, [m["comm_us"] / 1000 for m in rows], width, color="#333333",
           label="true time (shortest)")
    ax.set_xticks(x + 0.4 - width / 2, [f"{m['group']}#{m['index']}" for m in rows], fontsize="x-small")
    ax.set(xlabel="collective (process group # index)", ylabel="ms",
           title="Time in each collective: waiting for the last rank, and the collective itself")
    legend_outside(ax, fontsize="x-small")
    fig.tight_layout()
    return mark_generated(fig, "trace") if matched.get("generated") else fig
