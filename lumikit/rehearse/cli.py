"""``lumikit rehearse``: every module's real job on a site, and a report of what each module promised."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import DEFAULT_TIMEOUT_S, collect, detach, rehearse


def _print_report(folder: Path, all_completed: bool, as_json: bool) -> int:
    if as_json:
        print(folder / "report.json")
    else:
        print((folder / "report.md").read_text(), end="")
        print(f"report: {folder / 'report.md'} (and report.json); outputs for `lumikit reference add`: "
              f"{folder / 'bundle.json'}")
    return 0 if all_completed else 1


def _rehearse(args: argparse.Namespace) -> int:
    modules = [m for m in (args.modules or "").split(",") if m.strip()] or None
    if args.collect:
        report = collect(args.collect)
        return _print_report(Path(args.collect), bool(report.get("all_completed")), args.json)
    if args.detach:
        folder = detach(args.site, modules, runs_dir=args.runs_dir, timeout=args.timeout, licence=args.licence)
        print(folder)
        print(f"the rehearsal runs as one batch job; collect its report later with `lumikit rehearse --collect "
              f"{folder}`", file=sys.stderr)
        return 0
    result = rehearse(args.site, modules, runs_dir=args.runs_dir, timeout=args.timeout, licence=args.licence,
                      say=lambda line: print(line, file=sys.stderr, flush=True), folder=args.into)
    return _print_report(result.folder, result.all_completed, args.json)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rehearse", help="submit every module's job on a site and report what each module promised",
                       description="A dress rehearsal for a course edition: submits the jobs the notebooks launch "
                                   "(lumikit.course_jobs), waits for all of them, and writes report.md and "
                                   "report.json in runs/rehearsal-SITE-TIME/ (exit 0 only when every job COMPLETED). "
                                   "With --detach the whole rehearsal runs as one batch job that outlives this "
                                   "shell or Jupyter session; --collect FOLDER prints its report afterwards.")
    p.add_argument("--site", default=None, help="the site to rehearse on (lumi, lumi-sim; default: the detected one)")
    p.add_argument("--modules", help="comma-separated modules, e.g. 01,03,07 (default: every module with a job)")
    p.add_argument("--runs-dir", help="where the rehearsal folder goes (default: ./runs or $LUMIKIT_RUNS_DIR)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="seconds to follow each job before reporting it as still going (default: %(default)s)")
    p.add_argument("--licence", default="CC-BY-4.0", help="licence of the outputs, for the bundle's reference add lines")
    p.add_argument("--json", action="store_true", help="print only the path of report.json")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--detach", action="store_true",
                     help="submit the rehearsal as one batch job (a driver on one core) and print its folder at once")
    how.add_argument("--collect", metavar="FOLDER",
                     help="print the report of a detached rehearsal (not done yet: exit 2, saying where it stands)")
    how.add_argument("--into", metavar="FOLDER", help=argparse.SUPPRESS)  # the driver job's own folder
    p.set_defaults(func=_rehearse)
