"""Runs of the shipped solutions, recognised on the instructor's side: a learner's exercise cell whose code is the
solution's own (several lines, the same statements) was not written by them.

A record's ``from_solutions`` field is written by the learner's kernel and can be edited, so it only ever marks a
record down. The instructor's workbook holds ``solutions/``; each learner's clone holds their filled-in
``exercises/*.ipynb``. Both are read as text (bounded, regular files only) and compared cell by cell, comments,
blank lines and spacing aside. One-line answers are not compared: a right one-liner is the same for everyone.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ParseError
from ..files import load_json_bounded
from .progress import read_text_safely

#: Solution cells with fewer lines of code than this are not compared.
MIN_CODE_LINES = 3
#: The largest exercise notebook read.
NOTEBOOK_LIMIT = 5_000_000
_CELL_MARK = re.compile(r"^# %%(?P<head>.*)$", re.MULTILINE)
_EXERCISE = re.compile(r"^# Exercise (?P<id>\d\d\.\w+):", re.MULTILINE)


def _code(text: str) -> tuple[str, ...]:
    """The statements of a cell: no comments, blank lines, stub ``raise`` lines or spacing differences."""
    lines = []
    for line in text.splitlines():
        stripped = line.split("  #", 1)[0].strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("raise NotImplementedError"):
            continue
        lines.append(re.sub(r"\s+", "", stripped))
    return tuple(lines)


def solution_code(root: Path) -> dict[str, tuple[str, ...]]:
    """Exercise -> the statements of its solution cell (``solutions/NN_*.py``, percent format), where they are
    :data:`MIN_CODE_LINES` or more."""
    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((Path(root) / "solutions").glob("[0-9][0-9]_*.py")):
        text = path.read_text(encoding="utf-8")
        marks = list(_CELL_MARK.finditer(text))
        for mark, following in zip(marks, [*marks[1:], None]):
            if "solution" not in mark["head"]:
                continue
            body = text[mark.end():following.start() if following else len(text)]
            exercise = _EXERCISE.search(body)
            code = _code(body)
            if exercise and len(code) >= MIN_CODE_LINES:
                found[exercise["id"]] = code
    return found


def learner_code(workbook: Path, within: Path) -> dict[str, tuple[str, ...]]:
    """Exercise -> the statements of the learner's exercise cell, from ``exercises/*.ipynb`` of their clone."""
    found: dict[str, tuple[str, ...]] = {}
    try:
        paths = sorted((Path(workbook) / "exercises").glob("[0-9][0-9]_*.ipynb"))
    except OSError:
        return found
    for path in paths:
        text = read_text_safely(path, within=within, limit=NOTEBOOK_LIMIT)
        try:
            cells = load_json_bounded(text, str(path)).get("cells", []) if text else []  # type: ignore[union-attr]
        except (ParseError, AttributeError):
            continue
        for cell in cells if isinstance(cells, list) else []:
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = _source(cell)
            exercise = _EXERCISE.search(source)
            if exercise:
                found[exercise["id"]] = _code(source)
    return found


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(str(s) for s in source) if isinstance(source, list) else str(source)


def solution_cells_used(solutions: Mapping[str, tuple[str, ...]], workbook: Path, within: Path) -> list[str]:
    """The exercises whose cell in the learner's notebooks is the solution's code, statement for statement."""
    mine = learner_code(workbook, within)
    return sorted(e for e, code in solutions.items() if mine.get(e) == code)
