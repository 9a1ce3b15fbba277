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


def _outputs(shell, code: str) -> list[str]:
    """The MIME bundles a cell displays (its result and display() calls), in order, as their first MIME type."""
    shown: list[str] = []
    original = shell.display_pub.publish

    def publish(data, *args, **kwargs):
        shown.append("image/png" if "image/png" in data else sorted(data)[0])

    shell.display_pub.publish = publish
    shell.displayhook.write_format_data = lambda data, md=None: shown.append(
        "image/png" if "image/png" in data else sorted(data)[0])
    try:
        shell.run_cell(code, store_history=True)
    finally:
        shell.display_pub.publish = original
    return shown


def test_a_figure_is_shown_even_when_the_cell_ends_with_a_semicolon(shell) -> None:
    shell.run_cell("from lumikit.plotting import figure, figure_png")
    code = "fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1]);"
    assert _outputs(shell, code) == ["image/png"]


def test_a_returned_figure_is_shown_once_not_twice(shell) -> None:
    shell.run_cell("from lumikit.plotting import figure, figure_png")
    code = "fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1])\nfig"
    assert _outputs(shell, code) == ["image/png"]


def test_figures_made_in_a_loop_are_all_shown(shell) -> None:
    shell.run_cell("from lumikit.plotting import figure, figure_png")
    code = "for i in range(3):\n    figure(figsize=(2, 2)).add_subplot().plot([0, i])"
    assert _outputs(shell, code) == ["image/png"] * 3


def test_a_figure_drawn_for_a_widget_is_not_shown_again(shell) -> None:
    shell.run_cell("from lumikit.plotting import figure, figure_png")
    code = "fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1]); png = figure_png(fig, dpi=72)"
    assert _outputs(shell, code) == []


def test_figures_kept_nowhere_survive_a_garbage_collection_until_the_cell_ends(shell) -> None:
    shell.run_cell("import gc\nfrom lumikit.plotting import figure, figure_png")
    code = "for i in range(3):\n    figure(figsize=(2, 2)).add_subplot().plot([0, i]); gc.collect()"
    assert _outputs(shell, code) == ["image/png"] * 3


def test_mark_generated_writes_once_below_the_corner() -> None:
    from lumikit.plotting import is_marked_generated, mark_generated

    fig = figure(figsize=(3, 2))
    fig.add_subplot().set_title("a title the mark must not cover")
    mark_generated(fig, "session")
    mark_generated(fig, "session")
    (mark,) = fig.texts
    assert mark.get_text() == "generated session" and mark.get_position()[1] <= 0.0 and is_marked_generated(fig)


def test_figures_still_show_once_after_pyplot_registered_its_own_printer(shell) -> None:
    from matplotlib.figure import Figure

    # what pyplot's inline backend does when a pandas .plot loads it before any lumikit figure
    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda fig: b"\x89PNG pyplot's printer")
    shell.run_cell("from lumikit.plotting import figure")
    assert _outputs(shell, "fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1]);") == ["image/png"]
    assert _outputs(shell, "fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1])\nfig") == ["image/png"]
