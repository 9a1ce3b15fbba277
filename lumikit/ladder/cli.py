"""``lumikit ladder``: launch the optimisation ladder as one job on one GCD (local processes on a laptop, Slurm on
LUMI and lumi-sim), or show the table of one that ran."""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ..errors import SpecError
from ..jobs.cli import warn
from ..jobs.spec import JobSpec, spec
from ..jobs.workload import gcd_resources
from ..site import load_site
from .rungs import DEFAULT_RUNGS, RUNGS, parse_rungs
from .table import ladder_table, read_ladder


def ladder_spec(args: argparse.Namespace) -> JobSpec:
    """The job: ``python -m lumikit.ladder.run ...`` on one GCD of the site's default partition, in the course
    container (the local backend runs it here, without one)."""
    parse_rungs(args.rungs)  # a wrong rung or count fails here, before anything is submitted
    for name, least in (("steps", 1), ("repeats", 1), ("profile_steps", 1), ("warmup", 0), ("workers", 0)):
        if getattr(args, name) < least:
            raise SpecError(f"--{name.replace('_', '-')}", f"must be at least {least}, got {getattr(args, name)}",
                            f"give {least} or more")
    site = load_site(args.site)
    command = [sys.executable, "-m", "lumikit.ladder.run", "--model", args.model, "--size", args.size,
               "--rungs", args.rungs or ",".join(DEFAULT_RUNGS), "--steps", str(args.steps), "--repeats",
               str(args.repeats), "--warmup", str(args.warmup), "--profile-steps", str(args.profile_steps),
               "--workers", str(args.workers), "--site", site.ref]  # its progress bar goes to the job's stderr
    if args.batch_size is not None:
        command += ["--batch-size", str(args.batch_size)]
    fields = {**gcd_resources(1, site=site), **({"partition": args.partition} if args.partition else {})}
    return spec(command, name="ladder", container=args.container, time=args.time, account=args.account, **fields)


def ladder_job(*options: str) -> JobSpec:
    """The job ``lumikit ladder OPTIONS`` would launch, for a notebook (``launch(ladder_job("--rungs",
    "fp32,bf16"))``): the same options, checked the same way."""
    parser = argparse.ArgumentParser(prog="lumikit")
    register(parser.add_subparsers())
    return ladder_spec(parser.parse_args(["ladder", *options]))


def _print_ladder(run: str | Path, as_json: bool) -> int:
    """Print a ladder that ran (its run folder or ladder.json): the table, or its JSON."""
    data = read_ladder(run)
    if as_json:
        from ..json_output import print_json
        print_json(data)
    else:
        print(ladder_table(data))
    return 0


def _ladder(args: argparse.Namespace) -> int:
    if args.show:
        return _print_ladder(args.show, args.json)
    from ..launch import launch
    from ..launch.cli import failure_report

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", UserWarning)
        run = launch(ladder_spec(args), site=args.site, backend=args.backend, runs_dir=args.runs_dir)
    for w in said:
        if issubclass(w.category, UserWarning):
            warn(str(w.message))
    print(run.path, flush=True)
    if not args.wait:
        print(f"when it has ended: lumikit ladder --show {run.path}")
        return 0
    state = run.wait(timeout=args.timeout, progress=not args.quiet)
    if state != "COMPLETED":
        print(failure_report(run), file=sys.stderr, flush=True)
        print(state)
        return 1
    return _print_ladder(run.path, args.json)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ladder", help="run the optimisation ladder (fp32, bf16, channels-last, fused, compile, tunableop) as one job",
        description="One job on one GCD (on a laptop: this CPU) runs the course workload rung by rung. Rungs are "
                    "cumulative, as on a ladder: each rung adds its knob to every rung before it (the bf16 rung "
                    "runs in bf16, the fused rung in bf16 with a fused optimizer, ...). Per rung: warm-up steps "
                    "(not timed; compiling happens there), several timed repeats, then a short profiler trace. "
                    "Writes RUN/ladder.json and prints the table: samples/s median and min-max, speed-up over the "
                    "first rung, MFU against the site's GCD peak for the rung's precision, peak memory, and where "
                    "each rung's trace is (for `lumikit trace`). A knob that cannot work on the machine says so in "
                    "one line and its rung runs without it. On a CPU every number says it was measured there.")
    p.add_argument("--site", help="site profile (default: detected; laptop runs it here, lumi/lumi-sim via Slurm)")
    p.add_argument("--model", choices=("lm", "resnet"), default="lm", help="the course workload (default lm)")
    p.add_argument("--size", default="tiny", help="the workload's model size (default tiny)")
    p.add_argument("--rungs", help=f"comma-separated, in order, from: {', '.join(RUNGS)} "
                                   f"(default {','.join(DEFAULT_RUNGS)})")
    p.add_argument("--steps", type=int, default=10, metavar="N", help="steps per timed repeat (default 10)")
    p.add_argument("--repeats", type=int, default=5, metavar="K", help="timed repeats per rung (default 5)")
    p.add_argument("--warmup", type=int, default=3, metavar="W", help="untimed steps per rung first (default 3)")
    p.add_argument("--profile-steps", type=int, default=3, metavar="P",
                   help="steps in each rung's trace (default 3; trace diff leaves the last one out)")
    p.add_argument("--batch-size", type=int, help="samples per step (default: the workload's)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes in every rung (default 0)")
    p.add_argument("-A", "--account", help="project to bill (LUMI)")
    p.add_argument("-t", "--time", default="0:30:00", help="the job's time limit (default 0:30:00)")
    p.add_argument("-p", "--partition", help="default: the site's GPU partition")
    p.add_argument("--container", default="pytorch", help="container of the site profile (default pytorch)")
    p.add_argument("--backend", help="default: the site's (laptop: local, LUMI: slurm)")
    p.add_argument("--runs-dir", help="where run folders go (default: $LUMIKIT_RUNS_DIR, else the clone's runs/)")
    p.add_argument("--wait", action="store_true", help="wait for the job, then print the table")
    p.add_argument("--timeout", type=float, help="with --wait: give up waiting after this many seconds")
    p.add_argument("--quiet", action="store_true", help="with --wait: no progress bar while waiting")
    p.add_argument("--show", metavar="RUN", help="print the table of a ladder that ran (its run folder or ladder.json)")
    p.add_argument("--json", action="store_true", help="print ladder.json instead of the table")
    p.set_defaults(func=_ladder)
