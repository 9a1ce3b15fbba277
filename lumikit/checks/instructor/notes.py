"""Instructor notes per module, generated from the one source: the solution notebooks and their checks.

For each module ``docs/instructor-notes/NN_name.md`` holds the planned minutes against an estimate from the content,
then per exercise its question, the hint, the model answer (the solution cell, or the right option and why) and
the common mistakes (the check's declared wrong answers, which ``lumikit verify`` proves are rejected), then the
discussion prompts with their model answers (the solution's ``**Answer.**`` cells). ``python -m
lumikit.checks.instructor.notes`` writes them; ``--check`` writes nothing and exits 1 naming the notes that drift.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...files import write_atomic
from ...syllabus import MODULES, Module
from ..conventions import SOLUTION_TAG

NOTES_DIR = Path("docs") / "instructor-notes"
#: Minutes a learner needs, by kind of item, for the estimate: each exercise, terminal task, question and discussion
#: prompt at its pace; the lesson's text read at :data:`WORDS_PER_MINUTE`, each lesson code cell run and its output
#: read ("cell"), and each run that the lesson or the solution launches ("run": launched, waited for on lumi-sim or
#: a laptop, its output read; a queue on LUMI adds to it).
MINUTES = {"exercise": 4, "terminal": 8, "question": 2, "discussion": 3, "cell": 0.5, "run": 3}
#: Reading pace of the lessons' technical text (words per minute).
WORDS_PER_MINUTE = 150
#: A call that launches a run: a job (``launch``), a workload in the kernel (``resnet.main([...])``), the ladder or
#: generation measured in the kernel, or another program (``subprocess.run``). Each call site counts once.
_LAUNCHES = re.compile(r"\b(?:launch|run_ladder|generate\.measure|subprocess\.run|\w+\.main)\(")
_EXERCISE = re.compile(r"^#\s*Exercise\s+(?P<id>\d\d\.\w+)\s*:\s*(?P<text>.*)$")
_HINT = re.compile(r"^#\s*Hint\s*:\s*(?P<text>.*)$")
_TOOL = re.compile(r"^#\s*Tool\s*:\s*(?P<text>.*)$")
_ANSWER = re.compile(r"^\s*\*\*Answer\.?\*\*\s*", re.M)


@dataclass
class Item:
    """One checked exercise of a module, as the notes show it."""

    exercise: str
    question: str
    hint: str = ""
    tool: str = ""
    model: str = ""
    mistakes: list[str] = field(default_factory=list)
    code: bool = True  # the model answer is the solution's code (else the right option, in words)


@dataclass
class Prompt:
    """One discussion question and its model answer."""

    question: str
    answer: str


def _text(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _kind(exercise: str) -> str:
    number = exercise.split(".", 1)[1]
    return "terminal" if number.startswith("T") else "question" if number.startswith("q") else "exercise"


def read_module(path: Path) -> tuple[list[Item], list[Prompt]]:
    """The checked exercises and the discussion prompts of one solution notebook, in order."""
    from .grading import check_functions
    from .notebook import read_notebook

    functions = check_functions()
    items: dict[str, Item] = {}
    prompts: list[Prompt] = []
    for cell in read_notebook(path).cells:
        text = _text(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if SOLUTION_TAG not in tags:
            continue
        if cell.get("cell_type") == "markdown":
            parts = _ANSWER.split(text, maxsplit=1)
            if len(parts) == 2:
                prompts.append(Prompt(parts[0].strip(), parts[1].strip()))
            continue
        comments, code = [], []
        for line in text.splitlines():
            (comments if line.startswith("#") and not code else code).append(line)
        exercise = question = hint = tool = ""
        for line in comments:
            if m := _EXERCISE.match(line):
                exercise, question = m["id"], m["text"]
            elif m := _HINT.match(line):
                hint = m["text"]
            elif m := _TOOL.match(line):
                tool = m["text"]
            elif exercise and not hint and line.startswith("# "):
                question += " " + line[2:]
        if not exercise:
            continue
        item = Item(exercise, question.strip(), hint.strip(), tool.strip(), "\n".join(code).strip())
        func = functions.get(exercise)
        info = getattr(func, "__lumikit_check__", None)
        if info is not None:
            item.mistakes = [w.why for w in info.wrong]
        choice = getattr(func, "question", None)
        if choice is not None and hasattr(choice, "options"):
            right = choice.options[choice.right]
            item.model, item.code = f"({choice.right}) {right.text} {right.why}", False
        items[exercise] = item
    for exercise, func in functions.items():  # questions asked in the lesson text but checked in the exercise
        if exercise.startswith(path.name[:2] + ".") and exercise not in items and exercise in _ids(path):
            info = getattr(func, "__lumikit_check__", None)
            items[exercise] = Item(exercise, (func.__doc__ or "").strip().splitlines()[0] if func.__doc__ else "",
                                   mistakes=[w.why for w in info.wrong] if info else [])
    return sorted(items.values(), key=lambda i: _order(i.exercise)), prompts


def _ids(path: Path) -> set[str]:
    return set(re.findall(r"^#\s*Exercise\s+(\d\d\.\w+)\s*:", path.read_text(encoding="utf-8"), flags=re.M))


def _order(exercise: str) -> tuple[int, int, str]:
    number = exercise.split(".", 1)[1]
    return (0, int(number), "") if number.isdigit() else (1, 0, number)


@dataclass(frozen=True)
class Lesson:
    """What a module's lesson asks of a learner's time: words to read, code cells to run, runs launched (the
    lesson's and its solution's). A lesson's "Going further" sections are optional: counted apart
    (``optional_minutes``), never in the estimate."""

    words: int
    cells: int
    runs: int
    optional_minutes: float = 0.0

    @property
    def minutes(self) -> float:
        return _minutes(self.words, self.cells, self.runs)


def _minutes(words: int, cells: int, runs: int) -> float:
    return words / WORDS_PER_MINUTE + MINUTES["cell"] * cells + MINUTES["run"] * runs


#: A lesson heading that starts an optional part; the next ``##`` heading of another kind ends it.
GOING_FURTHER = re.compile(r"^##\s+Going further", re.I | re.M)
_HEADING = re.compile(r"^##\s+\S", re.M)


def _launches(cell: Any) -> int:
    """How many calls in a code cell launch a run (:data:`_LAUNCHES`; comments left out)."""
    if cell.get("cell_type") != "code":
        return 0
    return len(_LAUNCHES.findall("\n".join(line.split("#", 1)[0] for line in _text(cell).splitlines())))


def launched_runs(notebook: Any) -> int:
    """How many calls in the notebook's code cells launch a run."""
    return sum(_launches(cell) for cell in notebook.cells)


def read_lesson(lesson: Path, solution: Path | None = None) -> Lesson:
    """The lesson's words and code cells, and the runs the lesson and (if given) its solution launch; the lesson's
    Going-further sections apart. A workbook without the lesson (a solution alone) counts the solution's runs."""
    from .notebook import read_notebook

    core, extra = [0, 0, 0], [0, 0, 0]  # words, code cells, runs
    optional = False
    for cell in read_notebook(lesson).cells if lesson.is_file() else []:
        text = _text(cell)
        if cell.get("cell_type") == "markdown" and _HEADING.search(text):
            optional = bool(GOING_FURTHER.search(text))
        counts = extra if optional else core
        if cell.get("cell_type") == "markdown":
            counts[0] += len(text.split())
        elif cell.get("cell_type") == "code":
            counts[1] += 1
            counts[2] += _launches(cell)
    if solution is not None:
        core[2] += launched_runs(read_notebook(solution))
    return Lesson(core[0], core[1], core[2], _minutes(*extra))


def estimate(lesson: Lesson, items: Sequence[Item], prompts: Sequence[Prompt]) -> int:
    """Minutes the module's content needs: the lesson (:class:`Lesson`), then each item at its kind's pace
    (:data:`MINUTES`), rounded up."""
    total = lesson.minutes + sum(MINUTES[_kind(i.exercise)] for i in items)
    return math.ceil(total + MINUTES["discussion"] * len(prompts))


def module_estimate(root: Path, module: Module) -> int:
    """The estimate of one module of the workbook in ``root`` (lesson, solution and its checks)."""
    lesson = root / "notebooks" / f"{module.stem}.py"
    solution = root / "solutions" / f"{module.stem}.py"
    has_solution = module.has_exercises and solution.is_file()
    items, prompts = read_module(solution) if has_solution else ([], [])
    return estimate(read_lesson(lesson, solution if has_solution else None), items, prompts)


def render(module: Module, lesson: Lesson, items: Sequence[Item], prompts: Sequence[Prompt]) -> str:
    """The notes of one module as Markdown."""
    need = estimate(lesson, items, prompts)
    kinds = {k: sum(_kind(i.exercise) == k for i in items) for k in ("exercise", "terminal", "question")}
    out = [f"# Module {module.number}: {module.title} (instructor notes)", "",
           f"Generated by `python -m lumikit.checks.instructor.notes` from `solutions/{module.stem}.py` and its "
           f"checks: edit those, then regenerate. Leave this folder out of the learners' copy (`lumikit handout` does).", "",
           "## Time", "",
           f"Planned: **{module.minutes} min** (`lumikit/syllabus.py`). Estimated from the content: **{need} min** "
           f"(lesson {lesson.minutes:.0f}: {lesson.words} words at {WORDS_PER_MINUTE} a minute, {lesson.cells} "
           f"code cells x {MINUTES['cell']}, {lesson.runs} launched runs x {MINUTES['run']}; {kinds['exercise']} "
           f"computed exercises x {MINUTES['exercise']}, {kinds['terminal']} terminal tasks x {MINUTES['terminal']}, "
           f"{kinds['question']} questions x {MINUTES['question']}, {len(prompts)} discussion prompts x "
           f"{MINUTES['discussion']})."]
    if lesson.optional_minutes:
        out.append(f"Not in it: the lesson's Going-further sections, about {math.ceil(lesson.optional_minutes)} "
                   "min more for those who want them.")
    if need > module.minutes:
        out.append(f"The content needs more than the plan: give it {need} min, or leave the discussion for "
                   f"homework.")
    out += ["", "## Objectives", ""] + [f"- {o}" for o in module.objectives]
    out += ["", "## Exercises, model answers and common mistakes", ""]
    for item in items:
        out += [f"### {item.exercise}", "", item.question or "(asked in the lesson)", ""]
        if item.hint:
            out += [f"*Hint (level 1):* {item.hint}", ""]
        if item.tool:
            out += [f"*Hint (level 2, the tool):* {item.tool}", ""]
        if item.model and item.code:
            out += ["*Model answer:*", "", "```python", item.model, "```", ""]
        elif item.model:
            out += [f"*Model answer:* {item.model}", ""]
        if item.mistakes:
            out += ["*Common mistakes* (each a declared wrong answer the check rejects):", ""]
            out += [f"- {why}" for why in item.mistakes]
            out.append("")
    if prompts:
        out += ["## Discussion prompts", ""]
        for n, prompt in enumerate(prompts, 1):
            out += [f"{n}. {' '.join(prompt.question.split())}", "",
                    f"   *Model answer:* {' '.join(prompt.answer.split())}", ""]
    out += ["## Key points to close with", ""] + [f"- {p}" for p in module.key_points]
    return "\n".join(out).rstrip() + "\n"


def generate(root: Path, *, check: bool = False) -> list[Path]:
    """Write (or with ``check`` compare) every module's notes; returns the files written or drifting."""
    changed = []
    for module in MODULES:
        source = root / "solutions" / f"{module.stem}.py"
        if not module.has_exercises or not source.is_file():
            continue
        items, prompts = read_module(source)
        target = root / NOTES_DIR / f"{module.stem}.md"
        text = render(module, read_lesson(root / "notebooks" / f"{module.stem}.py", source), items, prompts)
        old = target.read_text(encoding="utf-8") if target.is_file() else None
        if old != text:
            changed.append(target)
            if not check:
                write_atomic(target, text)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lumikit.checks.instructor.notes [--check]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="the workbook (default: here)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the notes that drift")
    args = parser.parse_args(argv)
    changed = generate(args.root, check=args.check)
    for path in changed:
        print(("drifts: " if args.check else "wrote ") + str(path))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
