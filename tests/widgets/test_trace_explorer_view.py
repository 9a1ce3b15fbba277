"""The trace explorer's view: the filter reaches the timeline, the button's label fits, the table's columns have
room, and the pictures of a generated trace say so."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.plotting import is_marked_generated
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.plots import step_timeline
from lumikit.trace.synth import SynthSpec, write_synthetic
from lumikit.widgets.trace_explorer import TraceExplorer, kernel_table, kernel_table_html


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> TraceAnalyzer:
    folder = tmp_path_factory.mktemp("explorer")
    write_synthetic(folder, SynthSpec(ranks=2, steps=2, layers=2))
    return TraceAnalyzer.from_path(folder)


def test_the_filter_changes_the_timeline_as_well_as_the_table(analyzer: TraceAnalyzer, tmp_path: Path) -> None:
    ex = TraceExplorer(analyzer, export_dir=tmp_path)
    before = bytes(ex.timeline.value)
    ex.filter.value = "nccl"
    assert bytes(ex.timeline.value) != before
    assert "ncclDevKernel" in ex.table.value and "Cijk" not in ex.table.value


def test_a_highlighted_timeline_greys_out_what_does_not_match(analyzer: TraceAnalyzer) -> None:
    step = int(analyzer.steps(0)["step"].iloc[0])
    nccl = int(kernel_table(analyzer, 0, step, "nccl")["count"].sum())
    fig = step_timeline(analyzer, 0, step, highlight="nccl")
    ax = fig.axes[0]
    assert f"names containing 'nccl' ({nccl})" in ax.get_title()
    assert "not matching" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert is_marked_generated(fig)


def test_the_all_steps_legend_sits_outside_the_plot_area(analyzer: TraceAnalyzer) -> None:
    fig = step_timeline(analyzer, 0)
    fig.canvas.draw()
    legend, ax = fig.axes[0].get_legend(), fig.axes[0]
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1  # right of the data, never over it
    assert ax.get_title().endswith("all steps")


def test_the_export_button_sizes_to_its_label_and_table_columns_have_room(analyzer: TraceAnalyzer,
                                                                          tmp_path: Path) -> None:
    ex = TraceExplorer(analyzer, export_dir=tmp_path)
    assert ex.export.layout.width == "auto" and ex.export.layout.min_width == "230px"
    html = kernel_table_html(kernel_table(analyzer, 0))
    assert html.count("padding:2px 12px 2px 0") > 5 and "text-align:right" in html
