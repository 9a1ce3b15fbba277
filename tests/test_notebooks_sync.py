"""Every notebook in notebooks/, exercises/ and solutions/ is a .py/.ipynb pair with the same cells and no outputs."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.checks.instructor.pairing import notebook_stems, sync_problems

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "exercises", "solutions")
STEMS = [stem for folder in FOLDERS for stem in notebook_stems(REPO / folder)]


@pytest.mark.skipif(not STEMS, reason=f"no notebooks (NN_name.py/.ipynb) in {', '.join(FOLDERS)} yet")
@pytest.mark.parametrize("stem", STEMS, ids=[str(s.relative_to(REPO)) for s in STEMS])
def test_notebook_pair_is_in_sync_and_has_no_outputs(stem: Path) -> None:
    problems = sync_problems(stem)
    assert not problems, "\n".join(problems)
