"""The profiler wrapper's cost outside the profiled steps: a course workload run with and without it, interleaved.

    python benchmarks/bench_profiler_overhead.py [--model resnet|lm] [--steps 120] [--pairs 4] [--json FILE]
        [-- WORKLOAD OPTIONS, e.g. --samples 50000 --workers 4]

Each pair runs the workload twice as a learner launches it (a fresh process each time): once plain, once with
``LUMIKIT_PROFILE=torch`` (lumikit.profiler's schedule ``wait,warmup,active,repeat``). The order alternates from pair
to pair (plain first, then profiled first) so a machine that warms up or slows down does not favour one side. Per
run: the median step time of the steps well after the profiled window (the first ``--skip`` steps of both runs are
left out: warm-up, the window itself and the trace being written). Per pair: profiled median / plain median - 1.
Printed: every pair, then the median overhead and its min-max over the pairs, beside the spread of two plain runs
(what counts as noise on this machine). Target (issue 32): within 2 % outside the profiled steps.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lumikit.metrics import metrics_path, read_metrics  # noqa: E402
SCHEDULE = "2,1,3,1"  # steps 1-6 are under the profiler; the trace is written at the end of step 6


def step_times(out_dir: Path, skip: int) -> list[float]:
    """Step times (s) of rank 0's metrics file, the first ``skip`` steps left out."""
    steps, _ = read_metrics(metrics_path(out_dir, 0))
    return [r["step_time_s"] for r in steps if r.get("step", 0) > skip and "step_time_s" in r]


#: What each variant sets: plain (no profiler), profiled (as the course profiles: Kineto's sync events asked for on
#: CUDA builds, CUPTI finalised after the window), profiled-nosync (without the sync events), profiled-keep-cupti
#: (CUPTI left set up after the window, as Kineto does unless TEARDOWN_CUPTI=1).
VARIANTS = {"plain": None, "profiled": {}, "profiled-nosync": {"LUMIKIT_PROFILE_SYNC_EVENTS": "0"},
            "profiled-keep-cupti": {"LUMIKIT_PROFILE_TEARDOWN": "0"}}


def one_run(args: argparse.Namespace, folder: Path, variant: str) -> dict:
    """Run the workload once in a fresh process; the median of its steady step times, and its own spread."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LUMIKIT_PROFILE") and k not in ("LUMIKIT_MAX_STEPS", "TEARDOWN_CUPTI")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    profiled = VARIANTS[variant] is not None
    if profiled:
        env.update(LUMIKIT_PROFILE="torch", LUMIKIT_PROFILE_DIR=str(folder / "profile"),
                   LUMIKIT_PROFILE_SCHEDULE=SCHEDULE, **VARIANTS[variant])
    argv = [sys.executable, "-m", f"lumikit.workloads.{args.model}", "--steps", str(args.steps), "--no-progress",
            "--out", str(folder), "--device", args.device, "--seed", "0"]
    if args.batch_size:
        argv += ["--batch-size", str(args.batch_size)]
    argv += [a for a in args.workload if a != "--"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    times = step_times(folder, args.skip)
    if len(times) < 5:
        raise SystemExit(f"only {len(times)} steps after the first {args.skip}: give more --steps")
    traces = sorted((folder / "profile").glob("*.pt.trace.json")) if profiled else []
    if profiled and not traces:
        raise SystemExit("the profiled run wrote no trace: the profiler did not switch on")
    q = statistics.quantiles(times, n=4)
    return {"variant": variant, "median_s": statistics.median(times), "q1_s": q[0], "q3_s": q[2],
            "steps": len(times), "trace_bytes": sum(t.stat().st_size for t in traces)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("resnet", "lm"), default="resnet")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--skip", type=int, default=20, help="steps left out at the start of every run (default 20)")
    p.add_argument("--pairs", type=int, default=4, help="rounds: each runs every variant once (default 4)")
    p.add_argument("--variants", default="plain,profiled",
                   help=f"comma-separated, from {', '.join(VARIANTS)} (default plain,profiled); plain is always run")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("workload", nargs=argparse.REMAINDER, help="after --: more options for the workload")
    args = p.parse_args(argv)
    import torch

    device = torch.cuda.get_device_name(0) if args.device != "cpu" and torch.cuda.is_available() else "CPU"
    print(f"profiler overhead: {args.model}, {args.steps} steps per run (first {args.skip} left out), "
          f"{args.pairs} interleaved pairs, schedule {SCHEDULE}, on {device} ({platform.node()})", flush=True)
    variants = ["plain"] + [v for v in args.variants.split(",") if v.strip() and v.strip() != "plain"]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: unknown {', '.join(unknown)}; use {', '.join(VARIANTS)}")
    rounds = []
    with tempfile.TemporaryDirectory(prefix="lumikit-overhead-") as tmp:
        for i in range(args.pairs):
            order = variants[i % len(variants):] + variants[:i % len(variants)]  # each variant first in turn
            runs = {}
            for variant in order:
                t0 = time.perf_counter()
                runs[variant] = one_run(args, Path(tmp) / f"round{i}-{variant}", variant)
                runs[variant]["wall_s"] = time.perf_counter() - t0
            base = runs["plain"]["median_s"]
            overheads = {v: runs[v]["median_s"] / base - 1 for v in variants if v != "plain"}
            rounds.append({"runs": runs, "overhead": overheads})
            print(f"round {i + 1}: " + "; ".join(
                f"{v} {1e3 * r['median_s']:.3f} ms/step (IQR {1e3 * r['q1_s']:.3f}-{1e3 * r['q3_s']:.3f})"
                for v, r in runs.items()) + "; overhead " + ", ".join(
                f"{v} {100 * o:+.2f} %" for v, o in overheads.items()), flush=True)
    plains = [r["runs"]["plain"]["median_s"] for r in rounds]
    noise = (max(plains) - min(plains)) / statistics.median(plains)
    summary = {"model": args.model, "device": device, "host": platform.node(), "torch": torch.__version__,
               "steps": args.steps, "skip": args.skip, "workload_options": args.workload, "schedule": SCHEDULE,
               "rounds": rounds, "plain_run_to_run_spread": noise, "target": 0.02, "time": time.time(),
               "overhead": {}}
    for v in variants[1:]:
        values = [r["overhead"][v] for r in rounds]
        summary["overhead"][v] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        print(f"{v}: overhead outside the profiled steps: median {100 * statistics.median(values):+.2f} % "
              f"(min {100 * min(values):+.2f}, max {100 * max(values):+.2f} over {len(values)} rounds); "
              f"target within 2 %: {'met' if abs(statistics.median(values)) <= 0.02 else 'not met'}", flush=True)
    print(f"plain runs differ by {100 * noise:.2f} % among themselves (what counts as noise here)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
