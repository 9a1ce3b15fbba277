"""The figures of modules 05-09 in a real browser: run all cells in JupyterLab, check that every cell that plots
shows a drawn image, and keep a screenshot of each figure as JupyterLab draws it (``<stem>-cell<N>.png`` in the
screenshots folder) for a person to look at: legends off the data, labels readable, the generated mark.
Each image's drawn and natural width are printed (a figure scaled down shrinks its labels)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lumikit.testing.browser import JupyterLab, KernelReport, run_notebook
from lumikit.testing.nbval_images import plotting_calls

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]

# Per code cell (index in the notebook) its drawn images: rendered and natural sizes; each image gets an id to
# screenshot it by.
FIGURES_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  return w.content.widgets.map((cell, i) => {
    const imgs = [...cell.node.querySelectorAll('.jp-OutputArea-output img')];
    return imgs.map((img, k) => {
      img.setAttribute('data-lumikit-figure', `cell${i}-${k}`);
      return {id: `cell${i}-${k}`, drawn: img.complete && img.naturalWidth > 0, width: img.width,
              natural_width: img.naturalWidth};
    });
  });
}"""


def plotting_cells(stem: str) -> list[int]:
    """Indexes of the notebook's code cells that plot (the same rule as the nbval run's image count)."""
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    return [i for i, c in enumerate(cells) if c["cell_type"] == "code"
            and plotting_calls("".join(c["source"]) if isinstance(c["source"], list) else c["source"])]


def _problems(report: KernelReport) -> str:
    return report.text() if report.errors or not report.finished else ""


# 07 and 09 train and time ten and nine runs: 130-180 s each under run-all on a loaded 2-core machine, against
# 12-19 s for 05 and 08. `make test` runs 05 and 08; LUMIKIT_BROWSER_ALL=1 adds 07 and 09. The nbval run of
# `make test` checks every module's plotting cells for an image either way (lumikit.testing.nbval_images).
ALL = os.environ.get("LUMIKIT_BROWSER_ALL") == "1"
SLOW = pytest.mark.skipif(not ALL, reason="a few minutes of training runs: LUMIKIT_BROWSER_ALL=1 runs it")


@pytest.mark.parametrize("stem", ["05_logging_and_profiling", pytest.param("07_several_gpus", marks=SLOW),
                                  "08_several_nodes", pytest.param("09_data_and_io", marks=SLOW)])
def test_every_plotting_cell_shows_its_figure(lab_page, lab_server: JupyterLab, screenshots: Path,
                                              workbook_notebook, stem: str) -> None:
    run = run_notebook(lab_page, lab_server, workbook_notebook(stem), timeout_s=540)
    assert not _problems(run.report), _problems(run.report)
    figures = lab_page.evaluate(FIGURES_JS)
    missing, saved = [], []
    for index in plotting_cells(stem):
        drawn = [f for f in figures[index] if f["drawn"]]
        if not drawn:
            missing.append(index + 1)
        for k, fig in enumerate(drawn):
            shot = screenshots / (f"{stem}-cell{index + 1}" + (f"-{k}" if k else "") + ".png")
            element = lab_page.locator(f'[data-lumikit-figure="{fig["id"]}"]')
            element.scroll_into_view_if_needed(timeout=5000)
            shot.write_bytes(element.screenshot(timeout=10000))
            shot.chmod(0o644)
            saved.append(f"{shot.name} ({fig['width']} of {fig['natural_width']} px)")
    print(f"{stem}: ran in {run.run_s:.1f} s; {len(saved)} figures: {', '.join(saved)}")
    assert plotting_cells(stem), f"{stem} has no plotting cell: the test checks nothing"
    assert not missing, f"{stem}: cells {missing} plot but show no drawn image in the browser"
