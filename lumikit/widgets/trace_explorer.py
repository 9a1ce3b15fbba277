"""A trace explorer for a notebook: pick a rank and a step, filter the kernel table, zoom the timeline, and
export the chosen steps as a small trace for Perfetto.

Thin on top of :mod:`lumikit.trace` (analyses, plots, slicing): it never parses. ``TraceExplorer(...).static_html()``
renders the same view without a widget frontend (for nbval and CI).
"""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..errors import LumikitError
from ..plotting import figure_png
from ..rocprof.names import short_kernel_name
from ..trace.analyses import TraceAnalyzer
from ..trace.loader import Trace
from ..trace.plots import step_timeline
from ..trace.slicing import slice_trace

CSS_EXPLORER = "lumikit-trace-explorer"
CSS_KERNEL_TABLE = "lumikit-kernel-table"
ALL_STEPS = "all steps"


def kernel_table(analyzer: TraceAnalyzer, rank: int, step: int | None = None, pattern: str = "",
                 limit: int = 25) -> pd.DataFrame:
    """The GPU activities of a rank (one step or all), grouped by name, biggest total first; ``pattern`` keeps
    names containing it (case-insensitive)."""
    gpu = analyzer.gpu(rank)
    if step is not None:
        gpu = gpu[gpu["step"] == step]
    if pattern:
        gpu = gpu[gpu["name"].astype(str).str.contains(pattern, case=False, regex=False)]
    table = (gpu.groupby(["name", "kclass"], observed=True)["dur"].agg(["count", "sum", "mean"]).reset_index()
             .sort_values("sum", ascending=False).head(limit))
    return pd.DataFrame({"kernel": table["name"].astype(str), "class": table["kclass"].astype(str),
                         "count": table["count"], "total (µs)": table["sum"].round(1),
                         "mean (µs)": table["mean"].round(2)}).reset_index(drop=True)


def kernel_table_html(table: pd.DataFrame) -> str:
    """The kernel table as HTML (class ``lumikit-kernel-table``), long names shortened with the full name as tooltip."""
    if table.empty:
        return f'<table class="{CSS_KERNEL_TABLE}"><tr><td>no GPU activity matches</td></tr></table>'
    pad = "padding:2px 12px 2px 0"  # columns that do not touch
    numeric = [pd.api.types.is_numeric_dtype(table[c]) for c in table.columns]
    head = "".join(f'<th style="{pad};text-align:{"right" if num else "left"}">{html.escape(c)}</th>'
                   for c, num in zip(table.columns, numeric))
    rows = []
    for rec in table.itertuples(index=False):
        name = str(rec[0])
        short = short_kernel_name(name, 80) if len(name) > 80 else name
        cells = [f'<td style="{pad}" title="{html.escape(name)}">{html.escape(short)}</td>'] + [
            f'<td style="{pad};text-align:{"right" if num else "left"}">{html.escape(str(v))}</td>'
            for v, num in zip(rec[1:], numeric[1:])]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="{CSS_KERNEL_TABLE}" style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


class TraceExplorer:
    """Rank and step pickers, a kernel filter, the step timeline and an "export slice for Perfetto" button.

    ``source`` is a trace path, a loaded :class:`~lumikit.trace.loader.Trace` or a :class:`TraceAnalyzer`;
    ``export_dir`` is where exported slices go (default: next to the first trace file).
    """

    def __init__(self, source: str | Path | Trace | TraceAnalyzer, *, export_dir: str | Path | None = None) -> None:
        if isinstance(source, TraceAnalyzer):
            self.analyzer = source
        elif isinstance(source, Trace):
            self.analyzer = TraceAnalyzer(source)
        else:
            self.analyzer = TraceAnalyzer.from_path(source)
        trace = self.analyzer.trace
        first = trace[trace.rank_ids[0]].path
        self.export_dir = Path(export_dir) if export_dir is not None else first.parent / "slices"
        self.rank = widgets.Dropdown(description="rank", options=trace.rank_ids, value=trace.rank_ids[0])
        self.step = widgets.Dropdown(description="step")
        self.filter = widgets.Text(description="kernel", placeholder="e.g. gemm or nccl")
        self.table = widgets.HTML()
        self.timeline = widgets.Image(format="png")
        self.export = widgets.Button(description="export slice for Perfetto", icon="download",
                                     layout=widgets.Layout(width="auto", min_width="230px"))
        self.status = widgets.HTML()
        self._fill_steps()
        self.rank.observe(self._on_rank, names="value")
        self.step.observe(lambda _: self.refresh(), names="value")
        self.filter.observe(lambda _: self.refresh(), names="value")  # the timeline greys out what does not match
        self.export.on_click(lambda _: self.export_slice())
        controls = widgets.HBox([self.rank, self.step, self.filter])
        self.box = widgets.VBox([controls, self.timeline, self.table, widgets.HBox([self.export, self.status])])
        self.box.add_class(CSS_EXPLORER)
        self.refresh()

    # -- state -----------------------------------------------------------------------------------------
    @property
    def selected_step(self) -> int | None:
        return None if self.step.value in (None, ALL_STEPS) else int(self.step.value)

    def _fill_steps(self) -> None:
        steps = [int(s) for s in self.analyzer.steps(self.rank.value)["step"]]
        self.step.options = [ALL_STEPS] + steps
        self.step.value = steps[0] if steps else ALL_STEPS

    def _on_rank(self, _change: Any) -> None:
        self._fill_steps()
        self.refresh()

    def refresh(self) -> None:
        """Redraw the timeline (activities the filter matches in colour) and the kernel table (the matching ones)
        for the current rank, step and filter."""
        self.timeline.value = figure_png(step_timeline(self.analyzer, self.rank.value, self.selected_step,
                                                       highlight=self.filter.value), dpi=72)
        self.table.value = kernel_table_html(kernel_table(self.analyzer, self.rank.value, self.selected_step,
                                                          self.filter.value))

    def export_slice(self) -> list[Path]:
        """Write the selected rank and step (or all steps) as a gzip trace that Perfetto opens."""
        steps = self.analyzer.get_profiler_steps()
        step = self.selected_step
        chosen = (step, step) if step is not None else ((min(steps), max(steps)) if steps else None)
        name = f"rank{self.rank.value}-step{step if step is not None else 'all'}.pt.trace.json.gz"
        try:
            written = slice_trace(None, self.export_dir / name, steps=chosen, ranks=[self.rank.value],
                                  trace=self.analyzer.trace, force=True)
        except LumikitError as exc:
            self.status.value = f"<span style='color:#c62828'>{html.escape(str(exc))}</span>"
            return []
        self.status.value = (f"wrote <code>{html.escape(str(written[0]))}</code>: open it at "
                             f"<a href='https://ui.perfetto.dev' target='_blank'>ui.perfetto.dev</a>")
        return written

    # -- display ---------------------------------------------------------------------------------------
    def static_html(self) -> str:
        """The current view as plain HTML (timeline image and kernel table), for output without a widget frontend."""
        png = base64.b64encode(bytes(self.timeline.value)).decode()
        step = self.selected_step
        title = f"rank {self.rank.value}, " + (f"step {step}" if step is not None else "all steps")
        return (f'<div class="{CSS_EXPLORER}"><p><b>Trace explorer</b>: {html.escape(title)}</p>'
                f'<img src="data:image/png;base64,{png}"/>{self.table.value}</div>')

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.box._repr_mimebundle_(**kwargs) or {}
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data)
        data["text/html"] = self.static_html()
        return data
