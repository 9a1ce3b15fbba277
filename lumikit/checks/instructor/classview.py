"""The live class view: learners x exercises, who is stuck now and the commonest mistake per exercise.

Serverless: it reads only the class folder (one sub-folder per learner, each with the ``progress/`` the checks write,
see :mod:`lumikit.checks.progress`), so it needs nothing but read access to the LUMI project folder. A
:class:`ClassReader` keeps each record it parsed, keyed by the file's size and modification time (ns), so a refresh
reads again only the records that changed. It runs no learner code: records are plain JSON, read through the safe
readers of :mod:`lumikit.files` with a size and nesting limit; a record that cannot be read is one cell
"unreadable: why" and the class goes on.
"""
from __future__ import annotations

import functools
import json
import os
import re
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Collection, Union

import msgspec

from ...errors import LumikitError
from ...importpath import no_cwd_imports
from ...text import printable
from ..progress import _EXERCISE_ID, PROBLEMS_PER_LEARNER, READ_LIMIT, RECORDS_PER_LEARNER, STATUSES, _exercise_key
from .class_records import learner_folders

#: The shortest time between two refreshes of a followed view (``--watch``, the widget's follow mode).
MIN_REFRESH_S = 10.0
#: Records nested deeper than this are refused before parsing (a record with evidence is a few levels deep).
MAX_DEPTH = 64
#: What a learner's row says when their folder holds no ``progress/`` yet.
NO_CHECK_YET = "no check run yet"
_MISTAKE_CHARS = 200
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


@dataclass(frozen=True)
class StuckRule:
    """When a learner counts as stuck on an exercise they have not passed.

    ``failures`` failed attempts within the last ``window_s`` seconds, or a failed attempt that is the learner's
    latest activity anywhere, at least ``idle_s`` seconds old (and at most ``session_s``, so yesterday's class is not
    "stuck"). The common mistakes count each learner's latest failure within ``window_s``.
    """

    failures: int = 3
    window_s: float = 600.0
    idle_s: float = 300.0
    session_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.failures < 1 or min(self.window_s, self.idle_s, self.session_s) <= 0:
            raise LumikitError(f"stuck rule {self}: give at least 1 failure and positive times in seconds")


@dataclass(frozen=True)
class Attempt:
    """One call of a check as its record keeps it: when (epoch seconds), the outcome and the kind of mistake."""

    at: float
    status: str
    mistake: str = ""


@dataclass(frozen=True)
class Cell:
    """One learner's record of one exercise, as the class view shows it (``status`` "unreadable": see ``why``)."""

    exercise: str
    status: str
    attempts: int = 0
    updated: float | None = None
    ever_passed: bool = False
    recent: tuple[Attempt, ...] = ()
    why: str = ""

    @property
    def shown(self) -> str:
        """The cell's word: passed once counts as passed; an unreadable record says why."""
        if self.status == "unreadable":
            return f"unreadable: {self.why}"
        return "passed" if self.ever_passed else self.status


@dataclass(frozen=True)
class Stuck:
    """A learner stuck on an exercise: why, in words, and since when (epoch seconds)."""

    learner: str
    exercise: str
    why: str
    since: float


@dataclass
class LearnerRow:
    """One learner: their cells, their latest activity (epoch seconds), and a note when there is nothing to show."""

    learner: str
    cells: dict[str, Cell] = field(default_factory=dict)
    last_activity: float | None = None
    note: str = ""
    #: Records of exercises the workbook does not have (or past the per-learner limit): counted, never read.
    unknown: int = 0


@dataclass
class ClassState:
    """What one refresh found: rows, stuck learners, common mistakes per exercise, refused entries, read counts."""

    class_dir: str
    now: float
    rule: StuckRule
    exercises: list[str]
    learners: list[LearnerRow]
    stuck: list[Stuck]
    mistakes: dict[str, list[tuple[str, int]]]
    problems: list[str]
    records: int = 0
    parsed: int = 0
    seconds: float = 0.0

    def stuck_on(self, learner: str) -> dict[str, Stuck]:
        """Exercise -> why, for one learner."""
        return {s.exercise: s for s in self.stuck if s.learner == learner}

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form: learners with per-exercise status, stuck learners with why, mistakes per exercise."""
        stuck = {(s.learner, s.exercise): s for s in self.stuck}
        learners = []
        for row in self.learners:
            cells = {}
            for e, c in row.cells.items():
                cell: dict[str, Any] = {"status": c.shown, "attempts": c.attempts, "updated": iso(c.updated)}
                if (row.learner, e) in stuck:
                    cell["stuck"] = stuck[row.learner, e].why
                cells[e] = cell
            learners.append({"learner": row.learner, "last_activity": iso(row.last_activity), "note": row.note,
                             "unknown_records": row.unknown, "exercises": cells})
        return {
            "class_dir": self.class_dir, "now": iso(self.now),
            "rule": {"failures": self.rule.failures, "window_s": self.rule.window_s, "idle_s": self.rule.idle_s,
                     "session_s": self.rule.session_s},
            "exercises": self.exercises, "learners": learners,
            "stuck": [{"learner": s.learner, "exercise": s.exercise, "why": s.why, "since": iso(s.since)}
                      for s in self.stuck],
            "common_mistakes": {e: [{"mistake": m, "learners": n} for m, n in found]
                                for e, found in self.mistakes.items()},
            "problems": self.problems,
            "refresh": {"records": self.records, "parsed": self.parsed, "seconds": round(self.seconds, 4)},
        }


def iso(epoch: float | None) -> str | None:
    """An epoch time as ISO 8601 in UTC (seconds), or None."""
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


def _epoch(text: Any) -> float | None:
    """A record's ISO time as epoch seconds (a time without zone is UTC); None when it is not a time."""
    if not isinstance(text, str) or not text:
        return None
    return _epoch_of(text[:40])


@functools.lru_cache(maxsize=8192)
def _epoch_of(text: str) -> float | None:
    """:func:`_epoch` of a string (a class's records share many times: each is parsed once)."""
    try:
        when = datetime.fromisoformat(text[:40])
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _nesting(text: str) -> int:
    """How deep the brackets of a JSON text nest (strings left out; at most, when there are few), counted without
    recursion."""
    opened = text.count("[") + text.count("{")
    if opened <= MAX_DEPTH:  # a check's record: no need to look closer
        return opened
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = deepest = 0
    for ch in brackets:
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


class _Call(msgspec.Struct):
    """One entry of a record's ``recent`` list, as the checks write it."""

    at: str = ""
    status: str = ""
    mistake: str = ""


class _Fields(msgspec.Struct):
    """The fields of a record the class view reads, typed as the checks write them; the rest (answers, evidence)
    is skipped by msgspec, never built."""

    status: str = ""
    attempts: int = 0
    updated: Union[str, None] = None
    first_passed: Any = None
    recent: list[_Call] = []


_FIELDS = msgspec.json.Decoder(_Fields)


def _cell_fast(exercise: str, data: bytes) -> Cell | None:
    """The cell of a record as the checks write it, decoded by msgspec without building its answers and evidence;
    None for anything else (the general reader then says what is wrong with it)."""
    try:
        found = _FIELDS.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        return None
    if found.status not in STATUSES:
        return None
    recent = []
    for call in found.recent:
        at = _epoch(call.at)
        if at is not None and call.status in STATUSES:
            mistake = call.mistake if call.mistake.isprintable() else printable(call.mistake)
            recent.append(Attempt(at, call.status, mistake[:_MISTAKE_CHARS]))
    return Cell(exercise, found.status, max(0, found.attempts), _epoch(found.updated), bool(found.first_passed),
                tuple(recent))


def parse_record(exercise: str, data: bytes) -> Cell:
    """The cell of one record's bytes; a record that is not a JSON object of a known status is "unreadable"."""
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and \
            _nesting(data.decode("utf-8", errors="replace")) > MAX_DEPTH:
        return Cell(exercise, "unreadable", why=f"nested more than {MAX_DEPTH} deep, not a check's record")
    fast = _cell_fast(exercise, data)
    if fast is not None:
        return fast
    try:
        record = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as err:
        return Cell(exercise, "unreadable", why=f"not JSON ({printable(str(err))[:80]})")
    if not isinstance(record, dict):
        return Cell(exercise, "unreadable", why="not a JSON object")
    status = record.get("status")
    if status not in STATUSES:
        return Cell(exercise, "unreadable", why=f"unknown status {printable(str(status))[:40]!r}")
    try:
        attempts = max(0, int(record.get("attempts", 0) or 0))
    except (TypeError, ValueError, OverflowError):
        attempts = 0
    recent = []
    for item in record.get("recent") if isinstance(record.get("recent"), list) else ():
        at = _epoch(item.get("at")) if isinstance(item, dict) else None
        if at is not None and item.get("status") in STATUSES:
            mistake = item.get("mistake")
            recent.append(Attempt(at, item["status"], printable(mistake)[:_MISTAKE_CHARS]
                                  if isinstance(mistake, str) else ""))
    return Cell(exercise, status, attempts, _epoch(record.get("updated")), bool(record.get("first_passed")),
                tuple(recent))


def _kind(mode: int) -> str:
    return ("a link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a folder" if stat.S_ISDIR(mode) else "not a regular file")


class ClassReader:
    """Reads a class folder again and again, parsing each record at most once per change (size, mtime_ns)."""

    def __init__(self, class_dir: str | os.PathLike[str], rule: StuckRule | None = None,
                 exercises: Collection[str] | None = None) -> None:
        """``exercises``: the workbook's exercise ids; records of any other id are counted per learner ("unknown
        records"), never shown or counted in the denominators. Without it every record is shown, at most
        :data:`~lumikit.checks.progress.RECORDS_PER_LEARNER` per learner."""
        self.class_dir = Path(class_dir)
        self.rule = rule or StuckRule()
        self.exercises = frozenset(exercises) if exercises else None
        self._cells: dict[str, tuple[int, int, Cell]] = {}
        self._folders: dict[str, Path] = {}
        self._found_problems: list[str] = []
        self._refused: dict[str, str] = {}

    def refresh(self, now: float | None = None) -> ClassState:
        """Read what changed and work out the view as of ``now`` (epoch seconds; default: the clock). Nothing is
        imported from the current folder meanwhile (a notebook kernel started in the class folder)."""
        with no_cwd_imports():
            return self._refresh(now)

    def _refresh(self, now: float | None) -> ClassState:
        started = time.perf_counter()
        now = time.time() if now is None else now
        problems: list[str] = []
        names = self._learners()
        cells: dict[str, tuple[int, int, Cell]] = {}
        rows, parsed = [], 0
        for name in names:
            row = LearnerRow(printable(name))
            folder = self._folders.get(name)
            if folder is None:
                where = f"{self.class_dir / name}: "
                why = next((p[len(where):] for p in self._found_problems if p.startswith(where)), "")
                row.note = (f"unreadable: {printable(why)}" if "cannot be listed" in why else
                            printable(self._refused[name]) if name in self._refused else NO_CHECK_YET)
            else:
                parsed += self._read_folder(folder, row, cells, problems)
            rows.append(row)
        self._cells = cells  # records that vanished are forgotten
        exercises = sorted({e for r in rows for e in r.cells}, key=_exercise_key)
        stuck = [s for r in rows for s in _stuck(r, now, self.rule)]
        state = ClassState(str(self.class_dir), now, self.rule, exercises, rows, stuck,
                           common_mistakes(rows, now, self.rule.window_s),
                           [printable(p) for p in self._found_problems] + problems,
                           records=sum(len(r.cells) for r in rows), parsed=parsed)
        state.seconds = time.perf_counter() - started
        return state

    def _learners(self) -> list[str]:
        """Every learner folder's name; where each one's ``progress/`` lies is looked up again only when needed."""
        if not self.class_dir.is_dir():
            raise LumikitError(f"{self.class_dir}: no such folder. Fix: give the folder holding one folder per "
                               f"learner (on LUMI e.g. /project/project_465000000)")
        names = []
        try:
            with os.scandir(self.class_dir) as entries:
                for entry in entries:
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                        names.append(entry.name)
        except OSError as err:
            raise LumikitError(f"{self.class_dir}: cannot be listed ({err.strerror or err}). Fix: ask for read "
                               f"access to the project folder (group r-x)") from None
        names.sort()
        lost = [n for n in names if n not in self._folders or not self._folders[n].is_dir()]
        if lost or set(self._folders) - set(names):
            self._found_problems, self._refused = [], {}
            self._folders = learner_folders(self.class_dir, self._found_problems, self._refused)
        return names

    def _read_folder(self, folder: Path, row: LearnerRow, cells: dict[str, tuple[int, int, Cell]],
                     problems: list[str]) -> int:
        """Fill ``row`` from one progress folder; returns how many records were parsed (not taken from the cache)."""
        parsed = 0
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as err:
            row.note = (f"unreadable: {printable(folder)} cannot be listed ({err.strerror or err}); ask the learner "
                        f"to run `chmod -R g+rX {printable(folder)}`")
            return 0
        known, refused = self.exercises, 0
        for entry in entries:
            name = entry.name
            stem = name[:-5] if name.endswith(".json") else ""
            if not stem or _EXERCISE_ID.match(stem) is None:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    refused += 1
                    if refused <= PROBLEMS_PER_LEARNER:
                        problems.append(f"{printable(entry.path)}: refused ({_kind(mode)}, not a regular file)")
                continue
            if known is not None and stem not in known or len(row.cells) >= RECORDS_PER_LEARNER:
                row.unknown += 1  # counted, never read: a flooded folder costs neither time nor columns
                continue
            exercise = stem if stem.isprintable() else printable(stem)
            hit = self._cells.get(entry.path)
            if hit is None:  # never read: open it at once (its size and time come from the open file)
                cell, key = _open_cell(entry.path, exercise)
                parsed += 1
            else:  # read before: stat it, and read it again only if it changed
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_size, info.st_mtime_ns)
                if hit[0] == info.st_size and hit[1] == info.st_mtime_ns and stat.S_ISREG(info.st_mode):
                    cell = hit[2]
                else:
                    cell, key = _open_cell(entry.path, exercise)
                    parsed += 1
            if cell.status != "unreadable" and key is not None:  # an unreadable one is tried again (a chmod
                cells[entry.path] = (key[0], key[1], cell)  # keeps its mtime)
            row.cells[exercise] = cell
            if cell.updated is not None and (row.last_activity is None or cell.updated > row.last_activity):
                row.last_activity = cell.updated
        if refused > PROBLEMS_PER_LEARNER:
            problems.append(f"{printable(folder)}: {refused - PROBLEMS_PER_LEARNER:,} more refused entries not listed")
        return parsed


def _open_cell(path: str, exercise: str) -> tuple[Cell, tuple[int, int] | None]:
    """The cell of one record file and its (size, mtime_ns): only a regular file of at most READ_LIMIT bytes is
    read, opened without following a link and without waiting on a FIFO (``O_NOFOLLOW``, ``O_NONBLOCK``), then
    ``fstat``-ed; plain system calls, as the class view opens thousands per refresh."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except PermissionError:
        return Cell(exercise, "unreadable", why="permission denied; ask the learner to work under `umask 002`"), None
    except OSError as err:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        why = f"{_kind(mode)}, not a regular file" if not stat.S_ISREG(mode) else \
            printable(str(err).replace(path, "the file"))[:120]
        return Cell(exercise, "unreadable", why=why), None
    try:
        info = os.fstat(fd)
        key = (info.st_size, info.st_mtime_ns)
        if not stat.S_ISREG(info.st_mode):
            return Cell(exercise, "unreadable", why=f"{_kind(info.st_mode)}, not a regular file"), None
        if info.st_size > READ_LIMIT:
            return Cell(exercise, "unreadable", why=f"{info.st_size:,} bytes, more than the {READ_LIMIT:,} read"), key
        data = os.read(fd, info.st_size + 1)
        if len(data) > info.st_size:  # it grew since the stat: read on, up to the limit
            chunks = [data]
            while (chunk := os.read(fd, 65_536)) and sum(map(len, chunks)) <= READ_LIMIT:
                chunks.append(chunk)
            data = b"".join(chunks)
            if len(data) > READ_LIMIT:
                return Cell(exercise, "unreadable", why=f"more than the {READ_LIMIT:,} bytes read"), None
    except PermissionError:
        return Cell(exercise, "unreadable", why="permission denied; ask the learner to work under `umask 002`"), None
    except OSError as err:
        return Cell(exercise, "unreadable", why=printable(str(err).replace(path, "the file"))[:120]), None
    finally:
        os.close(fd)
    return parse_record(exercise, data), key


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _stuck(row: LearnerRow, now: float, rule: StuckRule) -> list[Stuck]:
    """The exercises one learner is stuck on now (never one they passed)."""
    found = []
    for exercise, cell in row.cells.items():
        if cell.ever_passed or cell.status != "failed":
            continue
        if cell.recent:
            fails = [a for a in cell.recent if a.status == "failed" and now - rule.window_s <= a.at <= now + 60]
            if len(fails) >= rule.failures:
                latest = f" (latest: {fails[-1].mistake})" if fails[-1].mistake else ""
                found.append(Stuck(row.learner, exercise, f"{len(fails)} failed attempts in the last "
                                   f"{rule.window_s / 60:g} min{latest}", fails[0].at))
                continue
        elif (cell.updated is not None and cell.attempts >= rule.failures
              and now - cell.updated <= rule.window_s):
            found.append(Stuck(row.learner, exercise, f"{cell.attempts} failed attempts, the latest "
                               f"{max(0.0, now - cell.updated) / 60:.0f} min ago (an older record: no attempt "
                               f"times kept)", cell.updated))
            continue
        idle = None if cell.updated is None else now - cell.updated
        if (idle is not None and cell.updated == row.last_activity and rule.idle_s <= idle <= rule.session_s):
            found.append(Stuck(row.learner, exercise, f"no activity for {idle / 60:.0f} min after a failed attempt",
                               cell.updated))
    return found


def common_mistakes(rows: list[LearnerRow], now: float, window_s: float) -> dict[str, list[tuple[str, int]]]:
    """Exercise -> (kind of mistake, learners), commonest first: each learner's latest attempt within ``window_s``,
    when it failed with a named mistake (a learner who failed ten times counts once)."""
    counts: dict[str, Counter[str]] = {}
    for row in rows:
        for exercise, cell in row.cells.items():
            latest = cell.recent[-1] if cell.recent else None
            if (latest is not None and not cell.ever_passed and latest.status == "failed" and latest.mistake
                    and now - window_s <= latest.at <= now + 60):
                counts.setdefault(exercise, Counter())[latest.mistake] += 1
    return {e: sorted(c.items(), key=lambda x: (-x[1], x[0])) for e, c in sorted(counts.items(),
                                                                                  key=lambda x: _exercise_key(x[0]))}


def _ago(now: float, when: float | None) -> str:
    if when is None:
        return "never"
    minutes = max(0.0, now - when) / 60
    return f"{minutes:.0f} min ago" if minutes < 120 else f"{minutes / 60:.0f} h ago"


def _learners(count: int) -> str:
    return f"{count} learner{'s' if count != 1 else ''}"


def current(row: LearnerRow) -> Cell | None:
    """The exercise a learner worked on last (their latest record that is not "unanswered"), if any."""
    tried = [c for c in row.cells.values() if c.status != "unanswered" and c.updated is not None]
    return max(tried, key=lambda c: c.updated or 0.0, default=None)


def format_text(state: ClassState) -> str:
    """The view as plain text for a terminal: one line per learner (passed so far, the exercise they are on and
    how it went, ``STUCK`` with why), then the commonest mistake per exercise. The full grid is in ``--json`` and the
    notebook widget."""
    width = max([len(r.learner) for r in state.learners] + [7])
    total = len(state.exercises)
    out = [f"class {printable(state.class_dir)} at {iso(state.now)}: {len(state.learners)} learner(s), "
           f"{total} exercise(s) with a result, {len(state.stuck)} stuck",
           f"{'learner'.ljust(width)}  {'last activity':<13}  {'passed':>7}  on"]
    for row in state.learners:
        stuck = state.stuck_on(row.learner)
        passed = sum(c.ever_passed for c in row.cells.values())
        on = current(row)
        parts = [row.note] if row.note else []
        if on is not None:
            parts.append(f"{on.exercise} {on.shown}" + (f"  STUCK: {stuck[on.exercise].why}"
                                                         if on.exercise in stuck else ""))
        parts += [f"STUCK on {e}: {s.why}" for e, s in stuck.items() if on is None or e != on.exercise]
        parts += [f"{e} {c.shown}" for e, c in row.cells.items() if c.status == "unreadable"]
        if row.unknown:
            parts.append(f"{row.unknown:,} unknown record(s), not shown")
        out.append(f"{row.learner.ljust(width)}  {_ago(state.now, row.last_activity):<13}  "
                   f"{f'{passed}/{total}':>7}  {'; '.join(parts)}".rstrip())
    if state.mistakes:
        out.append(f"\ncommonest mistake per exercise (each learner's latest failure, last "
                   f"{state.rule.window_s / 60:g} min):")
        out += [f"  {e}: {found[0][0]} ({_learners(found[0][1])}"
                + (f"; next, {_learners(found[1][1])}: {found[1][0]})" if len(found) > 1 else ")")
                for e, found in state.mistakes.items()]
    out += [f"refused: {p}" for p in state.problems]
    return "\n".join(out)
