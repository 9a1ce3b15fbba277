"""A pytest plugin for the lessons' nbval run: every cell that plots must leave an image.

``scripts/run-workbook.sh`` executes the lessons under nbval once; this plugin (``-p lumikit.testing.nbval_images``)
reads the outputs nbval collected for each cell and fails a cell that calls a plotting helper but shows no
``image/png``: a figure the "How to read it" text below describes but the learner never sees. It adds no execution,
only a parse of each cell's source. Each plotting cell's first image is kept, for a person to look at, as
``<stem>-cell<N>.png`` (N: nbval's cell number) in ``$LUMIKIT_ARTIFACTS/figures``, else
``test-artifacts/figures`` (git-ignored).

A cell *plots* when it calls (outside a ``def``) one of lumikit's helpers that return a matplotlib ``Figure``
(found in lumikit's source by their ``-> Figure`` annotation), pandas' ``.plot`` / ``.plot.<kind>``, a
``.figure()`` method, or pyplot's ``subplots`` / ``figure``.
"""
from __future__ import annotations

import ast
import base64
import binascii
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

#: Method and function names that draw or make a figure whatever object they belong to.
PLOTTING_NAMES = frozenset({"plot", "figure", "subplots"})

_seen: dict[str, int] = {"cells": 0, "images": 0}


@lru_cache(maxsize=1)
def figure_helpers() -> frozenset[str]:
    """Names of lumikit's functions annotated ``-> Figure`` (the plotting helpers a lesson calls)."""
    root = Path(__file__).resolve().parents[1]
    names = set()
    for path in root.rglob("*.py"):
        try:
            text = path.read_text(encoding="utf-8")
            if "Figure" not in text:  # most modules draw nothing: skip their parse
                continue
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None
                    and not node.name.startswith("_")):
                if ast.unparse(node.returns).strip("'\"").split(".")[-1] == "Figure":
                    names.add(node.name)
    return frozenset(names)


def _called_name(func: ast.expr) -> str | None:
    """``f`` for ``f(...)`` and ``x.f(...)``; ``plot`` for ``df.plot.barh(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Attribute) and func.value.attr == "plot":
            return "plot"
        return func.attr
    return None


def plotting_calls(source: str) -> list[str]:
    """The plotting calls a cell makes at its top level (a function it only defines does not plot yet), in order.
    IPython magics and shell lines are skipped; a cell that does not parse plots nothing."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = PLOTTING_NAMES | figure_helpers()
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, ast.Call) and (name := _called_name(node.func)) in names:
            found.append(name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def first_png(outputs: list[Any]) -> bytes | None:
    """The first PNG among a cell's outputs (nbval's ``test_outputs``, base64 as Jupyter sends it), or None."""
    for out in outputs:
        data = (out.get("data") or {}).get("image/png")
        if data:
            try:
                return base64.b64decode(data)
            except (binascii.Error, TypeError, ValueError):
                return b""  # there, but not decodable: still an image output
    return None


def has_image(outputs: list[Any]) -> bool:
    """Whether a cell's outputs hold a PNG."""
    return first_png(outputs) is not None


def _keep(item: pytest.Item, png: bytes) -> None:
    """Write the figure beside the other test artefacts (best effort: a read-only checkout loses only this)."""
    base = os.environ.get("LUMIKIT_ARTIFACTS")
    folder = (Path(base) if base else item.config.rootpath / "test-artifacts") / "figures"
    stem = Path(str(getattr(item, "fspath", item.path))).stem
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{stem}-cell{getattr(item, 'cell_num', 0)}.png").write_bytes(png)
    except OSError:
        pass


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After nbval ran a cell: a plotting cell without an image fails, naming the calls it made."""
    result = yield
    outputs, cell = getattr(item, "test_outputs", None), getattr(item, "cell", None)
    if outputs is None or cell is None:
        return result
    calls = plotting_calls(cell.source)
    if calls:
        _seen["cells"] += 1
        png = first_png(outputs)
        if png is None:
            pytest.fail(f"this cell plots ({', '.join(dict.fromkeys(calls))}) but left no image output: the "
                        f"figure never reaches the learner (return it, or make it with lumikit.plotting.figure)",
                        pytrace=False)
        _seen["images"] += 1
        if png:
            _keep(item, png)
    return result


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many plotting cells ran and how many showed an image."""
    if _seen["cells"]:
        terminalreporter.write_sep("-", "plotting cells")
        terminalreporter.write_line(f"{_seen['images']} of {_seen['cells']} plotting cells left an image output")
