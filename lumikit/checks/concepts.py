"""Conceptual checks: multiple-choice questions with feedback for every option, and predict-then-measure pairs.

A :class:`Choice` holds a question, its options and, for each option, why it is right or wrong; the learner sees
the question as a cell's value (``checks.WHY_BIND`` renders as Markdown) and answers with a letter.
:func:`choice_check` turns a Choice into a check whose known-wrong answers are its wrong options, so
``lumikit verify`` proves each is refused.

A :class:`Prediction` is asked *before* a measurement: :func:`prediction_check` accepts any listed option (a
prediction cannot be wrong yet) and records it; :func:`outcome_check` then asks what the measurement showed, judges
that against the data, and says how the prediction fared and why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .framework import CheckFailed, Passed, check, expect_answer, passed, wrong


@dataclass(frozen=True)
class Option:
    """One option of a question: its text, whether it is right, and the explanation the learner gets for it."""

    text: str
    right: bool
    why: str


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question with one right option; shown in a notebook as the question and its options."""

    exercise: str
    question: str
    options: Mapping[str, Option]

    def __post_init__(self) -> None:
        if sum(o.right for o in self.options.values()) != 1 or len(self.options) < 3:
            raise ValueError(f"question {self.exercise}: give at least 3 options, exactly one of them right")

    @property
    def right(self) -> str:
        return next(k for k, o in self.options.items() if o.right)

    def _repr_markdown_(self) -> str:
        lines = [f"**Question {self.exercise}.** {self.question}", ""]
        lines += [f"- **{key})** {option.text}" for key, option in self.options.items()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._repr_markdown_().replace("**", "")


@dataclass(frozen=True)
class Prediction:
    """A question asked before a measurement, with the options the learner predicts from."""

    exercise: str
    question: str
    options: Mapping[str, str]

    def _repr_markdown_(self) -> str:
        lines = [f"**Predict {self.exercise}.** {self.question}", ""]
        lines += [f"- **{key})** {text}" for key, text in self.options.items()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._repr_markdown_().replace("**", "")


def letter(exercise: str, answer: Any, options: Mapping[str, Any], what: str) -> str:
    """The option key a learner gave (``"b"``, ``"B"``, ``"(b)"`` or ``"b)"``), failing on anything else."""
    expect_answer(exercise, answer, what, hint=f"one letter: {', '.join(options)}.")
    key = _key(answer)
    if key not in options:
        raise CheckFailed(exercise, f"{what} should be one of the letters {', '.join(options)}", found=answer,
                          hint="store one of the letters as a string, in quotes.")
    return key


def _key(answer: Any) -> str | None:
    """The option key in ``"b"``, ``" B "``, ``"(b)"`` or ``"b)"``; None for anything that is not a string."""
    return answer.strip().strip("()").strip().lower() if isinstance(answer, str) else None


def choice_check(question: Choice) -> Callable[[str | None], Passed]:
    """The check of a multiple-choice question; each wrong option (and a letter not offered) is a known-wrong answer."""
    wrongs = [wrong(f"option {key}: {option.text}", answer=key, mentions=option.why[:40])
              for key, option in question.options.items() if not option.right]
    wrongs.append(wrong("a letter that is not offered", answer="z", mentions="one of the letters"))

    @check(question.exercise, *wrongs)
    def check_choice(answer: str | None) -> Passed:
        key = letter(question.exercise, answer, question.options, "your answer")
        option = question.options[key]
        if not option.right:
            raise CheckFailed(question.exercise, f"({key}) is not the best answer: {option.why.rstrip('.')}",
                              hint="read the question again with this in mind, and try another option.")
        return passed(question.exercise, f"({key}) {option.why}")

    check_choice.__doc__ = f"Question {question.exercise}: {question.question}"
    check_choice.question = question  # type: ignore[attr-defined]
    return check_choice


def prediction_check(prediction: Prediction) -> Callable[[str | None], Passed]:
    """The check of a prediction: any listed option passes (and goes to the progress folder); anything else fails."""
    @check(prediction.exercise,
           wrong("a number instead of one of the options", answer=2, mentions="one of the letters"),
           wrong("a letter that is not offered", answer="z", mentions="one of the letters"))
    def check_prediction(answer: str | None) -> Passed:
        key = letter(prediction.exercise, answer, prediction.options, "your prediction")
        return passed(prediction.exercise, f"prediction recorded: ({key}) {prediction.options[key]}. Now measure.")

    check_prediction.__doc__ = f"Prediction {prediction.exercise}: {prediction.question}"
    return check_prediction


def outcome_check(exercise: str, prediction: Prediction, truth: Callable[[Mapping[str, Any]], str],
                  explain: Mapping[str, str]) -> Callable[..., Passed]:
    """The check after a measurement: ``outcome`` must be the option the data shows (``truth(measured)``); the
    message compares it with the learner's ``predicted`` option and explains the result (``explain[option]``)."""
    def others(a: Any) -> list[str]:
        shown = truth(a.measured)
        return [k for k in prediction.options if k != shown]

    @check(exercise,
           wrong("the first option the data does not show", outcome=lambda a: others(a)[0], mentions="measurement"),
           wrong("the second option the data does not show", outcome=lambda a: others(a)[1], mentions="measurement"),
           wrong("a letter that is not offered", outcome="z", mentions="one of the letters"))
    def check_outcome(outcome: str | None, predicted: str | None, measured: Mapping[str, Any]) -> Passed:
        key = letter(exercise, outcome, prediction.options, "what the measurement shows")
        shown = truth(measured)
        if key != shown:
            shows = prediction.options[key].rstrip(".")
            raise CheckFailed(exercise, f"the measurement does not show ({key}) {shows}",
                              hint="read the numbers printed above again; which option do they support?")
        guess = _key(predicted)
        verdict = ("as you predicted" if guess == shown else
                   f"you predicted ({guess}) {prediction.options[guess]}" if guess in prediction.options else
                   "you made no prediction")
        return passed(exercise, f"({shown}) {prediction.options[shown]}: {verdict}. {explain[shown]}")

    check_outcome.__doc__ = f"Exercise {exercise}: what the measurement shows for prediction {prediction.exercise}."
    return check_outcome
