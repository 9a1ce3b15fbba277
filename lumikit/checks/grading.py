"""Grading on the instructor's side: re-run the checks on each learner's recorded answers, with references the
instructor computes from the learner's seed, so no reference value ever sits in a learner's notebook or folder.

A check can be re-run when every input it needs besides the answers is made by the check itself (the learner's
generated session, task, GCD, a multiple-choice key...) or has a default, and its answers were recorded exactly
(numbers, text, lists, dicts; not a job spec): then only the recorded answers and the learner's seed are needed.
The seed is the learner's ``progress/seed`` file if there is one, else the name recorded with their results
(:mod:`lumikit.checks.learner`); a seed digest recorded with each result says whether it is the same seed the
learner's notebook used. A recorded "passed" that does not pass again is reported, not trusted.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .framework import _PROBING, CheckFailed, check_info
from .learner import seed_digest
from .progress import Result


@dataclass(frozen=True)
class Grade:
    """The instructor's verdict on one recorded result: ``passed``, ``failed``, or why it was not re-run."""

    exercise: str
    recorded: str  # the outcome found in the learner's progress folder
    regraded: str  # passed | failed | not regradable | seed differs | no answers

    @property
    def disagrees(self) -> bool:
        """The progress folder says passed and the re-run fails, or the other way round."""
        return self.regraded in ("passed", "failed") and (self.recorded == "passed") != (self.regraded == "passed")


def check_functions() -> dict[str, Callable[..., Any]]:
    """Exercise id -> its check function, over every check module ``lumikit.checks.mNN``."""
    from .. import checks

    found: dict[str, Callable[..., Any]] = {}
    for module_info in sorted(pkgutil.iter_modules(checks.__path__), key=lambda m: m.name):
        if not (module_info.name.startswith("m") and module_info.name[1:].isdigit()):
            continue
        module = importlib.import_module(f"lumikit.checks.{module_info.name}")
        for value in vars(module).values():
            info = check_info(value)
            if info is not None:
                found.setdefault(info.exercise, value)
    return found


def regradable(func: Callable[..., Any]) -> bool:
    """True when the check needs nothing but its answers (every other parameter has a default)."""
    info = check_info(func)
    if info is None:
        return False
    return all(name in info.answer_names or p.default is not inspect.Parameter.empty
               for name, p in inspect.signature(func).parameters.items())


@contextmanager
def _as_learner(seed: str) -> Iterator[None]:
    """Run checks as the learner with ``seed``, recording nothing."""
    saved = os.environ.get("LUMIKIT_SEED")
    os.environ["LUMIKIT_SEED"] = seed
    token = _PROBING.set(True)
    try:
        yield
    finally:
        _PROBING.reset(token)
        if saved is None:
            os.environ.pop("LUMIKIT_SEED", None)
        else:
            os.environ["LUMIKIT_SEED"] = saved


def regrade(result: Result, seed: str, functions: Mapping[str, Callable[..., Any]] | None = None) -> Grade:
    """Re-run the check of one recorded result on its recorded answers, as the learner with ``seed``."""
    functions = check_functions() if functions is None else functions
    func = functions.get(result.exercise)
    if func is None or not regradable(func) or not result.answers_exact:
        return Grade(result.exercise, result.status, "not regradable")
    if result.seed_digest and result.seed_digest != seed_digest(seed):
        return Grade(result.exercise, result.status, "seed differs")
    info = check_info(func)
    answers = {name: result.answers.get(name) for name in info.answer_names}  # type: ignore[union-attr]
    if all(v is None for v in answers.values()):
        return Grade(result.exercise, result.status, "no answers")
    with _as_learner(seed):
        try:
            func(**answers)
        except CheckFailed:
            return Grade(result.exercise, result.status, "failed")
        except Exception:  # noqa: BLE001 (an answer recorded in a form the check cannot take back)
            return Grade(result.exercise, result.status, "not regradable")
    return Grade(result.exercise, result.status, "passed")


def learner_seed_for(progress_folder: Path, results: Sequence[Result]) -> str:
    """The seed a learner's notebook used: their ``progress/seed`` file, else the name recorded with their results."""
    seed_file = Path(progress_folder) / "seed"
    if seed_file.is_file() and seed_file.read_text(encoding="utf-8").strip():
        return seed_file.read_text(encoding="utf-8").strip()
    names = [r.learner for r in results if r.learner]
    return names[0] if names else Path(progress_folder).parent.name


def grade_class(folders: Mapping[str, Path], results: Mapping[str, Sequence[Result]],
                seeds: Mapping[str, str] | None = None) -> dict[str, list[Grade]]:
    """Learner -> the instructor's grades of every recorded result (``seeds`` overrides a learner's seed)."""
    functions = check_functions()
    out = {}
    for learner, rows in results.items():
        seed = (seeds or {}).get(learner) or learner_seed_for(folders[learner], rows)
        out[learner] = [regrade(r, seed, functions) for r in rows]
    return out
