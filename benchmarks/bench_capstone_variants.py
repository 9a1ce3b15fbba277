"""The capstone's variants on this machine: each variant's first run and its fix, as samples per second per warm step
(median and the middle half's range), with module 11's verdict (:func:`lumikit.checks.m11.judged`).

One process per run, as the capstone launches them (``OMP_NUM_THREADS=1``), without the profiler. Every number is
measured on this CPU (variants "d" and "e" run here whether or not :func:`lumikit.workloads.capstone.deal` would
deal them: where it would not, expect "within noise");
on a GCD the same variants behave differently (expected, not measured here).

    .venv/bin/python benchmarks/bench_capstone_variants.py [--steps 16] [--variants a,b,c,d,e]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.checks.m11 import judged, rates  # noqa: E402
from lumikit.measure import middle  # noqa: E402
from lumikit.workloads.capstone import VARIANTS, variant  # noqa: E402

#: Per variant: the option that removes its cause.
FIXES = {"a": ("--workers", "2"), "b": ("--log-every", "0"), "c": ("--batch-size", "16"),
         "d": ("--precision", "bf16"), "e": ("--cpus", "all")}


def _run(case: str, steps: int, *options: str) -> list[float]:
    out = tempfile.mkdtemp(prefix="lumikit-bench-capstone-")
    command = [sys.executable, "-m", "lumikit.workloads.capstone", "--model-size", "tiny", "--no-progress",
               "--steps", str(steps), "--case", case, "--out", out, *options]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          cwd=REPO, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return rates(out)


def _describe(values: list[float]) -> str:
    mid = middle(values, 0.5)
    return f"{statistics.median(values):7.1f} ({min(mid):.1f}-{max(mid):.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated (default: all)")
    args = parser.parse_args()
    print(f"{'variant':8} {'fix':16} {'before samples/s':>24} {'after samples/s':>24}  verdict")
    rows = []
    for kind in args.variants.split(","):
        case = next(f"{i:06d}" for i in range(1000) if variant(f"{i:06d}") == kind)
        before, after = _run(case, args.steps), _run(case, args.steps, *FIXES[kind])
        comparison = judged(before, after)
        verdict = "within noise" if comparison.within_noise else f"{comparison.ratio:.1f}x, beyond noise"
        print(f"{kind:8} {' '.join(FIXES[kind]):16} {_describe(before):>24} {_describe(after):>24}  {verdict}")
        rows.append({"variant": kind, "fix": " ".join(FIXES[kind]), "before": before, "after": after,
                     "ratio": comparison.ratio, "beyond_noise": not comparison.within_noise})
    print(json.dumps({"measured_on": "this CPU", "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
