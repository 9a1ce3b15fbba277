"""``lumikit run|status|cancel|tail``: launch a job and follow it from a terminal."""
from __future__ import annotations

import argparse
import re
import sys
import threading
import warnings
from pathlib import Path

from ..errors import SlurmUnreachable
from ..jobs.cli import add_job_options, command_line_secrets, spec_from_args, warn
from ..text import printable
from . import BACKENDS, launch, open_run
from .backend import Run


class _Follower(threading.Thread):
    """Copies what rank 0 writes to stdout to this terminal while the job runs (``run --wait``)."""

    def __init__(self, path: Path, poll: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.path, self.poll, self.offset = path, poll, 0
        self.done = threading.Event()

    def copy(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return
        if chunk:
            self.offset += len(chunk)
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()

    def run(self) -> None:
        while not self.done.wait(self.poll):
            self.copy()

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.copy()  # what came after the last look


_SRUN_TASK_EXIT = re.compile(r"task (\d+): Exited with exit code \d+")


def failure_report(run: Run, lines: int = 10) -> str:
    """Why a run did not complete: its state, exit code and the failing rank's last stderr lines."""
    m = run.manifest
    rank = m.get("failed_rank")
    if not isinstance(rank, int):  # Slurm's backend: srun names the failed tasks in the batch output, first first
        said = "".join(p.read_text(errors="replace") for p in sorted(run.path.glob("slurm-*.out")))
        found = _SRUN_TASK_EXIT.search(said)
        shape = m.get("spec") or {}
        ranks = range(int(shape.get("nodes") or 1) * int(shape.get("ntasks_per_node") or 1))
        rank = int(found.group(1)) if found else next((r for r in ranks if run.stderr(r).strip()), 0)
    code = m.get("exit_code")
    if code is None:  # a lost node (NODE_FAIL) leaves no exit code: Slurm's reason says what happened
        out = [f"{run.path.name}: {m.get('state')}, no exit code" + (f": {m['reason']}" if m.get("reason") else "")]
    else:
        out = [f"{run.path.name}: {m.get('state')}, exit code {code} (rank {rank})"]
    if m.get("note"):
        out.append(f"note: {m['note']}")
    err = run.stderr(rank).splitlines()[-lines:]
    out.append(f"last lines of rank {rank}'s stderr:" if err else f"rank {rank} wrote nothing to stderr")
    out.extend("  " + line for line in err)
    if m.get("submit_error"):
        out.append(f"Slurm said: {m['submit_error']}")
    return "\n".join(out)


def _run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", UserWarning)
        run = launch(spec_from_args(args), site=args.site, backend=args.backend, runs_dir=args.runs_dir,
                     gpu_record=not args.no_gpu_record, gpu_record_interval=args.gpu_record_interval)
    for line in command_line_secrets(args):
        warn(line)
    for w in said:
        if issubclass(w.category, UserWarning):
            warn(str(w.message))
    print(run.path, flush=True)
    if not args.wait:
        return 0
    follower = _Follower(run.folder.rank_log(0, "out"))
    follower.start()
    try:
        state = run.wait(timeout=args.timeout, progress=False)
    finally:
        follower.stop()
    if state != "COMPLETED":
        sys.stdout.flush()
        print(failure_report(run), file=sys.stderr, flush=True)
    print(state)
    return 0 if state == "COMPLETED" else 1


def _status(args: argparse.Namespace) -> int:
    run = open_run(args.run)
    try:
        state = run.status()
    except SlurmUnreachable as exc:  # not "gone": say what was last known, and that Slurm is silent
        print(printable(f"{run.manifest.get('state', 'unknown')} (last known)  job {run.manifest.get('job_id')}  {exc}"))
        return 1
    m = run.manifest
    code = m.get("exit_code")
    # only Slurm has jobs: a local run's id is lumikit's own number, shown as such
    who = f"job {m.get('job_id')}" if m.get("backend") == "slurm" else f"{m.get('backend')} run {run.path.name}"
    print(printable(f"{state}  {who}  exit code {'-' if code is None else code}  ({m.get('backend')} on "
                    f"{m.get('site')})" + "".join(f"  {m[k]}" for k in ("reason", "note") if m.get(k))))
    return 0


def _cancel(args: argparse.Namespace) -> int:
    print(open_run(args.run).cancel())
    return 0


def _tail(args: argparse.Namespace) -> int:
    text = open_run(args.run).tail(args.lines)
    print(text or f"{args.run}: no output yet (the logs are empty)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="launch a job (Slurm, local processes or dry run) in a new run folder",
                       description="Prints the run folder; with --wait shows rank 0's output as it comes, then the "
                                   "final state last (exit 0 only for COMPLETED); a failed run also gets its exit "
                                   "code and the failing rank's last stderr lines.")
    add_job_options(p)
    p.add_argument("--backend", choices=sorted(BACKENDS), help="default: the site's (LUMI: slurm, laptop: local)")
    p.add_argument("--runs-dir", help="where run folders go (default: $LUMIKIT_RUNS_DIR, else the clone's runs/)")
    p.add_argument("--wait", action="store_true", help="follow the job until it ends, showing rank 0's output")
    p.add_argument("--timeout", type=float, help="with --wait: give up following after this many seconds")
    p.add_argument("--quiet", action="store_true", help="(kept for old scripts: --wait shows no progress bar)")
    p.add_argument("--no-gpu-record", action="store_true",
                   help="do not record the GPUs into RUN/gpu/<node>.jsonl (on by default for jobs with GPUs)")
    p.add_argument("--gpu-record-interval", type=float, default=2.0, metavar="SECONDS",
                   help="seconds between two GPU record samples (default 2; at least 0.5, the recorder's floor: "
                        "shorter ones are raised to it, with a note)")
    p.set_defaults(func=_run)
    for name, fn, text in (("status", _status, "state and exit code of a run"), ("cancel", _cancel, "cancel a run")):
        q = sub.add_parser(name, help=text)
        q.add_argument("run", help="the run folder")
        q.set_defaults(func=fn)
    q = sub.add_parser("tail", help="last lines of a run's logs (every rank's stdout and stderr)")
    q.add_argument("run")
    q.add_argument("-n", "--lines", type=int, default=20)
    q.set_defaults(func=_tail)
