"""The instructor verification: every solution passes its checks, and every check fails on the exercise's stubs.

For each ``solutions/NN_name.py`` the solution is executed (every cell must run, every ``check`` cell must show a
passed line) and ``exercises/NN_name.py`` is executed with its stubs (every ``exercise`` cell must raise
NotImplementedError, every ``check`` cell must raise CheckFailed with its own message: proof that the check can fail).
Notebooks run two at a time; the result is a table, and the verification holds only if every row is ``ok``.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from tqdm.auto import tqdm

from .conventions import CHECK_TAG, DEFAULT_BUDGET_S, DEFAULT_CELL_TIMEOUT_S, EXERCISE_TAG
from .generate import drift, solution_files
from .notebook import NotebookRun, run_notebook


@dataclass(frozen=True)
class Problem:
    """Why a row fails: a short kind for the table and the detail an author acts on."""

    kind: str
    detail: str


@dataclass(frozen=True)
class PairReport:
    """The verdict on one solution/exercise pair."""

    name: str
    checks: int
    solution_passed: int
    exercise_failing: int
    seconds: float
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


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
    return passed, problems


def judge_exercise(run: NotebookRun, *, budget_s: float = DEFAULT_BUDGET_S) -> tuple[int, list[Problem]]:
    """How many check cells failed with CheckFailed on the stubs, and what is wrong with the exercise."""
    problems = _common_problems(run, budget_s)
    failing = 0
    for cell in run.cells:
        where = f"{run.path}, cell {cell.number} (`{cell.first_line}`)"
        if EXERCISE_TAG in cell.tags and cell.ename != "NotImplementedError" and cell.status != "not run":
            found = f"{cell.ename}: {cell.evalue}" if cell.ename else "it ran without error"
            problems.append(Problem("stub does not raise", f"{where}: the stub should raise NotImplementedError; "
                                                           f"{found}. Fix: run `make exercises`"))
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
                                             f"budget. Fix: make its runs smaller"))
    return problems


def verify(solutions_dir: Path, exercises_dir: Path, *, only: Iterable[str] = (), workers: int = 2,
           cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S, budget_s: float = DEFAULT_BUDGET_S,
           progress: bool = True) -> list[PairReport]:
    """Run every selected solution and exercise notebook (``workers`` at a time) and judge each pair."""
    wanted, exercises_dir = tuple(only), Path(exercises_dir)
    sources = [p for p in solution_files(solutions_dir) if not wanted or p.name.startswith(wanted)]
    if not sources:
        return []
    stale = drift(solutions_dir, exercises_dir)
    jobs = [p for source in sources for p in (source, exercises_dir / source.name) if p.exists()]
    runs: dict[Path, NotebookRun] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
            tqdm(total=len(jobs), desc="verify", unit="notebook", disable=not progress) as bar:
        futures = {pool.submit(run_notebook, path, cell_timeout_s=cell_timeout_s): path for path in jobs}
        for future in as_completed(futures):
            runs[futures[future]] = future.result()
            bar.set_postfix_str(f"{futures[future].parent.name}/{futures[future].name}")
            bar.update()
    return [_judge_pair(source, exercises_dir / source.name, runs, stale, budget_s) for source in sources]


def _judge_pair(source: Path, exercise_path: Path, runs: dict[Path, NotebookRun], stale: Sequence[str],
                budget_s: float) -> PairReport:
    solution = runs[source]
    passed, problems = judge_solution(solution, budget_s=budget_s)
    failing, seconds = 0, solution.seconds
    if exercise_path in runs:
        failing, exercise_problems = judge_exercise(runs[exercise_path], budget_s=budget_s)
        problems += exercise_problems
        seconds += runs[exercise_path].seconds
    else:
        problems.append(Problem("exercise missing", f"{exercise_path}: missing. Fix: run `make exercises`"))
    for line in stale:  # "path: what is wrong", from generate.drift
        if Path(line.split(": ", 1)[0]).stem == source.stem and exercise_path in runs:
            problems.append(Problem("out of date", f"{line}. Fix: run `make exercises`"))
    return PairReport(source.stem, len(solution.tagged(CHECK_TAG)), passed, failing, seconds, tuple(problems))


def format_table(reports: Sequence[PairReport]) -> str:
    """The verdict as a plain-text table, one row per notebook, then the detail of every problem."""
    header = ("notebook", "checks", "pass in solution", "fail in exercise", "time (s)", "verdict")
    rows = [(r.name, str(r.checks), f"{r.solution_passed}/{r.checks}", f"{r.exercise_failing}/{r.checks}",
             f"{r.seconds:.1f}", "ok" if r.ok else "FAIL: " + ", ".join(dict.fromkeys(p.kind for p in r.problems)))
            for r in reports]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    details = [f"- {r.name}: {p.detail}" for r in reports for p in r.problems]
    return "\n".join(lines + ([""] + details if details else []))


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
    failed = sum(not r.ok for r in reports)
    total = time.perf_counter() - started
    notebook_time = sum(r.seconds for r in reports)
    print(f"\n{len(reports)} notebook pair(s), {failed} failing; notebooks ran {notebook_time:.1f} s in all, "
          f"{total:.1f} s wall time with {workers} worker(s)")
    return 1 if failed else 0
