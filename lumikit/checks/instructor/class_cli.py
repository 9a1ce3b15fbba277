"""``lumikit class DIR``: the live class view on the command line (the instructor's side; thin over
:mod:`lumikit.checks.instructor.classview`)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...errors import LumikitError
from ...json_output import print_json, to_json
from .classview import MIN_REFRESH_S, ClassReader, StuckRule, format_text

PRIVACY = ("Privacy: each learner's checks write one small JSON file per exercise in progress/ of their own clone "
           "(outcome, attempts, times of the last 10 calls, the kind of mistake the check named, the answers "
           "given; never the expected answer); nothing leaves the project folder and no server is involved. "
           "Whoever can read the learners' folders can read them: on LUMI the project's group (the files follow "
           "the learner's umask for reading, 0644 under `umask 002`, and are never group-writable). A learner opts out with LUMIKIT_PROGRESS=off (nothing is "
           "recorded; their row says 'no check run yet') or hides the records with `chmod -R go-rwx progress`. "
           "See docs/instructor-guide.md, 'The room, live'.")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``class`` sub-command."""
    view = subparsers.add_parser(
        "class", help="live class view: who is stuck on which exercise now, and the commonest mistakes",
        description="Read every learner's progress/ under DIR (one folder per learner, e.g. a LUMI project "
                    "folder) and show, per learner, what they passed, the exercise they are on, whether they are "
                    "stuck, and per exercise the commonest mistake of the last minutes. Reads only the folder "
                    "(serverless); with --watch, reads again every --interval seconds, parsing only the records "
                    "that changed.",
        epilog=PRIVACY)
    view.add_argument("class_dir", type=Path, metavar="DIR", help="the folder holding one folder per learner")
    mode = view.add_mutually_exclusive_group()
    mode.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    mode.add_argument("--once", action="store_true", help="show the class once and exit (the default)")
    view.add_argument("--json", action="store_true",
                      help="print JSON: learners with per-exercise status, the stuck learners with why, the common "
                           "mistakes per exercise (one line per refresh with --watch)")
    view.add_argument("--any-exercise", action="store_true",
                      help="show records of every exercise id found (a generated class, another edition), not only "
                           "this workbook's; records of other ids are otherwise counted per learner, never shown")
    view.add_argument("--interval", type=float, default=MIN_REFRESH_S, metavar="S",
                      help=f"seconds between refreshes with --watch (at least {MIN_REFRESH_S:g}, the default)")
    rule = StuckRule()
    view.add_argument("--failures", type=int, default=rule.failures, metavar="N",
                      help=f"stuck: N failed attempts on one exercise within --window (default {rule.failures})")
    view.add_argument("--window", type=float, default=rule.window_s / 60, metavar="MIN",
                      help=f"minutes counted for --failures and the common mistakes (default {rule.window_s / 60:g})")
    view.add_argument("--idle", type=float, default=rule.idle_s / 60, metavar="MIN",
                      help=f"stuck: no activity for MIN minutes after a failed attempt (default {rule.idle_s / 60:g})")
    view.add_argument("--session", type=float, default=rule.session_s / 60, metavar="MIN",
                      help=f"an idle failure older than MIN minutes is no longer 'stuck' (default "
                           f"{rule.session_s / 60:g})")
    view.add_argument("--now", default=None, metavar="TIME",
                      help="judge as of TIME (ISO 8601, e.g. 2026-03-02T10:30:00+00:00) instead of the clock: "
                           "to look back at a session")
    view.set_defaults(func=_class)


def _now(text: str | None) -> float | None:
    from datetime import datetime, timezone

    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise LumikitError(f"--now {text!r}: not an ISO 8601 time. Fix: write e.g. 2026-03-02T10:30:00+00:00") \
            from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _known_exercises() -> frozenset[str]:
    """This workbook's exercises (where the command runs in one), and those lumikit's checks declare."""
    from ..learner import workbook_root
    from ..progress import declared_exercises, workbook_exercises

    return frozenset(workbook_exercises(workbook_root())) | declared_exercises()


def _class(args: argparse.Namespace) -> int:
    rule = StuckRule(args.failures, args.window * 60, args.idle * 60, args.session * 60)
    reader = ClassReader(args.class_dir, rule, exercises=None if args.any_exercise else _known_exercises())
    now = _now(args.now)
    if not args.watch:
        state = reader.refresh(now)
        if args.json:
            print_json(state.to_dict())
        else:
            print(format_text(state))
        return 0
    interval = max(args.interval, MIN_REFRESH_S)
    try:
        while True:
            state = reader.refresh(now)
            if args.json:
                print(to_json(state.to_dict(), indent=None)[0], flush=True)
            else:
                print(f"\n{format_text(state)}\n(read {state.parsed} changed record(s) in {state.seconds:.2f} s; "
                      f"next in {interval:g} s, Ctrl-C stops)", flush=True)
            time.sleep(interval)
    except KeyboardInterrupt:
        print("", file=sys.stderr)
    return 0
