"""``lumikit run|status|cancel|tail``: launch a job and follow it from a terminal."""
from __future__ import annotations

import argparse

from ..jobs.cli import add_job_options, spec_from_args
from . import BACKENDS, launch, open_run


def _run(args: argparse.Namespace) -> int:
    run = launch(spec_from_args(args), site=args.site, backend=args.backend, runs_dir=args.runs_dir)
    print(run.path, flush=True)
    if not args.wait:
        return 0
    state = run.wait(timeout=args.timeout, progress=not args.quiet)
    if state != "COMPLETED":
        print(run.tail(10))
    print(state)
    return 0 if state == "COMPLETED" else 1


def _status(args: argparse.Namespace) -> int:
    run = open_run(args.run)
    state = run.status()
    m = run.manifest
    print(f"{state}  job {m.get('job_id')}  exit code {m.get('exit_code')}  ({m.get('backend')} on {m.get('site')})")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    open_run(args.run).cancel()
    print("cancel requested")
    return 0


def _tail(args: argparse.Namespace) -> int:
    print(open_run(args.run).tail(args.lines))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="launch a job (Slurm, local processes or dry run) in a new run folder",
                       description="Prints the run folder; with --wait follows the job and prints its final state "
                                   "last (exit 0 only for COMPLETED).")
    add_job_options(p)
    p.add_argument("--backend", choices=sorted(BACKENDS), help="default: the site's (LUMI: slurm, laptop: local)")
    p.add_argument("--runs-dir", help="where run folders go (default: ./runs or $LUMIKIT_RUNS_DIR)")
    p.add_argument("--wait", action="store_true", help="follow the job until it ends")
    p.add_argument("--timeout", type=float, help="with --wait: give up following after this many seconds")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_run)
    for name, fn, text in (("status", _status, "state of a run"), ("cancel", _cancel, "cancel a run")):
        q = sub.add_parser(name, help=text)
        q.add_argument("run", help="the run folder")
        q.set_defaults(func=fn)
    q = sub.add_parser("tail", help="last lines of a run's logs")
    q.add_argument("run")
    q.add_argument("-n", "--lines", type=int, default=20)
    q.set_defaults(func=_tail)
