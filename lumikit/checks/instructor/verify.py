"""The instructor verification: every solution passes its checks, every check fails on the exercise's stubs, and
every check rejects its known-wrong answers without showing the solution's answer in any failure message.

For each ``solutions/NN_name.py`` the solution is executed (every cell must run, every ``check`` cell must show a
passed line; after each check cell the check is called again with each of its declared wrong answers, at least
:data:`MIN_WRONG` of them, and each must fail with a message) and ``exercises/NN_name.py`` is executed with its stubs
(every ``exercise`` cell must raise NotImplementedError, every ``check`` cell must raise CheckFailed with its own
message: proof that the check can fail). Nothing is recorded as progress meanwhile. Notebooks run two at a time;
the result is a table per notebook and one per check, and the verification holds only if every row is ``ok``.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from tqdm.auto import tqdm

from ..conventions import CHECK_TAG, DEFAULT_BUDGET_S, DEFAULT_CELL_TIMEOUT_S, EXERCISE_TAG
from .generate import drift, planned_files, solution_files
from .leaks import KINDS, METHOD_KINDS, count_by_kind, search
from .notebook import CellResult, NotebookRun, run_notebook

#: Every check declares at least this many known-wrong answers, and verify tries them all.
MIN_WRONG = 2
#: The environment of the verification's kernels: checks record no progress there.
KERNEL_ENV = {"LUMIKIT_PROGRESS": "off"}


@dataclass(frozen=True)
class Problem:
    """Why a row fails: a short kind for the table and the detail an author acts on."""

    kind: str
    detail: str


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one check: the solution passes, the stub fails, and each known-wrong answer fails."""

    exercise: str
    solution: str  # "passes" or what happened instead
    stub: str  # "fails" or what happened instead
    wrong_tried: int
    wrong_rejected: int
    messages_checked: int = 0
    leaks: int = 0
    #: The leaks by kind ("value", "words", "identifier", "key", "letter", "other exercise"): (kind, count) pairs.
    leak_kinds: tuple[tuple[str, int], ...] = ()

    @property
    def ok(self) -> bool:
        return (self.solution == "passes" and self.stub == "fails" and self.wrong_tried >= MIN_WRONG
                and self.wrong_rejected == self.wrong_tried and self.leaks == 0)


@dataclass(frozen=True)
class PairReport:
    """The verdict on one solution/exercise pair."""

    name: str
    checks: int
    solution_passed: int
    exercise_failing: int
    seconds: float
    problems: tuple[Problem, ...]
    check_reports: tuple[CheckReport, ...] = ()
    #: What the verification did differently and why (the learner's answered exercise left alone).
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def wrong_tried(self) -> int:
        return sum(c.wrong_tried for c in self.check_reports)

    @property
    def wrong_rejected(self) -> int:
        return sum(c.wrong_rejected for c in self.check_reports)


def judge_solution(run: NotebookRun, *, budget_s: float = DEFAULT_BUDGET_S) -> tuple[int, list[Problem]]:
    """How many check cells passed visibly in a solution run, and what is wrong with it."""
    problems = _common_problems(run, budget_s)
    checks = run.tagged(CHECK_TAG)
    if not checks:
        problems.append(Problem("no check cells", f"{run.path}: no cell is tagged `check`. Fix: follow each "
                                                  f"exercise with a cell `# %% tags=[\"check\"]` calling its check"))
    passed = 0
    for cell in run.cells:
        where = f"{run.path}, cell {cell.number} (`{cell.first_line}`)"
        if cell.status == "error" and CHECK_TAG in cell.tags:
            problems.append(Problem("solution check fails", f"{where}: {cell.ename}: {cell.evalue}"))
        elif cell.status == "error":
            problems.append(Problem("solution cell errors", f"{where}: {cell.ename}: {cell.evalue}"))
        elif CHECK_TAG in cell.tags and cell.status == "ok":
            if cell.passes:
                passed += 1
            else:
                problems.append(Problem("check shows no pass", f"{where}: ran but showed no ✓ line. Fix: end "
                                                               f"the cell with the check call, whose value is shown"))
        if CHECK_TAG in cell.tags and cell.probe is not None:
            problems += _probe_problems(where, cell.probe)
            others = [c.probe for c in checks if c is not cell and c.probe]
            problems += [Problem("answer leaked", f"{where}: a message shows the answer of {other} ({form}): "
                                                  f"{message}. Fix: name the mistake, not another exercise's answer")
                         for message, other, form in cross_leaks(cell.probe, others)]
    return passed, problems


def _probe_problems(where: str, probe: dict) -> list[Problem]:
    """What is wrong with the known-wrong answers tried after one check cell."""
    if probe.get("problem"):
        return [Problem("wrong answers not tried", f"{where}: {probe['problem']}. Fix: declare the check with "
                                                   f"@check('NN.k', wrong(...), wrong(...))")]
    outcomes = probe.get("outcomes", [])
    problems = []
    if len(outcomes) < MIN_WRONG:
        problems.append(Problem("too few wrong answers", f"{where}: {len(outcomes)} known-wrong answer(s) declared, "
                                                         f"at least {MIN_WRONG} needed. Fix: add wrong(...) cases to "
                                                         f"its @check"))
    for o in outcomes:
        if o.get("outcome") != "rejected":
            problems.append(Problem(f"wrong answer {o.get('outcome')}",
                                    f"{where}: the wrong answer '{o.get('why')}' was {o.get('outcome')}: "
                                    f"{o.get('message')}"))
        if o.get("leaked"):
            problems.append(Problem("answer leaked", f"{where}: the message for the wrong answer '{o.get('why')}' "
                                                     f"shows the solution's answer ({', '.join(o['leaked'])}): "
                                                     f"{o.get('message')}. Fix: name the mistake, not the answer"))
    if probe.get("stub_leaked"):
        problems.append(Problem("answer leaked", f"{where}: the stub's message shows the solution's answer "
                                                 f"({', '.join(probe['stub_leaked'])}): {probe.get('stub_message')}. "
                                                 f"Fix: name the mistake, not the answer"))
    return problems


def _leak_counts(probe: dict) -> tuple[int, int]:
    """Failure messages searched for the solution's answer in one probe, and how many showed it."""
    outcomes = probe.get("outcomes", [])
    checked = sum(bool(o.get("message")) for o in outcomes) + bool(probe.get("stub_message"))
    return checked, sum(bool(o.get("leaked")) for o in outcomes) + bool(probe.get("stub_leaked"))


def check_reports(solution: NotebookRun, exercise: NotebookRun | None) -> list[CheckReport]:
    """One row per check cell: the solution's outcome, the stub's, the known-wrong answers tried/rejected, and
    the leaks by kind (the answer's own, and another exercise's answer shown in this one's messages)."""
    stubs = exercise.tagged(CHECK_TAG) if exercise else []
    rows = []
    cells = solution.tagged(CHECK_TAG)
    for index, cell in enumerate(cells):
        probe = cell.probe or {}
        outcomes = probe.get("outcomes", [])
        exercise_id = probe.get("exercise") or _exercise_of(cell) or f"check {index + 1}"
        stub = stubs[index] if index < len(stubs) else None
        checked, leaked = _leak_counts(probe)
        kinds = count_by_kind([f for o in outcomes for f in o.get("leaked", [])] + list(probe.get("stub_leaked", [])))
        cross = len(cross_leaks(probe, [c.probe or {} for c in cells if c is not cell]))
        kinds["other exercise"] = cross
        rows.append(CheckReport(exercise_id, _solution_verdict(cell), _stub_verdict(stub), len(outcomes),
                                sum(o.get("outcome") == "rejected" for o in outcomes), checked, leaked + cross,
                                tuple(kinds.items())))
    return rows


def cross_leaks(probe: dict, others: Sequence[dict]) -> list[tuple[str, str, str]]:
    """Another exercise's answer shown in this check's messages: (message, other exercise, form (kind)) triples.

    A form this exercise's own answer shares (the same GCD count in two exercises) is not counted here: the leak
    search of the exercise itself judges it. The wrong answers' own values echoed back are not searched."""
    own = {tuple(f) for f in probe.get("answer_forms", [])}
    messages = [o.get("searched") or o.get("message", "") for o in probe.get("outcomes", [])
                if o.get("outcome") == "rejected"]
    messages += [probe.get("stub_message", "")] if probe.get("stub_message") else []
    found = []
    for other in others:
        exercise = other.get("exercise", "")
        if not exercise or exercise == probe.get("exercise"):
            continue
        their = {tuple(f) for f in other.get("answer_forms", [])} - own
        # another exercise's number in words or its option letter is too common a word to count, and its number
        # (a measured time, a share) meets this message's numbers by chance, more or less often as the runs are
        # faster or slower: only its names and words count, so the verdict does not depend on the run
        # a short word (a rung, a phase: "bf16", "data") counts only quoted, as in a list (leaks.forms): bare, it is
        # a word another exercise's question uses, and which rung or phase is the answer can turn with the run
        their = {(form, kind) for form, kind in their if kind in ("identifier", "key") or
                 (kind == "value" and not _numeric(form) and (len(form) >= 8 or form[:1] in "'\""))}
        for message in messages:
            found += [(message, exercise, str(leak)) for leak in search(message, their)]
    return found


def _numeric(form: str) -> bool:
    """Is a printed form a number (``812.5``, ``1,024``, ``43 %``, ``[1, 2]``), not a name or a word?"""
    return re.fullmatch(r"[-+\d.,%\s\[\]()]+", form) is not None


def _exercise_of(cell: CellResult) -> str:
    text = cell.evalue or ""
    for prefix in ("Exercise ", "No answer yet for "):
        if text.startswith(prefix):
            return text[len(prefix):].split(":", 1)[0]
    return ""


def _solution_verdict(cell: CellResult) -> str:
    if cell.status == "ok" and cell.passes:
        return "passes"
    return f"{cell.status}: {cell.ename}" if cell.ename else ("no pass shown" if cell.status == "ok" else cell.status)


def _stub_verdict(cell: CellResult | None) -> str:
    if cell is None:
        return "missing"
    if cell.status == "error" and cell.ename == "CheckFailed" and (cell.evalue or "").strip():
        return "fails"
    return "passes (cannot fail)" if cell.status == "ok" else f"{cell.status}: {cell.ename}"


def judge_exercise(run: NotebookRun, *, budget_s: float = DEFAULT_BUDGET_S) -> tuple[int, list[Problem]]:
    """How many check cells failed with CheckFailed on the stubs, and what is wrong with the exercise."""
    problems = _common_problems(run, budget_s)
    failing = 0
    for cell in run.cells:
        where = f"{run.path}, cell {cell.number} (`{cell.first_line}`)"
        if EXERCISE_TAG in cell.tags and cell.ename != "NotImplementedError" and cell.status != "not run":
            found = f"{cell.ename}: {cell.evalue}" if cell.ename else "it ran without error"
            problems.append(Problem("stub does not raise", f"{where}: the stub should raise NotImplementedError; "
                                                           f"{found}. Fix: run `make exercises` (it rewrites exercises/: "
                                                           f"keep a copy of any answers in it first)"))
        if CHECK_TAG not in cell.tags or cell.status == "not run":
            continue
        if cell.status == "ok":
            problems.append(Problem("check cannot fail", f"{where}: passed with the stubs' None answers, so it "
                                                         f"cannot fail. Fix: pass the learner's answer to the check"))
        elif cell.ename == "CheckFailed" and (cell.evalue or "").strip():
            failing += 1
        else:
            problems.append(Problem("check crashes on None",
                                    f"{where}: raised {cell.ename}: {cell.evalue} instead of CheckFailed. Fix: "
                                    f"pass the answer to the check as it is, and have the check begin with "
                                    f"expect_answer(...) or an expect_* helper"))
    return failing, problems


def _common_problems(run: NotebookRun, budget_s: float) -> list[Problem]:
    problems = []
    if run.stopped:
        problems.append(Problem("stopped", f"{run.path}: stopped early: {run.stopped}"))
    if run.seconds > budget_s:
        problems.append(Problem("over time", f"{run.path}: took {run.seconds:.1f} s, over the {budget_s:g} s "
                                             f"budget. Fix: make its runs smaller "
                                             f"(or, on a loaded machine, pass a larger --budget)"))
    return problems


def answered_exercises(solutions_dir: Path, exercises_dir: Path) -> set[str]:
    """The exercise notebooks (by stem) that differ from what ``solutions_dir`` generates in their ``exercise``
    cells only: a learner's answers, which regenerating (``make exercises``) would overwrite."""
    import jupytext

    found = set()
    for item in planned_files(solutions_dir, exercises_dir):
        if item.path.suffix != ".py" or item.path.parent != Path(exercises_dir) or not item.path.is_file():
            continue
        text = item.path.read_text(encoding="utf-8", errors="replace")
        if text == item.text:
            continue
        try:
            mine, fresh = (jupytext.reads(t, fmt="py:percent").cells for t in (text, item.text))
        except Exception:  # noqa: BLE001 - an unreadable file is judged as out of date, not as answers
            continue
        if len(mine) != len(fresh):
            continue
        differing = [f for m, f in zip(mine, fresh) if m.source != f.source]
        if differing and all(EXERCISE_TAG in f.metadata.get("tags", []) for f in differing):
            found.add(item.path.stem)
    return found


def verify(solutions_dir: Path, exercises_dir: Path, *, only: Iterable[str] = (), workers: int = 2,
           cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S, budget_s: float = DEFAULT_BUDGET_S,
           progress: bool = True) -> list[PairReport]:
    """Run every selected solution and exercise notebook (``workers`` at a time) and judge each pair.

    An exercise holding a learner's answers (:func:`answered_exercises`) is never run nor rewritten: a fresh copy
    generated from the solution, in a temporary folder beside ``exercises_dir``, is verified in its place."""
    wanted, exercises_dir = tuple(only), Path(exercises_dir)
    sources = [p for p in solution_files(solutions_dir) if not wanted or p.name.startswith(wanted)]
    if not sources:
        return []
    stale = drift(solutions_dir, exercises_dir)
    answered = answered_exercises(solutions_dir, exercises_dir) & {p.stem for p in sources}
    fresh_dir = None
    if answered:
        fresh_dir = Path(tempfile.mkdtemp(prefix=".verify-exercises-", dir=exercises_dir.parent))
        for item in planned_files(solutions_dir, fresh_dir):
            if item.path.parent == fresh_dir:
                item.path.write_text(item.text, encoding="utf-8")
    targets = {p: (fresh_dir if p.stem in answered else exercises_dir) / p.name for p in sources}
    try:
        jobs = [p for source in sources for p in (source, targets[source]) if p.exists()]
        runs: dict[Path, NotebookRun] = {}
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
                tqdm(total=len(jobs), desc="verify", unit="notebook", disable=not progress) as bar:
            futures = {pool.submit(run_notebook, path, cell_timeout_s=cell_timeout_s, env=KERNEL_ENV,
                                   probe=path in sources): path for path in jobs}
            for future in as_completed(futures):
                runs[futures[future]] = future.result()
                bar.set_postfix_str(f"{futures[future].parent.name}/{futures[future].name}")
                bar.update()
    finally:
        if fresh_dir is not None:
            shutil.rmtree(fresh_dir, ignore_errors=True)
    reports = []
    for source in sources:
        mine = exercises_dir / source.name
        if source.stem in answered:
            note = (f"{mine} holds your answers: it was left as it is (not run, not regenerated), and a fresh copy "
                    f"generated from {source} was verified in its place")
            reports.append(_judge_pair(source, targets[source], runs, [], budget_s, notes=(note,)))
        else:
            reports.append(_judge_pair(source, mine, runs, stale, budget_s))
    return reports


def _judge_pair(source: Path, exercise_path: Path, runs: dict[Path, NotebookRun], stale: Sequence[str],
                budget_s: float, notes: tuple[str, ...] = ()) -> PairReport:
    solution = runs[source]
    passed, problems = judge_solution(solution, budget_s=budget_s)
    failing, seconds = 0, solution.seconds
    reports = check_reports(solution, runs.get(exercise_path))
    if exercise_path in runs:
        failing, exercise_problems = judge_exercise(runs[exercise_path], budget_s=budget_s)
        problems += exercise_problems
        seconds += runs[exercise_path].seconds
    else:
        problems.append(Problem("exercise missing", f"{exercise_path}: missing. Fix: run `make exercises`"))
    for line in stale:  # "path: what is wrong", from generate.drift
        if Path(line.split(": ", 1)[0]).stem == source.stem and exercise_path in runs:
            problems.append(Problem("out of date", f"{line}. Fix: run `make exercises` (it rewrites exercises/: keep "
                                                   f"a copy of any answers in it first)"))
    return PairReport(source.stem, len(solution.tagged(CHECK_TAG)), passed, failing, seconds, tuple(problems),
                      tuple(reports), notes)


def format_table(reports: Sequence[PairReport]) -> str:
    """The verdict as a plain-text table, one row per notebook, then the detail of every problem."""
    header = ("notebook", "checks", "pass in solution", "fail in exercise", "wrong rejected", "time (s)", "verdict")
    rows = [(r.name, str(r.checks), f"{r.solution_passed}/{r.checks}", f"{r.exercise_failing}/{r.checks}",
             f"{r.wrong_rejected}/{r.wrong_tried}", f"{r.seconds:.1f}",
             "ok" if r.ok else "FAIL: " + ", ".join(dict.fromkeys(p.kind for p in r.problems)))
            for r in reports]
    details = [f"- {r.name}: {p.detail}" for r in reports for p in r.problems]
    details += [f"- {r.name} (note): {n}" for r in reports for n in r.notes]
    return "\n".join(_columns(header, rows) + ([""] + details if details else []))


def format_check_table(reports: Sequence[PairReport]) -> str:
    """One row per check: the solution passes, the stub fails, the known-wrong answers rejected; then the totals."""
    header = ("exercise", "solution", "stub", "wrong answers rejected", "answer leaked", "verdict")
    checks = [c for r in reports for c in r.check_reports]
    rows = [(c.exercise, c.solution, c.stub, f"{c.wrong_rejected}/{c.wrong_tried}", f"{c.leaks}/{c.messages_checked}",
             "ok" if c.ok else "FAIL") for c in checks]
    tried = sum(c.wrong_tried for c in checks)
    rejected = sum(c.wrong_rejected for c in checks)
    searched = sum(c.messages_checked for c in checks)
    leaks = sum(c.leaks for c in checks)
    kinds = {kind: sum(dict(c.leak_kinds).get(kind, 0) for c in checks)
             for kind in (*KINDS, *METHOD_KINDS, "other exercise")}
    by_kind = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
    return "\n".join(_columns(header, rows) + [f"{len(checks)} checks; {rejected} of {tried} known-wrong answers "
                                                f"rejected; {searched} failure messages checked for leaked answers, "
                                                f"{leaks} leaked (by kind: {by_kind})"])


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def run(solutions_dir: Path, exercises_dir: Path, *, only: Iterable[str] = (), workers: int = 2,
        cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S, budget_s: float = DEFAULT_BUDGET_S) -> int:
    """Verify, print the table and the total time; exit status 0 only when every row is ok."""
    started = time.perf_counter()
    reports = verify(solutions_dir, exercises_dir, only=only, workers=workers, cell_timeout_s=cell_timeout_s,
                     budget_s=budget_s)
    if not reports:
        print(f"no solutions (NN_name.py) in {solutions_dir}" + (f" matching {', '.join(only)}" if only else "")
              + ": nothing to verify")
        return 0
    print(format_table(reports))
    print()
    print(format_check_table(reports))
    failed = sum(not r.ok for r in reports)
    total = time.perf_counter() - started
    notebook_time = sum(r.seconds for r in reports)
    print(f"\n{len(reports)} notebook pair(s), {failed} failing; notebooks ran {notebook_time:.1f} s in all, "
          f"{total:.1f} s wall time with {workers} worker(s)")
    return 1 if failed else 0
