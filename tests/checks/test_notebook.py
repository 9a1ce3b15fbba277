"""Executing one notebook: per-cell outcomes, the running Python as kernel, the notebook's folder as cwd."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from lumikit.checks.instructor.notebook import read_notebook, run_notebook
from lumikit.errors import LumikitError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_each_code_cell_is_reported_with_its_outcome(tmp_path: Path) -> None:
    notebook = write(tmp_path / "lessons" / "01_cells.py", "\n".join([
        "# %% [markdown]", "# Title", "",
        "# %%", "import os, sys", "print(os.getcwd()); print(sys.executable)", "",
        "# %% tags=[\"exercise\"]", "raise NotImplementedError('Exercise 01.1: hint')", "",
        "# %% tags=[\"check\"]", "from lumikit.checks import passed", "passed('01.1')", "",
        "# %%", "1 / 0", "",
    ]))
    run = run_notebook(notebook)
    assert [(c.number, c.tags, c.status, c.ename) for c in run.cells] == [
        (2, (), "ok", None),
        (3, ("exercise",), "error", "NotImplementedError"),
        (4, ("check",), "ok", None),
        (5, (), "error", "ZeroDivisionError"),
    ]
    assert run.cells[1].evalue == "Exercise 01.1: hint"
    assert [c.passes for c in run.cells] == [0, 0, 1, 0]
    assert run.tagged("check") == [run.cells[2]]
    assert run.stopped is None and run.seconds > 0
    assert run.cells[0].first_line == "import os, sys"


def test_the_kernel_runs_this_python_in_the_notebooks_folder(tmp_path: Path) -> None:
    folder = tmp_path / "solutions"
    notebook = write(folder / "02_where.py", "# %%\nimport os, sys\n"
                                             "assert os.getcwd() == %r, os.getcwd()\n"
                                             "assert sys.executable == %r, sys.executable\n"
                     % (str(folder.resolve()), sys.executable))
    run = run_notebook(notebook)
    assert [(c.status, c.evalue) for c in run.cells] == [("ok", None)]
    assert sorted(p.name for p in folder.iterdir()) == ["02_where.py"]  # no kernel files left behind


def test_an_ipynb_runs_the_same_way(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 2 + 2\nx")])
    path = tmp_path / "03_plain.ipynb"
    nbformat.write(nb, path)
    run = run_notebook(path)
    assert [(c.number, c.status) for c in run.cells] == [(1, "ok")]


def test_a_cell_over_its_time_limit_stops_the_notebook(tmp_path: Path) -> None:
    notebook = write(tmp_path / "04_slow.py", "# %%\nx = 1\n\n# %%\nimport time\ntime.sleep(30)\n\n# %%\ny = 2\n")
    run = run_notebook(notebook, cell_timeout_s=1)
    assert [(c.number, c.status) for c in run.cells] == [(1, "ok"), (2, "timeout"), (3, "not run")]
    assert run.stopped == "a cell ran longer than 1 s"
    assert run.seconds < 20


@pytest.mark.parametrize("name", ["missing.py", "notes.txt"])
def test_read_notebook_names_the_bad_path(tmp_path: Path, name: str) -> None:
    if name.endswith(".txt"):
        (tmp_path / name).write_text("hello")
    with pytest.raises(LumikitError, match=name):
        read_notebook(tmp_path / name)


def test_a_kernel_that_dies_stops_the_notebook_at_that_cell(tmp_path: Path) -> None:
    notebook = write(tmp_path / "05_crash.py", "# %%\nx = 1\n\n# %%\nimport os\nos._exit(3)\n\n# %%\ny = 2\n")
    run = run_notebook(notebook)
    assert [(c.number, c.status, c.ename) for c in run.cells] == [(1, "ok", None), (2, "error", "DeadKernelError"),
                                                                  (3, "not run", None)]
    assert run.stopped.startswith("the kernel died")
