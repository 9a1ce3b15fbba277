"""The committed exercises are exactly what the generator makes from the committed solutions."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.checks.instructor.generate import drift, solution_files

REPO = Path(__file__).resolve().parents[2]


def test_committed_exercises_match_the_solutions() -> None:
    solutions, exercises = REPO / "solutions", REPO / "exercises"
    if not solutions.is_dir() or not solution_files(solutions):
        pytest.skip(f"no solutions (NN_name.py) in {solutions} yet: nothing can drift")
    problems = drift(solutions, exercises)
    assert not problems, "exercises drift from solutions (run `make exercises`):\n" + "\n".join(problems)
