"""Who the learner is, and the seed their exercise data is generated from.

Each learner gets their own numbers (a different straggler, GCD, task...), so answers cannot be copied from a
neighbour or from a constant. The seed comes from ``$LUMIKIT_SEED`` (an instructor may hand one out), else from a
seed file ``progress/seed`` in the learner's workbook, else from the learner's name (``$LUMIKIT_LEARNER``, else the
login name). It is stable: the same learner gets the same data every time they run the notebook. For a graded course
the instructor hands out seeds from a roster, or derives them with :func:`course_seed` from a key only they hold.
"""
from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import random
from pathlib import Path

#: Files and folders that mark the root of a workbook checkout (the learner's folder).
_WORKBOOK_MARKERS = ("exercises", "notebooks")


def learner_name() -> str:
    """The learner: ``$LUMIKIT_LEARNER``, else the login name."""
    name = os.environ.get("LUMIKIT_LEARNER", "").strip()
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "learner"


def workbook_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working directory) that holds a workbook checkout."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / marker).is_dir() for marker in _WORKBOOK_MARKERS):
            return folder
    return None


def learner_seed() -> str:
    """The learner's seed text: ``$LUMIKIT_SEED``, else ``progress/seed`` in the workbook, else the learner's name."""
    env = os.environ.get("LUMIKIT_SEED", "").strip()
    if env:
        return env
    root = workbook_root()
    if root is not None and (root / "progress" / "seed").is_file():
        text = (root / "progress" / "seed").read_text(encoding="utf-8").strip()
        if text:
            return text
    return learner_name()


def seed_digest(seed: str | None = None) -> str:
    """A short digest of a seed (default: this learner's), recorded with each result instead of the seed itself."""
    return hashlib.sha256((learner_seed() if seed is None else seed).encode()).hexdigest()[:12]


def seed_for(topic: str, seed: str | None = None) -> int:
    """A stable integer seed for one topic (``"06.straggler"``) of one learner's data."""
    text = f"{learner_seed() if seed is None else seed}\0{topic}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def rng_for(topic: str, seed: str | None = None) -> random.Random:
    """A random generator for one topic of one learner's data (the same learner gets the same numbers)."""
    return random.Random(seed_for(topic, seed))


def course_seed(name: str, course_key: str) -> str:
    """The seed an instructor hands learner ``name`` (as ``$LUMIKIT_SEED``), derived from a course key only the
    instructor holds: the same name and key give the same seed, and no learner can derive a neighbour's."""
    digest = hmac.new(course_key.encode(), name.strip().encode(), hashlib.sha256).hexdigest()
    return f"course-{digest[:16]}"
