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


def test_the_learners_copy_has_no_instructor_guide_and_no_link_that_leads_nowhere(tmp_path, monkeypatch) -> None:
    import re

    monkeypatch.chdir(REPO)
    copy = tmp_path / "handout"
    assert main(["handout", str(copy)]) == 0
    assert not (copy / "docs" / "instructor-guide.md").exists()
    dead = []
    for path in [*copy.rglob("*.md"), *copy.rglob("*.py"), *copy.rglob("*.ipynb")]:
        for target in re.findall(r"\[[^\]\n]+\]\(([^)\s]+)\)", path.read_text(encoding="utf-8", errors="replace")):
            target = target.split("#", 1)[0]
            if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("/") \
                    and not (path.parent / target).exists():
                dead.append(f"{path.relative_to(copy)} -> {target}")
    assert dead == []
    module_map = (copy / "notebooks" / "00_start_here.py").read_text()
    assert "../solutions/" not in module_map and "[exercise](../exercises/01_node_and_slurm.ipynb)" in module_map
