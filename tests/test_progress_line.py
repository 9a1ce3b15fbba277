"""A run's progress line in a notebook is text only: no empty tqdm box before the run's name."""
from __future__ import annotations

import pytest

from lumikit.launch.backend import _text_only


def test_the_notebook_bar_of_a_run_without_a_total_shows_no_box() -> None:
    notebook = pytest.importorskip("tqdm.notebook")
    bar = notebook.tqdm(total=None, desc="07-ddp-x1y2: RUNNING", bar_format="{desc} [{elapsed}]", leave=True)
    try:
        _text_only(bar)
        shown = [type(w).__name__ for w in bar.container.children if w.layout.display != "none"]
    finally:
        bar.close()
    assert shown == ["HTML", "HTML"]  # the run's name and state, and the elapsed time


def test_a_terminal_bar_is_left_alone() -> None:
    from tqdm.std import tqdm

    bar = tqdm(total=None, desc="run", disable=True)
    _text_only(bar)  # no widget: nothing to hide, no error
    assert not hasattr(bar, "container")
