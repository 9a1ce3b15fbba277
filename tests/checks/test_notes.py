"""Instructor notes: generated from the solutions and the checks' declared wrong answers, and kept up to date."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from lumikit.checks.instructor.grading import check_functions
from lumikit.checks.instructor.notes import MINUTES, WORDS_PER_MINUTE, estimate, generate, main, read_lesson
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


def _lesson(tmp_path: Path, cells: list[tuple[str, str]]) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text) if kind == "md"
                                         else nbformat.v4.new_code_cell(text) for kind, text in cells])
    path = tmp_path / "99_lesson.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_estimate_counts_reading_cells_and_launched_runs_but_not_going_further(tmp_path) -> None:
    words = " ".join(["word"] * WORDS_PER_MINUTE * 2)  # two minutes of reading
    lesson = read_lesson(_lesson(tmp_path, [
        ("md", "## A section\n" + words),
        ("code", "run = launch(job)  # one run\nprint(run.wait())"),
        ("code", "resnet.main(['--steps', '2'])\n# launch(other) in a comment is no run"),
        ("md", "## Going further\n" + words),
        ("code", "launch(optional_job)"),
        ("md", "## Key points\n- one"),
    ]))
    assert (lesson.cells, lesson.runs) == (2, 2)
    assert lesson.minutes == pytest.approx((2 * WORDS_PER_MINUTE + 3 + 5) / WORDS_PER_MINUTE
                                           + 2 * MINUTES["cell"] + 2 * MINUTES["run"])
    assert lesson.optional_minutes == pytest.approx((2 * WORDS_PER_MINUTE + 3) / WORDS_PER_MINUTE
                                                    + MINUTES["cell"] + MINUTES["run"])
    assert estimate(lesson, [], []) == math.ceil(lesson.minutes)


def test_module_12s_runs_count_the_lessons_and_the_solutions() -> None:
    lesson = read_lesson(REPO / "notebooks" / "12_making_it_faster.py", REPO / "solutions" / "12_making_it_faster.py")
    assert lesson.runs == 4  # the ladder and the generation rounds, in the lesson and in the solution
