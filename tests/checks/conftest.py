"""Helpers for the exercise-machinery tests: sample workbooks copied to a temporary folder and generated there."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lumikit.checks.instructor.generate import generate

DATA = Path(__file__).with_name("data")


def copy_sample(name: str, destination: Path) -> Path:
    """Copy ``data/<name>`` (a folder holding ``solutions/``) to ``destination`` and generate its exercises."""
    root = destination / name
    shutil.copytree(DATA / name, root)
    generate(root / "solutions", root / "exercises")
    return root


@pytest.fixture(autouse=True)
def _learner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Checks called by tests record into a temporary folder (never the checkout's progress/), for one test learner."""
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path / "progress"))
    monkeypatch.setenv("LUMIKIT_SEED", "test-learner")
    monkeypatch.delenv("LUMIKIT_LEARNER", raising=False)


@pytest.fixture
def sample_data() -> Path:
    """The folder of sample workbooks (sources only)."""
    return DATA


@pytest.fixture
def good_workbook(tmp_path: Path) -> Path:
    """A generated copy of the sample workbook whose solutions and checks are right."""
    return copy_sample("good", tmp_path)


@pytest.fixture
def broken_workbook(tmp_path: Path) -> Path:
    """A generated copy of the sample workbook with three classic mistakes (one per notebook)."""
    return copy_sample("broken", tmp_path)
