"""Conceptual checks: every option explains itself, predictions are recorded, outcomes are judged by the data."""
from __future__ import annotations

import importlib

import pytest

from lumikit.checks import CheckFailed
from lumikit.checks.concepts import Choice, Option, Prediction, choice_check, outcome_check, prediction_check
from lumikit.checks.framework import check_info
from lumikit.checks.instructor.probe import try_wrong_answers

QUESTION = Choice("00.q1", "Why is the sky blue?", {
    "a": Option("Reflection of the sea.", False, "the sky is blue over deserts too."),
    "b": Option("Rayleigh scattering.", True, "short wavelengths scatter most."),
    "c": Option("Blue paint.", False, "there is no paint up there."),
})
check_sky = choice_check(QUESTION)


def test_a_choice_shows_its_question_and_options_and_needs_one_right_option() -> None:
    text = QUESTION._repr_markdown_()
    assert text.startswith("**Question 00.q1.** Why is the sky blue?") and "- **b)** Rayleigh scattering." in text
    with pytest.raises(ValueError, match="exactly one of them right"):
        Choice("00.q2", "?", {k: Option(k, True, k) for k in "abc"})


def test_each_option_gets_its_own_explanation() -> None:
    assert "short wavelengths scatter most" in str(check_sky("B"))
    assert check_sky("(b)")
    with pytest.raises(CheckFailed, match=r"00.q1: \(a\) is not the best answer: the sky is blue over deserts"):
        check_sky("a")
    with pytest.raises(CheckFailed, match="one of the letters a, b, c"):
        check_sky("rayleigh")
    with pytest.raises(CheckFailed, match="No answer yet for 00.q1"):
        check_sky(None)


def test_the_wrong_options_are_the_known_wrong_answers_and_all_are_rejected() -> None:
    assert [w.answers["answer"] for w in check_info(check_sky).wrong] == ["a", "c", "z"]
    report = try_wrong_answers("check_sky('b')", {"check_sky": check_sky})
    assert [o.outcome for o in report.outcomes] == ["rejected"] * 3


PREDICT = Prediction("00.q3", "Will it rain?", {"a": "yes", "b": "no", "c": "a little"})
check_predict = prediction_check(PREDICT)
check_rain = outcome_check("00.q4", PREDICT, lambda m: "a" if m["mm"] > 5 else "c" if m["mm"] > 0 else "b",
                           {"a": "a front came.", "b": "high pressure.", "c": "a shower."})


def test_any_listed_prediction_passes_and_the_outcome_follows_the_data() -> None:
    assert "prediction recorded: (b) no" in str(check_predict("b"))
    with pytest.raises(CheckFailed, match="one of the letters"):
        check_predict(2)
    assert "(a) yes: you predicted (b) no. a front came." in str(check_rain("a", "b", measured={"mm": 12}))
    assert "as you predicted" in str(check_rain("b", "b", measured={"mm": 0}))
    with pytest.raises(CheckFailed, match=r"the measurement does not show \(a\) yes"):
        check_rain("a", "a", measured={"mm": 0})
    report = try_wrong_answers("check_rain('c', 'a', measured={'mm': 1})", {"check_rain": check_rain})
    assert [o.outcome for o in report.outcomes] == ["rejected"] * 3


def test_the_workbook_has_at_least_15_conceptual_checks_each_with_feedback_for_every_option() -> None:
    found = []
    for number in range(1, 10):
        module = importlib.import_module(f"lumikit.checks.m0{number}")
        for name in dir(module):
            info = check_info(getattr(module, name))
            if info and ".q" in info.exercise:
                found.append(info.exercise)
            value = getattr(module, name)
            if isinstance(value, Choice):
                assert all(o.why for o in value.options.values()), value.exercise
    assert len(found) >= 15, found
