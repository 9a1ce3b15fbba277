"""Open questions: what a learner writes under "Your answer" is saved with their progress and exported."""
from __future__ import annotations

import json
from pathlib import Path

from lumikit.checks.instructor.generate import ANSWER_PLACEHOLDER
from lumikit.checks.open_answers import answers_in_notebook
from lumikit.cli import main


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


QUESTION = "**Seed question 2 (the first epoch).** Why is the first epoch slower than the other epochs?\n\n"


def test_only_written_answers_count_never_the_placeholder() -> None:
    found = answers_in_notebook(_notebook(QUESTION + "**Your answer:** kernel search and first reads: +0.3 s",
                                          "**Seed question 3.** Why fewer steps?\n\n" + ANSWER_PLACEHOLDER))
    assert list(found) == ["Seed question 2 (the first epoch)"]
    assert found["Seed question 2 (the first epoch)"]["answer"] == "kernel search and first reads: +0.3 s"


def test_answers_are_saved_with_progress_and_exported_for_the_class(monkeypatch, tmp_path, capsys) -> None:
    for name, answer in (("ada", "MIOpen searches kernels once"), ("bob", "the data is read from Lustre first")):
        workbook = tmp_path / "class" / name / "workbook"
        for folder in ("exercises", "notebooks", "progress"):
            (workbook / folder).mkdir(parents=True)
        (workbook / "exercises" / "07_several_gpus.ipynb").write_text(
            _notebook(QUESTION + f"**Your answer:** {answer}"))
        monkeypatch.chdir(workbook)
        monkeypatch.delenv("LUMIKIT_PROGRESS_DIR", raising=False)
        if name == "ada":  # ada saves hers; bob's are read from his notebook at export
            assert main(["progress"]) == 0
            assert "1 open answer(s) from your exercise notebooks saved" in capsys.readouterr().out
            saved = json.loads((workbook / "progress" / "open-answers.json").read_text())
            assert saved["notebooks"]["07_several_gpus"]["Seed question 2 (the first epoch)"]["answer"] == answer
    (tmp_path / "class" / "bob" / "workbook" / "progress" / "07.1.json").write_text("{}")
    (tmp_path / "class" / "ada" / "workbook" / "progress" / "07.1.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"),
                 "--open-answers", str(tmp_path / "open.md")]) == 0
    text = (tmp_path / "open.md").read_text()
    assert "## 07_several_gpus: Seed question 2 (the first epoch)" in text
    assert "**ada:** MIOpen searches kernels once" in text and "**bob:** the data is read from Lustre first" in text
