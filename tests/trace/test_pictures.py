"""The trace pictures and the trace explorer widget (rendered without a browser)."""
from __future__ import annotations

import gzip
import json

from matplotlib.figure import Figure

from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.plots import idle_chart, kernel_breakdown_bars, overlap_chart, step_timeline, temporal_bars
from lumikit.widgets.trace_explorer import CSS_EXPLORER, CSS_KERNEL_TABLE, TraceExplorer, kernel_table


def test_figures_show_the_analysed_values(rocm_run):
    a = TraceAnalyzer.from_path(rocm_run)
    bars = kernel_breakdown_bars(a)
    ax = bars.axes[0]
    compute_ms = [p.get_height() for p in ax.containers[0]]
    assert compute_ms == [a.get_kernel_breakdown().query("kclass == 'compute'")["total_us"].iloc[i] / 1e3
                          for i in (0, 1)]
    timeline = step_timeline(a, 0, step=11)
    labels = [t.get_text() for t in timeline.axes[0].get_yticklabels()]
    assert labels == ["GPU 0 stream 0", "GPU 0 stream 2", "host steps"]
    for fig in (temporal_bars(a), overlap_chart(a), idle_chart(a)):
        assert isinstance(fig, Figure) and fig.axes[0].get_title()


def test_kernel_table_filters_by_name(rocm_run):
    a = TraceAnalyzer.from_path(rocm_run)
    table = kernel_table(a, 0, step=10, pattern="nccl")
    assert table["kernel"].str.startswith("ncclDevKernel").all() and table["count"].tolist() == [4]


def test_explorer_renders_and_exports(rocm_run, tmp_path):
    ex = TraceExplorer(rocm_run, export_dir=tmp_path)
    assert CSS_EXPLORER in ex.box._dom_classes
    assert ex.step.options == ("all steps", 10, 11, 12, 13) and ex.step.value == 10
    assert f'class="{CSS_KERNEL_TABLE}"' in ex.table.value and bytes(ex.timeline.value).startswith(b"\x89PNG")
    ex.filter.value = "Memcpy"
    assert "Memcpy HtoD" in ex.table.value and "Cijk" not in ex.table.value
    ex.rank.value = 1
    ex.step.value = 12
    written = ex.export_slice()
    assert written == [tmp_path / "rank1-step12.pt.trace.json.gz"]
    doc = json.loads(gzip.decompress(written[0].read_bytes()))
    assert {e["name"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep")} == {"ProfilerStep#12"}
    assert "ui.perfetto.dev" in ex.status.value
    html = ex.static_html()
    assert CSS_EXPLORER in html and CSS_KERNEL_TABLE in html and "data:image/png;base64," in html
    assert "text/html" in ex._repr_mimebundle_()
