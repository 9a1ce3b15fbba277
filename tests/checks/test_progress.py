"""Progress: one JSON per check in the learner's folder, a per-module summary, and a class CSV that matches them."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, example
from lumikit.checks import progress as progress_module
from lumikit.checks.learner import workbook_root
from lumikit.checks.instructor.class_records import class_csv, read_class
from lumikit.checks.progress import progress_dir, read_results, summary_table, workbook_exercises
from lumikit.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_every_check_call_records_one_json_in_the_learners_folder(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    with pytest.raises(CheckFailed):
        example.check_gcd_count(None)
    with pytest.raises(CheckFailed):
        example.check_gcd_count(4)
    example.check_gcd_count(8)
    with pytest.raises(CheckFailed):
        example.check_gcd_count(5)  # a later wrong attempt does not undo the pass
    data = json.loads((tmp_path / "00.1.json").read_text())
    assert (data["learner"], data["status"], data["attempts"], data["answers"]) == ("ada", "failed", 3, {"answer": 5})
    assert data["first_passed"] is not None
    [result] = read_results(tmp_path)
    assert result.ever_passed and result.module == "00"


def test_recording_can_be_switched_off_and_defaults_to_the_workbook(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LUMIKIT_PROGRESS_DIR", raising=False)
    monkeypatch.setenv("LUMIKIT_PROGRESS", "off")
    assert progress_dir() is None
    monkeypatch.delenv("LUMIKIT_PROGRESS")
    assert progress_dir(REPO / "exercises") == REPO / "progress"


def test_a_check_called_by_a_test_records_in_the_sessions_folder_not_the_learners() -> None:
    """The session-wide fixture of tests/conftest.py: the learner's own ``progress/`` never sees a test's checks."""
    folder = progress_dir(REPO / "exercises")
    assert folder is not None and REPO not in folder.parents, folder
    learners = REPO / "progress" / "00.1.json"
    before = learners.stat().st_mtime_ns if learners.exists() else None
    example.check_gcd_count(8)
    assert json.loads((folder / "00.1.json").read_text())["status"] == "passed"
    assert (learners.stat().st_mtime_ns if learners.exists() else None) == before


def test_a_check_in_a_subprocess_inherits_the_sessions_folder(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    code = "from lumikit.checks.progress import progress_dir; print(progress_dir())"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "exercises", capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert out.stdout.strip() == str(progress_dir()) and str(REPO / "progress") != out.stdout.strip()


def test_the_summary_counts_passed_failed_and_not_yet_per_module(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path))
    example.check_gcd_count(8)
    with pytest.raises(CheckFailed):
        example.check_kernel_class("compute")
    rows = summary_table(read_results(tmp_path), ["00.1", "00.2", "00.3", "01.1"])
    assert rows == [{"module": "00", "exercises": 3, "passed": 1, "not checked": 0, "failed": 1, "not yet": 1,
                     "to do": "00.2, 00.3"},
                    {"module": "01", "exercises": 1, "passed": 0, "not checked": 0, "failed": 0, "not yet": 1,
                     "to do": "01.1"}]


def _answer(rng: random.Random, check, right, wrongs) -> None:
    """Call ``check`` with the right answer, a wrong one, or nothing (the stub's None), as a learner might."""
    choice = rng.choice(["right", "wrong", "none", "skip"])
    if choice == "skip":
        return
    try:
        check({"right": right, "wrong": rng.choice(wrongs), "none": None}[choice])
    except CheckFailed:
        pass


def test_a_generated_class_of_five_exports_a_csv_that_matches_their_records(monkeypatch, tmp_path: Path,
                                                                           capsys) -> None:
    rng = random.Random(5)
    steps = [1.0, 0.5, 0.5, 0.6]
    checks = [(example.check_gcd_count, 8, [4, 64, "8"]),
              (lambda a: example.check_mean_step_time(a, steps), 16 / 30, [0.65, 1.0]),
              (example.check_kernel_class, "communication", ["compute", "memory"])]
    for n in range(5):
        learner = f"learner{n}"
        folder = tmp_path / "class" / learner / "lumi-ai-workbook" / "progress"
        monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
        monkeypatch.setenv("LUMIKIT_LEARNER", learner)
        folder.mkdir(parents=True)
        for _ in range(3):
            for check, right, wrongs in checks:
                _answer(rng, check, right, wrongs)
    assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(tmp_path / "grades.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert [r["learner"] for r in rows] == [f"learner{n}" for n in range(5)]
    for row in rows:
        recorded = {p.stem: json.loads(p.read_text())
                    for p in (tmp_path / "class" / row["learner"] / "lumi-ai-workbook" / "progress").glob("*.json")}
        for exercise in ("00.1", "00.2", "00.3"):
            data = recorded.get(exercise)
            expected = "" if data is None else ("self-reported" if data["first_passed"] else data["status"])
            assert row[exercise] == expected  # without --grade a claimed pass is only self-reported
        assert int(row["self-reported"]) == sum(1 for d in recorded.values() if d["first_passed"])
        assert row["verified"] == "0"
    every = workbook_exercises(workbook_root())  # the command lists every exercise of the workbook it runs in
    assert class_csv(read_class(tmp_path / "class"), every) == (tmp_path / "grades.csv").read_text()
    out = capsys.readouterr().out
    assert "wrote" in out and "exercises can be regraded from a record" in out


def test_progress_command_summarises_one_learner_and_rejects_a_missing_class(monkeypatch, tmp_path: Path,
                                                                            capsys) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    example.check_gcd_count(8)
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"progress of ada ({tmp_path})") and "00" in out
    assert main(["progress", "--class", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err


def _clock_at(moment: datetime) -> type:
    """A stand-in for ``datetime`` in lumikit.checks.progress whose ``now()`` is always ``moment``."""
    return type("Clock", (datetime,), {"now": staticmethod(lambda tz=None: moment)})


def test_the_instructor_regrades_recorded_answers_with_references_from_each_learners_seed(monkeypatch, tmp_path,
                                                                                          capsys) -> None:
    from lumikit.checks import m01, m04, m08
    from lumikit.checks.datasets import starved_gcd
    from lumikit.jobs import spec
    from lumikit.site import load_site

    node = load_site("lumi").node
    job = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8)
    for n in range(5):
        learner = f"learner{n}"
        folder = tmp_path / "class" / learner / "lumi-ai-workbook" / "progress"
        monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
        monkeypatch.setenv("LUMIKIT_LEARNER", learner)
        monkeypatch.delenv("LUMIKIT_SEED", raising=False)  # the seed is the learner's name
        # each learner works in their own minute: run back to back, two could pass in the same second and be
        # flagged as a possible copy, which is not what this test is about
        minute = datetime(2026, 11, 26, 10, n, tzinfo=timezone.utc)
        monkeypatch.setattr(progress_module, "datetime", _clock_at(minute))
        m04.check_starved_gcd(starved_gcd("04"))  # right, for this learner's own session
        task = m08.task_to_study()
        answer = node.gcd(task % 8).mask_hex if n % 2 == 0 else node.gcd(0).mask_hex  # odd learners answer wrong
        with pytest.raises(CheckFailed) if n % 2 else contextlib.nullcontext():
            m08.check_task_mask(answer)
        m01.check_why_seven_cores("b")
        m08.check_profile_one_rank(job.with_(profile="rocprof", profile_ranks=(9 + n,), profile_steps=20))
    # learner3 edits their record of 08.1 to "passed": the instructor's re-run does not trust it
    forged = tmp_path / "class" / "learner3" / "lumi-ai-workbook" / "progress" / "08.1.json"
    data = json.loads(forged.read_text())
    forged.write_text(json.dumps({**data, "status": "passed", "first_passed": data["updated"]}))
    monkeypatch.setenv("LUMIKIT_SEED", "the-instructor")  # the instructor's own seed must not matter
    assert main(["progress", "--class", str(tmp_path / "class"), "--grade", "--csv", str(tmp_path / "g.csv")]) == 0
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}
    for n in range(5):
        row = rows[f"learner{n}"]
        assert (row["04.1"], row["01.q1"]) == ("verified", "verified")
        assert row["08.1"] == ("verified" if n % 2 == 0 else "failed" if n != 3 else "disagrees")
        assert row["08.4"] == "verified"  # a job spec is recorded exactly, so it is regraded too
    assert rows["learner3"]["disagrees"] == "1" and "08.1" in rows["learner3"]["not verified"]
    assert rows["learner1"]["disagrees"] == "0" and rows["learner1"]["not verified"] == ""
    capsys.readouterr()
