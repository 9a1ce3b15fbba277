"""Hints on demand, in two levels: ``hint("04.3")`` shows the idea, a second call the tool as well.

The hints are written in the solutions (a ``# Hint:`` line, the idea, and a ``# Tool:`` line, what to use) and
the generator collects them into ``exercises/hints.json``, so that the question a learner reads holds no hint and
the learner can try first. A check adds the idea to its failure from the learner's second failed attempt on, and
the tool from the third (:func:`lumikit.checks.framework.check` counts the attempts in the progress folder).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .learner import workbook_root

#: The file the generator writes beside the exercises: exercise id -> {"idea": ..., "tool": ...}.
HINTS_FILE = "hints.json"
_calls: dict[str, int] = {}


def hints_path() -> Path | None:
    """``exercises/hints.json`` of the learner's workbook, else of the checkout lumikit was imported from."""
    for root in (workbook_root(), Path(__file__).resolve().parents[2]):
        if root is not None and (root / "exercises" / HINTS_FILE).is_file():
            return root / "exercises" / HINTS_FILE
    return None


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, dict[str, str]]:
    file = Path(path)
    if file.stat().st_size > 1_000_000:
        return {}
    data = json.loads(file.read_text(encoding="utf-8"))
    return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in data.items() if isinstance(v, dict)}


def all_hints() -> dict[str, dict[str, str]]:
    """Every exercise's hints (empty when the workbook has no ``exercises/hints.json``)."""
    path = hints_path()
    try:
        return _load(str(path)) if path is not None else {}
    except (OSError, ValueError):
        return {}


def hint_levels(exercise: str) -> list[str]:
    """The exercise's help in order: ``"Idea: ..."``, then ``"Tool: ..."`` (either may be missing)."""
    entry = all_hints().get(exercise, {})
    return [f"{label}: {entry[key]}" for key, label in (("idea", "Idea"), ("tool", "Tool")) if entry.get(key)]


@dataclass(frozen=True)
class Hint:
    """The help shown for one exercise: the idea, and from the second call on the tool too."""

    exercise: str
    lines: tuple[str, ...]
    more: bool

    def __str__(self) -> str:
        text = f"Hint for {self.exercise}: " + " ".join(self.lines)
        if self.more:
            text += f' (Still stuck? Call hint("{self.exercise}") again for the tool.)'
        return text

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return "\n\n".join([f"**Hint for {self.exercise}.**", *self.lines]
                           + ([f'_Still stuck? Call `hint("{self.exercise}")` again for the tool._'] if self.more
                              else []))


def hint(exercise: str) -> Hint:
    """The help for ``exercise`` (e.g. ``"04.3"``): the idea first, the tool from the second call on."""
    levels = hint_levels(exercise)
    if not levels:
        known = ", ".join(sorted(all_hints())[:6])
        return Hint(exercise, (f"no hint is known for {exercise!r}" + (f" (known: {known}, ...)" if known else
                                                                      " (exercises/hints.json is missing: run "
                                                                      "`make exercises`)") + ".",), False)
    _calls[exercise] = _calls.get(exercise, 0) + 1
    shown = levels[:1] if _calls[exercise] == 1 else levels
    return Hint(exercise, tuple(shown), len(shown) < len(levels))


def _squeezed(text: str) -> str:
    """Code or prose without spaces and backquotes, to compare an expression with a hint's words."""
    return "".join(text.replace("`", "").split())


def give_aways(source: str, hints_of_cell: dict[str, str]) -> list[str]:
    """The right-hand sides of a solution cell's assignments that its hints spell out (a hint names the idea or the
    tool, never the expression). An expression shorter than 8 characters (``4``, ``"b"``, ``x[0]``) is a value or
    a name the question already holds, judged by verify's leak check instead."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    text = _squeezed(" ".join(hints_of_cell.values()))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            expression = _squeezed(ast.unparse(node.value))
            variants = {expression, expression.replace("'", '"'), expression.replace('"', "'")}
            if len(expression) >= 8 and any(v in text for v in variants):
                found.append(ast.unparse(node.value))
    return found
