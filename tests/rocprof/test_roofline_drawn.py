"""The roofline picture draws what the table says: the HBM roof read back from the drawn line has slope 1 on the
log axes up to its corner, every kernel the table calls "memory, x % of roof" lies under it at that fraction, the
kernel labels do not overlap and the source footnotes are readable (issue 41: a two-point roof once cut the corner
and was drawn above kernels at 69 % of it)."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from lumikit.rocprof.course_counters import write_course_counters  # noqa: E402
from lumikit.rocprof.plots import FOOTNOTE_PT, plot_roofline, roof_vertices  # noqa: E402
from lumikit.rocprof.roofline import Roofline, read_roofline  # noqa: E402
from lumikit.rocprof.shape_roofline import shape_roofline  # noqa: E402
from lumikit.testing.counter_outputs import shapes_trace  # noqa: E402


def drawn_at(line: matplotlib.lines.Line2D, x: float) -> float:
    """The drawn line's y at ``x``: straight between its points on log-log axes, as matplotlib draws it there."""
    xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    return float(10 ** np.interp(math.log10(x), np.log10(xs), np.log10(ys)))


def hbm_peak_line(fig: matplotlib.figure.Figure) -> tuple[matplotlib.lines.Line2D, float]:
    ax = fig.axes[0]
    [line] = [ln for ln in ax.get_lines() if ln.get_label().startswith("HBM, peak")]
    return line, float(ln_value(line.get_label()))


def ln_value(label: str) -> float:
    return float(label.split("peak ")[1].split(" TB/s")[0]) * 1e12


@pytest.fixture(scope="module", params=["counters", "shapes"])
def drawn(request, tmp_path_factory) -> tuple[Roofline, matplotlib.figure.Figure]:
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "counters":
        rl = read_roofline(write_course_counters(folder / "run"))
    else:
        trace = folder / "shapes.json"
        trace.write_text(shapes_trace())
        rl = shape_roofline(trace)
    return rl, plot_roofline(rl, generated=True)


def test_the_hbm_roof_read_back_has_slope_one_below_its_corner(drawn) -> None:
    rl, fig = drawn
    line, bandwidth = hbm_peak_line(fig)
    ridge = max(r.value for r in rl.roofs if r.kind == "compute") / bandwidth
    for x in (1e-2, ridge / 4):  # two x values left of the corner
        assert drawn_at(line, x) == pytest.approx(bandwidth * x, rel=1e-9)
    assert drawn_at(line, ridge * 10) == pytest.approx(bandwidth * ridge, rel=1e-9)  # flat after it


def test_every_memory_bound_kernel_is_drawn_under_its_roof_at_the_tables_fraction(drawn) -> None:
    rl, fig = drawn
    line, _ = hbm_peak_line(fig)
    table = rl.table()
    memory = table[(table["bound"] == "memory") & table["pct_of_roof"].notna() & (table["flops_per_s"] > 0)]
    assert len(memory) >= 1
    for _, k in memory.iterrows():
        roof_here = drawn_at(line, k["arithmetic_intensity"])
        assert k["flops_per_s"] < roof_here, k["kernel"]
        assert 100 * k["flops_per_s"] / roof_here == pytest.approx(k["pct_of_roof"], rel=1e-6), k["kernel"]


def test_kernel_labels_do_not_overlap_and_footnotes_are_readable(drawn) -> None:
    _, fig = drawn
    ax = fig.axes[0]
    fig.draw_without_rendering()
    labels = [t for t in ax.texts if isinstance(t, matplotlib.text.Annotation)]
    boxes = [t.get_window_extent() for t in labels]
    assert len(boxes) >= 2
    assert not [(a.get_text(), b.get_text()) for i, (a, ba) in enumerate(zip(labels, boxes))
                for b, bb in zip(labels[i + 1:], boxes[i + 1:]) if ba.overlaps(bb)]
    notes = [t for t in ax.texts if t.get_text().startswith("[1]")]
    assert notes and all(t.get_fontsize() >= FOOTNOTE_PT >= 9 for t in notes)
    assert all(t.get_fontsize() >= 9 for t in ax.get_legend().get_texts())


def test_a_roof_is_given_its_corner_only_where_it_bends_inside_the_axes() -> None:
    assert list(roof_vertices(1e-3, 1e4, 1.6e12, 1.915e14)) == [1e-3, 1.915e14 / 1.6e12, 1e4]
    assert list(roof_vertices(1e-3, 1e4, 1.6e12, 1e9)) == [1e-3, 1e4]  # the corner left of the axes
