"""lumikit's figures show up in a notebook when a cell returns them, without pyplot or %matplotlib."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from lumikit.plotting import enable_notebook_display, figure, figure_png


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


def test_a_returned_figure_is_formatted_as_png_in_ipython(shell) -> None:
    fig = figure(figsize=(3, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    data, _ = shell.display_formatter.format(fig)
    assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_outside_ipython_nothing_is_registered() -> None:
    assert enable_notebook_display() is False


def test_widget_images_are_smaller_than_notebook_images() -> None:
    fig = figure(figsize=(4, 3))
    fig.add_subplot().bar(["a", "b"], [1, 2])
    assert len(figure_png(fig, dpi=72)) < len(figure_png(fig))
