"""``lumikit report RUN [--json]``: the report card of a run's GPU record (see :mod:`lumikit.record.card`)."""
from __future__ import annotations

import argparse

from ..json_output import print_json


def _report(args: argparse.Namespace) -> int:
    from .card import card_of_run

    card = card_of_run(args.run)
    if args.json:
        print_json(card.to_dict())
    else:
        print(card.text())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="the report card of a run's GPU record (per node and GCD)",
                       description="Over the job's own start and end (edges extrapolated and labelled; gaps, an "
                                   "early stop and a full disk flagged): per node and GCD samples, busy %, peak "
                                   "VRAM, clocks, computing seconds; per MI250X package power and energy (said when "
                                   "the package is shared with other jobs); totals per node and job, with LUMI's "
                                   "pm_counters and Slurm's ConsumedEnergy where they exist; findings; billed "
                                   "GPU-hours beside computing ones; energy per phase (lumikit.mark) or step. A "
                                   "run without a record says why and shows its recorder's log (exit 0).")
    p.add_argument("run", help="the run folder (printed by `lumikit run`)")
    p.add_argument("--json", action="store_true", help="the card as JSON")
    p.set_defaults(func=_report)
