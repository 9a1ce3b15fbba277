"""Hints on demand: the idea on the first call, the tool from the second; failed attempts bring them too."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, check, expect_equal, hints, passed, wrong


@pytest.fixture
def workbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workbook folder whose exercises/hints.json holds the hints of exercise 99.1."""
    for folder in ("exercises", "notebooks"):
        (tmp_path / folder).mkdir()
    (tmp_path / "exercises" / "hints.json").write_text(json.dumps(
        {"99.1": {"idea": "GCDs count from 0.", "tool": "`site.node.gcd(k)`."}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hints, "_calls", {})
    hints._load.cache_clear()
    return tmp_path


def test_the_first_call_shows_the_idea_and_the_second_the_tool(workbook: Path) -> None:
    first = hints.hint("99.1")
    assert str(first) == ('Hint for 99.1: Idea: GCDs count from 0. (Still stuck? Call hint("99.1") again for '
                          'the tool.)')
    second = hints.hint("99.1")
    assert second.lines == ("Idea: GCDs count from 0.", "Tool: `site.node.gcd(k)`.")
    assert "again" not in str(second)


def test_an_unknown_exercise_says_so(workbook: Path) -> None:
    assert "no hint is known for '98.7'" in str(hints.hint("98.7"))


@check("99.1", wrong("one", answer=1), wrong("two", answer=2))
def _check_five(answer: int | None):
    expect_equal("99.1", answer, 5, what="the number")
    return passed("99.1")


def test_failed_attempts_bring_the_idea_then_the_tool(workbook: Path) -> None:
    messages = []
    for _ in range(3):
        with pytest.raises(CheckFailed) as caught:
            _check_five(4)
        messages.append(str(caught.value))
    assert "Idea:" not in messages[0]
    assert "(Attempt 2.) Idea: GCDs count from 0." in messages[1] and "Tool:" not in messages[1]
    assert "(Attempt 3.) Idea: GCDs count from 0. Tool: `site.node.gcd(k)`." in messages[2]
    assert all(" 5" not in m for m in messages)


def test_verify_searches_the_hints_for_the_answer_too(workbook: Path) -> None:
    from lumikit.checks.probe import try_wrong_answers

    (workbook / "exercises" / "hints.json").write_text(json.dumps(
        {"99.1": {"idea": "count them.", "tool": "the answer is 5, obviously."}}))
    hints._load.cache_clear()
    report = try_wrong_answers("_check_five(5)", {"_check_five": _check_five})
    assert report.stub_leaked == ("5",) and "the answer is 5" in report.stub_message


def test_a_hint_that_spells_out_the_solutions_expression_is_flagged() -> None:
    source = "# Hint: leave the first step out.\n# Tool: `statistics.median(step_times[1:])`.\nwarm = statistics.median(step_times[1:])\n"
    assert hints.give_aways(source, {"idea": "leave the first step out.",
                                     "tool": "`statistics.median( step_times[1:] )`."}) == [
        "statistics.median(step_times[1:])"]
    assert not hints.give_aways(source, {"idea": "leave the first step out.", "tool": "the `statistics` module."})


def test_no_shipped_hint_spells_out_its_solution() -> None:
    import jupytext

    from lumikit.checks.generate import cell_hints, solution_files

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in solution_files(root / "solutions"):
        for cell in jupytext.read(path, fmt="py:percent").cells:
            if "solution" in cell.metadata.get("tags", []):
                found += [(path.name, e) for e in hints.give_aways(cell.source, cell_hints(cell.source))]
    assert found == []
