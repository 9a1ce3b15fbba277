"""Imports that never come from the current folder.

``python -m lumikit`` puts the current folder first on ``sys.path`` (a Jupyter kernel puts ``''`` there), so an
instructor grading from inside a class folder would import a learner's ``pandas/`` folder instead of pandas, and run
it as the instructor. :func:`drop_cwd` takes those entries out for good (the command line, before it imports anything
else); :func:`no_cwd_imports` takes them out while the grader or the class view runs, and puts them back after (a
notebook keeps its own folder importable for its own cells).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def _is_cwd(entry: str, cwd: str) -> bool:
    """True for a ``sys.path`` entry naming the current folder ('' , '.', or its path)."""
    if entry in ("", "."):
        return True
    try:
        return os.path.realpath(entry) == cwd
    except (OSError, ValueError):
        return False


def cwd_entries() -> list[str]:
    """The entries of ``sys.path`` that name the current folder."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the folder was removed under us: only the relative entries can name it
        cwd = ""
    return [e for e in sys.path if isinstance(e, str) and _is_cwd(e, cwd)]


def drop_cwd() -> list[str]:
    """Remove every ``sys.path`` entry naming the current folder; returns what was removed."""
    found = cwd_entries()
    sys.path[:] = [e for e in sys.path if e not in found]
    return found


@contextmanager
def no_cwd_imports() -> Iterator[None]:
    """Within the block, nothing is imported from the current folder; ``sys.path`` is restored after."""
    saved = list(sys.path)
    drop_cwd()
    try:
        yield
    finally:
        added = [e for e in sys.path if e not in saved]  # entries added meanwhile stay, after the saved ones
        sys.path[:] = saved + added
