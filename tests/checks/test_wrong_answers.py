"""Known-wrong answers: declared with @check, tried by the probe in the check's own namespace, never recorded."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, check, expect_equal, passed, wrong
from lumikit.checks.framework import check_info
from lumikit.checks.probe import check_call, try_wrong_answers


@check("00.9",
       wrong("one step too many", answer=lambda a: a.steps + 1, mentions="steps"),
       wrong("the count as text", answer=lambda a: str(a.steps)),
       wrong("no answer at all", answer=None))
def check_steps(answer, steps):
    expect_equal("00.9", answer, steps, what="the number of steps", hint="count the steps")
    return passed("00.9")


def test_check_declares_its_exercise_wrong_answers_and_answer_arguments() -> None:
    info = check_info(check_steps)
    assert info.exercise == "00.9"
    assert [w.why for w in info.wrong] == ["one step too many", "the count as text", "no answer at all"]
    assert info.answer_names == ("answer",)


def test_a_wrong_answer_naming_an_unknown_argument_is_refused() -> None:
    with pytest.raises(TypeError, match="not its parameters"):
        check("00.1", wrong("typo", answr=3))(lambda answer: None)
    with pytest.raises(ValueError, match="replaces no argument"):
        wrong("nothing")


def test_the_probe_derives_wrong_answers_from_the_check_data_and_judges_each(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path))
    report = try_wrong_answers("check_steps(n, steps=12)", {"check_steps": check_steps, "n": 12})
    assert report.exercise == "00.9"
    outcomes = {o.why: o for o in report.outcomes}
    assert outcomes["one step too many"].outcome == "rejected"
    assert "you gave 13" in outcomes["one step too many"].message and "12" not in outcomes["one step too many"].message
    assert not outcomes["one step too many"].leaked and not report.stub_leaked
    assert (report.messages_checked, report.leaks) == (4, 0)  # three wrong answers and the stub
    assert outcomes["the count as text"].outcome == "rejected"
    assert outcomes["no answer at all"].outcome == "unanswered"  # a wrong answer must be a real answer
    assert not list(tmp_path.iterdir())  # trying wrong answers records no progress


def test_the_probe_reports_accepted_unmentioned_and_undeclared_checks() -> None:
    @check("00.8", wrong("anything goes", answer=3), wrong("wrong words", answer=4, mentions="GCD"))
    def lax(answer):
        if answer == 4:
            raise CheckFailed("00.8", "not four")
        return passed("00.8")

    report = try_wrong_answers("lax(1)", {"lax": lax})
    assert [o.outcome for o in report.outcomes] == ["accepted", "not mentioned"]
    assert "not declared with @check" in try_wrong_answers("len([1])", {}).problem
    assert try_wrong_answers("x = 1", {}).problem.startswith("the check cell does not end with a call")
    assert check_call("import x\nchecks.check_a(b, rank=0)").keywords[0].arg == "rank"


def test_a_declared_check_still_passes_and_fails_as_before(monkeypatch) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS", "off")
    assert str(check_steps(12, 12)) == "✓ Exercise 00.9 passed"
    with pytest.raises(CheckFailed, match=r"you gave 11\. Hint") as caught:  # a count: no "counted from 0"
        check_steps(11, 12)
    assert caught.value.mistake is None


def test_the_probe_finds_a_message_that_shows_the_solutions_answer() -> None:
    @check("00.7", wrong("too few", answer=120), wrong("too many", answer=512))
    def telling(answer):
        if answer is None:
            raise CheckFailed("00.7", "the count", unanswered=True, hint="count the 256 samples")
        if answer != 256:
            raise CheckFailed("00.7", f"the count should be 256, not {answer}")
        return passed("00.7")

    report = try_wrong_answers("telling(256)", {"telling": telling})
    assert [o.leaked for o in report.outcomes] == [("256",), ("256",)]
    assert report.stub_leaked == ("256",)
    assert (report.messages_checked, report.leaks) == (3, 3)
