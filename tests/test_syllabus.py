"""The map in module 00 and the first and last cells of every lesson agree with lumikit.syllabus, and every link of
the map opens a notebook that exists."""
from __future__ import annotations

import re

import jupytext
import pytest

from lumikit.syllabus import (EXERCISES, MODULES, NOTEBOOKS, SOLUTIONS, glance_markdown, key_points_markdown,
                              module, stems, syllabus_markdown)

from .conftest import REPO


def _markdown_cells(stem: str) -> list[str]:
    notebook = jupytext.read(REPO / NOTEBOOKS / f"{stem}.py")
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def test_every_lesson_has_an_entry_and_every_entry_a_lesson() -> None:
    assert stems(REPO) == [m.stem for m in MODULES]


@pytest.mark.parametrize("entry", MODULES, ids=lambda m: m.number)
def test_lesson_opens_with_its_glance_and_closes_with_its_key_points(entry) -> None:
    cells = _markdown_cells(entry.stem)
    assert cells[0] == glance_markdown(entry.number)
    assert f"About **{entry.minutes} minutes**" in cells[0]
    assert cells[-1] == key_points_markdown(entry.number)
    assert len(entry.objectives) >= 2 and len(entry.key_points) >= 2


def test_module_00_shows_the_whole_map_with_minutes_for_every_module() -> None:
    text = "\n".join(_markdown_cells("00_start_here"))
    assert syllabus_markdown() in text
    for entry in MODULES:
        assert re.search(rf"\| \*\*{entry.number}\*\* .*? \| {entry.minutes} \|", text), entry.number


def test_map_links_open_existing_notebooks() -> None:
    links = re.findall(r"\]\(([^)]+\.ipynb)\)", syllabus_markdown())
    assert len(links) == 1 + 3 * (len(MODULES) - 1)
    for link in links:
        assert (REPO / NOTEBOOKS / link).resolve().is_file(), link
    assert any(link.startswith(f"../{EXERCISES}/") for link in links)
    assert any(link.startswith(f"../{SOLUTIONS}/") for link in links)


def test_prerequisites_come_earlier_and_unknown_modules_are_refused() -> None:
    for entry in MODULES:
        assert all(p < entry.number for p in entry.prerequisites), entry.number
    with pytest.raises(KeyError, match="no module '99'"):
        module("99")


@pytest.mark.parametrize("entry", MODULES, ids=lambda m: m.number)
def test_every_module_fits_its_stated_minutes_by_the_content_estimate(entry) -> None:
    """The estimate counts the lesson's words and cells, the runs the lesson and solution launch, and the exercises
    (lumikit.checks.instructor.notes): a module that needs more than it says is a plan a class cannot keep."""
    from lumikit.checks.instructor.notes import module_estimate

    assert module_estimate(REPO, entry) <= entry.minutes, f"module {entry.number}: raise its minutes or trim it"
