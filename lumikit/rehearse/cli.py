"""``lumikit rehearse``: every module's real job on a site, and a report of what each module's text promised."""
from __future__ import annotations

import argparse
import sys

from . import DEFAULT_TIMEOUT_S, rehearse


def _rehearse(args: argparse.Namespace) -> int:
    modules = [m for m in (args.modules or "").split(",") if m.strip()] or None
    result = rehearse(args.site, modules, runs_dir=args.runs_dir, timeout=args.timeout, licence=args.licence,
                      say=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(result.folder / "report.json")
    else:
        print(result.markdown(), end="")
        print(f"report: {result.folder / 'report.md'} (and report.json); outputs for `lumikit reference add`: "
              f"{result.folder / 'bundle.json'}")
    return 0 if result.all_completed else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rehearse", help="submit every module's job on a site and report what each module promised",
                       description="A dress rehearsal for a course edition: submits the jobs the notebooks launch "
                                   "(lumikit.course_jobs), waits for all of them, and writes report.md and "
                                   "report.json in runs/rehearsal-SITE-TIME/ (exit 0 only when every job COMPLETED).")
    p.add_argument("--site", default=None, help="the site to rehearse on (lumi, lumi-sim; default: the detected one)")
    p.add_argument("--modules", help="comma-separated modules, e.g. 01,03,07 (default: every module with a job)")
    p.add_argument("--runs-dir", help="where the rehearsal folder goes (default: ./runs or $LUMIKIT_RUNS_DIR)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="seconds to follow each job before reporting it as still going (default: %(default)s)")
    p.add_argument("--licence", default="CC-BY-4.0", help="licence of the outputs, for the bundle's reference add lines")
    p.add_argument("--json", action="store_true", help="print only the path of report.json")
    p.set_defaults(func=_rehearse)
