"""The conventions the exercise machinery shares: cell tags, notebook file names, folders and time limits.

Kept apart from the modules that import jupytext/nbclient (slow to import), so the command line can read them cheaply,
and a leaf that both sides import: the learner's checks and the instructor's generator, verification and grading.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

#: A solution cell in ``solutions/NN_name.py``: ``# %% tags=["solution"]``.
SOLUTION_TAG = "solution"
#: The stub the generator puts in its place in ``exercises/NN_name.py``.
EXERCISE_TAG = "exercise"
#: A cell that calls a check on the answer above it: ``# %% tags=["check"]``.
CHECK_TAG = "check"
#: Notebook sources are ``NN_name.py`` (Jupytext percent format), ``NN`` the module number.
NOTEBOOK_FILE = re.compile(r"^(?P<prefix>\d\d)_\w+\.py$")
#: Where a learner answers an open question in ``exercises/NN_name.py`` (the generator writes it, the export reads it).
ANSWER_PLACEHOLDER = "**Your answer:** _write it here, with the numbers from the cells above that support it._"
#: The kernel every workbook ``.ipynb`` names: ``python3``, which Jupyter starts with its own environment's Python.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: Limits for a loaded 2-core CI machine, where the same notebook can take several times longer than alone: a
#: notebook's whole run (a slow notebook, not a hang) and any one cell (a hang stops there, with the cell named).
#: The cell limit sits above the 180 s that module 07 gives one local training run, so lumikit's own limit speaks
#: first. verify prints each notebook's seconds, so a notebook that grows slower shows long before these limits.
DEFAULT_BUDGET_S = 600.0
DEFAULT_CELL_TIMEOUT_S = 240.0


def add_folder_arguments(parser: argparse.ArgumentParser) -> None:
    """``--solutions DIR`` and ``--exercises DIR``, shared by every exercise command."""
    parser.add_argument("--solutions", type=Path, default=Path("solutions"), metavar="DIR",
                        help="folder of solution notebooks NN_name.py (default: solutions)")
    parser.add_argument("--exercises", type=Path, default=Path("exercises"), metavar="DIR",
                        help="folder of generated exercise notebooks (default: exercises)")
