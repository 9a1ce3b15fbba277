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
import weakref
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: One colour per kernel class (lumikit.kernels.CLASSES), shared by every picture of kernels.
CLASS_COLOURS = {"compute": "#1f77b4", "communication": "#d62728", "memory": "#2ca02c"}



#: Figures made on the main thread during the current cell and not yet drawn to PNG (shown when the cell ends).
_pending: list[weakref.ref[Figure]] = []
_in_cell = False


def figure(**kwargs: Any) -> Figure:
    """A new :class:`Figure` (same arguments as matplotlib's), shown inline when the notebook cell ends."""
    fig = Figure(**kwargs)
    if enable_notebook_display() and _in_cell and threading.current_thread() is threading.main_thread():
        _pending.append(weakref.ref(fig))
    return fig


def _cell_started(*_: Any) -> None:
    global _in_cell
    _in_cell = True
    _pending.clear()


def _cell_ended(*_: Any) -> None:
    """Show each figure the cell made but neither returned nor drew for a widget (in the order they were made)."""
    global _in_cell
    _in_cell = False
    waiting = [fig for ref in _pending if (fig := ref()) is not None and not getattr(fig, "_lumikit_drawn", False)]
    _pending.clear()
    if waiting:
        from IPython.display import display

        display(*waiting)


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
    png = shell.display_formatter.formatters["image/png"]
    if Figure not in png.type_printers:
        png.for_type(Figure, figure_png)
        shell.events.register("pre_run_cell", _cell_started)
        shell.events.register("post_run_cell", _cell_ended)
        _cell_started()  # the first figure() is called from inside a running cell
    return True


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes: what a notebook shows (100 dpi) and a widget embeds (72 dpi, smaller)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    fig._lumikit_drawn = True  # shown, or embedded in a widget: the end of the cell does not show it again
    return buf.getvalue()
