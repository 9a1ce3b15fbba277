"""The lessons' nbval run fails a cell that plots but leaves no image (lumikit.testing.nbval_images)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.testing.nbval_images import figure_helpers, has_image, plotting_calls


def test_lumikits_figure_helpers_are_found_by_their_annotation() -> None:
    assert {"timeline", "node_map", "plot_busbw", "step_timeline", "memory_timeline"} <= figure_helpers()
    assert "figure_png" not in figure_helpers()  # bytes for a widget, not a picture in the notebook


@pytest.mark.parametrize(("source", "calls"), [
    ("plot_busbw(pairs);", ["plot_busbw"]),
    ("ax = io['t'].plot.barh(logx=False)\nax.set_xlabel('s')", ["plot"]),
    ("fig, ax = plt.subplots()\nax.plot([1, 2])", ["subplots", "plot"]),
    ("card = run.report()\ncard.figure()", ["figure"]),
    ("from lumikit.smi.plots import timeline\ntimeline(snapshots)", ["timeline"]),
    ("def draw(x):\n    return timeline(x)", []),
    ("print(steps.pivot(index='step', columns='rank'))", []),
    ("%%time\ntimeline(s)", ["timeline"]),
    ("this is not python(", []),
])
def test_a_cell_plots_when_it_calls_a_plotting_helper_at_its_top_level(source: str, calls: list[str]) -> None:
    assert plotting_calls(source) == calls


def test_an_image_is_a_png_in_a_display_or_a_result() -> None:
    assert has_image([{"output_type": "stream", "text": "x"}, {"output_type": "display_data",
                                                               "data": {"image/png": "iVBOR", "text/plain": "<Fig>"}}])
    assert not has_image([{"output_type": "execute_result", "data": {"text/plain": "<Figure size 640x480>"}}])


def _cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}


@pytest.mark.notebooks
def test_under_nbval_a_plotting_cell_without_an_image_fails_and_one_with_an_image_passes(tmp_path: Path) -> None:
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "cells": [_cell("from matplotlib.figure import Figure\nfrom lumikit.plotting import figure"),
                    _cell("fig = figure(figsize=(2, 2)); fig.add_subplot().plot([0, 1]);"),
                    _cell("lost = Figure(figsize=(2, 2)); lost.add_subplot().plot([0, 1]);")]}
    path = tmp_path / "plots.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p",
                           "lumikit.testing.nbval_images", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
                           str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "LUMIKIT_ARTIFACTS": str(tmp_path / "artifacts")})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "2 passed" in out and "1 failed" in out, out
    assert "this cell plots (plot) but left no image output" in out
    assert "1 of 2 plotting cells left an image output" in out
    kept = tmp_path / "artifacts" / "figures" / "plots-cell1.png"
    assert kept.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the shown figure, for a person to look at
