"""The one way lumikit makes a picture: a :class:`matplotlib.figure.Figure` without pyplot state.

Figures made without pyplot can be drawn from a background thread (the GPU sampler) and embedded in widgets, but
a fresh Jupyter kernel only knows how to show pyplot's figures. :func:`figure` therefore teaches the running
IPython, once, to show any returned ``Figure`` as a PNG, so a cell that ends with ``timeline(...)`` shows it.
"""
from __future__ import annotations

import io
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: One colour per kernel class (lumikit.kernels.CLASSES), shared by every picture of kernels.
CLASS_COLOURS = {"compute": "#1f77b4", "communication": "#d62728", "memory": "#2ca02c"}



def figure(**kwargs: Any) -> Figure:
    """A new :class:`Figure` (same arguments as matplotlib's), shown inline when a notebook cell returns it."""
    enable_notebook_display()
    return Figure(**kwargs)


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
    return True


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes: what a notebook shows (100 dpi) and a widget embeds (72 dpi, smaller)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()
