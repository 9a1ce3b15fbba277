"""Pairs of .py and .ipynb notebooks: in sync, or told exactly how they drifted."""
from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat

from lumikit.checks.instructor.generate import ipynb_text
from lumikit.checks.instructor.pairing import notebook_stems, sync_problems

SOURCE = '# %% [markdown]\n# # Title\n\n# %% tags=["check"]\nx = 1\n\n# %%\nprint(x)\n'


def make_pair(folder: Path, name: str = "01_pair") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(SOURCE)
    (folder / f"{name}.ipynb").write_text(ipynb_text(jupytext.reads(SOURCE, fmt="py:percent")))
    return folder / name


def test_a_generated_pair_is_in_sync(tmp_path: Path) -> None:
    assert sync_problems(make_pair(tmp_path)) == []


def test_stems_come_from_either_side_and_ignore_other_files(tmp_path: Path) -> None:
    make_pair(tmp_path)
    (tmp_path / "02_only_text.py").write_text(SOURCE)
    (tmp_path / "helpers.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("hi\n")
    assert notebook_stems(tmp_path) == [tmp_path / "01_pair", tmp_path / "02_only_text"]
    assert notebook_stems(tmp_path / "absent") == []


def test_a_missing_side_is_named(tmp_path: Path) -> None:
    (tmp_path / "02_only_text.py").write_text(SOURCE)
    [problem] = sync_problems(tmp_path / "02_only_text")
    assert problem.startswith(f"{tmp_path / '02_only_text.ipynb'}: missing (its pair 02_only_text.py exists)")


def test_outputs_left_in_the_ipynb_are_named_by_cell(tmp_path: Path) -> None:
    stem = make_pair(tmp_path)
    notebook = nbformat.read(stem.with_suffix(".ipynb"), as_version=4)
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    notebook.cells[2].execution_count = 2
    nbformat.write(notebook, stem.with_suffix(".ipynb"))
    [problem] = sync_problems(stem)
    assert problem.startswith(f"{stem.with_suffix('.ipynb')}, cell 3: has outputs. Fix: clear them")


def test_an_edit_on_one_side_only_is_a_drift_from_that_cell_on(tmp_path: Path) -> None:
    stem = make_pair(tmp_path)
    stem.with_suffix(".py").write_text(SOURCE.replace("print(x)", "print(x + 1)"))
    [problem] = sync_problems(stem)
    assert problem.startswith(f"{stem.with_suffix('.ipynb')}: cells differ from 01_pair.py from cell 3 on "
                              "(3 vs 3 cells)")


def test_a_changed_tag_is_a_drift(tmp_path: Path) -> None:
    stem = make_pair(tmp_path)
    stem.with_suffix(".py").write_text(SOURCE.replace('tags=["check"]', 'tags=["solution"]'))
    assert "from cell 2 on" in sync_problems(stem)[0]


def test_a_notebook_without_the_python3_kernel_is_named_with_the_fix(tmp_path: Path) -> None:
    stem = make_pair(tmp_path)
    notebook = nbformat.read(stem.with_suffix(".ipynb"), as_version=4)
    del notebook.metadata["kernelspec"]
    nbformat.write(notebook, stem.with_suffix(".ipynb"))
    [problem] = sync_problems(stem)
    assert "no python3 kernel" in problem and "jupytext --set-kernel python3" in problem
