"""The instructor verification: right solutions and failing stubs pass; each classic mistake is a FAIL row."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lumikit.checks.conventions import DEFAULT_BUDGET_S, DEFAULT_CELL_TIMEOUT_S
from lumikit.checks.instructor.generate import generate
from lumikit.checks.instructor.notebook import CellResult, NotebookRun
from lumikit.checks.instructor.verify import (CheckReport, PairReport, Problem, format_check_table, format_table,
                                              judge_exercise, judge_solution, verify)
from lumikit.cli import main


def cell(number: int, tags: tuple[str, ...], status: str = "ok", ename: str | None = None, evalue: str | None = None,
         passes: int = 0) -> CellResult:
    return CellResult(number, tags, f"cell_{number}()", status, ename, evalue, passes, 0.1)


def notebook(*cells: CellResult, seconds: float = 2.0, stopped: str | None = None) -> NotebookRun:
    return NotebookRun(Path("solutions/01_x.py"), cells, seconds, stopped)


def test_a_solution_passes_when_every_check_cell_shows_a_pass() -> None:
    run = notebook(cell(1, ()), cell(2, ("solution",)), cell(3, ("check",), passes=1))
    assert judge_solution(run) == (1, [])


@pytest.mark.parametrize("run, kind", [
    (notebook(cell(2, ("solution",)), cell(3, ("check",), "error", "CheckFailed", "Exercise 01.1: wrong")),
     "solution check fails"),
    (notebook(cell(1, (), "error", "ZeroDivisionError", "division by zero"), cell(3, ("check",), passes=1)),
     "solution cell errors"),
    (notebook(cell(2, ("solution",)), cell(3, ("check",))), "check shows no pass"),
    (notebook(cell(2, ("solution",))), "no check cells"),
    (notebook(cell(3, ("check",), passes=1), seconds=DEFAULT_BUDGET_S + 5), "over time"),
    (notebook(cell(3, ("check",), "timeout"), stopped="a cell ran longer than 240 s"), "stopped"),
])
def test_what_makes_a_solution_fail(run: NotebookRun, kind: str) -> None:
    _, problems = judge_solution(run)
    assert kind in [p.kind for p in problems]


def test_a_slow_notebook_on_a_loaded_machine_is_not_over_time() -> None:
    # module 07 took over 90 s under load: the limits leave room for that, and a cell may outlast 07's 180 s run limit
    assert judge_solution(notebook(cell(3, ("check",), passes=1), seconds=200.0)) == (1, [])
    assert DEFAULT_CELL_TIMEOUT_S > 180 and DEFAULT_BUDGET_S >= 2 * DEFAULT_CELL_TIMEOUT_S


def test_an_exercise_passes_when_stubs_raise_and_checks_fail_with_their_message() -> None:
    run = notebook(cell(2, ("exercise",), "error", "NotImplementedError", "Exercise 01.1: hint"),
                   cell(3, ("check",), "error", "CheckFailed", "No answer yet for 01.1: the count."),
                   cell(4, (), "error", "TypeError", "unsupported operand"))  # a plain cell using the answer
    assert judge_exercise(run) == (1, [])


@pytest.mark.parametrize("run, kind", [
    (notebook(cell(3, ("check",), passes=1)), "check cannot fail"),
    (notebook(cell(3, ("check",), "error", "NameError", "name 'gcds' is not defined")), "check crashes on None"),
    (notebook(cell(3, ("check",), "error", "CheckFailed", "")), "check crashes on None"),
    (notebook(cell(2, ("exercise",))), "stub does not raise"),
    (notebook(cell(2, ("exercise",), "error", "ValueError", "bad")), "stub does not raise"),
])
def test_what_makes_an_exercise_fail(run: NotebookRun, kind: str) -> None:
    failing, problems = judge_exercise(run)
    assert failing == 0
    assert [p.kind for p in problems] == [kind]


def test_the_table_has_one_row_per_notebook_and_the_details_below() -> None:
    checks = (CheckReport("01.1", "passes", "fails", 2, 2), CheckReport("01.2", "passes", "fails", 3, 3))
    reports = [PairReport("01_slurm", 2, 2, 2, 12.25, (), checks),
               PairReport("02_containers", 3, 2, 3, 40.0, (Problem("solution check fails", "cell 7: CheckFailed"),))]
    assert format_table(reports).splitlines() == [
        "notebook       checks  pass in solution  fail in exercise  wrong rejected  time (s)  verdict",
        "-------------  ------  ----------------  ----------------  --------------  --------  --------------------------",
        "01_slurm       2       2/2               2/2               5/5             12.2      ok",
        "02_containers  3       2/3               3/3               0/0             40.0      FAIL: solution check fails",
        "",
        "- 02_containers: cell 7: CheckFailed",
    ]


def test_the_check_table_has_one_row_per_check_and_the_wrong_answer_and_leak_totals() -> None:
    checks = (CheckReport("01.1", "passes", "fails", 2, 2, 3, 0), CheckReport("01.2", "passes", "fails", 3, 2, 4, 0),
              CheckReport("01.3", "passes", "fails", 1, 1, 2, 0), CheckReport("01.4", "passes", "fails", 2, 2, 3, 1, (("words", 1),)))
    lines = format_check_table([PairReport("01_slurm", 4, 4, 4, 1.0, (), checks)]).splitlines()
    assert lines[2].split() == ["01.1", "passes", "fails", "2/2", "0/3", "ok"]
    assert lines[3].split() == ["01.2", "passes", "fails", "2/3", "0/4", "FAIL"]  # one wrong answer got through
    assert lines[4].split() == ["01.3", "passes", "fails", "1/1", "0/2", "FAIL"]  # fewer than two declared
    assert lines[5].split() == ["01.4", "passes", "fails", "2/2", "1/3", "FAIL"]  # one message showed the answer
    assert lines[-1] == ("4 checks; 7 of 8 known-wrong answers rejected; 12 failure messages checked for leaked "
                         "answers, 1 leaked (by kind: value 0, words 1, identifier 0, key 0, letter 0, name 0, "
                         "recipe 0, proximity 0, elimination 0, other exercise 0)")


def test_the_good_sample_verifies(good_workbook: Path) -> None:
    [report] = verify(good_workbook / "solutions", good_workbook / "exercises", progress=False)
    assert (report.name, report.checks, report.solution_passed, report.exercise_failing) == ("00_sample", 3, 3, 3)
    assert report.ok, report.problems
    assert [(c.exercise, c.solution, c.stub, c.wrong_tried, c.wrong_rejected) for c in report.check_reports] == [
        ("00.1", "passes", "fails", 3, 3), ("00.2", "passes", "fails", 2, 2), ("00.3", "passes", "fails", 2, 2)]


def test_each_broken_sample_fails_with_its_own_row(broken_workbook: Path, capsys) -> None:
    status = main(["verify", "--solutions", str(broken_workbook / "solutions"),
                   "--exercises", str(broken_workbook / "exercises")])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("00_")}
    assert status == 1
    assert rows["00_cannot_fail"].split()[1:4] == ["1", "1/1", "0/1"]
    assert rows["00_cannot_fail"].endswith("FAIL: check cannot fail")
    assert rows["00_wrong_answer"].split()[1:4] == ["1", "0/1", "1/1"]
    assert rows["00_wrong_answer"].endswith("FAIL: solution check fails")
    assert rows["00_crashes_on_none"].split()[1:4] == ["1", "1/1", "0/1"]
    assert rows["00_crashes_on_none"].endswith("FAIL: check crashes on None")
    assert "raised AttributeError: 'NoneType' object has no attribute 'lower' instead of CheckFailed" in out
    assert "No answer yet" not in rows["00_wrong_answer"]
    assert "Exercise 00.1: the number of GCDs on one LUMI-G node is not right; you gave 4." in out
    assert rows["00_accepts_wrong"].split()[1:5] == ["2", "2/2", "2/2", "2/3"]
    assert "wrong answer accepted" in rows["00_accepts_wrong"] and "too few wrong answers" in out
    assert "the wrong answer 'counts packages, not GCDs' was accepted" in out
    assert re.search(r"^\d+ checks; \d+ of \d+ known-wrong answers rejected; \d+ failure messages checked for "
                     r"leaked answers, 0 leaked \(by kind: [^)]*\)$", out, re.MULTILINE)
    assert "4 notebook pair(s), 4 failing; notebooks ran" in out


def test_only_selects_notebooks_and_a_missing_or_stale_exercise_is_reported(good_workbook: Path, capsys) -> None:
    solutions, exercises = good_workbook / "solutions", good_workbook / "exercises"
    assert main(["verify", "--solutions", str(solutions), "--exercises", str(exercises), "--only", "07"]) == 0
    assert "matching 07: nothing to verify" in capsys.readouterr().out

    (exercises / "00_sample.py").unlink()
    reports = verify(solutions, exercises, only=["00"], progress=False)
    assert [p.kind for p in reports[0].problems] == ["exercise missing"]

    generate(solutions, exercises)
    source = solutions / "00_sample.py"
    source.write_text(source.read_text().replace("# # 00 A sample module", "# # 00 A sample module, edited"))
    reports = verify(solutions, exercises, only=["00"], progress=False)
    assert [p.kind for p in reports[0].problems] == ["out of date", "out of date", "out of date"]
    assert all("Fix: run `make exercises`" in p.detail for p in reports[0].problems)


def test_verify_with_no_solutions_says_so_and_passes(tmp_path: Path, capsys) -> None:
    (tmp_path / "solutions").mkdir()
    assert main(["verify", "--solutions", str(tmp_path / "solutions"), "--exercises", str(tmp_path / "ex")]) == 0
    assert "nothing to verify" in capsys.readouterr().out


def test_exercises_commands_generate_then_check(tmp_path: Path, sample_data: Path, capsys) -> None:
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "00_sample.py").write_text((sample_data / "good" / "solutions" / "00_sample.py").read_text())
    folders = ["--solutions", str(solutions), "--exercises", str(tmp_path / "exercises")]
    assert main(["exercises", "check", *folders]) == 1
    assert main(["exercises", "generate", *folders]) == 0
    assert main(["exercises", "check", *folders]) == 0
    assert "exercises up to date" in capsys.readouterr().out


def test_a_clone_with_answered_exercises_is_verified_on_a_fresh_copy_and_its_answers_kept(good_workbook: Path,
                                                                                          capsys) -> None:
    """A learner ran `lumikit verify` after answering: their exercise is neither run ("cannot fail" for every check
    it once gave) nor regenerated, and no advice says `make exercises` (which would overwrite the answers)."""
    import jupytext

    solutions, exercises = good_workbook / "solutions", good_workbook / "exercises"
    mine = exercises / "00_sample.py"
    sol = jupytext.reads((solutions / "00_sample.py").read_text(), fmt="py:percent")
    ex = jupytext.reads(mine.read_text(), fmt="py:percent")
    for s_cell, e_cell in zip(sol.cells, ex.cells):
        if "exercise" in e_cell.metadata.get("tags", []):
            e_cell.source = s_cell.source  # the learner's right answers in place of the stubs
    mine.write_text(jupytext.writes(ex, fmt="py:percent"))
    answered = mine.read_text()
    assert main(["verify", "--solutions", str(solutions), "--exercises", str(exercises)]) == 0
    out = capsys.readouterr().out
    assert "holds your answers: it was left as it is" in out and "make exercises" not in out
    assert "cannot fail" not in out
    assert mine.read_text() == answered
    assert not list(good_workbook.glob(".verify-exercises-*"))  # the fresh copy is gone
