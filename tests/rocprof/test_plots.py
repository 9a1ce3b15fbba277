"""The rocprof pictures draw the values of the table."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from lumikit.rocprof import parse_rocprof_stats  # noqa: E402
from lumikit.plotting import CLASS_COLOURS  # noqa: E402
from lumikit.rocprof.plots import plot_class_totals, plot_kernel_ranking  # noqa: E402

V1 = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
      '"gemm(float*)",4,3000000,750000,75.0\n"ncclDevKernel_AllReduce",1,1000000,1000000,25.0\n')


def test_ranking_bars_are_in_ms_largest_on_top_and_coloured_by_class():
    ax = plot_kernel_ranking(parse_rocprof_stats(V1)).axes[0]
    bars = ax.patches
    assert [round(b.get_width(), 3) for b in bars] == [1.0, 3.0]  # drawn bottom-up
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ncclDevKernel_AllReduce", "gemm"]
    assert matplotlib.colors.to_hex(bars[0].get_facecolor()) == CLASS_COLOURS["communication"]


def test_class_totals_bar_shows_shares():
    ax = plot_class_totals(parse_rocprof_stats(V1)).axes[0]
    assert sorted(t.get_text().strip() for t in ax.texts) == ["0.0 %", "25.0 %", "75.0 %"]


def test_a_roofline_from_shapes_calls_its_points_operators_not_counted_kernels(tmp_path):
    from lumikit.rocprof.plots import plot_roofline
    from lumikit.rocprof.shape_roofline import shape_roofline
    from lumikit.testing.counter_outputs import shapes_trace

    trace = tmp_path / "shapes.json"
    trace.write_text(shapes_trace())
    labels = [t.get_text() for t in plot_roofline(shape_roofline(trace)).axes[0].get_legend().get_texts()]
    assert "operators (from shapes)" in labels and "kernels (counters)" not in labels
