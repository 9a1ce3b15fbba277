"""Paired notebooks: every ``.ipynb`` must hold the same cells as its Jupytext ``.py`` and no outputs.

The ``.py`` is what is reviewed and diffed; the ``.ipynb`` is what a learner opens. They drift when one is edited
without the other (or a notebook is saved after running); these functions say how, so CI can fail on it.
"""
from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat

from ..conventions import KERNELSPEC

NOTEBOOK_SUFFIXES = (".py", ".ipynb")


def notebook_stems(folder: Path) -> list[Path]:
    """The notebooks of a folder as suffix-less paths (``folder/NN_name``), from either file of each pair."""
    if not folder.is_dir():
        return []
    stems = {p.with_suffix("") for p in folder.iterdir()
             if p.suffix in NOTEBOOK_SUFFIXES and p.name[:2].isdigit() and p.name[2:3] == "_"}
    return sorted(stems)


def sync_problems(stem: Path) -> list[str]:
    """What is wrong with the pair ``stem.py`` / ``stem.ipynb``: a missing side, differing cells, outputs left in."""
    text_path, ipynb_path = stem.with_suffix(".py"), stem.with_suffix(".ipynb")
    missing = [p for p in (text_path, ipynb_path) if not p.exists()]
    if missing:
        return [f"{p}: missing (its pair {p.with_suffix('.ipynb' if p.suffix == '.py' else '.py').name} exists). "
                f"Fix: `jupytext --sync {stem.with_suffix('.py')}` or `make exercises`" for p in missing]
    text_cells = [_cell_key(c) for c in jupytext.read(text_path, fmt="py:percent").cells]
    notebook = nbformat.read(ipynb_path, as_version=4)
    problems = []
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            problems.append(f"{ipynb_path}, cell {number}: has outputs. Fix: clear them before committing "
                            f"(`jupyter nbconvert --clear-output --inplace {ipynb_path}`)")
    if notebook.metadata.get("kernelspec", {}).get("name") != KERNELSPEC["name"]:
        problems.append(f"{ipynb_path}: no python3 kernel in its metadata, so Jupyter asks which kernel to use. "
                        f"Fix: `jupytext --set-kernel python3 {ipynb_path}`")
    ipynb_cells = [_cell_key(c) for c in notebook.cells]
    if ipynb_cells != text_cells:
        first = next((i for i, (a, b) in enumerate(zip(text_cells, ipynb_cells)) if a != b),
                     min(len(text_cells), len(ipynb_cells)))
        problems.append(f"{ipynb_path}: cells differ from {text_path.name} from cell {first + 1} on "
                        f"({len(ipynb_cells)} vs {len(text_cells)} cells). Fix: `jupytext --sync {text_path}` "
                        f"(or `make exercises` for solutions/ and exercises/)")
    return problems


def _cell_key(cell: nbformat.NotebookNode) -> tuple[str, str, tuple[str, ...]]:
    return cell.cell_type, cell.source, tuple(cell.metadata.get("tags", ()))
