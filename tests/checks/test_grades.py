"""Grades an instructor can trust: forged records are never a verified pass, a class folder full of traps is read
without hanging, and a recorded result is readable by the rest of the learner's group."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, m01, m04
from lumikit.checks.datasets import starved_gcd
from lumikit.checks.framework import NotChecked
from lumikit.checks.instructor.grading import check_functions, regradable_count
from lumikit.checks.learner import seed_digest, workbook_root
from lumikit.checks.progress import workbook_exercises
from lumikit.checks.terminal import check_gpu_visibility
from lumikit.cli import main
from lumikit.launch.terminal import ShellResult

REPO = Path(__file__).resolve().parents[2]


def _learner_folder(monkeypatch, class_dir: Path, name: str) -> Path:
    """Record, as learner ``name`` (their name is their seed), a right 04.1 and 01.q1."""
    folder = class_dir / name / "lumi-ai-workbook" / "progress"
    folder.mkdir(parents=True)
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", name)
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    m04.check_starved_gcd(starved_gcd("04"))
    m01.check_why_seven_cores("b")
    return folder


def _edit(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    for key in [k for k, v in changes.items() if v is KeyError]:
        data.pop(key)
    path.write_text(json.dumps(data))


def _grade(class_dir: Path, tmp_path: Path, capsys) -> dict[str, dict[str, str]]:
    monkey_seed = os.environ.pop("LUMIKIT_SEED", None)
    try:
        assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(tmp_path / "g.csv")]) == 0
    finally:
        if monkey_seed is not None:
            os.environ["LUMIKIT_SEED"] = monkey_seed
    capsys.readouterr()
    return {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}


def test_hand_written_records_are_never_a_verified_pass_and_are_listed(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    honest = _learner_folder(monkeypatch, class_dir, "ada")
    forged = {name: _learner_folder(monkeypatch, class_dir, name) for name in
              ("inexact", "noanswers", "otherseed", "failedstatus", "copied", "solutions")}
    # answers_exact false: the record says its answers are not the answers given
    _edit(forged["inexact"] / "04.1.json", answers_exact=False, passed_exact=False)
    # a pass with no answers at all
    _edit(forged["noanswers"] / "04.1.json", answers={}, passed_answers=KeyError, passed_evidence=KeyError)
    # another learner's seed
    _edit(forged["otherseed"] / "04.1.json", seed_digest=seed_digest("ada"))
    # first_passed set, but the status failed (and no passing answers kept)
    _edit(forged["failedstatus"] / "04.1.json", status="failed", passed_answers=KeyError, passed_evidence=KeyError)
    # a copied progress folder: ada's files in another learner's folder
    for path in honest.glob("*.json"):
        shutil.copy(path, forged["copied"] / path.name)
    # results recorded while running solutions/
    _edit(forged["solutions"] / "04.1.json", from_solutions=True)

    rows = _grade(class_dir, tmp_path, capsys)
    assert (rows["ada"]["04.1"], rows["ada"]["01.q1"], rows["ada"]["not verified"]) == ("verified", "verified", "")
    expected = {"inexact": ("self-reported", "not recorded exactly"),
                "noanswers": ("disagrees", "without the passing answers"),
                "otherseed": ("disagrees", "seed is not the learner's"),
                "failedstatus": ("disagrees", "without the passing answers"),
                "copied": ("disagrees", "recorded by 'ada'"),
                "solutions": ("from solutions", "solutions/")}
    for name, (cell, why) in expected.items():
        row = rows[name]
        assert row["04.1"] == cell, name
        assert row["04.1"] != "verified" and f"04.1: " in row["not verified"] and why in row["not verified"], name
    assert rows["copied"]["verified"] == "0"  # not one of ada's files counts for the copier


def test_a_record_whose_latest_attempt_fails_is_not_a_verified_pass(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    _learner_folder(monkeypatch, class_dir, "ada")
    with pytest.raises(CheckFailed):
        m01.check_why_seven_cores("a")  # passed once, then a wrong answer
    rows = _grade(class_dir, tmp_path, capsys)
    assert rows["ada"]["01.q1"] == "disagrees" and "latest attempt failed" in rows["ada"]["not verified"]


def test_a_folder_named_like_a_formula_is_neutralised(monkeypatch, tmp_path, capsys) -> None:
    _learner_folder(monkeypatch, tmp_path / "class", "=HYPERLINK(\"evil\")")
    assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv")]) == 0
    [row] = list(csv.reader(io.StringIO((tmp_path / "g.csv").read_text())))[1:]
    assert row[0] == "'=HYPERLINK(\"evil\")"
    assert not any(cell[:1] in "=+-@" for cell in row if cell)


def test_without_slurm_a_terminal_task_is_not_checked_never_passed(monkeypatch, tmp_path, capsys) -> None:
    folder = tmp_path / "class" / "ada" / "progress"
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    skipped = ShellResult("echo hello", None, skipped="no Slurm client on this machine")
    result = check_gpu_visibility(skipped)
    assert isinstance(result, NotChecked) and "not checked here" in str(result)
    data = json.loads((folder / "08.T1.json").read_text())
    assert (data["status"], data["first_passed"]) == ("not checked", None)
    assert main(["progress", "--dir", str(folder)]) == 0
    assert "not checked here (no Slurm), never counted as passed: 08.T1" in capsys.readouterr().out
    rows = _grade(tmp_path / "class", tmp_path, capsys)
    assert rows["ada"]["08.T1"] == "not checked" and rows["ada"]["verified"] == "0"


def test_regradable_exercises_are_counted_and_at_least_60(capsys, tmp_path) -> None:
    exercises = workbook_exercises(workbook_root(REPO))
    can, total = regradable_count(exercises)
    assert total == len(exercises) and can >= 60
    assert set(exercises) <= set(check_functions())  # every exercise of the workbook has a check


def test_a_class_folder_with_a_fifo_and_a_link_to_dev_zero_is_read_and_both_are_named(monkeypatch, tmp_path) -> None:
    folder = _learner_folder(monkeypatch, tmp_path / "class", "ada")
    os.mkfifo(folder / "05.1.json")
    (folder / "05.2.json").symlink_to("/dev/zero")
    (folder / "05.3.json").write_text("{" * 2_000_000)  # larger than a record can be
    command = [sys.executable, "-m", "lumikit", "progress", "--class", str(tmp_path / "class"), "--csv",
               str(tmp_path / "g.csv")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("05.1.json: refused (a FIFO" in line for line in lines)
    assert any("05.2.json: refused (a link to /dev/zero, outside the learner's folder)" in line for line in lines)
    assert any("05.3.json: refused" in line and "more than" in line for line in lines)
    assert "self-reported" in (tmp_path / "g.csv").read_text()  # ada's real records are still read


def test_a_record_is_group_readable_under_umask_002_and_never_group_writable(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path / "p"))
    old = os.umask(0o002)
    try:
        m01.check_why_seven_cores("b")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "p" / "01.q1.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "p").stat().st_mode) == 0o755  # no classmate replaces a record either


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("setpriv") is None,
                    reason="needs root and useradd/setpriv to create a learner and an instructor in one group")
def test_another_user_of_the_group_reads_a_recorded_result_and_an_unreadable_one_is_named() -> None:
    repo = Path(__file__).resolve().parents[2]
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", sys.executable, "-c",
                            "import lumikit"], cwd="/", env={**os.environ, "PYTHONPATH": str(repo)},
                           capture_output=True, text=True)
    if probe.returncode != 0:  # e.g. a clone below a 0700 folder: other users cannot run its Python at all
        pytest.skip(f"another user cannot run this clone's Python and lumikit ({probe.stderr.strip()[-120:]})")
    tag = uuid.uuid4().hex[:6]
    group, learner, instructor = f"lkg{tag}", f"lkl{tag}", f"lki{tag}"
    project = Path(tempfile.mkdtemp(prefix="lumikit-project-"))  # a LUMI project folder: one folder per learner
    folder = project / learner
    try:
        subprocess.run(["groupadd", group], check=True)
        for user in (learner, instructor):
            subprocess.run(["useradd", "-M", "-N", "-g", group, "-s", "/bin/sh", user], check=True)
        folder.mkdir()
        for path, owner in ((project, "root"), (folder, learner)):
            os.chmod(path, 0o2770)
            shutil.chown(path, user=owner, group=group)
        as_user = ["setpriv", "--reuid", learner, "--regid", group, "--init-groups", "--"]
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(folder),
               "LUMIKIT_PROGRESS_DIR": str(folder / "progress"), "LUMIKIT_LEARNER": learner}
        code = "import os; os.umask(0o002); from lumikit.checks import m01; m01.check_why_seven_cores('b')"
        subprocess.run([*as_user, sys.executable, "-c", code], check=True, env=env, cwd=folder)
        path = folder / "progress" / "01.q1.json"
        assert stat.S_IMODE(path.stat().st_mode) == 0o644  # the group reads it, no classmate rewrites it
        as_instructor = ["setpriv", "--reuid", instructor, "--regid", group, "--init-groups", "--"]
        read = subprocess.run([*as_instructor, "cat", str(path)], capture_output=True, text=True, env=env)
        assert read.returncode == 0 and json.loads(read.stdout)["status"] == "passed"
        # a result written under umask 077 is unreadable to the group: the class export names it, never skips it
        private = "import os; os.umask(0o077); from lumikit.checks import m01; m01.check_why_bind('a')"
        subprocess.run([*as_user, sys.executable, "-c", private], env=env, cwd=folder, capture_output=True)
        [hidden] = [p for p in (folder / "progress").glob("01.*.json") if p.name != "01.q1.json"]
        assert stat.S_IMODE(hidden.stat().st_mode) == 0o600
        export = subprocess.run([*as_instructor, sys.executable, "-m", "lumikit", "progress", "--class",
                                 str(project), "--csv", str(project / "grades.csv")],
                                capture_output=True, text=True, env=env, cwd=REPO)
        assert export.returncode == 0, export.stderr
        assert f"{hidden}: unreadable (permission denied)" in export.stdout, export.stdout
        assert "self-reported" in (project / "grades.csv").read_text()  # the readable record still counts
    finally:
        for user in (learner, instructor):
            subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(project, ignore_errors=True)


def test_a_terminal_pass_whose_job_this_cluster_cannot_find_is_not_verified_nor_failed(monkeypatch, tmp_path,
                                                                                      capsys) -> None:
    from lumikit.checks.evidence import encode
    from lumikit.checks.instructor.grading import rerun
    from lumikit.checks.terminal import check_overlap_steps

    answers = {"allocation": encode("salloc: Granted job allocation 99999999")}
    assert rerun(check_overlap_steps, answers, {}, "ada") == "not checked"  # no Slurm here, or no such job here
    folder = _learner_folder(monkeypatch, tmp_path / "class", "ada")
    record = json.loads((folder / "01.q1.json").read_text())
    record.update(exercise="04.T1", answers=answers, passed_answers=answers, passed_evidence={}, passed_exact=True)
    (folder / "04.T1.json").write_text(json.dumps(record))
    rows = _grade(tmp_path / "class", tmp_path, capsys)
    assert rows["ada"]["04.T1"] == "self-reported"
    assert "cannot be looked up in Slurm here" in rows["ada"]["not verified"]


def test_seeds_the_instructor_handed_out_are_used_for_the_regrade(monkeypatch, tmp_path, capsys) -> None:
    folder = tmp_path / "class" / "ada" / "workbook" / "progress"
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    monkeypatch.setenv("LUMIKIT_SEED", "handed-out-7f3a")
    m04.check_starved_gcd(starved_gcd("04"))
    rows = _grade(tmp_path / "class", tmp_path, capsys)
    assert rows["ada"]["04.1"] == "disagrees"  # the name is not the seed this record was made with
    (tmp_path / "seeds.csv").write_text("learner,seed\nada,handed-out-7f3a\n")
    monkeypatch.delenv("LUMIKIT_SEED")
    assert main(["progress", "--class", str(tmp_path / "class"), "--grade", "--seeds", str(tmp_path / "seeds.csv"),
                 "--csv", str(tmp_path / "g.csv")]) == 0
    assert "ada,1," in (tmp_path / "g.csv").read_text()  # one verified


def test_a_folder_linked_out_of_the_learners_folder_is_not_read_through(monkeypatch, tmp_path) -> None:
    from lumikit.checks.progress import read_text_safely

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "07_several_gpus.ipynb").write_text("{}")
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "exercises").symlink_to(tmp_path / "elsewhere")
    assert read_text_safely(tmp_path / "ada" / "exercises" / "07_several_gpus.ipynb", within=tmp_path / "ada") is None
    (tmp_path / "ada" / "own.json").write_text("{}")
    assert read_text_safely(tmp_path / "ada" / "own.json", within=tmp_path / "ada") == "{}"


def test_every_learner_folder_gets_a_row_even_before_its_first_check(tmp_path, monkeypatch, capsys) -> None:
    from lumikit.checks import m01
    from lumikit.cli import main

    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path / "class" / "ada" / "workbook" / "progress"))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    m01.check_why_seven_cores("b")
    (tmp_path / "class" / "bob" / "workbook").mkdir(parents=True)  # cloned, nothing run yet
    for grade in ([], ["--grade"]):
        assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"), *grade]) == 0
        rows = {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}
        assert sorted(rows) == ["ada", "bob"]
        assert rows["bob"]["not verified"].startswith("no check run yet")
