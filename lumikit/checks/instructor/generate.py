"""The exercise generator: ``solutions/NN_name.py`` is the one source; ``exercises/NN_name.py`` is derived from it.

A code cell tagged ``solution`` becomes a stub tagged ``exercise``: its leading comment lines (the question,
``# Exercise NN.k:``) without the ``# Hint:`` and ``# Tool:`` lines, then ``name = None`` for every name the solution
binds at module scope, then ``raise NotImplementedError(...)`` saying how to ask for a hint. The hints go to
``exercises/hints.json`` (shown on demand by :func:`lumikit.checks.hints.hint`). A markdown cell tagged ``solution``
opens with the question(s) it answers, then a line starting ``**Answer.**``: the exercise keeps the question and puts a place to
answer where the answer was. Every other cell is copied unchanged. The paired ``.ipynb`` files (no outputs) are
written for both folders. ``python -m lumikit.checks.instructor.generate --check`` writes nothing and exits 1
naming the files that drift.
"""
from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import jupytext
import nbformat
from nbformat import NotebookNode

from ...files import read_text, write_atomic
from ...errors import LumikitError, ParseError
from ..conventions import (ANSWER_PLACEHOLDER, EXERCISE_TAG, KERNELSPEC, NOTEBOOK_FILE, SOLUTION_TAG,
                          add_folder_arguments)
from ..hints import HINTS_FILE


_EXERCISE_LINE = re.compile(r"^#\s*Exercise\s+(?P<id>[\w.-]+?)\s*:\s*(?P<text>.*)$")
_HINT_LINE = re.compile(r"^#\s*Hint\s*:\s*(?P<hint>.+?)\s*$")
_TOOL_LINE = re.compile(r"^#\s*Tool\s*:\s*(?P<tool>.+?)\s*$")
_HEADER = re.compile(r"\A# ---\n(?:#.*\n)*?# ---\n")
_ANSWER_LINE = re.compile(r"^\s*\*\*Answer\b")


@dataclass(frozen=True)
class PlannedFile:
    """One file the generator owns, with the exact text it should hold."""

    path: Path
    text: str


def solution_files(solutions_dir: Path) -> list[Path]:
    """The solution sources (``NN_name.py``) in a folder, sorted by name."""
    solutions_dir = Path(solutions_dir)
    if not solutions_dir.is_dir():
        raise LumikitError(f"{solutions_dir}: no such folder of solutions. Fix: run from the repository root "
                           f"or pass --solutions DIR.")
    return sorted(p for p in solutions_dir.iterdir() if NOTEBOOK_FILE.match(p.name))


def assigned_names(source: str, *, where: str = "<cell>") -> list[str]:
    """Names a cell binds at module scope (assignments, loop/with targets, defs, classes), in order of appearance.

    Imports are left out on purpose: put imports in a cell before the exercise. IPython magics are understood.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)
    try:
        tree = ast.parse(python)
    except SyntaxError as exc:
        raise ParseError(f"the solution cell is not valid Python ({exc.msg}). Fix the cell",
                         source=where, line_no=exc.lineno, line=exc.text) from None
    collector = _ModuleScopeNames()
    collector.visit(tree)
    return list(dict.fromkeys(collector.names))


class _ModuleScopeNames(ast.NodeVisitor):
    """Collects names stored at module scope, without entering functions, classes, lambdas or comprehension targets."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.names.append(node.id)

    def _visit_definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.names.append(node.name)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_definition

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        for condition in node.ifs:
            self.visit(condition)


def cell_hints(source: str) -> dict[str, str]:
    """The help a solution cell's leading comments hold: ``idea`` (``# Hint:``) and ``tool`` (``# Tool:``); comment
    lines right after either continue it."""
    out: dict[str, str] = {}
    current = None
    for line in _leading_comments(source):
        if m := _HINT_LINE.match(line):
            current = "idea"
            out.setdefault(current, m["hint"])
        elif m := _TOOL_LINE.match(line):
            current = "tool"
            out.setdefault(current, m["tool"])
        elif current and not _EXERCISE_LINE.match(line) and line.lstrip("# ").strip():
            out[current] += " " + line.lstrip("# ").strip()
        else:
            current = None
    return out


def _help_lines(leading: list[str]) -> set[int]:
    """The indexes of the hint and tool lines (with their continuation lines) among a cell's leading comments."""
    out, inside = set(), False
    for i, line in enumerate(leading):
        if _HINT_LINE.match(line) or _TOOL_LINE.match(line):
            inside = True
        elif _EXERCISE_LINE.match(line) or not line.lstrip("# ").strip():
            inside = False
        if inside:
            out.add(i)
    return out


def _leading_comments(source: str) -> list[str]:
    leading: list[str] = []
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            break
        leading.append(line)
    while leading and not leading[-1].strip():
        leading.pop()
    return leading


def stub_source(source: str, *, where: str, prefix: str | None = None) -> tuple[str, str]:
    """The exercise stub for one solution code cell, and the exercise id it names.

    The question stays; the ``# Hint:`` and ``# Tool:`` lines go (to ``exercises/hints.json``, shown on demand by
    ``hint("NN.k")``), so the learner can try first. ``where`` names the cell in error messages; ``prefix`` (the
    file's ``NN``) must start the exercise id.
    """
    leading = _leading_comments(source)
    exercise = next((m for m in map(_EXERCISE_LINE.match, leading) if m), None)
    hint = next((m for m in map(_HINT_LINE.match, leading) if m), None)
    if exercise is None:
        raise ParseError("a solution cell must open with a comment line `# Exercise NN.k: <the question>`. "
                         "Fix: add it above the code", source=where)
    if hint is None:
        raise ParseError(f"solution cell of exercise {exercise['id']} has no `# Hint: ...` line. "
                         "Fix: add one to its leading comments", source=where)
    exercise_id = exercise["id"]
    if prefix is not None and not exercise_id.startswith(f"{prefix}."):
        raise ParseError(f"exercise id {exercise_id!r} does not belong to this notebook. "
                         f"Fix: number it {prefix}.1, {prefix}.2, ...", source=where)
    help_lines = _help_lines(leading)
    question = [line for i, line in enumerate(leading) if i not in help_lines]
    body = [f"{name} = None" for name in assigned_names(source, where=where)]
    # short lines: the help as comments, the raise itself well inside a notebook's width
    message = json.dumps(f"Exercise {exercise_id}: write your answer above, then delete this line", ensure_ascii=False)
    help_comments = ["# Your answer replaces each None; then delete the `raise` line below.",
                     f"# Stuck? from lumikit.checks import hint; hint({json.dumps(exercise_id)})"]
    return "\n".join([*question, *body, *help_comments, f"raise NotImplementedError({message})"]), exercise_id


def question_source(source: str, *, where: str) -> str:
    """The exercise version of a solution's discussion cell: its question(s), then a place to answer."""
    lines = source.splitlines()
    cut = next((i for i, line in enumerate(lines) if _ANSWER_LINE.match(line)), None)
    question = "\n".join(lines[:cut] if cut is not None else []).rstrip()
    if cut is None or "?" not in question:
        raise ParseError("a discussion cell must open with the question(s) it answers, then a line starting "
                         "`**Answer.**`. Fix: write the question above the answer", source=where)
    return f"{question}\n\n{ANSWER_PLACEHOLDER}"


def exercise_notebook(solution: NotebookNode, *, where: str, prefix: str | None = None) -> NotebookNode:
    """The exercise version of a solution notebook: solution cells replaced by stubs, every other cell as is."""
    notebook = copy.deepcopy(solution)
    seen: dict[str, int] = {}
    for index, cell in enumerate(notebook.cells):
        tags = list(cell.metadata.get("tags", []))
        if SOLUTION_TAG not in tags:
            continue
        cell_where = f"{where}, cell {index + 1}"
        if cell.cell_type == "code":
            cell.source, exercise_id = stub_source(cell.source, where=cell_where, prefix=prefix)
            if exercise_id in seen:
                raise ParseError(f"exercise id {exercise_id} is used twice (also in cell {seen[exercise_id]}). "
                                 "Fix: give each exercise its own number", source=cell_where)
            seen[exercise_id] = index + 1
        else:
            cell.source = question_source(cell.source, where=cell_where)
        cell.metadata["tags"] = [EXERCISE_TAG if t == SOLUTION_TAG else t for t in tags]
    return notebook


def percent_text(notebook: NotebookNode, *, like: str) -> str:
    """The notebook as Jupytext percent text, keeping the YAML header of ``like`` (its source) byte for byte."""
    text = jupytext.writes(notebook, fmt="py:percent")
    source_header, written_header = _HEADER.match(like), _HEADER.match(text)
    if source_header and written_header:  # jupytext stamps its own version into the header; keep the source's
        text = source_header.group(0) + text[written_header.end():]
    return text


def ipynb_text(notebook: NotebookNode) -> str:
    """The notebook as ``.ipynb`` JSON with no outputs, stable cell ids and the ``python3`` kernel."""
    cells = []
    seen: dict[str, int] = {}
    for cell in notebook.cells:
        digest = hashlib.sha1(f"{cell.cell_type}\0{cell.source}".encode()).hexdigest()[:8]
        seen[digest] = seen.get(digest, 0) + 1
        cell_id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
        metadata = {"tags": list(cell.metadata["tags"])} if cell.metadata.get("tags") else {}
        if cell.cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(cell.source, id=cell_id, metadata=metadata))
        elif cell.cell_type == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(cell.source, id=cell_id, metadata=metadata))
        else:
            cells.append(nbformat.v4.new_raw_cell(cell.source, id=cell_id, metadata=metadata))
    metadata = copy.deepcopy(dict(notebook.metadata))
    text_options = dict(metadata.pop("jupytext", {}))
    text_options.pop("text_representation", None)
    text_options["formats"] = "ipynb,py:percent"
    metadata["jupytext"] = text_options
    metadata.setdefault("kernelspec", dict(KERNELSPEC))
    out = nbformat.v4.new_notebook(cells=cells, metadata=metadata)
    return nbformat.writes(out) + "\n"


#: A notebook of the course is well under a megabyte; a larger file is not one.
NOTEBOOK_MAX_BYTES = 16 << 20


def _current(path: Path) -> str:
    """What a generated file holds now (bounded, a regular file only: anything else is refused at once)."""
    return read_text(path, "a generated exercise notebook", limit=NOTEBOOK_MAX_BYTES)


def planned_files(solutions_dir: Path, exercises_dir: Path) -> list[PlannedFile]:
    """Every file the generator writes for these folders, with its exact content."""
    exercises_dir = Path(exercises_dir)
    planned: list[PlannedFile] = []
    hints: dict[str, dict[str, str]] = {}
    for source_path in solution_files(solutions_dir):
        try:  # a FIFO, /dev/zero or a 3 GB file among the solutions is refused at once (lumikit.files)
            text = read_text(source_path, "a solution notebook (NN_name.py)", limit=NOTEBOOK_MAX_BYTES, errors="strict")
        except UnicodeDecodeError as exc:
            raise LumikitError(f"{source_path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the "
                               "solution notebook as UTF-8") from None
        solution = jupytext.reads(text, fmt="py:percent")
        prefix = NOTEBOOK_FILE.match(source_path.name)["prefix"]
        exercise = exercise_notebook(solution, where=str(source_path), prefix=prefix)
        target = exercises_dir / source_path.name
        planned += [
            PlannedFile(source_path.with_suffix(".ipynb"), ipynb_text(solution)),
            PlannedFile(target, percent_text(exercise, like=text)),
            PlannedFile(target.with_suffix(".ipynb"), ipynb_text(exercise)),
        ]
        hints.update(solution_hints(solution))
    if planned:
        planned.append(PlannedFile(exercises_dir / HINTS_FILE, json.dumps(hints, indent=1, ensure_ascii=False)
                                   + "\n"))
    return planned


def solution_hints(solution: NotebookNode) -> dict[str, dict[str, str]]:
    """Exercise id -> its hints (``idea``, ``tool``), from the solution cells of one notebook."""
    out = {}
    for cell in solution.cells:
        if cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            match = next((m for m in map(_EXERCISE_LINE.match, _leading_comments(cell.source)) if m), None)
            if match:
                out[match["id"]] = cell_hints(cell.source)
    return out


def drift(solutions_dir: Path, exercises_dir: Path) -> list[str]:
    """What differs between the generated files and those on disk, one line per file; empty when in sync."""
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    problems = []
    planned = planned_files(solutions_dir, exercises_dir)
    for item in planned:
        if not item.path.exists():
            problems.append(f"{item.path}: missing")
        elif _current(item.path) != item.text:
            problems.append(f"{item.path}: differs from what {solutions_dir} generates")
    owned = {item.path.resolve() for item in planned}
    if exercises_dir.is_dir():
        for path in sorted(exercises_dir.iterdir()):
            if path.suffix in (".py", ".ipynb") and NOTEBOOK_FILE.match(path.with_suffix(".py").name) \
                    and path.resolve() not in owned:
                problems.append(f"{path}: has no solution {solutions_dir / path.with_suffix('.py').name}")
    return problems


def generate(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write every generated file whose content changed (atomically); returns the paths written."""
    written = []
    for item in planned_files(solutions_dir, exercises_dir):
        if item.path.exists() and _current(item.path) == item.text:
            continue
        write_atomic(item.path, item.text)
        written.append(item.path)
    return written



def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lumikit.checks.instructor.generate [--check] [--solutions DIR] [--exercises DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m lumikit.checks.instructor.generate",
                                     description=__doc__.split("\n")[0], allow_abbrev=False)
    add_folder_arguments(parser)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and name the files that differ from what would be written")
    args = parser.parse_args(argv)
    try:
        return run(args.solutions, args.exercises, check=args.check)
    except LumikitError as exc:
        print(f"lumikit: error: {exc}", file=sys.stderr)
        return 2


def run(solutions_dir: Path, exercises_dir: Path, *, check: bool) -> int:
    """Generate (or with ``check``, compare) and report on stdout; the exit status."""
    sources = solution_files(solutions_dir)
    if not sources and not check:
        print(f"no solutions (NN_name.py) in {solutions_dir}: nothing to generate")
        return 0
    if check:
        problems = drift(solutions_dir, exercises_dir)
        for line in problems:
            print(line)
        if problems:
            print(f"{len(problems)} generated file(s) out of date. Fix: run `make exercises` "
                  f"(python -m lumikit.checks.instructor.generate) and commit the result")
            return 1
        print(f"exercises up to date: {len(sources)} solution(s) in {solutions_dir}"
              + ("" if sources else " (nothing to generate yet)"))
        return 0
    written = generate(solutions_dir, exercises_dir)
    for path in written:
        print(f"wrote {path}")
    print(f"{len(sources)} solution(s), {len(written)} file(s) written, the others already up to date")
    stale = [line for line in drift(solutions_dir, exercises_dir) if "has no solution" in line]
    for line in stale:
        print(f"warning: {line} (left in place; delete it if the exercise was removed)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
