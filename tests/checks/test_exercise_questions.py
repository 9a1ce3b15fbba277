"""The generated exercises keep their questions: every place to answer follows the question it answers, and every
exercise notebook says what to find and why it matters."""
from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

from lumikit.checks.instructor.generate import ANSWER_PLACEHOLDER

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
FILES = sorted(EXERCISES.glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_place_to_answer_follows_its_question(path: Path) -> None:
    notebook = jupytext.read(path)
    places = [c for c in notebook.cells if c.cell_type == "markdown" and ANSWER_PLACEHOLDER in c.source]
    assert places, f"{path.name}: no discussion question"
    for cell in places:
        question = cell.source.split(ANSWER_PLACEHOLDER)[0]
        assert "?" in question and question.lstrip().startswith("**"), cell.source
    for cell in notebook.cells:
        if "exercise" in cell.metadata.get("tags", []) and cell.cell_type == "code":
            statement = cell.source.split("\n# Hint")[0].split(":", 1)[1]
            assert cell.source.startswith("# Exercise ") and len(statement.split()) >= 8, cell.source


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_exercise_notebook_says_what_to_find_and_why_it_matters(path: Path) -> None:
    intro = " ".join(jupytext.read(path).cells[0].source.lower().split())
    assert "why it matters" in intro, path.name


def test_the_seeds_seven_cifar_questions_are_asked_in_module_07() -> None:
    text = (EXERCISES / "07_several_gpus.py").read_text()
    for n in range(1, 8):
        assert f"**Seed question {n} (" in text
    assert "Why is the first epoch slower than the other epochs?" in text
