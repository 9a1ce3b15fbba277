"""A class folder's records, on the instructor's side: each learner's ``progress/`` found under the class folder (no
link followed), their results, and the class CSV (one row per learner, one cell per exercise, :data:`CELLS`).

The records are plain JSON read by :func:`lumikit.checks.progress.read_results` (size and nesting limits); nothing in a
learner's folder is run.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import LumikitError
from ...text import printable
from ..progress import UNREADABLE, Result, _exercise_key, read_results


#: What a learner's row says when their folder or their ``progress/`` is a link (the same words as the list of
#: refused entries on the terminal).
LINK_REFUSED = "refused (a link; {what} is read only where it lies)"


def learner_folders(class_dir: Path, problems: list[str] | None = None,
                    refused: dict[str, str] | None = None) -> dict[str, Path]:
    """Learner -> progress folder, for every sub-folder of ``class_dir`` holding one (up to 3 levels down).

    Links are not followed (a learner's folder or a ``progress`` that is a link is named in ``problems``, and in
    ``refused``: learner -> why, for their row).
    """
    class_dir = Path(class_dir)
    if not class_dir.is_dir():
        raise LumikitError(f"{class_dir}: no such folder. Fix: give the folder holding one folder per learner "
                           f"(on LUMI e.g. /project/project_465000000)")
    found: dict[str, Path] = {}
    for learner in sorted(class_dir.iterdir()):
        if learner.name.startswith("."):
            continue
        if learner.is_symlink():
            if learner.is_dir():
                why = LINK_REFUSED.format(what="a learner's folder")
                if problems is not None:
                    problems.append(f"{learner}: {why}")
                if refused is not None:
                    refused[learner.name] = f"{learner.name}/: {why}"
            continue
        if not learner.is_dir():
            continue
        mine: list[str] = []
        hit = _find_progress(learner, depth=3, problems=mine)
        if problems is not None:
            problems.extend(mine)
        if hit is not None:
            found[learner.name] = hit
        elif mine and refused is not None:  # a linked or unlistable progress/: the row says so, as the terminal does
            refused[learner.name] = mine[0][len(str(class_dir)) + 1:] if mine[0].startswith(f"{class_dir}/") \
                else mine[0]
    return found


def learners_without_progress(class_dir: Path, found: Mapping[str, Path]) -> list[str]:
    """The learner folders of ``class_dir`` that hold no ``progress/`` yet (no check run): each still gets a row."""
    return [p.name for p in sorted(Path(class_dir).iterdir()) if not p.name.startswith(".") and not p.is_symlink()
            and p.is_dir() and p.name not in found]


def _find_progress(folder: Path, depth: int, problems: list[str] | None) -> Path | None:
    """The first ``progress`` folder at most ``depth`` levels under ``folder``, breadth first, following no link."""
    level = [folder]
    for _ in range(depth):
        below: list[Path] = []
        for parent in level:
            try:
                children = sorted(parent.iterdir())
            except OSError as err:
                if problems is not None and parent == folder:
                    problems.append(f"{parent}: cannot be listed ({err.strerror or err}); ask the learner to run "
                                    f"`chmod g+rX` on it")
                continue
            for child in children:
                if child.is_symlink() or not child.is_dir() or child.name.startswith("."):
                    if child.name == "progress" and child.is_symlink() and problems is not None:
                        problems.append(f"{child}: {LINK_REFUSED.format(what='progress/')}")
                    continue
                if child.name == "progress":
                    return child
                below.append(child)
        level = below
    return None


def read_class(class_dir: Path, problems: list[str] | None = None,
               known: Collection[str] | None = None) -> dict[str, list[Result]]:
    """Learner (folder name) -> their recorded results, for a class folder; refused files go to ``problems``;
    records of exercises not in ``known`` (when given) are not read."""
    return {name: read_results(folder, learner=name, within=Path(class_dir) / name, problems=problems, known=known)
            for name, folder in learner_folders(class_dir, problems).items()}


#: What a class CSV cell says about one exercise of one learner (see :mod:`.grading`): ``own data``
#: is a pass checked for consistency on the learner's own measurements, not rebuilt by the instructor;
#: ``unreadable`` a record that could not be read (the ``not verified`` column says why).
CELLS = ("verified", "own data", "self-reported", "not checked", "failed", "disagrees", "from solutions",
         "unreadable", "unanswered")


def recorded_cell(result: Result) -> str:
    """The cell for a result nobody regraded: a claimed pass is only self-reported."""
    if result.status == UNREADABLE:
        return UNREADABLE
    if result.from_solutions and result.ever_passed:
        return "from solutions"
    if result.ever_passed:
        return "self-reported"
    return result.status


def neutralise(cell: Any) -> Any:
    """A CSV cell a spreadsheet cannot take for a formula and a terminal cannot take for a command: control
    characters, escape codes and direction overrides written as escapes (as the terminal shows them,
    :func:`lumikit.text.printable`), and one starting with ``=``, ``+``, ``-``, ``@`` gets a ``'`` before it."""
    if isinstance(cell, str):
        cell = printable(cell)
        if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
            return "'" + cell
    return cell


def class_csv(results: Mapping[str, Sequence[Result]], exercises: Iterable[str] = (),
              grades: Mapping[str, Sequence[Any]] | None = None,
              flags: Mapping[str, Sequence[str]] | None = None, unknown: Mapping[str, int] | None = None) -> str:
    """One row per learner: counts per kind of cell, the records of exercises the workbook does not have (one
    count, ``unknown``, never a column each), the claimed passes not verified (and why), then one column per
    exercise saying what it is (:data:`CELLS`).

    Without ``grades`` (from :func:`.grading.grade_class`) every claimed pass is self-reported.
    ``flags`` (from :func:`.grading.class_flags`: seeds not the learner's, copies) lead that column.
    """
    ids = sorted(set(exercises) | {r.exercise for rs in results.values() for r in rs}, key=_exercise_key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["learner", "verified", "own data", "self-reported", "not checked", "failed", "disagrees",
                     "unreadable", "unknown records", "tried", "not verified", *ids])
    for learner, rows in sorted(results.items()):
        cells = {r.exercise: recorded_cell(r) for r in rows}
        flagged = {r.exercise: "not regraded (add --grade)" for r in rows
                   if cells[r.exercise] in ("self-reported", "from solutions")}
        flagged.update({r.exercise: f"unreadable: {r.message}" for r in rows if r.status == UNREADABLE})
        if grades is not None:
            flagged = {}
            for g in grades.get(learner, ()):
                cells[g.exercise] = g.cell
                if g.why:
                    flagged[g.exercise] = g.why
        counts = {kind: sum(c == kind for c in cells.values()) for kind in CELLS}
        tried = sum(c not in ("unanswered", "") for c in cells.values())
        listed = "; ".join([*(flags or {}).get(learner, ()), *(
            f"{e}: {why}" for e, why in sorted(flagged.items(), key=lambda x: _exercise_key(x[0])))])
        writer.writerow([neutralise(c) for c in (
            learner, counts["verified"], counts["own data"], counts["self-reported"] + counts["from solutions"],
            counts["not checked"], counts["failed"], counts["disagrees"], counts["unreadable"],
            (unknown or {}).get(learner, 0), tried, listed,
            *(cells.get(e, "") for e in ids))])
    return out.getvalue()
