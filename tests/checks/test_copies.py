"""Copies flagged: a neighbour's progress/ copied with their seed, the same seconds, the same measurements or the
same written conclusion are named in the CSV's "not verified" column; a roster or a course key decides the seeds."""
from __future__ import annotations

import csv
import io
import json
import shutil

from lumikit.checks import m01, m04, m09
from lumikit.checks.datasets import starved_gcd
from lumikit.checks.learner import course_seed
from lumikit.cli import main


def _record_as(monkeypatch, class_dir, name, seed, times=(0.4321, 0.0123), at=None):
    """Learner ``name`` works with ``seed`` (kept in progress/seed, as a handed-out seed is): 04.1, 01.q1, and
    09.1 with their measured read ``times``; ``at`` moves their passes to another minute."""
    folder = class_dir / name / "workbook" / "progress"
    folder.mkdir(parents=True)
    (folder / "seed").write_text(seed + "\n")
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", name)
    monkeypatch.setenv("LUMIKIT_SEED", seed)
    m04.check_starved_gcd(starved_gcd("04"))
    m01.check_why_seven_cores("b")
    m09.check_archive_speedup(times[0] / times[1], *times)
    for path in folder.glob("*.json") if at else ():
        data = json.loads(path.read_text())
        data["first_passed"] = at
        path.write_text(json.dumps(data))
    return folder


def _copy_as(source, class_dir, name):
    """``name`` copies ``source``'s whole progress/ (seed included) and writes their own name into each record."""
    folder = class_dir / name / "workbook" / "progress"
    shutil.copytree(source, folder)
    for path in folder.glob("*.json"):
        data = json.loads(path.read_text())
        data["learner"] = name
        path.write_text(json.dumps(data))
    return folder


def _grade(class_dir, tmp_path, capsys, *extra):
    for var in ("LUMIKIT_SEED", "LUMIKIT_LEARNER"):
        import os

        os.environ.pop(var, None)
    assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(tmp_path / "g.csv"), *extra]) == 0
    capsys.readouterr()
    return {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}


def test_a_copied_progress_folder_with_the_neighbours_seed_is_flagged(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    ada = _record_as(monkeypatch, class_dir, "ada", "ada-7f3a")
    _record_as(monkeypatch, class_dir, "carol", "carol-91c2", (0.5012, 0.0131), at="2026-11-26T09:00:00+00:00")
    _copy_as(ada, class_dir, "bob")
    rows = _grade(class_dir, tmp_path, capsys)
    flagged = rows["bob"]["not verified"]
    assert "seed: copy? the same progress/seed as ada" in flagged
    assert "copy? 3 exercises first passed in the same second as ada" in flagged
    assert "09.1: copy? the same own measurements as ada" in flagged
    assert "copy?" in rows["ada"]["not verified"]  # both are named: the instructor decides who copied
    assert "copy?" not in rows["carol"]["not verified"]


def test_with_a_course_key_the_copied_seed_is_ignored_and_the_copy_disagrees(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    key = "instructor-only-9d1e"
    ada = _record_as(monkeypatch, class_dir, "ada", course_seed("ada", key))
    _copy_as(ada, class_dir, "bob")
    rows = _grade(class_dir, tmp_path, capsys, "--course-key", key)
    assert rows["ada"]["04.1"] == "verified" and rows["ada"]["01.q1"] == "verified"
    assert rows["bob"]["verified"] == "0" and rows["bob"]["04.1"] == "disagrees"
    assert "seed: progress/seed is not the one the roster gives this learner (ignored)" in rows["bob"]["not verified"]
    assert "04.1: the seed is not the learner's" in rows["bob"]["not verified"]
    assert course_seed("ada", key) != course_seed("bob", key) != course_seed("bob", "another key")


def test_seeds_for_prints_the_seeds_to_hand_out(capsys) -> None:
    assert main(["progress", "--course-key", "k", "--seeds-for", "ada", "bob"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["learner,seed", f"ada,{course_seed('ada', 'k')}", f"bob,{course_seed('bob', 'k')}"]


def test_the_same_written_conclusion_in_two_folders_is_flagged(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    text = "Rank 3 waited for data in every step: 41% of its step time, fixed by 4 workers (1.8x faster)."
    for name, minute in (("ada", 1), ("bob", 2)):
        folder = _record_as(monkeypatch, class_dir, name, f"{name}-seed", at=f"2026-11-26T10:0{minute}:00+00:00")
        record = json.loads((folder / "01.q1.json").read_text())
        record.update(exercise="11.A", answers={"conclusion": text}, passed_answers={"conclusion": text})
        (folder / "11.A.json").write_text(json.dumps(record))
    rows = _grade(class_dir, tmp_path, capsys)
    assert "11.A: copy? the same written answer as bob" in rows["ada"]["not verified"]
    assert "11.A: copy? the same written answer as ada" in rows["bob"]["not verified"]
    assert "same second" not in rows["ada"]["not verified"]


def _notebook_with(folder, exercise_cell: str) -> None:
    """The learner's exercises/04_watching_the_gpu.ipynb holding one filled-in exercise cell."""
    notebook = {"cells": [{"cell_type": "code", "metadata": {"tags": ["exercise"]}, "source": exercise_cell,
                           "outputs": [], "execution_count": 1}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder.parent / "exercises").mkdir()
    (folder.parent / "exercises" / "04_watching_the_gpu.ipynb").write_text(json.dumps(notebook))


def test_a_cell_that_is_the_shipped_solutions_code_marks_the_pass_from_solutions(monkeypatch, tmp_path,
                                                                                 capsys) -> None:
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    class_dir = tmp_path / "class"
    ada = _record_as(monkeypatch, class_dir, "ada", "ada-seed", at="2026-11-26T10:01:00+00:00")
    _notebook_with(ada, "# Exercise 04.1: Which GCD?\nper_gcd = ddp_table.groupby('index')[['gpu_busy_pct', "
                        "'sclk_mhz']].mean()\n".replace("'", '"') +
                   'starved_gcd = int(per_gcd["gpu_busy_pct"].idxmin())   # the lowest\nprint(per_gcd.round(0).T)\n'
                   'print("starved:",   starved_gcd)\n')
    bob = _record_as(monkeypatch, class_dir, "bob", "bob-seed", (0.6, 0.02), at="2026-11-26T10:02:00+00:00")
    _notebook_with(bob, '# Exercise 04.1: Which GCD?\nstarved_gcd = int(ddp_table.groupby("index")'
                        '["gpu_busy_pct"].mean().idxmin())\n')
    rows = _grade(class_dir, tmp_path, capsys, "--references", str(repo))
    assert rows["ada"]["04.1"] == "from solutions"
    assert "04.1: the exercise cell in the learner's notebook is the shipped solution's code" in \
        rows["ada"]["not verified"]
    assert rows["bob"]["04.1"] == "verified"
