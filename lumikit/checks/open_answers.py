"""Open questions: what a learner wrote under ``**Your answer:**`` in their exercise notebooks, saved with their
progress and exported for the instructor.

The exercise notebooks keep each discussion question with a place to answer (see :mod:`.generate`). ``lumikit
progress`` collects what the learner wrote there into ``progress/open-answers.json``; ``lumikit progress --class DIR
--open-answers FILE.md`` gathers every learner's file (or, where there is none yet, reads their notebooks) into one
Markdown file, question by question. Notebooks are read with the same care as progress files: regular files only,
at most :data:`NOTEBOOK_LIMIT` bytes.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ..files import atomic_path
from ..text import printable
from .conventions import ANSWER_PLACEHOLDER
from .progress import RECORD_MODE, current_umask, read_text_safely

NOTEBOOK_LIMIT = 5_000_000
FILE_NAME = "open-answers.json"
_MARK = "**Your answer:**"
_TITLE = re.compile(r"^\s*\*\*(?P<title>[^*]+?)\.?\*\*")


def _placeholder_tail() -> str:
    """The generator's "write it here" text."""
    return ANSWER_PLACEHOLDER[len(_MARK):].strip()


def _cell_text(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def answers_in_notebook(text: str) -> dict[str, dict[str, str]]:
    """Question title -> {"question", "answer"} for every answered open question of one notebook (.ipynb JSON)."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return {}
    found: dict[str, dict[str, str]] = {}
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        body = _cell_text(cell)
        if _MARK not in body:
            continue
        question, answer = body.split(_MARK, 1)
        answer = answer.strip()
        if not answer or answer == _placeholder_tail():
            continue
        match = _TITLE.match(question)
        title = match["title"].strip() if match else " ".join(question.split())[:60]
        found[title] = {"question": " ".join(question.split())[:2000], "answer": answer[:20000]}
    return found


def collect(workbook: Path, *, within: Path | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """Notebook stem -> its answered open questions, from ``workbook/exercises/*.ipynb``."""
    folder = Path(workbook) / "exercises"
    out: dict[str, dict[str, dict[str, str]]] = {}
    try:
        paths = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    except OSError:
        return out
    for path in paths:
        text = read_text_safely(path, within=within or Path(workbook), limit=NOTEBOOK_LIMIT)
        answers = answers_in_notebook(text) if text else {}
        if answers:
            out[path.stem] = answers
    return out


def save(workbook: Path, progress_folder: Path) -> tuple[Path, int]:
    """Save the learner's open answers beside their progress (group-readable under ``umask 002``, never
    group-writable)."""
    answers = collect(workbook)
    path = Path(progress_folder) / FILE_NAME
    data = {"saved": datetime.now(timezone.utc).isoformat(timespec="seconds"), "notebooks": answers}
    with atomic_path(path, RECORD_MODE & ~current_umask()) as tmp:
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path, sum(len(a) for a in answers.values())


def of_learner(progress_folder: Path, learner_dir: Path) -> dict[str, dict[str, dict[str, str]]]:
    """A learner's open answers: their saved file, else what their notebooks hold now; and the texts checks saved
    beside the progress (:func:`written`)."""
    return {**_answers_of(progress_folder, learner_dir), **written(progress_folder, learner_dir)}


def _answers_of(progress_folder: Path, learner_dir: Path) -> dict[str, dict[str, dict[str, str]]]:
    text = read_text_safely(Path(progress_folder) / FILE_NAME, within=learner_dir)
    if text:
        try:
            notebooks = json.loads(text).get("notebooks", {})
            if isinstance(notebooks, dict):
                return {str(k): v for k, v in notebooks.items() if isinstance(v, dict)}
        except (ValueError, AttributeError):
            pass
    return collect(Path(progress_folder).parent, within=learner_dir)


def written(progress_folder: Path, learner_dir: Path) -> dict[str, dict[str, dict[str, str]]]:
    """Texts a check saved in the progress folder as ``<exercise>.md`` (module 11's conclusion with its rubric),
    under ``<module> written``."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted(Path(progress_folder).glob("[0-9][0-9].*.md")):
        text = read_text_safely(path, within=learner_dir)
        if text:
            out.setdefault(f"{path.name[:2]} written", {})[path.stem] = {
                "question": f"{path.stem}, as its check saved it (with the check's rubric)", "answer": text[:20000]}
    return out


def export_markdown(answers: Mapping[str, Mapping[str, Mapping[str, Mapping[str, str]]]]) -> str:
    """Learner -> notebook -> question -> answer, as one Markdown file ordered by notebook and question."""
    by_question: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for learner, notebooks in sorted(answers.items()):
        for stem, questions in notebooks.items():
            for title, item in questions.items():
                by_question.setdefault((stem, title), []).append(
                    (learner, str(item.get("question", "")), str(item.get("answer", ""))))
    out = ["# Open answers", "", f"{len(answers)} learner(s), {len(by_question)} question(s) answered.", ""]
    for (stem, title), rows in sorted(by_question.items(), key=lambda x: (_stem_key(x[0][0]), x[0][1])):
        # what learners wrote is escaped as the terminal shows it (escape codes, direction overrides)
        out += [f"## {printable(stem)}: {printable(title)}", "", f"> {printable(rows[0][1])}", ""]
        for learner, _, answer in rows:
            out += [f"**{printable(learner)}:** {printable(' '.join(answer.split()))}", ""]
    return "\n".join(out).rstrip() + "\n"


def _stem_key(stem: str) -> tuple[int, str]:
    return (int(stem[:2]), stem) if stem[:2].isdigit() else (99, stem)


__all__ = ["answers_in_notebook", "collect", "export_markdown", "of_learner", "save"]
