"""Grading on the instructor's side: re-run the checks on each learner's recorded answers and evidence, with
references the instructor computes from the learner's seed, so no reference value ever sits in a learner's folder.

A record holds the answers of the latest attempt that passed, and the check's other inputs (the evidence: step
times, a table, a job spec, a batch script's text, what ``sh(...)`` printed, a job id to look up in ``sacct``), each
in an exact JSON form (:mod:`.evidence`). The instructor's copy of the check judges them again. What each class CSV
cell then says (:data:`.class_records.CELLS`):

- ``verified``: the record claims a pass, and the instructor's check passed the recorded answers as the learner
  (their seed, their name), on inputs rebuilt from the seed (:mod:`.rebuilt`) or on none, with status passed;
- ``own data``: the same, but some inputs are the learner's own measurements: consistent, not verified;
- ``self-reported``: a claimed pass that could not be regraded (an input with no exact form, a folder of traces, a
  file the grader never opens);
- ``not checked``: a terminal task that never ran where Slurm answers, or terminal output pasted as text;
- ``failed``: the latest attempt failed, and does again; ``disagrees``: the instructor's verdict is not the record's,
  or the record is not the learner's (another seed, another name) or is self-contradictory;
- ``from solutions``: recorded while running the shipped ``solutions/`` (the record says so, or the learner's
  exercise cell is the solution's code: :mod:`.solution_runs`); ``unreadable``: a record that could not be
  read or judged (the reason says why; the rest of the class is graded).

No learner code runs: records are read as bounded JSON, no check gets a path in a learner's folder
(:data:`PATH_ARGUMENTS`), and each check runs inside :func:`lumikit.checks.instructor.regrade_guard.fenced`.

Every claimed pass that is not verified is listed with its reason in the CSV's ``not verified`` column.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import pwd
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...importpath import no_cwd_imports
from ..evidence import RUN_FOLDERS, Unencodable, decode, expand, folder_digest, fresh_folder
from ..framework import _PROBING, CheckFailed, NotChecked, check_info
from ..learner import seed_digest
from ..progress import UNREADABLE, Result, read_text_safely
from .class_records import recorded_cell
from .rebuilt import FIXED, JOB_ARGUMENTS, JUDGED, PASTED_OUTPUT, REBUILT, own_inputs, pasted, rebuild
from .regrade_guard import fenced
from .solution_runs import solution_cells_used

#: Exercises whose check needs an input that has no exact recorded form (a live object or a folder of traces):
#: their passes stay self-reported. Every other exercise with a check is regradable.
NOT_REGRADABLE = {
    "06.3": "the check takes a live TraceAnalyzer",
    "06.4": "the check reads a folder of traces",
    "09.S1": "the check takes a live DataLoader",
    "11.1": "the check reads the capstone's run folder",
    "11.2": "the check reads the capstone's run folder",
    "11.3": "the check reads the capstone's run folders",
    "11.A": "the check reads the capstone's run folders",
    "05.M1": "the check reads the memory snapshot (a pickle) the learner's notebook wrote; the grader never opens it",
}
#: Check arguments that name a file the check opens. In a regrade they are taken only as a file the record kept
#: (its content, rebuilt in a private folder), never as a path: a path would lead into the learner's folder.
#: ``tests/checks/test_regrade_safety.py`` regrades every check with a learner's path in every argument to find them.
PATH_ARGUMENTS = {
    "03.T1": ("script_path",),
    "04.3": ("site",),  # a site name, or the path of a site file
    "05.S1": ("raw_trace",),
    "05.M1": ("path",),
    "06.4": ("trace_dir",),
    "06.5": ("path",),
    "11.1": ("before_dir",),
    "11.2": ("before_dir",),
    "11.3": ("before_dir", "after_dir"),
    "11.A": ("before_dir", "after_dir"),
}
#: Modules holding check functions besides ``mNN``.
_OTHER_CHECK_MODULES = ("terminal", "seeds", "concepts", "handson")


@dataclass(frozen=True)
class Grade:
    """The instructor's verdict on one recorded result: the CSV cell, the re-run's outcome, and why a claimed pass
    is not verified (empty when it is, or when nothing was claimed)."""

    exercise: str
    recorded: str  # the outcome in the learner's folder ("passed" when it ever passed)
    regraded: str  # passed | failed | not checked | not regraded
    cell: str
    why: str = ""

    @property
    def disagrees(self) -> bool:
        """The instructor's verdict is not the record's, or the record is not the learner's own."""
        return self.cell == "disagrees"


def check_functions() -> dict[str, Callable[..., Any]]:
    """Exercise id -> its check function, over every check module (``lumikit.checks.mNN``, terminal, seeds)."""
    from ... import checks

    found: dict[str, Callable[..., Any]] = {}
    names = sorted(m.name for m in pkgutil.iter_modules(checks.__path__))
    for name in names:
        if not ((name.startswith("m") and name[1:].isdigit()) or name in _OTHER_CHECK_MODULES):
            continue
        module = importlib.import_module(f"lumikit.checks.{name}")
        for value in vars(module).values():
            info = check_info(value)
            if info is not None:
                found.setdefault(info.exercise, value)
    return found


def regradable(func: Callable[..., Any]) -> bool:
    """True when the check can be judged again from a record: it is a check, and needs no live object or folder."""
    info = check_info(func)
    return info is not None and info.exercise not in NOT_REGRADABLE


def regradable_count(exercises: Sequence[str]) -> tuple[int, int]:
    """(how many of ``exercises`` can be regraded from a record, how many there are)."""
    functions = check_functions()
    return sum(1 for e in exercises if e in functions and regradable(functions[e])), len(exercises)


def best_cell(exercise: str, func: Callable[..., Any]) -> str:
    """The best cell a claimed pass of ``exercise`` can get: ``verified`` (no inputs besides the answers, or inputs
    rebuilt from the seed or fixed by the exercise), ``own data`` (the learner's own inputs, or a hashed run
    folder), ``not checked`` (pasted terminal output) or ``self-reported`` (never regraded)."""
    info = check_info(func)
    parameters = inspect.signature(func).parameters
    inputs = [n for n in parameters if info is not None and n not in info.answer_names]
    if exercise in NOT_REGRADABLE:
        return "own data" if exercise in RUN_FOLDERS else "self-reported"
    if exercise in PASTED_OUTPUT:
        return "not checked"
    fixed = {**REBUILT.get(exercise, {}), **FIXED.get(exercise, {}), **dict.fromkeys(JUDGED.get(exercise, ())),
             **dict.fromkeys([JOB_ARGUMENTS[exercise]] if exercise in JOB_ARGUMENTS else [])}
    if all(n in fixed or parameters[n].default is not inspect.Parameter.empty for n in inputs):
        return "verified"
    return "own data"


@contextmanager
def _as_learner(seed: str) -> Iterator[None]:
    """Run checks as the learner with ``seed``, recording nothing."""
    saved = os.environ.get("LUMIKIT_SEED")
    os.environ["LUMIKIT_SEED"] = seed
    token = _PROBING.set(True)
    try:
        yield
    finally:
        _PROBING.reset(token)
        if saved is None:
            os.environ.pop("LUMIKIT_SEED", None)
        else:
            os.environ["LUMIKIT_SEED"] = saved


def rerun(func: Callable[..., Any], answers: Mapping[str, Any], evidence: Mapping[str, Any], seed: str,
          forbidden: Sequence[Path] = ()) -> str:
    """Call ``func`` on recorded (JSON) answers and evidence as the learner with ``seed``: passed, failed, not
    checked (it cannot judge here), or not regraded (a recorded value it cannot take back)."""
    return judge(func, answers, evidence, seed, forbidden).verdict


@dataclass(frozen=True)
class Rerun:
    """A check judged again: the verdict, why it was not regraded, and which of its inputs were the learner's own
    (:func:`lumikit.checks.instructor.rebuilt.own_inputs`), pasted terminal output, or a job id to look up."""

    verdict: str
    why: str = ""
    own: tuple[str, ...] = ()
    pasted: tuple[str, ...] = ()
    job_id: str | None = None


def judge(func: Callable[..., Any], answers: Mapping[str, Any], evidence: Mapping[str, Any], seed: str,
          forbidden: Sequence[Path] = ()) -> Rerun:
    """Judge recorded answers again, on the inputs the instructor rebuilds from ``seed`` (:mod:`.rebuilt`) and the
    recorded rest. The check runs inside :func:`~lumikit.checks.instructor.regrade_guard.fenced`: it opens nothing under
    ``forbidden`` (the class folder) nor outside lumikit and its evidence folder, and unpickles no class."""
    info = check_info(func)
    exercise = info.exercise  # type: ignore[union-attr]
    files = fresh_folder()
    try:
        try:
            answers, evidence = expand(answers), expand(evidence)
            kwargs = {name: decode(answers.get(name), files) for name in info.answer_names}  # type: ignore[union-attr]
            parameters = inspect.signature(func).parameters
            kwargs.update({k: decode(v, files) for k, v in evidence.items() if k in parameters and k not in kwargs})
        except (Unencodable, TypeError, ValueError, ImportError, OSError, RecursionError):
            return Rerun("not regraded", "the recorded values could not be read back")
        recorded = {**dict(evidence), **dict(answers)}
        for name in PATH_ARGUMENTS.get(exercise, ()):
            if kwargs.get(name) is not None and not _kept_file(recorded.get(name)):
                return Rerun("not regraded", f"{name} names a path in the learner's folder, which the grader never "
                                             f"opens")
        shown = tuple(pasted(exercise, kwargs))
        job = _job_id_of(exercise, kwargs)
        own: tuple[str, ...] = ()
        saved_tmp = tempfile.tempdir
        with _as_learner(seed), fenced(files, forbidden) as fence:
            tempfile.tempdir = str(files)  # whatever the check (or a rebuild) writes goes to its private folder
            try:
                # as the learner: an input the exercise fixes may come from their seed (06.5's straggler)
                own = tuple(own_inputs(func, exercise, info.answer_names, recorded,  # type: ignore[union-attr]
                                       kwargs))
                kwargs.update(rebuild(exercise))
                result = func(**kwargs)
            except CheckFailed as failure:
                from ..terminal import NoSlurmHere

                if fence.refused:
                    return Rerun("not regraded", _refusal(fence.refused))
                return Rerun("not checked" if isinstance(failure, NoSlurmHere) else "failed", "", own, shown, job)
            except Exception:  # noqa: BLE001 (a recorded value in a form the check cannot take back)
                return Rerun("not regraded",
                             _refusal(fence.refused) or "the recorded values could not be judged again")
            finally:
                tempfile.tempdir = saved_tmp
        if fence.refused:
            return Rerun("not regraded", _refusal(fence.refused))
        return Rerun("not checked" if isinstance(result, NotChecked) else "passed", "", own, shown, job)
    finally:
        shutil.rmtree(files, ignore_errors=True)


def _job_id_of(exercise: str, kwargs: Mapping[str, Any]) -> str | None:
    """The job id a terminal task's record names (None where the task names none, or it cannot be read)."""
    name = JOB_ARGUMENTS.get(exercise)
    if name is None or kwargs.get(name) is None:
        return None
    from ..terminal import _job_id

    try:
        return _job_id(exercise, kwargs[name], "the job")[0]
    except CheckFailed:
        return None


def job_owner_problem(job_id: str, learners: Sequence[str]) -> str | None:
    """Why Slurm's accounting does not show ``job_id`` as one of ``learners``' jobs (None when it does); raises
    :class:`LookupError` where no Slurm cluster answers here."""
    from ...errors import LaunchError
    from ...launch.terminal import find_cluster, sacct_rows

    cluster, why = find_cluster()
    if cluster is None:
        raise LookupError(why)
    try:
        rows = [r for r in sacct_rows(job_id, cluster, ("JobID", "User", "State")) if r["JobID"] == str(job_id)]
    except LaunchError as err:
        raise LookupError(str(err)) from None
    if not rows:
        raise LookupError(f"sacct lists no job {job_id} here")
    user = rows[0]["User"]
    if user not in learners:
        return f"job {job_id} belongs to {user[:40]!r} in Slurm's accounting, not to this learner"
    return None


def _kept_file(value: Any) -> bool:
    """True when a recorded value is a file the record kept whole (rebuilt in the private folder on decode)."""
    return isinstance(value, dict) and "__path__" in value and ("text" in value or "base64" in value)


def _refusal(refused: Sequence[str]) -> str:
    """Why a fenced check was stopped, naming what it tried to open (escaped, shortened)."""
    return f"the check tried to read {refused[0][:120]!r}, which the grader never opens" if refused else ""


def _unencodable(values: Mapping[str, Any] | None) -> bool:
    """True when a recorded mapping says one of its values could not be kept exactly."""
    try:
        values = expand(values)
    except Unencodable:
        return True
    return any(isinstance(v, dict) and "__unencodable__" in v for v in values.values())


def regrade(result: Result, seed: str, functions: Mapping[str, Callable[..., Any]] | None = None,
            learners: Sequence[str] = (), forbidden: Sequence[Path] = (), learner_root: Path | None = None) -> Grade:
    """The instructor's verdict on one recorded result, as the learner with ``seed`` (named one of ``learners``);
    the check reads nothing under ``forbidden`` (the class folder). Whatever the record holds, the verdict is a
    grade: an error while judging it makes the cell "unreadable" with the reason. A run folder the record hashed
    is compared with its hash, only inside ``learner_root`` (the learner's folder)."""
    try:
        return _regrade(result, seed, check_functions() if functions is None else functions, learners, forbidden,
                        learner_root)
    except Exception as err:  # noqa: BLE001 - one hostile record is one cell, the class goes on
        return Grade(result.exercise, result.status, "not regraded", UNREADABLE,
                     f"unreadable: {type(err).__name__}: {str(err)[:120]}")


def _regrade(result: Result, seed: str, functions: Mapping[str, Callable[..., Any]], learners: Sequence[str],
             forbidden: Sequence[Path], learner_root: Path | None = None) -> Grade:
    recorded = "passed" if result.ever_passed else result.status
    if result.status == UNREADABLE:
        return Grade(result.exercise, recorded, "not regraded", UNREADABLE, f"unreadable: {result.message}")
    func = functions.get(result.exercise)
    claimed = result.ever_passed
    if result.status == "unanswered" and not claimed:
        return Grade(result.exercise, recorded, "not regraded", "unanswered")
    # The record must be the learner's own before anything else counts.
    if learners and result.learner and result.learner not in learners:
        return Grade(result.exercise, recorded, "not regraded", "disagrees",
                     f"recorded by {result.learner!r}, not by this learner")
    if not result.seed_digest or result.seed_digest != seed_digest(seed):
        why = "no seed recorded" if not result.seed_digest else "the seed is not the learner's"
        return Grade(result.exercise, recorded, "not regraded", "disagrees" if claimed else recorded, why)
    if claimed and result.status not in ("passed", "failed"):
        return Grade(result.exercise, recorded, "not regraded", "disagrees",
                     f"first passed, yet its status is {result.status!r}")
    if claimed and result.from_solutions:
        return Grade(result.exercise, recorded, "not regraded", "from solutions", "recorded running solutions/")
    if func is None or not regradable(func):
        why = NOT_REGRADABLE.get(result.exercise, "no check of this workbook judges it")
        if claimed and result.exercise in RUN_FOLDERS and learner_root is not None:
            return _run_folder_grade(result, recorded, learner_root, why)
        return Grade(result.exercise, recorded, "not regraded", recorded_cell(result) if claimed else recorded,
                     why if claimed else "")
    if claimed:
        answers, evidence = result.passed_answers, result.passed_evidence
        if answers is None or evidence is None:
            return Grade(result.exercise, recorded, "not regraded", "disagrees",
                         "claims a pass without the passing answers to regrade it")
        if not result.passed_exact:
            return Grade(result.exercise, recorded, "not regraded", "self-reported",
                         "an answer or input was not recorded exactly")
    else:
        answers, evidence = result.answers, result.evidence
    info = check_info(func)
    try:
        answers = expand(answers)
    except Unencodable:
        answers = {}
    if not any(answers.get(n) is not None for n in info.answer_names):  # type: ignore[union-attr]
        return Grade(result.exercise, recorded, "not regraded", "disagrees" if claimed else recorded,
                     "no answers recorded" if claimed else "")
    if _unencodable(answers) or _unencodable(evidence) or not result.answers_exact and not claimed:
        return Grade(result.exercise, recorded, "not regraded", "self-reported" if claimed else recorded,
                     "an answer or input was not recorded exactly" if claimed else "")
    judged = judge(func, answers, evidence, seed, forbidden)
    verdict, why = judged.verdict, judged.why
    if verdict == "not regraded":
        return Grade(result.exercise, recorded, verdict, "self-reported" if claimed else recorded,
                     why if claimed else "")
    if verdict == "not checked":
        return Grade(result.exercise, recorded, verdict, "not checked" if not claimed else "self-reported",
                     "cannot be looked up in Slurm here" if claimed else "")
    if claimed:
        if verdict == "passed" and result.status == "passed":
            return _passed_grade(result.exercise, recorded, judged, learners)
        if verdict == "passed":  # passed once, a later attempt failed: the pass is real, the status says failed
            return Grade(result.exercise, recorded, verdict, "disagrees",
                         "passed once, but the latest attempt failed")
        rebuilt_note = " on the data rebuilt from the learner's seed" if result.exercise in REBUILT else ""
        return Grade(result.exercise, recorded, verdict, "disagrees",
                     f"the recorded pass fails the instructor's check{rebuilt_note}")
    if result.status == "not checked":
        return Grade(result.exercise, recorded, verdict, "not checked" if verdict != "passed" else "disagrees",
                     "passes here, though recorded as not checked" if verdict == "passed" else "")
    return Grade(result.exercise, recorded, verdict, "failed" if verdict == "failed" else "disagrees",
                 "" if verdict == "failed" else "recorded as failed, passes the instructor's check")


def _run_folder_grade(result: Result, recorded: str, learner_root: Path, why: str) -> Grade:
    """A claimed pass on a run folder: ``own data`` when every folder it named is still the one hashed when the
    check passed (read as bytes, inside the learner's folder, never parsed), else self-reported and why."""
    def reported(reason: str) -> Grade:
        return Grade(result.exercise, recorded, "not regraded", "self-reported", f"{why}; {reason}")

    root = os.path.realpath(learner_root)
    for name in RUN_FOLDERS[result.exercise]:
        kept = result.run_folders.get(name) if isinstance(result.run_folders, Mapping) else None
        if not isinstance(kept, Mapping) or "sha256" not in kept:
            reason = kept.get("unhashed") if isinstance(kept, Mapping) and kept.get("unhashed") else "no hash"
            return reported(f"{name}: the run folder was not hashed when the check passed ({str(reason)[:80]})")
        folder = os.path.realpath(str(kept.get("path", "")))
        if not folder.startswith(root + os.sep):
            return reported(f"{name}: the run folder lies outside the learner's folder")
        try:
            now = folder_digest(Path(folder))
        except Unencodable as err:
            return reported(f"{name}: the run folder cannot be read now ({str(err)[:80]})")
        if now["sha256"] != kept["sha256"]:
            return reported(f"{name}: the run folder changed since the check passed")
    return Grade(result.exercise, recorded, "not regraded", "own data",
                 "own data (run folder): unchanged since the check passed, not rebuilt by the instructor")


def _passed_grade(exercise: str, recorded: str, judged: Rerun, learners: Sequence[str]) -> Grade:
    """The cell of a claimed pass that passed again: verified only where nothing in it is the learner's word."""
    if judged.pasted:
        return Grade(exercise, recorded, "passed", "not checked",
                     f"pasted terminal output ({', '.join(judged.pasted)}): nothing ties it to a job in Slurm's "
                     f"accounting")
    if judged.job_id is not None:
        try:
            problem = job_owner_problem(judged.job_id, learners)
        except LookupError as err:
            return Grade(exercise, recorded, "passed", "not checked",
                         f"job {judged.job_id} cannot be looked up in Slurm here ({str(err)[:100]})")
        if problem:
            return Grade(exercise, recorded, "passed", "disagrees", problem)
    if judged.own:
        return Grade(exercise, recorded, "passed", "own data",
                     f"own data ({', '.join(judged.own)}): consistent, not rebuilt by the instructor")
    return Grade(exercise, recorded, "passed", "verified")


def learner_seed_for(progress_folder: Path, results: Sequence[Result], learners: Sequence[str] = ()) -> str:
    """The seed a learner's notebook used: their ``progress/seed`` file, else their name (the first of
    ``learners``, or the name recorded with their results)."""
    text = read_text_safely(Path(progress_folder) / "seed", within=Path(progress_folder), limit=4096)
    if text and text.strip():
        return text.strip()
    names = [r.learner for r in results if r.learner and (not learners or r.learner in learners)]
    if names:
        return names[0]
    return learners[0] if learners else Path(progress_folder).parent.name


def owner_name(path: Path) -> str | None:
    """The login name owning ``path`` (who wrote a learner's progress folder), if it has one."""
    try:
        return pwd.getpwuid(path.stat().st_uid).pw_name
    except (KeyError, OSError):
        return None


def grade_class(folders: Mapping[str, Path], results: Mapping[str, Sequence[Result]],
                seeds: Mapping[str, str] | None = None, *, rerun_checks: bool = True,
                class_dir: Path | None = None,
                solutions: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, list[Grade]]:
    """Learner -> the instructor's grade of every recorded result (``seeds`` overrides a learner's seed).

    A learner is the folder's name or the owner of their progress folder; records naming anyone else disagree.
    Without ``rerun_checks`` the records are only vetted (seed, name, status), never verified. No check reads a
    file under ``class_dir`` (default: the folders holding the progress folders). ``solutions``
    (:func:`.solution_runs.solution_code` of the instructor's workbook) marks a claimed pass whose exercise cell in
    the learner's notebook is the solution's code "from solutions", whatever the record says. Nothing is imported
    from the current folder meanwhile (:func:`lumikit.importpath.no_cwd_imports`: a notebook in the class folder).
    """
    with no_cwd_imports():
        return _grade_class(folders, results, seeds, rerun_checks, class_dir, solutions)


def _grade_class(folders: Mapping[str, Path], results: Mapping[str, Sequence[Result]],
                 seeds: Mapping[str, str] | None, rerun_checks: bool, class_dir: Path | None,
                 solutions: Mapping[str, tuple[str, ...]] | None) -> dict[str, list[Grade]]:
    functions = check_functions() if rerun_checks else {}
    forbidden = [Path(class_dir)] if class_dir is not None else sorted({Path(f).parent for f in folders.values()})
    out = {}
    for learner, rows in results.items():
        try:
            names = [learner] + [n for n in (owner_name(folders[learner]),) if n and n != learner]
            seed = (seeds or {}).get(learner) or learner_seed_for(folders[learner], rows, names)
            if rerun_checks:
                root = Path(class_dir) / learner if class_dir is not None else None
                out[learner] = [regrade(r, seed, functions, names, forbidden, root) for r in rows]
            else:
                out[learner] = [_vetted(r) for r in rows]
            if solutions:
                within = Path(class_dir) / learner if class_dir is not None else Path(folders[learner]).parent
                used = set(solution_cells_used(solutions, Path(folders[learner]).parent, within))
                out[learner] = [_from_solutions(g) if g.exercise in used else g for g in out[learner]]
        except Exception as err:  # noqa: BLE001 - one learner's folder never stops the class
            why = f"unreadable: {type(err).__name__}: {str(err)[:120]}"
            out[learner] = [Grade(r.exercise, r.status, "not regraded", UNREADABLE, why) for r in rows]
    return out


def _from_solutions(grade: Grade) -> Grade:
    """A claimed pass whose exercise cell is the shipped solution's code: recorded from solutions, not verified."""
    if grade.recorded != "passed" or grade.cell in ("disagrees", UNREADABLE, "from solutions"):
        return grade
    return Grade(grade.exercise, grade.recorded, grade.regraded, "from solutions",
                 "the exercise cell in the learner's notebook is the shipped solution's code")


def _vetted(result: Result) -> Grade:
    """A record nobody re-ran: a claimed pass is self-reported."""
    cell = recorded_cell(result)
    return Grade(result.exercise, "passed" if result.ever_passed else result.status, "not regraded", cell,
                 "not regraded (add --grade)" if cell in ("self-reported", "from solutions") else "")


def class_flags(folders: Mapping[str, Path], results: Mapping[str, Sequence[Result]],
                roster: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Learner -> flags for the CSV's ``not verified`` column: a ``progress/seed`` that is not the roster's (it is
    ignored), a learner missing from the roster, and what two learners share (:func:`.copies.copy_flags`)."""
    from .copies import copy_flags

    seed_files: dict[str, str] = {}
    flags: dict[str, list[str]] = {}
    for learner, folder in folders.items():
        text = (read_text_safely(Path(folder) / "seed", within=Path(folder), limit=4096) or "").strip()
        seed_files[learner] = text
        if roster is None:
            continue
        if learner not in roster:
            flags.setdefault(learner, []).append("seed: not in the roster; graded with their own seed")
        elif text and text != roster[learner]:
            flags.setdefault(learner, []).append("seed: progress/seed is not the one the roster gives this learner "
                                                 "(ignored)")
    for learner, lines in copy_flags(results, seed_files).items():
        flags.setdefault(learner, []).extend(lines)
    return flags
