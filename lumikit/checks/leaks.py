"""Does a failure message give the answer away? The printed forms of the solution's value, searched in a message.

``lumikit verify`` calls :func:`leaked` on the message of every declared wrong answer (and of the stub) with the
solution's value of each answer argument. A value counts in the forms a message would print it: a number as
``repr``, ``%g``, with 1 to 4 decimals or as a percentage; a string as itself (whole words, in its own case, so that a recipe named ``miopen`` is not found in "MIOpen's"; a one- or
two-letter string such as a multiple-choice letter only quoted, ``'b'`` or ``"b"``, and so a short word inside a
list or dict); a path as its text; a list, tuple, set or dict as its whole text and item by item. The learner's
own (wrong) value echoed back is removed from the message first, and a form it shares is not a leak. A single digit is too common to search alone: it leaks only after words such
as "expected", "should be", "answer is" or "=".
"""
from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

_PREFIX = re.compile(r"^(?:Exercise|No answer yet for)\s+[\w.]+:\s*")
_ANNOUNCED = r"(?:expected|should be|answer is|the answer|want(?:ed)?|=)\s*['\"(]?"


def _significant(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").replace(",", "").lstrip("0")
    return len(digits.rstrip("0")) if "." in text else len(digits)


def number_forms(value: float) -> set[str]:
    """How a message may print a number: as typed, ``%g``, 1-4 decimals, 2-6 significant digits, a percentage."""
    v = float(value)
    if not math.isfinite(v):
        return set()
    if isinstance(value, numbers.Integral):
        return {str(int(value)), f"{int(value):,}"} if abs(int(value)) >= 10 else set()
    forms = {repr(v), f"{v:g}"} | {f"{v:.{n}f}" for n in range(1, 5)} | {f"{v:.{n}g}" for n in range(2, 7)}
    if float(v).is_integer():
        forms.add(str(int(v)))
    if 0 < abs(v) <= 1:
        forms |= {f"{100 * v:.0f}%", f"{100 * v:.1f}%", f"{100 * v:.0f} %", f"{100 * v:.1f} %"}
    return {f for f in forms if "e" not in f and _significant(f.rstrip(" %")) >= 2}


def forms(value: Any, *, nested: bool = False) -> set[str]:
    """Every printed form of a value a message could carry (empty for objects with no plain printed form).

    A short string inside a list or dict (``"one"``, ``"idle"``) is a common word, so it counts only quoted.
    """
    if value is None or isinstance(value, bool):
        return set()
    if isinstance(value, numbers.Real):
        return number_forms(value)
    if isinstance(value, os.PathLike):
        return {os.fspath(value)}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return set()
        quoted = {f"'{text}'", f'"{text}"'}
        return quoted | ({text} if not nested or len(text) >= 8 else set())
    if isinstance(value, Mapping):
        out = {str(dict(value))} if len(value) <= 64 else set()
        for item in list(value.values())[:64]:
            out |= forms(item, nested=True)
        return out
    if isinstance(value, (list, tuple, set, frozenset)) and len(value) <= 64:
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        out = {str(items), ", ".join(map(str, items))} if len(items) > 1 else set()
        for item in items:
            out |= forms(item, nested=True)
        return {f for f in out if f}
    return set()


def _echoes(value: Any) -> set[str]:
    """How a check prints the learner's own value back ("you gave ..."): removed before searching."""
    out = set()
    for text in (repr(value), str(value)):
        out |= {text, text[:117]} if len(text) > 3 else set()
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        out.add(repr(float(value)))
    return out


def _small_int(value: Any) -> int | None:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) < 10:
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 10:
        return int(value)
    return None


def leaked(message: str, solution: Any, given: Iterable[Any] = ()) -> list[str]:
    """The printed forms of ``solution`` found in ``message`` that are not forms of the ``given`` (wrong) values."""
    text = _PREFIX.sub("", message, count=1)
    for value in given:
        for echo in sorted(_echoes(value), key=len, reverse=True):
            text = text.replace(echo, " ")
    own = set().union(*(forms(g) for g in given)) if given else set()
    found = []
    for form in sorted(forms(solution) - own, key=len, reverse=True):
        if form[:1] in "'\"" and form[-1:] == form[:1] and len(form) >= 3:
            hit = form in text
        elif re.fullmatch(r"-?[\d.,]+ ?%?", form):
            hit = bool(re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", text))
        elif len(form) >= 3:
            hit = bool(re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", text))
        else:
            hit = False
        if hit:
            found.append(form)
    small = _small_int(solution)
    if small is not None and not any(_small_int(g) == small for g in given):
        if re.search(rf"{_ANNOUNCED}{small}(?![\w]|\.\d)", text, flags=re.IGNORECASE):
            found.append(str(small))
    return found
