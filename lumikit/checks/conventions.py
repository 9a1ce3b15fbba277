"""The conventions the exercise machinery shares: cell tags, notebook file names and time limits.

Kept apart from the modules that import jupytext/nbclient (slow to import), so the command line can read them cheaply.
"""
from __future__ import annotations

import re

#: A solution cell in ``solutions/NN_name.py``: ``# %% tags=["solution"]``.
SOLUTION_TAG = "solution"
#: The stub the generator puts in its place in ``exercises/NN_name.py``.
EXERCISE_TAG = "exercise"
#: A cell that calls a check on the answer above it: ``# %% tags=["check"]``.
CHECK_TAG = "check"
#: Notebook sources are ``NN_name.py`` (Jupytext percent format), ``NN`` the module number.
NOTEBOOK_FILE = re.compile(r"^(?P<prefix>\d\d)_\w+\.py$")
#: The kernel every workbook ``.ipynb`` names: ``python3``, which Jupyter starts with its own environment's Python.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: The CI machine has 2 cores; each notebook must run in this many seconds, and so must any one cell.
DEFAULT_BUDGET_S = 90.0
DEFAULT_CELL_TIMEOUT_S = 90.0
