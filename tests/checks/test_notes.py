"""Instructor notes: generated from the solutions and the checks' declared wrong answers, and kept up to date."""
from __future__ import annotations

from pathlib import Path

from lumikit.checks.instructor.grading import check_functions
from lumikit.checks.instructor.notes import generate, main
from lumikit.syllabus import module

REPO = Path(__file__).resolve().parents[2]


def test_the_notes_in_docs_are_what_the_generator_writes_now() -> None:
    assert generate(REPO, check=True) == [], \
        "run `python -m lumikit.checks.instructor.notes` and commit docs/instructor-notes"
    assert main(["--root", str(REPO), "--check"]) == 0


def test_every_declared_wrong_answer_is_a_common_mistake_in_its_modules_notes() -> None:
    functions = check_functions()
    for path in sorted((REPO / "docs" / "instructor-notes").glob("[0-9][0-9]_*.md")):
        text = path.read_text()
        number = path.name[:2]
        assert f"Planned: **{module(number).minutes} min**" in text and "Estimated from the content" in text
        for exercise, func in functions.items():
            if exercise.startswith(number + ".") and f"### {exercise}\n" in text:
                for case in func.__lumikit_check__.wrong:
                    assert f"- {case.why}" in text, (exercise, case.why)


def test_module_07_has_model_answers_and_its_discussion_prompts() -> None:
    text = (REPO / "docs" / "instructor-notes" / "07_several_gpus.md").read_text()
    assert "ddp_speedup = ddp[\"global_samples_per_s\"] / single[\"global_samples_per_s\"]" in text
    assert "## Discussion prompts" in text and text.count("*Model answer:*") >= 10


def test_drift_is_named_and_nothing_is_written_in_check_mode(tmp_path) -> None:
    (tmp_path / "solutions").mkdir()
    source = REPO / "solutions" / "10_jax_on_lumi.py"
    (tmp_path / "solutions" / source.name).write_text(source.read_text())
    drifting = generate(tmp_path, check=True)
    assert [p.name for p in drifting] == ["10_jax_on_lumi.md"] and not (tmp_path / "docs").exists()
