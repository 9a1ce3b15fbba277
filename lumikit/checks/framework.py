"""The building blocks of exercise checks: a failure that says what to fix, and a visible success line.

A check function (one per exercise, in ``lumikit/checks/mNN.py``) calls the ``expect_*`` helpers on the learner's
answer and ends with ``return passed(...)``. Every helper treats ``None`` (the placeholder the exercise stub assigns)
as "no answer yet", so an unanswered exercise fails with the check's own words, never a NameError or TypeError.

Every check function is declared with :func:`check`, which names its exercise and at least two known-wrong answers
(:func:`wrong`); ``lumikit verify`` calls the check with each of them in the solution's kernel and requires each to
fail. The decorator also records every outcome in the learner's progress folder (:mod:`lumikit.checks.progress`).
"""
from __future__ import annotations

import functools
import html
import inspect
import json
import math
import numbers
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterable, TypeVar

from ..errors import LumikitError

#: The MIME type under which a passed check announces itself; ``lumikit verify`` counts these in cell outputs.
PASS_MIMETYPE = "application/vnd.lumikit.check+json"
_MISSING = object()


class CheckFailed(LumikitError, AssertionError):
    """An exercise answer that is missing or wrong: names the exercise, what is wrong, what was found, a hint.

    The expected value is kept (``.expected``, for tests and the instructor) but never printed: a learner who reads
    the answer in a failure learns nothing, and the record would say passed. ``mistake`` names the kind of mistake
    when the check recognises one ("a percentage instead of a fraction").
    """

    def __init__(self, exercise: str, problem: str, *, expected: Any = _MISSING, found: Any = _MISSING,
                 hint: str | None = None, unanswered: bool = False, mistake: str | None = None) -> None:
        self.exercise = exercise
        self.problem = problem
        self.expected = None if expected is _MISSING else expected
        self.found = None if found is _MISSING else found
        self.hint = hint
        self.mistake = mistake
        self.unanswered = unanswered
        if unanswered:
            text = (f"No answer yet for {exercise}: {problem}. Replace the `None` in the exercise cell with your "
                    f"answer (and delete its `raise NotImplementedError` line), run it, then run this check again.")
        else:
            text = f"Exercise {exercise}: {problem}"
            if found is not _MISSING:
                text += f"; you gave {_show(found)}"
            if mistake:
                text += f". It looks like {mistake}"
            text += "."
        if hint:
            text += f" Hint: {hint}"
        super().__init__(text)

    def with_more_help(self, text: str) -> "CheckFailed":
        """The same failure with more help appended to its message (the on-demand hints after failed attempts)."""
        self.args = (f"{self.args[0]} {text}",)
        return self

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: one red line a learner can act on."""
        return [f"\x1b[31m✗ {self}\x1b[0m"]


@dataclass(frozen=True)
class Passed:
    """A passed check. Shown in a notebook as one green line (HTML) or ``✓ ...`` (plain text)."""

    exercise: str
    message: str = ""

    def __str__(self) -> str:
        return f"✓ Exercise {self.exercise} passed" + (f": {self.message}" if self.message else "")

    def __repr__(self) -> str:
        return str(self)

    def __bool__(self) -> bool:
        return True

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        text = html.escape(str(self))
        return {
            "text/plain": str(self),
            "text/html": f'<div style="color:#1a7f37;font-weight:600">{text}</div>',
            PASS_MIMETYPE: {"exercise": self.exercise, "passed": True, "message": self.message},
        }


@dataclass(frozen=True)
class NotChecked(Passed):
    """A check that could not be run here (no Slurm): shown in grey, recorded as "not checked", never as passed.
    It is truthy like a pass only in that the check did not fail."""

    def __str__(self) -> str:
        return f"○ Exercise {self.exercise} not checked here" + (f": {self.message}" if self.message else "")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        text = html.escape(str(self))
        return {
            "text/plain": str(self),
            "text/html": f'<div style="color:#6e7781;font-weight:600">{text}</div>',
            PASS_MIMETYPE: {"exercise": self.exercise, "passed": False, "not_checked": True, "message": self.message},
        }


def passed(exercise: str, message: str = "") -> Passed:
    """The value a check returns when the answer is right; end the check cell with the call so it is shown."""
    return Passed(exercise, message)


def not_checked(exercise: str, why: str) -> NotChecked:
    """What a check returns when it cannot judge here (no Slurm): recorded as "not checked", to run again later."""
    return NotChecked(exercise, why)


def expect_answer(exercise: str, found: Any, what: str, *, hint: str | None = None) -> Any:
    """Fail with "No answer yet for <exercise>" when ``found`` is None (the stub's placeholder); else return it."""
    if found is None:
        raise CheckFailed(exercise, what, hint=hint, unanswered=True)
    return found


def plain(value: Any) -> Any:
    """A learner's value as plain Python: numpy's numbers and bools (``np.int64(11)``, ``np.bool_(False)``) as
    int/float/bool, and a string without the spaces around it; anything else as it is."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (bool, int, float)) or not hasattr(value, "item") or getattr(value, "ndim", 0) != 0:
        return value
    if type(value).__module__ != "numpy":
        return value
    try:
        return value.item()
    except (TypeError, ValueError):
        return value


def plain_items(found: Any) -> list[Any] | None:
    """A collection a learner may give as a list, tuple, set, numpy array (one dimension) or pandas Series/Index,
    as a list of plain values (a set sorted); None for anything else (a string, a number, a 2-d array)."""
    if isinstance(found, (list, tuple)):
        return [plain(v) for v in found]
    if isinstance(found, (set, frozenset)):
        return sorted((plain(v) for v in found), key=repr)
    module = type(found).__module__.split(".")[0]
    if module in ("numpy", "pandas") and getattr(found, "ndim", None) == 1 and hasattr(found, "tolist"):
        return [plain(v) for v in found.tolist()]
    return None


def plain_mapping(found: Any) -> dict[Any, Any] | None:
    """A mapping a learner may give as a dict or a pandas Series (its index as keys), as a plain dict; else None."""
    from collections.abc import Mapping

    if isinstance(found, Mapping):
        return {plain(k): plain(v) for k, v in found.items()}
    if type(found).__module__.split(".")[0] == "pandas" and getattr(found, "ndim", None) == 1:
        return {plain(k): plain(v) for k, v in found.items()}
    return None


def expect_set(exercise: str, found: Any, what: str, *, hint: str | None = None) -> None:
    """Fail with "<what> is not set" when a field of an answer (a job's container, its nodes) is None: the learner
    answered, so "no answer yet" would name the wrong mistake."""
    if found is None:
        raise CheckFailed(exercise, f"{what} is not set", found=None, hint=hint)


def expect_equal(exercise: str, found: Any, expected: Any, *, what: str, hint: str | None = None,
                 off_by_one: str | tuple[str, str] | None = None, field: bool = False) -> Any:
    """Fail unless ``found == expected`` (numpy numbers and surrounding spaces aside); returns ``found``.

    ``off_by_one`` names what a whole number one away means for this quantity: one text, or (one more, one less).
    Without it the failure names an off-by-one only for a numbering from 0 (a GCD, rank or sample index, told by
    ``what``); on a count the generic "counted from 1" would name the wrong mistake, so none is named. ``field``:
    ``found`` is a field of an answer given (a job's ``container``), so None is "not set", not "no answer yet".
    """
    if field:
        expect_set(exercise, found, what, hint=hint)
    expect_answer(exercise, found, what, hint=hint)
    value = plain(found)
    try:
        same = bool(value == plain(expected))
    except (TypeError, ValueError):  # e.g. an array compared to a scalar
        same = False
    if not same:
        raise CheckFailed(exercise, f"{what} is not right", expected=expected, found=found, hint=hint,
                          mistake=_whole_number_mistake(value, plain(expected), what, off_by_one))
    return found


def _is_whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


#: Words of a ``what`` that make a whole number an index counted from 0 (where "counted from 1" is the mistake).
_NUMBERING = ("index", "rank", "gcd", "device", "sample", "step number", "id")


def _whole_number_mistake(found: Any, expected: Any, what: str = "",
                          off_by_one: str | tuple[str, str] | None = None) -> str | None:
    """The kind of mistake an off-by-one whole number is: the check's own words for this quantity, else, for an
    index counted from 0 (a GCD, a rank, a sample), counting from 1."""
    if not (_is_whole(found) and _is_whole(expected)) or abs(int(found) - int(expected)) != 1:
        return None
    if off_by_one is not None:
        more, less = (off_by_one, off_by_one) if isinstance(off_by_one, str) else off_by_one
        return more if int(found) > int(expected) else less
    words = what.lower()
    if not any(re.search(rf"\b{w}", words) for w in _NUMBERING) or re.search(r"\b(how many|number of|count)", words):
        return None
    # the same words either way: which side the answer lies on would hand it over
    return "an off-by-one: a neighbouring index, or one counted from 1 where the numbering starts at 0"


#: Factors that turn a right number into a typical wrong one, and the name of that mistake.
_FACTOR_MISTAKES = (
    (1000.0, "a unit off by 1000 (milliseconds for seconds, or µs for ms): convert the unit"),
    (1 / 1000, "a unit off by 1000 (seconds for milliseconds, or ms for µs): convert the unit"),
    (100.0, "a percentage where a fraction (0 to 1) is asked"),
    (1 / 100, "a fraction where a percentage is asked"),
    (-1.0, "the sign reversed: subtract the other way round"),
)


#: Words of a ``what`` that make the number a ratio ("how many times"), which is neither a fraction nor a percentage.
_RATIO = re.compile(r"speed-?up|how many times|\bratio\b|\bfactor\b|slowdown", re.IGNORECASE)


def _number_mistake(value: float, expected: float, rel: float, what: str = "") -> str | None:
    """The kind of mistake a wrong number shows, when it is a typical one (a factor of 1000 or 100, upside down).
    For a ratio (a speed-up, ``what`` says), 100 times it is a percentage where "how many times" is asked."""
    tol = max(rel, 0.02)
    if expected == 0 or value == 0:
        return None
    if _RATIO.search(what) and math.isclose(value, expected * 100, rel_tol=tol):
        return "a percentage where a ratio (how many times) is asked"
    if _RATIO.search(what) and math.isclose(value, (expected - 1) * 100, rel_tol=tol, abs_tol=1e-9):
        return "the gain in percent where the ratio itself (how many times) is asked"
    for factor, mistake in _FACTOR_MISTAKES:
        if _RATIO.search(what) and factor in (100.0, 1 / 100):
            continue
        if math.isclose(value, expected * factor, rel_tol=tol):
            return mistake
    if math.isclose(value, 1 / expected, rel_tol=tol) and not math.isclose(abs(expected), 1, rel_tol=0.2):
        return "the ratio upside down: which quantity goes on top?"
    if math.isclose(value, expected - 1, rel_tol=tol, abs_tol=1e-9) and abs(expected) > 0.2:
        return "only the extra part (how much more) where the ratio itself is asked"
    if math.isclose(value, expected + 1, rel_tol=tol, abs_tol=1e-9) and abs(expected) < 5:
        return "the whole ratio where only its extra part (how much more) is asked"
    return None


def expect_close(exercise: str, found: Any, expected: float, *, what: str, rel: float = 0.05,
                 abs: float = 0.0, hint: str | None = None) -> float:
    """Fail unless ``found`` is a number within ``rel`` (fraction) or ``abs`` of ``expected``; returns it as float.

    The failure names a typical mistake (a unit off by 1000, a percentage for a fraction, a ratio upside down) when
    the number shows one; it never prints ``expected``.
    """
    expect_answer(exercise, found, what, hint=hint)
    if isinstance(plain(found), (bool, str)):
        raise CheckFailed(exercise, f"{what} should be a number", expected=expected, found=found, hint=hint)
    try:
        value = float(found)
    except (TypeError, ValueError):
        raise CheckFailed(exercise, f"{what} should be a number", expected=expected, found=found,
                          hint=hint) from None
    if not math.isclose(value, expected, rel_tol=rel, abs_tol=abs):
        raise CheckFailed(exercise, f"{what} is off", expected=expected, found=value, hint=hint,
                          mistake=_number_mistake(value, float(expected), rel, what))
    return value


def expect_in(exercise: str, found: Any, allowed: Iterable[Any], *, what: str, hint: str | None = None,
              field: bool = False) -> Any:
    """Fail unless ``found`` is one of ``allowed``; returns the matching value as plain Python (a string stripped,
    a numpy number as int or float). ``field``: as for :func:`expect_equal`."""
    if field:
        expect_set(exercise, found, what, hint=hint)
    expect_answer(exercise, found, what, hint=hint)
    choices = list(allowed)
    try:
        known = plain(found) in [plain(c) for c in choices]
    except (TypeError, ValueError):  # e.g. an array, whose comparison has no single truth value
        known = False
    if not known:
        raise CheckFailed(exercise, f"{what} is not one of the possible answers", expected=choices, found=found,
                          hint=hint)
    return plain(found)


#: Types a learner's number may come in: numpy's integers (``idxmax``) are whole numbers, numpy's floats numbers.
_NUMBER_TYPES = {int: numbers.Integral, float: numbers.Real}


def expect_type(exercise: str, found: Any, types: type | tuple[type, ...], *, what: str,
                hint: str | None = None) -> Any:
    """Fail unless ``found`` is an instance of ``types``; returns ``found``.

    ``int`` accepts any whole number (numpy's too), ``float`` any real number and ``bool`` numpy's bool as well;
    ``bool`` is never a number.
    """
    expect_answer(exercise, found, what, hint=hint)
    found_plain = plain(found)
    if type(found).__module__ == "numpy" and isinstance(found_plain, bool):
        found = found_plain  # np.bool_ is a bool here, and still not a number
    wanted = types if isinstance(types, tuple) else (types,)
    accepted = tuple(_NUMBER_TYPES.get(t, t) for t in wanted)
    numeric = any(t in _NUMBER_TYPES for t in wanted) and bool not in wanted
    if not isinstance(found, accepted) or (numeric and isinstance(found, bool)):
        names = " or ".join(_type_words(t) for t in wanted)
        raise CheckFailed(exercise, f"{what} has the wrong type: {_type_words(type(found))}, where {names} is asked",
                          expected=_Described(f"type {names}"), found=found, hint=hint)
    return found


#: The values a tool reads as "on" in an environment variable, by tool: MIOpen's env.hpp compares the lower-cased
#: value with these; Python's PYTHON* switches (PYTHONNOUSERSITE...) are on for any non-empty value (Python docs,
#: "Command line and environment").
ON_VALUES = {"miopen": ("1", "true", "yes", "enable", "enabled")}


def switched_on(value: Any, tool: str) -> bool:
    """Does ``tool`` read the environment value ``value`` as "on"? (``"python"``: any non-empty value.)"""
    text = "" if value is None else str(plain(value)).strip()
    if tool == "python":
        return bool(text)
    return text.lower() in ON_VALUES[tool]


#: Types named in words a learner reads ("a whole number", not "a Integral" or "a int").
_TYPE_WORDS = {int: "a whole number (int)", numbers.Integral: "a whole number (int)", float: "a number",
               numbers.Real: "a number", str: "a string", bool: "True or False (a bool)", list: "a list",
               tuple: "a tuple", dict: "a dict", set: "a set", type(None): "None"}


def _type_words(kind: type) -> str:
    """A type as a learner reads it, with its article: "a whole number (int)", "an ndarray", "a DataFrame"."""
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind]
    name = kind.__name__
    named = {"ndarray": "a numpy array", "Series": "a pandas Series", "DataFrame": "a pandas DataFrame"}
    return named.get(name) or f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class _Described(str):
    """Words describing a value (``"one of 'a', 'b'"``): shown as they are, not quoted like an answer."""

    def __repr__(self) -> str:
        return str(self)


def _show(value: Any) -> str:
    """A short printable form of a value for a message."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# --- Known-wrong answers and the check decorator -------------------------------------------------------------------

#: The MIME type under which ``lumikit verify``'s probe reports the wrong answers it tried after a check cell.
WRONG_MIMETYPE = "application/vnd.lumikit.wrong+json"
#: Set while wrong answers are being tried: those calls are not recorded as the learner's progress.
_PROBING: ContextVar[bool] = ContextVar("lumikit_checks_probing", default=False)
#: Exercise -> the other inputs of the check call being recorded (so an instructor can regrade it from the record).
_EVIDENCE: ContextVar[dict[str, dict[str, Any]]] = ContextVar("lumikit_checks_evidence", default={})
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Wrong:
    """A known-wrong answer to one check: which arguments to replace, and why those values are wrong.

    Each value in ``answers`` is either the wrong value itself or a function of the check's bound arguments (a
    namespace: ``a.rejected``, ``a.step_times``...), so a wrong answer can be derived from the check's own data
    (``lambda a: a.expected_rank + 1``) rather than pasted. ``mentions``: words the failure message must contain.
    """

    why: str
    answers: dict[str, Any]
    mentions: str | None = None

    def values(self, arguments: SimpleNamespace) -> dict[str, Any]:
        """The replacement values, with functions called on the check's bound arguments."""
        return {name: (value(arguments) if callable(value) and not isinstance(value, type) else value)
                for name, value in self.answers.items()}


def wrong(why: str, *, mentions: str | None = None, **answers: Any) -> Wrong:
    """A known-wrong answer: ``wrong("one core per GCD", fixed=lambda a: a.rejected.with_(cpus_per_task=1))``."""
    if not answers:
        raise ValueError(f"wrong({why!r}) replaces no argument; name at least one, e.g. answer=...")
    return Wrong(why, dict(answers), mentions)


@dataclass(frozen=True)
class CheckInfo:
    """What :func:`check` attaches to a check function: its exercise, known-wrong answers and answer arguments."""

    exercise: str
    wrong: tuple[Wrong, ...]
    answer_names: tuple[str, ...] = field(default=())


def check(exercise: str, *cases: Wrong) -> Callable[[F], F]:
    """Declare a check function: its exercise id and (at least two) known-wrong answers.

    The answer arguments are the ones the wrong answers replace; they, the outcome and the message are saved
    in the learner's progress folder on every call (not while ``lumikit verify`` tries the wrong answers).
    """
    def decorate(func: F) -> F:
        names = tuple(dict.fromkeys(n for case in cases for n in case.answers))
        parameters = inspect.signature(func).parameters
        unknown = [n for n in names if n not in parameters]
        if unknown:
            raise TypeError(f"{func.__name__}: wrong answers replace {unknown}, which are not its parameters "
                            f"({', '.join(parameters)})")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _PROBING.get():
                return func(*args, **kwargs)
            try:
                bound = inspect.signature(func).bind(*args, **kwargs)
            except TypeError:
                return func(*args, **kwargs)
            answers = {n: bound.arguments.get(n) for n in names}
            evidence = {n: v for n, v in bound.arguments.items() if n not in names}
            _EVIDENCE.set({**_EVIDENCE.get(), exercise: evidence})  # the check's other inputs, for _record
            try:
                result = func(*args, **kwargs)
            except CheckFailed as failure:
                if not failure.unanswered:
                    _help_after_attempts(failure, exercise)
                _record(exercise, answers, passed=False, unanswered=failure.unanswered, message=str(failure),
                        mistake=None if failure.unanswered else failure.mistake or failure.problem)
                raise
            _record(exercise, answers, passed=not isinstance(result, NotChecked), unanswered=False,
                    message=str(result), evidence=evidence, not_checked=isinstance(result, NotChecked))
            return result

        wrapper.__lumikit_check__ = CheckInfo(exercise, tuple(cases), names)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def check_info(func: Any) -> CheckInfo | None:
    """The :class:`CheckInfo` of a function declared with :func:`check`, else None."""
    return getattr(func, "__lumikit_check__", None)


def _help_after_attempts(failure: CheckFailed, exercise: str) -> None:
    """From the second failed attempt on, add the exercise's idea; from the third, the tool as well."""
    from .hints import hint_levels

    attempt = _attempts_so_far(exercise) + 1
    levels = hint_levels(exercise)
    shown = levels[:1] if attempt == 2 else levels if attempt >= 3 else []
    if shown:
        failure.with_more_help(f"(Attempt {attempt}.) " + " ".join(shown))


def _attempts_so_far(exercise: str) -> int:
    """How many answers (not "no answer yet") this learner gave to ``exercise`` before, from their progress file."""
    from .progress import progress_dir

    folder = progress_dir()
    if folder is None:
        return 0
    path = Path(folder) / f"{exercise}.json"
    try:
        if not path.is_file() or path.stat().st_size > 1_000_000:
            return 0
        return max(0, int(json.loads(path.read_text(encoding="utf-8")).get("attempts", 0)))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def _record(exercise: str, answers: dict[str, Any], **outcome: Any) -> None:
    """Record one outcome in the learner's progress folder; a folder that cannot be written never fails a check."""
    from .progress import record

    outcome.setdefault("evidence", _EVIDENCE.get().get(exercise))
    try:
        record(exercise, answers, **outcome)
    except OSError:
        pass
