"""A learner's progress: one small JSON file per check in their own folder, summaries, and a class's CSV.

Every call of a check (see :func:`lumikit.checks.framework.check`) writes ``<folder>/<exercise>.json``: the outcome,
the message, the answers given (in a readable form), how many attempts, when it first passed. Nothing leaves the
machine. The folder is ``$LUMIKIT_PROGRESS_DIR``, else ``progress/`` in the learner's workbook checkout, else
``~/.local/state/lumikit/progress``; ``LUMIKIT_PROGRESS=off`` records nothing. An instructor with read access to
the learners' folders (a LUMI project directory) reads them all with :func:`read_class`.
"""
from __future__ import annotations

import functools
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from ..errors import ParseError
from ..files import atomic_path, load_json_bounded
from ..files import umask as current_umask
from .learner import learner_name, seed_digest, workbook_root

#: A record's mode before the umask: readable by the group (the instructor), writable only by the learner; a new
#: progress folder's likewise (a group-writable folder would let a classmate replace a record).
RECORD_MODE, RECORD_FOLDER_MODE = 0o644, 0o755
#: Outcomes, best first: a check that passed once counts as passed even if a later attempt failed. "not checked":
#: the check could not judge here (a terminal task without Slurm); it is never a pass, and is run again where it can.
STATUSES = ("passed", "not checked", "failed", "unanswered")
#: The largest progress file read; a larger one is refused by name.
READ_LIMIT = 1_000_000
#: The most records read from one learner's folder (the workbook has about a hundred exercises), and the most bytes
#: in all: a folder flooded with records is read up to there, the rest counted as "unknown records".
RECORDS_PER_LEARNER = 400
BYTES_PER_LEARNER = 32 * 1024 * 1024
#: The most lines one learner's folder adds to the list of refused entries (the rest are counted in one line).
PROBLEMS_PER_LEARNER = 20
#: The deepest nesting a record may have (lumikit writes fewer than 40 levels); deeper is unreadable.
RECORD_MAX_DEPTH = 64
#: The status of a record that could not be read (refused, not JSON, nested too deep): its cell says why.
UNREADABLE = "unreadable"
#: How many of the latest calls a record keeps in ``recent`` (time, outcome, kind of mistake) for the class view.
RECENT_KEPT = 10
_EXERCISE_ID = re.compile(r"^\d\d\.\w+$")
_EXERCISE_LINE = re.compile(r"^#\s*Exercise\s+(?P<id>\d\d\.\w+)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class Result:
    """One learner's recorded result for one exercise.

    ``answers``/``evidence`` are the latest attempt's answers and other check inputs (JSON forms, see
    :mod:`.evidence`); ``passed_answers``/``passed_evidence`` those of the latest attempt that passed, so the
    instructor regrades the pass itself. ``from_solutions``: recorded while running the shipped ``solutions/``.
    """

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
    evidence: Mapping[str, Any] = field(default_factory=dict)
    evidence_exact: bool = False
    passed_answers: Mapping[str, Any] | None = None
    passed_evidence: Mapping[str, Any] | None = None
    from_solutions: bool = False
    path: str = ""
    passed_exact: bool = False
    #: Argument -> the run folder it named and its digest when the check passed (:func:`.evidence.run_folders`).
    run_folders: Mapping[str, Any] = field(default_factory=dict)

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


def from_solutions(cwd: Path | None = None) -> bool:
    """True when the check runs in a notebook of the workbook's ``solutions/`` (the shipped answers)."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session and Path(session).parent.name == "solutions":
        return True
    here = (cwd or Path.cwd()).resolve()
    return here.name == "solutions" and (here.parent / "exercises").is_dir()


def record(exercise: str, answers: Mapping[str, Any], *, passed: bool, unanswered: bool, message: str,
           folder: Path | None = None, evidence: Mapping[str, Any] | None = None,
           not_checked: bool = False, mistake: str | None = None) -> Path | None:
    """Record one check outcome in the learner's folder (``<exercise>.json``); returns the file, or None if off.

    ``recent`` keeps the latest :data:`RECENT_KEPT` calls (time, outcome, ``mistake``: the kind of mistake the check
    named), so the instructor's class view sees who fails repeatedly now (:mod:`lumikit.checks.instructor.classview`).

    The file honours the umask for reading (0644 under ``umask 002``), so an instructor of the same group can read
    it, and is never writable by the group, whatever the umask: no classmate rewrites another's record.
    """
    from .evidence import RUN_FOLDERS, encode_all, run_folders

    folder = progress_dir() if folder is None else folder
    if folder is None:
        return None
    path = Path(folder) / f"{exercise}.json"
    previous: dict[str, Any] = {}
    try:
        text = _read_regular(path, within=Path(folder))
        previous = load_json_bounded(text, str(path), max_depth=RECORD_MAX_DEPTH)
        if not isinstance(previous, dict):
            previous = {}
    except (OSError, ValueError, _Refused):
        previous = {}
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    encoded, answers_exact = encode_all(dict(answers))
    kept, evidence_exact = encode_all(dict(evidence or {}))
    status = ("not checked" if not_checked else "passed") if passed or not_checked else \
        ("unanswered" if unanswered else "failed")
    data = {
        "exercise": exercise,
        "learner": learner_name(),
        "status": status,
        "attempts": int(previous.get("attempts", 0) or 0) + (0 if unanswered else 1),
        "first_passed": previous.get("first_passed") or (now if passed and not not_checked else None),
        "updated": now,
        "message": message[:500],
        "answers": encoded,
        "answers_exact": answers_exact,
        "evidence": kept,
        "evidence_exact": evidence_exact,
        "seed_digest": seed_digest(),
        "from_solutions": from_solutions(),
    }
    kept_recent = previous.get("recent") if isinstance(previous.get("recent"), list) else []
    data["recent"] = [*kept_recent[-(RECENT_KEPT - 1):],
                      {"at": now, "status": status, "mistake": (mistake or "")[:200]}]
    if passed and not not_checked:
        data["passed_answers"], data["passed_evidence"] = encoded, kept
        data["passed_exact"] = answers_exact and evidence_exact
        named = {**dict(evidence or {}), **dict(answers)}
        folders = run_folders({n: named[n] for n in RUN_FOLDERS.get(exercise, ()) if n in named})
        if folders:
            data["passed_run_folders"] = folders
    elif previous.get("passed_answers") is not None:
        data["passed_answers"] = previous.get("passed_answers")
        data["passed_evidence"] = previous.get("passed_evidence")
        data["passed_exact"] = bool(previous.get("passed_exact"))
        if isinstance(previous.get("passed_run_folders"), dict):
            data["passed_run_folders"] = previous["passed_run_folders"]
    Path(folder).mkdir(mode=RECORD_FOLDER_MODE, parents=True, exist_ok=True)
    with atomic_path(path, RECORD_MODE & ~current_umask()) as tmp:
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


class _Refused(Exception):
    """A file in a progress folder that is not read: why, in words."""


def _read_regular(path: Path, *, within: Path, limit: int = READ_LIMIT) -> str:
    """The text of a regular file of at most ``limit`` bytes inside ``within``; raises :class:`_Refused` otherwise.

    A link is followed only to a regular file inside ``within``; FIFOs, devices and sockets are never opened for
    reading, so nothing here waits or reads without end.
    """
    info = os.lstat(path)
    target = Path(os.path.realpath(path))
    root = Path(os.path.realpath(within))
    if target != root and root not in target.parents:  # the file, or a folder on its way, links out
        raise _Refused(f"a link to {target}, outside the learner's folder")
    if stat.S_ISLNK(info.st_mode):
        info = os.stat(target)
        path = target
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) or
                stat.S_ISBLK(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else
                "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file")
        raise _Refused(f"{kind}, not a regular file")
    if info.st_size > limit:
        raise _Refused(f"{info.st_size:,} bytes, more than the {limit:,} read")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise _Refused("not a regular file when opened")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise _Refused(f"more than the {limit:,} bytes read")
    return data.decode("utf-8", errors="replace")


def read_text_safely(path: Path, *, within: Path, limit: int = READ_LIMIT) -> str | None:
    """The text of a small regular file inside ``within``, or None when it is missing or refused."""
    try:
        return _read_regular(Path(path), within=Path(within), limit=limit)
    except (OSError, _Refused):
        return None


def read_results(folder: Path, *, learner: str | None = None, within: Path | None = None,
                 problems: list[str] | None = None, known: Collection[str] | None = None,
                 unknown: list[str] | None = None) -> list[Result]:
    """Every result recorded in one progress folder, by exercise id.

    Only regular files (or links to one inside ``within``, default the folder) of at most 1 MB are read; every
    other entry, and every file that cannot be read or parsed, is named in ``problems`` (one line each, at most
    :data:`PROBLEMS_PER_LEARNER`). Records of exercises not in ``known`` (when given), and those past
    :data:`RECORDS_PER_LEARNER` records or :data:`BYTES_PER_LEARNER` bytes, are not read: their names go to
    ``unknown``, so a flooded folder costs the class neither memory nor columns.
    """
    folder = Path(folder)
    within = folder if within is None else Path(within)
    results: list[Result] = []
    found: list[str] = []
    skipped: list[str] = []
    read_bytes = 0
    try:
        entries = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError as err:
        entries = []
        found.append(f"{folder}: cannot be listed ({err.strerror or err}); ask the learner to run "
                     f"`chmod -R g+rX {folder}`")
    for path in entries:
        is_result = path.suffix == ".json" and _EXERCISE_ID.match(path.stem) is not None
        if is_result and (known is not None and path.stem not in known or len(results) >= RECORDS_PER_LEARNER
                          or read_bytes > BYTES_PER_LEARNER):
            skipped.append(path.stem)
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        odd = not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode))
        if not is_result and not odd:
            continue
        read_bytes += info.st_size if stat.S_ISREG(info.st_mode) else 0
        try:
            result = _read_record(path, within, learner)
        except _Unreadable as why:
            found.append(f"{path}: {why.line}")
            if is_result:
                results.append(_unreadable(path, learner, str(why)))
            continue
        except Exception as err:  # noqa: BLE001 - whatever one hostile record does, the others are still read
            found.append(f"{path}: unreadable ({type(err).__name__}: {str(err)[:120]})")
            if is_result:
                results.append(_unreadable(path, learner, f"{type(err).__name__}: {str(err)[:120]}"))
            continue
        if result is not None:
            results.append(result)
    if skipped:
        found.insert(0, f"{folder}: {len(skipped):,} record(s) not read: exercises this workbook does not have, or past "
                     f"the {RECORDS_PER_LEARNER} records or {BYTES_PER_LEARNER >> 20} MB read per learner (counted "
                     f"as unknown records)")
    if unknown is not None:
        unknown.extend(skipped)
    if problems is not None:
        problems.extend(found[:PROBLEMS_PER_LEARNER])
        if len(found) > PROBLEMS_PER_LEARNER:
            problems.append(f"{folder}: {len(found) - PROBLEMS_PER_LEARNER:,} more refused entries not listed")
    return sorted(results, key=lambda r: _exercise_key(r.exercise))


class _Unreadable(Exception):
    """A record that is not read: ``line`` for the list of problems, ``str()`` the short why for its cell."""

    def __init__(self, why: str, line: str) -> None:
        super().__init__(why)
        self.line = line


def _unreadable(path: Path, learner: str | None, why: str) -> Result:
    """The result standing for a record that could not be read: one cell saying why, never a pass."""
    return Result(learner or "", path.stem, UNREADABLE, 0, None, "", why[:200], {}, path=str(path))


def _read_record(path: Path, within: Path, learner: str | None) -> Result | None:
    """One record file as a :class:`Result` (None for a non-record entry that reads fine); raises
    :class:`_Unreadable` saying why it is refused. JSON is read with a size and a nesting limit."""
    try:
        data = load_json_bounded(_read_regular(path, within=within), str(path), max_depth=RECORD_MAX_DEPTH)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except _Refused as why:
        raise _Unreadable(f"refused: {why}", f"refused ({why})") from None
    except PermissionError:
        raise _Unreadable("unreadable: permission denied",
                          f"unreadable (permission denied); ask the learner to run `chmod g+r {path}` and to work "
                          f"under `umask 002`") from None
    except ParseError as err:
        raise _Unreadable(err.message, f"unreadable ({err.message})") from None
    except (OSError, ValueError) as err:
        raise _Unreadable(str(err)[:160], f"unreadable ({err})") from None
    if not (path.suffix == ".json" and _EXERCISE_ID.match(path.stem)):
        return None
    status = data.get("status")
    if status not in STATUSES:
        raise _Unreadable(f"unknown status {str(status)[:40]!r}", f"unknown status {str(status)[:40]!r}")
    try:
        attempts = int(data.get("attempts", 0) or 0)
    except (TypeError, ValueError, OverflowError):
        attempts = 0
    answers = data.get("answers") if isinstance(data.get("answers"), dict) else {}
    evidence = data.get("evidence") if isinstance(data.get("evidence"), dict) else {}
    passed_answers = data.get("passed_answers") if isinstance(data.get("passed_answers"), dict) else None
    passed_evidence = data.get("passed_evidence") if isinstance(data.get("passed_evidence"), dict) else None
    first = data.get("first_passed")
    return Result(learner or str(data.get("learner", ""))[:200], path.stem, status, attempts,
                  str(first)[:64] if first else None, str(data.get("updated", ""))[:64],
                  str(data.get("message", ""))[:500], answers,
                  str(data.get("seed_digest", ""))[:64], data.get("answers_exact") is True, evidence,
                  data.get("evidence_exact") is True, passed_answers, passed_evidence,
                  data.get("from_solutions") is True, str(path), data.get("passed_exact") is True,
                  data.get("passed_run_folders") if isinstance(data.get("passed_run_folders"), dict) else {})


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


_DECLARED = re.compile(r"""\b[A-Za-z_]+\(\s*["'](?P<id>\d\d\.\w+)["']""")


def declared_exercises() -> frozenset[str]:
    """The exercise ids lumikit's own checks declare (``@check("01.1", ...``, ``Choice("01.q1", ...``), read from
    their source text without importing them: the class view knows which records are a workbook's without loading
    numpy or the checks (a superset: an id named in a check's call, such as 00.1, counts too)."""
    return _declared(str(Path(__file__).parent))


@functools.lru_cache(maxsize=4)
def _declared(folder: str) -> frozenset[str]:
    found: set[str] = set()
    for path in sorted(Path(folder).glob("*.py")):
        try:
            found.update(m.group("id") for m in _DECLARED.finditer(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return frozenset(found)


def summary_table(results: Sequence[Result], exercises: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per module: exercises in it, passed, not checked here (no Slurm), failed, not tried yet."""
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
        unchecked = [e for e in ids if e in done and not done[e].ever_passed and done[e].status == "not checked"]
        failed = [e for e in ids if e in done and not done[e].ever_passed and done[e].status == "failed"]
        rows.append({"module": module, "exercises": len(ids), "passed": len(passed), "not checked": len(unchecked),
                     "failed": len(failed), "not yet": len(ids) - len(passed) - len(failed) - len(unchecked),
                     "to do": ", ".join(sorted((e for e in ids if e not in passed), key=_exercise_key))})
    return rows


def format_summary(rows: Sequence[Mapping[str, Any]], learner: str, folder: Path,
                   results: Sequence[Result] = ()) -> str:
    """The per-module summary as a plain-text table, with a total line and the tasks to check again with Slurm."""
    header = ("module", "exercises", "passed", "not checked", "failed", "not yet", "to do")
    lines = [tuple(str(row.get(h, 0)) for h in header) for row in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    out = [f"progress of {learner} ({folder})"]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in (header, *lines)]
    out.insert(2, "  ".join("-" * w for w in widths))
    total = sum(r["exercises"] for r in rows)
    done = sum(r["passed"] for r in rows)
    out.append(f"\n{done} of {total} exercises passed")
    waiting = [r.exercise for r in results if r.status == "not checked" and not r.ever_passed]
    if waiting:
        out.append(f"not checked here (no Slurm), never counted as passed: {', '.join(waiting)}. Run those cells "
                   f"again on LUMI (or with the local cluster up) to check them.")
    broken = [f"{r.exercise} ({r.message})" for r in results if r.status == UNREADABLE]
    if broken:
        out.append(f"unreadable records, counted as not yet: {'; '.join(broken)}. Run those checks again to "
                   f"write them anew.")
    solved = [r.exercise for r in results if r.from_solutions]
    if solved:
        out.append(f"recorded while running solutions/ (marked so in a class export): {', '.join(solved)}")
    return "\n".join(out)
