"""Does a failure message give the answer away? The printed forms of the solution's value, searched in a message.

``lumikit verify`` calls :func:`leaked` on the message of every declared wrong answer (and of the stub) with the
solution's value of each answer argument. A value counts in the forms a message would print it: a number as
``repr``, ``%g``, with 1 to 4 decimals or as a percentage; a string as itself (whole words, in its own case, so that a recipe named ``miopen`` is not found in "MIOpen's"; a one- or
two-letter string such as a multiple-choice letter only quoted, ``'b'`` or ``"b"``, and so a short word inside a
list or dict); a path as its text; a list, tuple, set or dict as its whole text and item by item. The learner's
own (wrong) value echoed back is removed from the message first, and a form it shares is not a leak. A single digit is too common to search alone: it leaks only after words such
as "expected", "should be", "answer is" or "=".

Beyond the printed value, a message gives the answer away in words (:func:`leaks` names the kind of each finding):
``words``, a whole number written out ("two tasks", "eleven"; zero and one only when announced, "should be one");
``identifier``, a solution string that is a name in code (``slingshot_nic``, ``SLURM_PROCID``, ``torch.cuda``) in any
case or with spaces for underscores; ``key``, a key of a solution dict (the variable names of an environment); and
``letter``, a multiple-choice letter written as an option ("(b)", "option B", "answer b"). Everything else is
``value``. :func:`search` looks for forms found elsewhere (another exercise's answer, which verify searches too).
"""
from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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


# --- Leaks in words, identifiers, keys and letters -----------------------------------------------------------------

#: The kinds of leak :func:`leaks` tells apart (``value``: the printed value, as :func:`leaked` has always searched).
KINDS = ("value", "words", "identifier", "key", "letter")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_TENS = {30: "thirty", 40: "forty", 50: "fifty", 60: "sixty", 100: "a hundred"}
_IDENTIFIER = re.compile(r"[A-Za-z][\w.]*(?:_|\.|[a-z][A-Z])[\w.]*")
_LETTER = re.compile(r"[a-fA-F]")


@dataclass(frozen=True)
class Leak:
    """One form of the solution's answer found in a message, and its kind (one of :data:`KINDS`)."""

    form: str
    kind: str

    def __str__(self) -> str:
        return self.form if self.kind == "value" else f"{self.form} ({self.kind})"


def number_words(value: Any) -> set[str]:
    """A whole number written out: ``2`` -> ``two``; empty for other values and for numbers past twenty."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return set()
    v = float(value)
    if not (math.isfinite(v) and v.is_integer()):
        return set()
    n = int(v)
    if 0 <= n < len(_WORDS):
        return {_WORDS[n]}
    return {_TENS[n]} if n in _TENS else set()


def kinded_forms(value: Any, *, nested: bool = False) -> set[tuple[str, str]]:
    """Every (form, kind) of a value a message could carry: :func:`forms` as ``value`` plus the word kinds."""
    out = {(f, "value") for f in forms(value, nested=nested)}
    if value is None or isinstance(value, bool):
        return out
    if not nested:  # a number inside a list or dict (a core, a rank) is too common to count in words
        out |= {(w, "words") for w in number_words(value)}
    if isinstance(value, str):
        text = value.strip()
        if len(text) == 1 and _LETTER.fullmatch(text) and not nested:
            out.add((text.lower(), "letter"))
        elif _IDENTIFIER.fullmatch(text) and len(text) >= 4:
            out.add((text, "identifier"))
    elif isinstance(value, Mapping) and len(value) <= 64:
        for key, item in list(value.items())[:64]:
            # a key that is a name in code (MIOPEN_USER_DB_PATH) is an answer; a plain word (rank, phase) is the
            # dict's shape, which the question itself names
            if isinstance(key, str) and len(key.strip()) >= 3 and _IDENTIFIER.fullmatch(key.strip()):
                out.add((key.strip(), "key"))
            out |= {(f, k) for f, k in kinded_forms(item, nested=True) if k != "letter"}
    elif isinstance(value, (list, tuple, set, frozenset)) and len(value) <= 64:
        for item in value:
            out |= {(f, k) for f, k in kinded_forms(item, nested=True) if k not in ("value", "letter")}
    return out


def _found(form: str, kind: str, text: str) -> bool:
    """Is ``form`` (of ``kind``) in ``text``, as a whole word (see the module's docstring for each kind)."""
    if kind == "words":
        announced = form in ("zero", "one")
        pattern = (rf"{_ANNOUNCED_WORDS}{form}\b" if announced else rf"(?<![\w-]){re.escape(form)}(?![\w-])")
        return bool(re.search(pattern, text, flags=re.IGNORECASE))
    if kind == "identifier":
        spaced = re.escape(form).replace("_", "[_ -]").replace(r"\.", "[. ]")
        return bool(re.search(rf"(?<![\w]){spaced}(?![\w])", text, flags=re.IGNORECASE))
    if kind == "key":
        return bool(re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", text))
    if kind == "letter":
        return bool(re.search(rf"(?:\(\s*{form}\s*\)|\b(?:option|answer|choice|letter)\s+['\"(]?{form}\b)", text,
                              flags=re.IGNORECASE))
    return bool(leaked_form(form, text))


#: Words announcing a value written out ("should be one", "only one", "exactly one").
_ANNOUNCED_WORDS = r"(?:expected|should be|answer is|the answer is|only|exactly|just|=)\s+"


def leaked_form(form: str, text: str) -> bool:
    """Is the printed form ``form`` in ``text`` (the rules :func:`leaked` applies to a value's forms)?"""
    if form[:1] in "'\"" and form[-1:] == form[:1] and len(form) >= 3:
        return form in text
    if re.fullmatch(r"-?[\d.,]+ ?%?", form):
        return bool(re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", text))
    if len(form) >= 3:
        return bool(re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", text))
    return False


def without_echoes(message: str, given: Iterable[Any]) -> str:
    """``message`` without its "Exercise NN.k:" prefix and without the learner's own values echoed back."""
    text = _PREFIX.sub("", message, count=1)
    for value in given:
        for echo in sorted(_echoes(value), key=len, reverse=True):
            text = text.replace(echo, " ")
    return text


def search(message: str, found_forms: Iterable[tuple[str, str]]) -> list[Leak]:
    """The (form, kind) pairs found in ``message`` (after its "Exercise NN.k:" prefix), longest first."""
    text = _PREFIX.sub("", message, count=1)
    out: dict[str, Leak] = {}
    for form, kind in sorted(set(found_forms), key=lambda p: (-len(p[0]), p[0], KINDS.index(p[1]) if p[1] in KINDS else 9)):
        if form.lower() not in out and _found(form, kind, text):
            out[form.lower()] = Leak(form, kind)
    return list(out.values())


def leaks(message: str, solution: Any, given: Iterable[Any] = ()) -> list[Leak]:
    """Every form of ``solution`` in ``message``, of every kind, that is not a form of the ``given`` (wrong) values.

    The printed forms are those :func:`leaked` finds; the words, identifiers, keys and letters are added."""
    given = list(given)
    out = [Leak(f, "value") for f in leaked(message, solution, given)]
    own = set().union(*(kinded_forms(g) for g in given)) if given else set()
    own_text = {f.lower() for f, _ in own}
    text = without_echoes(message, given)
    values = {leak.form for leak in out}
    for form, kind in sorted(kinded_forms(solution) - own, key=lambda p: (-len(p[0]), p)):
        if kind == "value" or form in values or form.lower() in own_text:
            continue
        if _found(form, kind, text):
            out.append(Leak(form, kind))
    return out


#: The kinds of method leak :mod:`.recipes` finds (counted beside :data:`KINDS` when a message shows one).
METHOD_KINDS = ("name", "recipe", "proximity", "elimination")


def count_by_kind(found: Iterable[Leak | str]) -> dict[str, int]:
    """How many leaks of each kind (a plain string counts as ``value``; ``"two (words)"`` as ``words``; a method
    leak, ``"mean_comm_us (name)"``, under its own kind)."""
    counts = dict.fromkeys(KINDS, 0)
    for leak in found:
        kind = leak.kind if isinstance(leak, Leak) else _kind_of(str(leak))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _kind_of(text: str) -> str:
    match = re.search(r"\((\w+)\)$", text)
    return match.group(1) if match and match.group(1) in KINDS + METHOD_KINDS else "value"
