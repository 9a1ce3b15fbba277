"""``lumikit advise PATH``: what to change first, what it is worth at most, and how to check it worked."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``lumikit advise`` to the main command."""
    p = subparsers.add_parser("advise", help="a ranked prescription for a run folder, trace(s) or rocpd database: "
                                             "what to change first, with evidence, gain bound, remedy and check")
    p.add_argument("path", help="a run folder, a trace file (.json/.json.gz), a folder of per-rank traces, or a "
                                "rocprofv3 database (.db)")
    p.add_argument("--rank", type=int, help="rank whose step to analyse (default: the lowest)")
    p.add_argument("--site", default="lumi", help="site profile for link speeds (default lumi)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--salvage", action="store_true", help="keep the complete events of a truncated trace")
    p.set_defaults(func=run_advise)


def run_advise(args: argparse.Namespace) -> int:
    from .prescribe import main_advise

    return main_advise(args)
