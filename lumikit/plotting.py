"""The one way lumikit makes a picture: a :class:`matplotlib.figure.Figure` without pyplot state.

Figures made without pyplot can be drawn from a background thread (the GPU sampler) and embedded in widgets, but
a fresh Jupyter kernel only knows how to show pyplot's figures. :func:`figure` therefore teaches the running
IPython, once, to show any returned ``Figure`` as a PNG, so a cell that ends with ``timeline(...)`` shows it; and
a figure a cell made but did not return (``plot_busbw(runs);``, or one made inside a loop) is shown when the cell
ends, as pyplot's inline backend does. A figure already drawn to PNG (shown, or embedded in a widget) is not
shown again, and figures made outside a cell's run (a widget's callback, the sampler's thread) never are.
"""
from __future__ import annotations

import io
import threading
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: One colour per kernel class (lumikit.kernels.CLASSES), shared by every picture of kernels.
CLASS_COLOURS = {"compute": "#1f77b4", "communication": "#d62728", "memory": "#2ca02c"}

#: The ``gid`` of the corner mark :func:`mark_generated` puts on a figure drawn from generated data.
GENERATED_GID = "lumikit-generated-mark"


#: Figures made on the main thread during the current cell (shown when the cell ends unless drawn to PNG). Held
#: strongly until then: a figure made in a loop and kept nowhere is otherwise collected before the cell ends.
_pending: list[Figure] = []
_in_cell = False


def figure(**kwargs: Any) -> Figure:
    """A new :class:`Figure` (same arguments as matplotlib's), shown inline when the notebook cell ends."""
    fig = Figure(**kwargs)
    if enable_notebook_display() and _in_cell and threading.current_thread() is threading.main_thread():
        _pending.append(fig)
    return fig


def _cell_started(*_: Any) -> None:
    global _in_cell
    _in_cell = True
    _pending.clear()
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        _claim_png(shell)  # pyplot may have loaded during the last cell


def _cell_ended(*_: Any) -> None:
    """Show each figure the cell made but neither returned nor drew for a widget (in the order they were made)."""
    global _in_cell
    _in_cell = False
    waiting = [fig for fig in _pending if not getattr(fig, "_lumikit_drawn", False)]
    _pending.clear()
    if waiting:
        from IPython.display import display

        display(*waiting)


def mark_generated(fig_or_ax: Figure | Axes, what: str = "data") -> Figure:
    """Write "generated <what>" just below the figure's bottom-right corner (clear of titles, legends and data; the
    saved image grows to hold it), so a picture drawn from generated data (lumikit's synthesizers) says so in the
    image itself wherever it is shown, copied or saved. Once per figure."""
    fig = fig_or_ax if isinstance(fig_or_ax, Figure) else fig_or_ax.figure
    if not is_marked_generated(fig):
        fig.text(0.995, 0.0, f"generated {what}", ha="right", va="top", fontsize=9, color="#8a1c1c",
                 style="italic", gid=GENERATED_GID, zorder=10,
                 bbox={"boxstyle": "round,pad=0.2", "facecolor": "#fff3e0", "edgecolor": "#8a1c1c", "lw": 0.6})
    return fig


def is_marked_generated(fig: Figure) -> bool:
    """Whether :func:`mark_generated` marked ``fig`` (a text artist of the figure says "generated")."""
    return any(t.get_gid() == GENERATED_GID and "generated" in t.get_text() for t in fig.texts)


def legend_outside(ax: Axes, handles: list | None = None, **kwargs: Any) -> None:
    """The axes' legend to the right of its plot area, top-aligned, so it never covers data (the saved image grows
    to hold it). ``handles`` as for :meth:`Axes.legend`; other keywords pass through."""
    kwargs = {"fontsize": "small", "loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0,
              **kwargs}
    if handles is not None:
        ax.legend(handles=handles, **kwargs)
    else:
        ax.legend(**kwargs)


def axes_or_new(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax`` when the caller passes one (to compose panels), else the single axes of a new :func:`figure`."""
    return ax if ax is not None else figure(figsize=figsize).add_subplot()


def enable_notebook_display() -> bool:
    """Register a PNG formatter for ``Figure`` in the running IPython; False outside IPython (nothing to do)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    _claim_png(shell)
    if not getattr(shell, "_lumikit_display", False):  # once per shell, even when pyplot registered a printer first
        shell._lumikit_display = True
        shell.events.register("pre_run_cell", _cell_started)
        shell.events.register("post_run_cell", _cell_ended)
        _cell_started()  # the first figure() is called from inside a running cell
    return True


def _claim_png(shell: Any) -> None:
    """Make :func:`figure_png` the PNG printer of every ``Figure``: pyplot's inline backend registers its own when
    it loads (a pandas ``.plot`` is enough), which would leave the cell-end display unhooked or show a returned
    figure twice (its printer does not mark the figure drawn)."""
    png = shell.display_formatter.formatters["image/png"]
    if png.type_printers.get(Figure) is not figure_png:
        png.for_type(Figure, figure_png)


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes: what a notebook shows (100 dpi) and a widget embeds (72 dpi, smaller)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    fig._lumikit_drawn = True  # shown, or embedded in a widget: the end of the cell does not show it again
    return buf.getvalue()
