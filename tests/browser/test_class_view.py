"""The live class view in a real browser: an instructor notebook (written here) shows ``ClassView`` of a GENERATED
class folder (lumikit.testing.class_folder: 30 learners x 12 exercises, its stuck learners known by construction,
plus hostile learners). The page must show one row per learner, a red-marked cell for each stuck learner on the
exercise they are stuck on, the stuck list and the commonest mistake of each exercise in focus."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.testing.browser import JupyterLab, failure_message, probe_widget, run_notebook, save_screenshots
from lumikit.testing.class_folder import write_class

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NAME = "class_view.ipynb"
NOW = 1_790_000_000.0
LEARNERS, EXERCISES = 30, 12


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c} for c in cells],
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                   "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def _check_js(stuck: list[list[str]], major: dict[str, str]) -> str:
    """A JS check of the widget: every stuck (learner, exercise) cell visible and marked, nothing else marked,
    one row per learner, every major mistake listed."""
    return f"""el => {{
  const want = {json.dumps(sorted(f"{learner}/{exercise}" for learner, exercise in stuck))};
  const marked = [...el.querySelectorAll('table.lumikit-class-grid td.lumikit-stuck')]
      .filter(c => c.offsetWidth > 0 && c.offsetHeight > 0 && c.innerText.trim() === '!')
      .map(c => c.dataset.learner + '/' + c.dataset.exercise).sort();
  const rows = el.querySelectorAll('table.lumikit-class-grid tbody tr').length;
  const listed = el.querySelectorAll('ul.lumikit-class-stuck li').length;
  const mistakes = el.querySelector('ul.lumikit-class-mistakes');
  const named = {json.dumps(sorted(major.values()))}.filter(m => mistakes && mistakes.innerText.includes(m));
  return {{ok: JSON.stringify(marked) === JSON.stringify(want) && rows === {LEARNERS + 1} &&
               listed === want.length && named.length === {len(major)},
          detail: `marked ${{JSON.stringify(marked)}} (want ${{JSON.stringify(want)}}), ${{rows}} rows, ` +
                  `${{listed}} stuck listed, ${{named.length}} of {len(major)} major mistakes named`}};
}}"""


def test_class_view_marks_the_stuck_learners_of_a_generated_class(lab_page, lab_server: JupyterLab,
                                                                 screenshots: Path) -> None:
    made = write_class(lab_server.root / "class", learners=LEARNERS, exercises=EXERCISES, now=NOW)
    (lab_server.root / "class" / ".hidden").mkdir()
    (lab_server.root / "class" / "evil\x1b[2Jname").mkdir()  # a learner with no progress/ and a hostile name
    cells = [
        f"import sys\nsys.path.insert(0, {str(REPO)!r})",  # the kernel runs this clone's lumikit
        "from lumikit.widgets.class_view import ClassView",
        f"view = ClassView('class', now={NOW!r})\nview",
    ]
    (lab_server.root / NAME).write_text(_notebook(cells))
    run = run_notebook(lab_page, lab_server, NAME)
    selector = ".jupyter-widgets.lumikit-class-view"
    probe = probe_widget(lab_page, selector, _check_js([list(k) for k in made.stuck], made.major), timeout_s=30)
    shots = save_screenshots(lab_page, screenshots, "class-view", selector)
    print(f"{NAME}: ran in {run.run_s:.1f} s; {probe.detail}; screenshots {[p.name for p in shots]}")

    assert run.report.finished and not run.report.errors, failure_message("the class view", probe, run, lab_server)
    assert probe.ok, failure_message("the class view", probe, run, lab_server)
    assert [p.name for p in shots] == ["class-view-page.png", "class-view-widget.png"]
