"""A graded course: learners get a copy without the answers, and grading takes its references from the full one."""
from __future__ import annotations

from pathlib import Path

from lumikit.checks import m01
from lumikit.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_the_learners_copy_has_no_solutions_and_grading_refuses_it_as_references(tmp_path, monkeypatch,
                                                                                 capsys) -> None:
    monkeypatch.chdir(REPO)
    copy = tmp_path / "handout"
    assert main(["handout", str(copy)]) == 0
    assert "without solutions/" in capsys.readouterr().out
    assert not (copy / "solutions").exists() and not (copy / "tests").exists()
    assert (copy / "exercises" / "01_node_and_slurm.py").is_file() and (copy / "lumikit" / "checks").is_dir()
    assert "leaves out solutions/" in (copy / "HANDOUT.md").read_text()
    assert main(["handout", str(copy)]) == 2  # never over a copy already handed out
    assert "not empty" in capsys.readouterr().err

    folder = tmp_path / "class" / "ada" / "workbook" / "progress"
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", "ada")
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    m01.check_why_seven_cores("b")
    args = ["progress", "--class", str(tmp_path / "class"), "--grade", "--csv", str(tmp_path / "g.csv")]
    assert main([*args, "--references", str(copy)]) == 2
    assert "not a learner's copy" in capsys.readouterr().err
    monkeypatch.chdir(copy)  # grading inside the learners' copy is refused too
    assert main(args) == 2
    assert main([*args, "--references", str(REPO)]) == 0
    assert "verified" in (tmp_path / "g.csv").read_text()
