"""Helpers for the exercise-machinery tests: sample workbooks copied to a temporary folder and generated there."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lumikit.checks.generate import generate

DATA = Path(__file__).with_name("data")


def copy_sample(name: str, destination: Path) -> Path:
    """Copy ``data/<name>`` (a folder holding ``solutions/``) to ``destination`` and generate its exercises."""
    root = destination / name
    shutil.copytree(DATA / name, root)
    generate(root / "solutions", root / "exercises")
    return root


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
