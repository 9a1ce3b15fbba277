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
SCHEDULE = "2,1,3,1"  # steps 1-6 are under the profiler; the trace is written at the end of step 6


def step_times(metrics: Path, skip: int) -> list[float]:
    """Step times (s) of rank 0's metrics file, the first ``skip`` steps left out."""
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [r["step_time_s"] for r in rows if r.get("step", 0) > skip and "step_time_s" in r]


def one_run(args: argparse.Namespace, folder: Path, profiled: bool) -> dict:
    """Run the workload once in a fresh process; the median of its steady step times, and its own spread."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LUMIKIT_PROFILE") and k != "LUMIKIT_MAX_STEPS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if profiled:
        env.update(LUMIKIT_PROFILE="torch", LUMIKIT_PROFILE_DIR=str(folder / "profile"),
                   LUMIKIT_PROFILE_SCHEDULE=SCHEDULE)
    argv = [sys.executable, "-m", f"lumikit.workloads.{args.model}", "--steps", str(args.steps), "--no-progress",
            "--out", str(folder), "--device", args.device, "--seed", "0"]
    if args.batch_size:
        argv += ["--batch-size", str(args.batch_size)]
    argv += [a for a in args.workload if a != "--"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    times = step_times(folder / "metrics.rank0.jsonl", args.skip)
    if len(times) < 5:
        raise SystemExit(f"only {len(times)} steps after the first {args.skip}: give more --steps")
    traces = sorted((folder / "profile").glob("*.pt.trace.json")) if profiled else []
    if profiled and not traces:
        raise SystemExit("the profiled run wrote no trace: the profiler did not switch on")
    q = statistics.quantiles(times, n=4)
    return {"profiled": profiled, "median_s": statistics.median(times), "q1_s": q[0], "q3_s": q[2],
            "steps": len(times), "trace_bytes": sum(t.stat().st_size for t in traces)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("resnet", "lm"), default="resnet")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--skip", type=int, default=20, help="steps left out at the start of every run (default 20)")
    p.add_argument("--pairs", type=int, default=4)
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
    pairs = []
    with tempfile.TemporaryDirectory(prefix="lumikit-overhead-") as tmp:
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            runs = {}
            for profiled in order:
                t0 = time.perf_counter()
                runs[profiled] = one_run(args, Path(tmp) / f"pair{i}-{'prof' if profiled else 'plain'}", profiled)
                runs[profiled]["wall_s"] = time.perf_counter() - t0
            overhead = runs[True]["median_s"] / runs[False]["median_s"] - 1
            pairs.append({"plain": runs[False], "profiled": runs[True], "overhead": overhead})
            print(f"pair {i + 1}: plain {1e3 * runs[False]['median_s']:.3f} ms/step "
                  f"(IQR {1e3 * runs[False]['q1_s']:.3f}-{1e3 * runs[False]['q3_s']:.3f}), profiled "
                  f"{1e3 * runs[True]['median_s']:.3f} ms/step (IQR {1e3 * runs[True]['q1_s']:.3f}-"
                  f"{1e3 * runs[True]['q3_s']:.3f}), overhead {100 * overhead:+.2f} %", flush=True)
    overheads = [pr["overhead"] for pr in pairs]
    plains = [pr["plain"]["median_s"] for pr in pairs]
    noise = (max(plains) - min(plains)) / statistics.median(plains)
    summary = {"model": args.model, "device": device, "host": platform.node(), "torch": torch.__version__,
               "steps": args.steps, "skip": args.skip, "workload_options": args.workload, "schedule": SCHEDULE, "pairs": pairs,
               "overhead_median": statistics.median(overheads), "overhead_min": min(overheads),
               "overhead_max": max(overheads), "plain_run_to_run_spread": noise, "target": 0.02,
               "time": time.time()}
    print(f"overhead outside the profiled steps: median {100 * summary['overhead_median']:+.2f} % "
          f"(min {100 * min(overheads):+.2f}, max {100 * max(overheads):+.2f} over {len(pairs)} pairs); "
          f"plain runs differ by {100 * noise:.2f} % among themselves; target within 2 %: "
          f"{'met' if abs(summary['overhead_median']) <= 0.02 else 'not met'}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
