"""A learner's progress: one small JSON file per check in their own folder, summaries, and a class's CSV.

Every call of a check (see :func:`lumikit.checks.framework.check`) writes ``<folder>/<exercise>.json``: the outcome,
the message, the answers given (in a readable form), how many attempts, when it first passed. Nothing leaves the
machine. The folder is ``$LUMIKIT_PROGRESS_DIR``, else ``progress/`` in the learner's workbook checkout, else
``~/.local/state/lumikit/progress``; ``LUMIKIT_PROGRESS=off`` records nothing. An instructor with read access to
the learners' folders (a LUMI project directory) reads them all with :func:`read_class`.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import LumikitError
from ..files import write_atomic
from .learner import learner_name, seed_digest, workbook_root

#: Outcomes, best first: a check that passed once counts as passed even if a later attempt failed.
STATUSES = ("passed", "failed", "unanswered")
_EXERCISE_ID = re.compile(r"^\d\d\.\w+$")
_EXERCISE_LINE = re.compile(r"^#\s*Exercise\s+(?P<id>\d\d\.\w+)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class Result:
    """One learner's recorded result for one exercise."""

    learner: str
    exercise: str
    status: str
    attempts: int
    first_passed: str | None
    updated: str
    message: str
    answers: Mapping[str, Any]
    seed_digest: str = ""
    answers_exact: bool = False

    @property
    def module(self) -> str:
        return self.exercise.split(".", 1)[0]

    @property
    def ever_passed(self) -> bool:
        return self.first_passed is not None


def progress_dir(start: Path | None = None) -> Path | None:
    """Where this learner's results go, or None when recording is switched off."""
    if os.environ.get("LUMIKIT_PROGRESS", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    env = os.environ.get("LUMIKIT_PROGRESS_DIR", "").strip()
    if env:
        return Path(env)
    root = workbook_root(start)
    if root is not None:
        return root / "progress"
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "lumikit" / "progress"


def _readable(value: Any, limit: int = 300) -> Any:
    """A JSON-safe, short form of an answer (numbers and short strings as they are, the rest as text)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "..."
    if isinstance(value, (list, tuple)) and len(value) <= 32:
        return [_readable(v, 60) for v in value]
    if isinstance(value, Mapping) and len(value) <= 32:
        return {str(k): _readable(v, 60) for k, v in value.items()}
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _exact(value: Any, readable: Any) -> bool:
    """True when the readable form of an answer is the answer itself (so it can be checked again from the JSON)."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, Mapping):
        value = {str(k): v for k, v in value.items()}
    try:
        return json.loads(json.dumps(value)) == readable
    except (TypeError, ValueError):
        return False


def record(exercise: str, answers: Mapping[str, Any], *, passed: bool, unanswered: bool, message: str,
           folder: Path | None = None) -> Path | None:
    """Record one check outcome in the learner's folder (``<exercise>.json``); returns the file, or None if off."""
    folder = progress_dir() if folder is None else folder
    if folder is None:
        return None
    path = Path(folder) / f"{exercise}.json"
    previous: dict[str, Any] = {}
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = {}
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    readable = {k: _readable(v) for k, v in answers.items()}
    status = "passed" if passed else ("unanswered" if unanswered else "failed")
    data = {
        "exercise": exercise,
        "learner": learner_name(),
        "status": status,
        "attempts": int(previous.get("attempts", 0)) + (0 if unanswered else 1),
        "first_passed": previous.get("first_passed") or (now if passed else None),
        "updated": now,
        "message": message[:500],
        "answers": readable,
        "answers_exact": all(_exact(answers[k], readable[k]) for k in answers),
        "seed_digest": seed_digest(),
    }
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def read_results(folder: Path, *, learner: str | None = None) -> list[Result]:
    """Every result recorded in one progress folder, by exercise id; unreadable files are skipped."""
    folder = Path(folder)
    results = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if not _EXERCISE_ID.match(path.stem):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        status = data.get("status")
        if status not in STATUSES:
            continue
        results.append(Result(learner or str(data.get("learner", "")), path.stem, status,
                              int(data.get("attempts", 0)), data.get("first_passed"), str(data.get("updated", "")),
                              str(data.get("message", "")), data.get("answers") or {},
                              str(data.get("seed_digest", "")), bool(data.get("answers_exact", False))))
    return sorted(results, key=lambda r: _exercise_key(r.exercise))


def _exercise_key(exercise: str) -> tuple[int, int, int, str]:
    """Sort key: module, then numbered exercises (01.2 before 01.10), then named ones (01.q1, 01.q2)."""
    module, _, number = exercise.partition(".")
    if number.isdigit():
        return int(module), 0, int(number), ""
    return int(module), 1, 0, number


def workbook_exercises(root: Path | None) -> list[str]:
    """The exercise ids of a workbook (from the ``# Exercise NN.k:`` lines of its solutions or exercises)."""
    if root is None:
        return []
    found: set[str] = set()
    for folder in ("solutions", "exercises"):
        for path in sorted((root / folder).glob("[0-9][0-9]_*.py")):
            found.update(_EXERCISE_LINE.findall(path.read_text(encoding="utf-8")))
        if found:
            break
    return sorted(found, key=_exercise_key)


def summary_table(results: Sequence[Result], exercises: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per module: exercises in it, passed, failed (tried, not passed), not tried yet."""
    by_module: dict[str, dict[str, Result]] = {}
    for r in results:
        by_module.setdefault(r.module, {})[r.exercise] = r
    known: dict[str, set[str]] = {}
    for e in exercises:
        known.setdefault(e.split(".", 1)[0], set()).add(e)
    rows = []
    for module in sorted(set(by_module) | set(known), key=int):
        done = by_module.get(module, {})
        ids = known.get(module, set()) | set(done)
        passed = [e for e in ids if e in done and done[e].ever_passed]
        failed = [e for e in ids if e in done and not done[e].ever_passed and done[e].status == "failed"]
        rows.append({"module": module, "exercises": len(ids), "passed": len(passed), "failed": len(failed),
                     "not yet": len(ids) - len(passed) - len(failed),
                     "to do": ", ".join(sorted((e for e in ids if e not in passed), key=_exercise_key))})
    return rows


def format_summary(rows: Sequence[Mapping[str, Any]], learner: str, folder: Path) -> str:
    """The per-module summary as a plain-text table, with a total line."""
    header = ("module", "exercises", "passed", "failed", "not yet", "to do")
    lines = [tuple(str(row[h]) for h in header) for row in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    out = [f"progress of {learner} ({folder})"]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in (header, *lines)]
    out.insert(2, "  ".join("-" * w for w in widths))
    total = sum(r["exercises"] for r in rows)
    done = sum(r["passed"] for r in rows)
    out.append(f"\n{done} of {total} exercises passed")
    return "\n".join(out)


def learner_folders(class_dir: Path) -> dict[str, Path]:
    """Learner -> progress folder, for every sub-folder of ``class_dir`` holding one (up to 3 levels down)."""
    class_dir = Path(class_dir)
    if not class_dir.is_dir():
        raise LumikitError(f"{class_dir}: no such folder. Fix: give the folder holding one folder per learner "
                           f"(on LUMI e.g. /project/project_465000000)")
    found: dict[str, Path] = {}
    for learner in sorted(p for p in class_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for pattern in ("progress", "*/progress", "*/*/progress"):
            hits = sorted(p for p in learner.glob(pattern) if p.is_dir())
            if hits:
                found[learner.name] = hits[0]
                break
    return found


def read_class(class_dir: Path) -> dict[str, list[Result]]:
    """Learner (folder name) -> their recorded results, for a class folder."""
    return {name: read_results(folder, learner=name) for name, folder in learner_folders(class_dir).items()}


def class_csv(results: Mapping[str, Sequence[Result]], exercises: Iterable[str] = (),
              grades: Mapping[str, Sequence[Any]] | None = None) -> str:
    """One row per learner: passed and tried counts, then one column per exercise (passed/failed/unanswered/empty).

    With ``grades`` (from :func:`lumikit.checks.grading.grade_class`) an exercise the instructor re-ran shows the
    instructor's verdict, and two more columns count the re-run results and list those that disagree with the
    learner's record.
    """
    ids = sorted(set(exercises) | {r.exercise for rs in results.values() for r in rs}, key=_exercise_key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    extra = ["regraded", "disagree"] if grades is not None else []
    writer.writerow(["learner", "passed", "tried", *extra, *ids])
    for learner, rows in sorted(results.items()):
        status = {r.exercise: ("passed" if r.ever_passed else r.status) for r in rows}
        more: list[Any] = []
        if grades is not None:
            mine = [g for g in grades.get(learner, ()) if g.regraded in ("passed", "failed")]
            for g in mine:
                status[g.exercise] = g.regraded
            more = [len(mine), " ".join(g.exercise for g in grades.get(learner, ()) if g.disagrees)]
        writer.writerow([learner, sum(s == "passed" for s in status.values()),
                         sum(s in ("passed", "failed") for s in status.values()), *more,
                         *(status.get(e, "") for e in ids)])
    return out.getvalue()
