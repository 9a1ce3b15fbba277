"""``check`` and ``wrong`` for the checks of terminal.py, seeds.py and m11.py.

They come from :mod:`lumikit.checks.framework` (where ``lumikit verify`` runs every declared wrong answer). While
that mechanism is not yet in this checkout, a stand-in with the same signatures keeps the declarations, so that
``tests/checks/test_declared_wrong.py`` can still run each of them. Delete the stand-in once framework.py has both.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

try:
    from .framework import check, check_info, wrong  # type: ignore[attr-defined]
except ImportError:  # the framework without known-wrong answers
    @dataclass(frozen=True)
    class Wrong:
        """A known-wrong answer: the arguments it replaces (values, or functions of the bound arguments)."""

        why: str
        answers: dict[str, Any]
        mentions: str | None = None

        def values(self, arguments: SimpleNamespace) -> dict[str, Any]:
            return {name: (value(arguments) if callable(value) and not isinstance(value, type) else value)
                    for name, value in self.answers.items()}

    @dataclass(frozen=True)
    class CheckInfo:
        exercise: str
        wrong: tuple[Wrong, ...]
        answer_names: tuple[str, ...] = ()

    def wrong(why: str, *, mentions: str | None = None, **answers: Any) -> Wrong:  # type: ignore[misc]
        """A known-wrong answer."""
        if not answers:
            raise ValueError(f"wrong({why!r}) replaces no argument; name at least one")
        return Wrong(why, dict(answers), mentions)

    def check(exercise: str, *cases: Wrong) -> Callable[[F], F]:  # type: ignore[misc]
        """Attach the exercise id and its known-wrong answers to a check function."""
        def decorate(func: F) -> F:
            names = tuple(dict.fromkeys(n for case in cases for n in case.answers))
            func.__lumikit_check__ = CheckInfo(exercise, tuple(cases), names)  # type: ignore[attr-defined]
            return func
        return decorate

    def check_info(func: Any) -> CheckInfo | None:  # type: ignore[misc]
        return getattr(func, "__lumikit_check__", None)

__all__ = ["check", "check_info", "wrong"]
