"""A class folder no learner can flood: records of unknown exercises are one count, not columns or denominators;
learner names reach the CSV escaped as on the terminal; a linked progress/ is named as a link in its row; a run
folder copied between two learners is flagged."""
from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

from lumikit.checks.instructor.classview import ClassReader, format_text
from lumikit.checks.progress import declared_exercises, record
from lumikit.cli import main

from .test_grades import _learner_folder

NOW = 1_790_000_000.0
EVIL = "evil\x1b]0;owned\x07\u202eeman"  # a title-setting escape and a right-to-left override


def _flood(folder: Path, count: int) -> None:
    """``count`` records of exercises no workbook has (module 77), each a copy of a real record."""
    text = (folder / "04.1.json").read_text()
    for k in range(count):
        (folder / f"77.{k}.json").write_text(text)


def _grade(class_dir: Path, out: Path, capsys) -> tuple[list[str], dict[str, dict[str, str]], str]:
    assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(out)]) == 0
    said = capsys.readouterr().out
    text = out.read_text()
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], {r["learner"]: r for r in csv.DictReader(io.StringIO(text))}, said


def test_ten_thousand_unknown_records_are_one_cell_and_names_and_links_read_as_on_the_terminal(
        monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    _learner_folder(monkeypatch, class_dir, "ada")
    _flood(_learner_folder(monkeypatch, class_dir, "flood"), 10_000)
    _learner_folder(monkeypatch, class_dir, EVIL)
    linked = class_dir / "lin" / "workbook"
    linked.mkdir(parents=True)
    (linked / "progress").symlink_to(_learner_folder(monkeypatch, tmp_path / "elsewhere", "lin"))
    header, rows, said = _grade(class_dir, tmp_path / "g.csv", capsys)
    assert len(header) < 120, len(header)
    assert rows["flood"]["unknown records"] == "10000" and rows["ada"]["unknown records"] == "0"
    assert rows["flood"]["04.1"] == "verified" and not any(h.startswith("77.") for h in header)
    text = (tmp_path / "g.csv").read_text()
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "evil\\x1b]0;owned\\x07\\u202eeman" in rows  # the escapes the terminal shows
    assert rows["evil\\x1b]0;owned\\x07\\u202eeman"]["verified"] == "2"
    assert "\x1b" not in said and "\u202e" not in said
    assert "refused (a link; progress/ is read only where it lies)" in rows["lin"]["not verified"]
    assert "refused (a link; progress/ is read only where it lies)" in said  # the same words on the terminal
    assert "no check run yet" not in rows["lin"]["not verified"]


def test_the_live_view_counts_unknown_records_without_inflating_its_denominators(monkeypatch, tmp_path) -> None:
    class_dir = tmp_path / "class"
    _learner_folder(monkeypatch, class_dir, "ada")
    _flood(_learner_folder(monkeypatch, class_dir, "flood"), 10_000)
    state = ClassReader(class_dir, exercises=declared_exercises()).refresh(NOW)
    assert state.exercises == ["01.q1", "04.1"]
    rows = {r.learner: r for r in state.learners}
    assert rows["flood"].unknown == 10_000 and len(rows["flood"].cells) == 2
    assert "2/2" in format_text(state) and "10,000 unknown record(s), not shown" in format_text(state)
    unbounded = ClassReader(class_dir).refresh(NOW)  # no list of exercises: at most 400 records per learner
    assert len({r.learner: r for r in unbounded.learners}["flood"].cells) == 400


def _run_folder(where: Path) -> Path:
    """A finished run's folder: a manifest and a log, as a launch leaves them."""
    where.mkdir(parents=True)
    (where / "manifest.json").write_text(json.dumps({"started": "2026-11-26T10:00:00+00:00", "exit": 0}))
    (where / "log.txt").write_text("step 1 0.52 s\nstep 2 0.31 s\n")
    return where


def _capstone_pass(monkeypatch, class_dir: Path, name: str, run: Path) -> None:
    folder = _learner_folder(monkeypatch, class_dir, name)
    record("11.1", {"before_rate": 1234.0}, passed=True, unanswered=False, message="passed", folder=folder,
           evidence={"before_dir": run})


def test_a_run_folder_copied_from_a_classmate_is_flagged_for_both(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    own = _run_folder(class_dir / "ada" / "lumi-ai-workbook" / "runs" / "11-before")
    _capstone_pass(monkeypatch, class_dir, "ada", own)
    copied = class_dir / "bo" / "lumi-ai-workbook" / "runs" / "11-before"
    copied.parent.mkdir(parents=True)
    shutil.copytree(own, copied)
    _capstone_pass(monkeypatch, class_dir, "bo", copied)
    theirs = _run_folder(class_dir / "cy" / "lumi-ai-workbook" / "runs" / "r")
    (theirs / "log.txt").write_text("step 1 0.50 s\n")  # a run of their own
    _capstone_pass(monkeypatch, class_dir, "cy", theirs)
    _, rows, _ = _grade(class_dir, tmp_path / "g.csv", capsys)
    assert [rows[n]["11.1"] for n in ("ada", "bo")] == ["own data", "own data"]
    assert "11.1: copy? a run folder with the same content (hash) as bo's" in rows["ada"]["not verified"]
    assert "11.1: copy? a run folder with the same content (hash) as ada's" in rows["bo"]["not verified"]
    assert "copy?" not in rows["cy"]["not verified"]


def test_open_answers_are_exported_escaped_as_the_terminal_shows_them() -> None:
    from lumikit.checks.open_answers import export_markdown

    text = export_markdown({EVIL: {"07_x": {"Why?": {"question": "Why?", "answer": "because\x1b[2J it \u202eis"}}}})
    assert "\x1b" not in text and "\u202e" not in text
    assert "**evil\\x1b]0;owned\\x07\\u202eeman:** because\\x1b[2J it \\u202eis" in text


def test_one_learners_records_are_read_up_to_a_count_and_a_size(monkeypatch, tmp_path) -> None:
    from lumikit.checks import progress

    folder = _learner_folder(monkeypatch, tmp_path / "class", "flood")
    _flood(folder, 450)
    unknown: list[str] = []
    problems: list[str] = []
    read = progress.read_results(folder, problems=problems, unknown=unknown)
    assert len(read) == progress.RECORDS_PER_LEARNER and len(unknown) == 452 - progress.RECORDS_PER_LEARNER
    assert "52 record(s) not read" in problems[0]
    monkeypatch.setattr(progress, "BYTES_PER_LEARNER", 10 * (folder / "04.1.json").stat().st_size)
    unknown.clear()
    read = progress.read_results(folder, unknown=unknown)  # read until past the bytes, then only counted
    assert len(read) in (10, 11) and len(read) + len(unknown) == 452


def test_the_widget_table_names_the_unknown_records_in_the_learners_row(monkeypatch, tmp_path) -> None:
    import pytest

    pytest.importorskip("ipywidgets")
    from lumikit.widgets.class_view import grid_html

    _flood(_learner_folder(monkeypatch, tmp_path / "class", "flood"), 30)
    page = grid_html(ClassReader(tmp_path / "class", exercises=declared_exercises()).refresh(NOW))
    assert "30 unknown record(s), not shown" in page and "77.1" not in page
