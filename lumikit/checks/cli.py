"""``lumikit verify``, ``lumikit exercises generate|check`` and ``lumikit progress``: the command-line edge of the
exercise machinery.

The generator and the verification import jupytext/nbformat/nbclient, which take seconds to import; they are imported
only when their sub-command runs, so that every other ``lumikit`` command starts fast.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .conventions import DEFAULT_BUDGET_S, DEFAULT_CELL_TIMEOUT_S, add_folder_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``verify`` and ``exercises`` sub-commands to the ``lumikit`` command."""
    check = subparsers.add_parser(
        "verify", help="run every solution (checks pass, known-wrong answers fail) and exercise (checks fail on "
                       "the stubs); print a table per notebook and per check",
        description="Run every solution notebook (all checks must pass, and each check's known-wrong answers, at "
                    "least two, must fail) and every exercise notebook with its stubs (every check must fail with "
                    "its own message); print a table per notebook and one per check. Exit 0 only if all hold.")
    add_folder_arguments(check)
    check.add_argument("--only", action="append", default=[], metavar="NN",
                       help="verify only notebooks whose name starts with NN (repeatable)")
    check.add_argument("--workers", type=int, default=2, help="notebooks run at the same time (default: 2)")
    check.add_argument("--cell-timeout", type=float, default=DEFAULT_CELL_TIMEOUT_S, metavar="S",
                       help=f"time limit of one cell in seconds (default: {DEFAULT_CELL_TIMEOUT_S:g})")
    check.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="S",
                       help=f"time limit of one notebook in seconds (default: {DEFAULT_BUDGET_S:g})")
    check.set_defaults(func=_verify)

    exercises = subparsers.add_parser("exercises", help="generate exercises/ from solutions/, or check for drift")
    actions = exercises.add_subparsers(dest="action", required=True, metavar="ACTION")
    make = actions.add_parser("generate", help="write exercises/*.py and the paired .ipynb files")
    add_folder_arguments(make)
    make.set_defaults(func=_generate, check=False)
    drift = actions.add_parser("check", help="write nothing; exit 1 naming the generated files that drift")
    add_folder_arguments(drift)
    drift.set_defaults(func=_generate, check=True)

    progress = subparsers.add_parser(
        "progress", help="summarise your recorded check results per module, or a class's as CSV",
        description="Summarise the check results recorded in your progress folder, per module. With --class DIR, "
                    "read every learner's folder under DIR (one sub-folder per learner, e.g. a LUMI project "
                    "directory) and write one CSV row per learner.")
    progress.add_argument("--dir", type=Path, default=None, metavar="DIR",
                          help="your progress folder (default: progress/ in this workbook, or "
                               "$LUMIKIT_PROGRESS_DIR)")
    progress.add_argument("--class", dest="class_dir", type=Path, default=None, metavar="DIR",
                          help="a class folder holding one folder per learner; writes a CSV")
    progress.add_argument("--csv", type=Path, default=None, metavar="FILE",
                          help="with --class: write the CSV to FILE instead of stdout")
    progress.add_argument("--grade", action="store_true",
                          help="with --class: re-run the checks on each learner's recorded answers, with references "
                               "computed here from the learner's seed (never stored in their folder)")
    progress.add_argument("--open-answers", type=Path, default=None, metavar="FILE",
                          help="with --class: write every learner's answers to the open questions to FILE "
                               "(Markdown)")
    progress.add_argument("--share-group", action="store_true",
                          help="with --class: let your group read the CSV and the open answers (0640); by default "
                               "only you can (0600), whatever your umask: they hold grades and answers")
    progress.add_argument("--seeds", type=Path, default=None, metavar="CSV",
                          help="with --grade: your roster, a CSV of learner,seed for seeds you handed out "
                               "($LUMIKIT_SEED); a progress/seed that differs is ignored and flagged")
    progress.add_argument("--course-key", default=None, metavar="KEY",
                          help="derive each learner's seed from their user name and this key, which only you hold "
                               "(or $LUMIKIT_COURSE_KEY); with --seeds-for, print the seeds to hand out")
    progress.add_argument("--seeds-for", nargs="+", default=None, metavar="NAME",
                          help="with --course-key: print learner,seed for these user names and exit")
    progress.add_argument("--references", type=Path, default=None, metavar="DIR",
                          help="the instructor's full workbook (with solutions/) whose exercise list and checks "
                               "grade the class (default: the workbook this runs in)")
    progress.set_defaults(func=_progress)

    hand = subparsers.add_parser(
        "handout", help="copy this workbook for learners, without solutions/ (a graded course)",
        description="Copy the workbook's tracked files to DEST without solutions/, docs/instructor-notes/ and tests/, "
                    "for learners of a graded course. Grade later from this full workbook with "
                    "`lumikit progress --class DIR --grade --references THIS_WORKBOOK`.")
    hand.add_argument("dest", type=Path, metavar="DEST", help="a new (or empty) folder for the learners' copy")
    hand.set_defaults(func=_handout)


def _read_seeds(path: Path) -> dict[str, str]:
    """Learner -> seed from a two-column CSV (``learner,seed``; a header line is skipped)."""
    import csv

    from ..errors import LumikitError

    from ..files import read_text

    try:  # a FIFO or /dev/zero given as the roster is refused at once (lumikit.files)
        rows = list(csv.reader(read_text(path, "a CSV of learner,seed", limit=16 << 20, errors="strict").splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise LumikitError(f"{path}: cannot read the seeds ({err}). Fix: give a CSV of learner,seed") from None
    seeds = {r[0].strip(): r[1].strip() for r in rows if len(r) >= 2 and r[0].strip() and r[1].strip()}
    seeds.pop("learner", None)
    if not seeds:
        raise LumikitError(f"{path}: no learner,seed rows. Fix: one line per learner, e.g. `ada,course-7f3a`")
    return seeds


def _handout(args: argparse.Namespace) -> int:
    from ..errors import LumikitError
    from .instructor.handout import handout
    from .learner import workbook_root

    root = workbook_root()
    if root is None:
        raise LumikitError("not inside a workbook checkout. Fix: run `lumikit handout DEST` in the full workbook")
    copied = handout(root, args.dest)
    print(f"wrote {args.dest}: {len(copied)} files, without solutions/, docs/instructor-notes/ and tests/. Grade "
          f"with `lumikit progress --class DIR --grade --references {root}`")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from .instructor.generate import run

    return run(args.solutions, args.exercises, check=args.check)


def _verify(args: argparse.Namespace) -> int:
    from .instructor.verify import run

    return run(args.solutions, args.exercises, only=args.only, workers=args.workers,
                      cell_timeout_s=args.cell_timeout, budget_s=args.budget)


#: The mode of the files grading writes (the class CSV, the open answers): only the instructor reads them, whatever
#: the umask (``umask 002`` would make them 0664 for the whole project); ``--share-group`` adds group read, never write.
GRADE_MODE, SHARED_GRADE_MODE = 0o600, 0o640


def _grade_mode(args: argparse.Namespace) -> int:
    return SHARED_GRADE_MODE if args.share_group else GRADE_MODE


def _progress(args: argparse.Namespace) -> int:
    import sys
    from dataclasses import replace

    from ..errors import LumikitError
    from ..files import write_atomic
    from . import progress
    from .learner import learner_name, workbook_root

    import os

    course_key = args.course_key or os.environ.get("LUMIKIT_COURSE_KEY") or None
    if args.seeds_for:
        from .learner import course_seed

        if not course_key:
            raise LumikitError("--seeds-for needs a course key. Fix: pass --course-key KEY (a secret you keep)")
        print("learner,seed")
        for name in args.seeds_for:
            print(f"{name},{course_seed(name, course_key)}")
        return 0
    root = workbook_root()
    if args.references is not None:
        from .instructor.handout import references_root

        root = references_root(args.references)
    elif args.grade and root is not None and not (root / "solutions").is_dir():
        raise LumikitError(f"{root} has no solutions/ (a learners' copy). Fix: grade from the full workbook, or pass "
                           f"--references FULL_WORKBOOK")
    exercises = progress.workbook_exercises(root)
    if args.class_dir is not None:
        from collections import Counter

        from .instructor.class_records import class_csv, learner_folders, learners_without_progress
        from .instructor.grading import best_cell, check_functions, class_flags, grade_class, regradable_count

        from ..text import printable

        problems: list[str] = []
        refused: dict[str, str] = {}
        folders = learner_folders(args.class_dir, problems, refused)
        # records of exercises neither this workbook nor lumikit's checks know are counted, never read or columns
        known = set(exercises) | set(check_functions()) | progress.declared_exercises()
        results, unknown = {}, {}
        for name, folder in folders.items():
            skipped: list[str] = []
            try:
                results[name] = progress.read_results(folder, within=args.class_dir / name, problems=problems,
                                                      known=known, unknown=skipped)
            except Exception as err:  # noqa: BLE001 - one learner's folder never stops the class
                problems.append(f"{folder}: unreadable ({type(err).__name__}: {str(err)[:120]})")
                results[name] = []
            unknown[name] = len(skipped)
        if not results:
            for line in problems:
                print(f"refused: {printable(line)}", file=sys.stderr)
            raise LumikitError(f"{args.class_dir}: no learner folder holds a progress/ folder. Fix: give the folder "
                               f"whose sub-folders are the learners' workbooks")
        not_started = learners_without_progress(args.class_dir, folders)
        seeds = _read_seeds(args.seeds) if args.seeds is not None else None
        if course_key:
            from .learner import course_seed

            seeds = {**{name: course_seed(name, course_key) for name in folders}, **(seeds or {})}
        solutions = None
        if args.grade and root is not None and (root / "solutions").is_dir():
            from .instructor.solution_runs import solution_code

            solutions = solution_code(root)
        grades = grade_class(folders, results, seeds, rerun_checks=args.grade, class_dir=args.class_dir,
                             solutions=solutions)
        try:
            flags = class_flags(folders, results, seeds)
        except Exception as err:  # noqa: BLE001 - the flags never stop the class's CSV
            problems.append(f"{args.class_dir}: copies not compared ({type(err).__name__}: {str(err)[:120]})")
            flags = {}
        for name in sorted({*not_started, *refused}):  # a row for every learner folder, saying why it is empty
            results[name] = []
            why = refused.get(name, "no check run yet (no progress/ folder)")
            flags = {**flags, name: [why, *flags.get(name, [])]}
        named = {name: [replace(r, learner=name) for r in rows] for name, rows in sorted(results.items())}
        text = class_csv(named, exercises, grades, flags, unknown)
        can, total = regradable_count(exercises)
        report = sys.stderr if args.csv is None else sys.stdout
        for line in problems:
            print(f"refused: {printable(line)}", file=report)
        if args.csv is None:
            print(text, end="")
        else:
            write_atomic(args.csv, text, mode=_grade_mode(args))
            print(f"wrote {args.csv}: {len(results)} learner(s), {len(exercises)} exercise(s)")
        if args.open_answers is not None:
            from .open_answers import export_markdown, of_learner

            gathered = {}
            for name, folder in folders.items():
                try:
                    gathered[name] = of_learner(folder, args.class_dir / name)
                except Exception as err:  # noqa: BLE001 - one learner's notebook never stops the export
                    print(f"refused: {printable(folder)}: open answers unreadable ({type(err).__name__})",
                          file=report)
            write_atomic(args.open_answers, export_markdown(gathered), mode=_grade_mode(args))
            print(f"wrote {args.open_answers}: open answers of {sum(1 for g in gathered.values() if g)} learner(s)",
                  file=report)
        print(f"{can} of {total} exercises can be regraded from a record"
              + ("" if args.grade else "; add --grade to regrade them (claimed passes are self-reported until then)"),
              file=report)
        functions = check_functions()
        best = Counter(best_cell(e, functions[e]) for e in exercises if e in functions)
        print("at best: " + ", ".join(f"{best[c]} {c}" for c in ("verified", "own data", "not checked",
                                                                 "self-reported")), file=report)
        return 0
    folder = args.dir or progress.progress_dir()
    if folder is None:
        raise LumikitError("recording is off (LUMIKIT_PROGRESS=off). Fix: unset it, or pass --dir DIR")
    problems = []
    results = progress.read_results(folder, problems=problems)
    print(progress.format_summary(progress.summary_table(results, exercises), learner_name(), folder, results))
    for line in problems:
        print(f"refused: {line}")
    if root is not None and args.dir is None and (root / "exercises").is_dir():
        from .open_answers import save

        path, count = save(root, folder)
        print(f"{count} open answer(s) from your exercise notebooks saved in {path}")
    return 0
