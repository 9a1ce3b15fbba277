"""Idle causes and the critical path on a rocprofv3 database: how long reading it into the trace columns, the
critical path (with one what-if) and the idle causes take, and the peak memory of the process. Prints the numbers;
asserts nothing.

The database is generated (:mod:`lumikit.testing.rocpd_calls`: one known step of 14 HIP calls with their stream
and event arguments and 7 kernels, repeated), so the path length is checked against its known value as well.

    .venv/bin/python benchmarks/bench_rocpd_critical_path.py                 # 500 steps (a quick look)
    .venv/bin/python benchmarks/bench_rocpd_critical_path.py --steps 20000   # 280 000 calls, 140 000 kernels
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.rocprof.rocpd_events import rocpd_trace  # noqa: E402
from lumikit.testing.rocpd_calls import STEP, STEP_PATH_US, write_calls_db  # noqa: E402
from lumikit.trace.analyses import TraceAnalyzer  # noqa: E402
from lumikit.trace.critical_path import critical_path  # noqa: E402
from lumikit.trace.idle import idle_report  # noqa: E402

#: Each step's path up to its last launch, which leads into the next step (see the three-step test).
CARRIED_US = STEP_PATH_US - 85.0 - 10.0 + 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500, help="steps in the generated database (default 500)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        db = write_calls_db(Path(tmp) / "bench_results.db", steps=args.steps)
        t1 = time.perf_counter()
        trace = rocpd_trace(db)
        t2 = time.perf_counter()
        path = critical_path(trace[0].columns, what_if=["gemm_first=2"])
        t3 = time.perf_counter()
        idle = idle_report(TraceAnalyzer(trace))
        t4 = time.perf_counter()
        size_mb = db.stat().st_size / 1e6
    (device,) = idle["ranks"]["0"].values()
    expected = (args.steps - 1) * CARRIED_US + STEP_PATH_US
    report = {
        "generated": "lumikit.testing.rocpd_calls", "steps": args.steps, "host_calls": args.steps * len(STEP),
        "kernels": args.steps * sum(1 for c in STEP if c.work), "db_mb": round(size_mb, 1),
        "write_s": round(t1 - t0, 2), "read_s": round(t2 - t1, 2), "critical_path_s": round(t3 - t2, 2),
        "idle_s": round(t4 - t3, 2), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "path_us": path["path_us"], "path_us_expected": expected, "sync_edges": path["sync_edges"],
        "inferred_edges": path["inferred_edges"], "idle_us": device["idle_us"],
        "python": platform.python_version(),
    }
    print(json.dumps(report, indent=2))
    print(f"{report['host_calls']} HIP calls, {report['kernels']} kernels ({report['db_mb']} MB, generated): read "
          f"{report['read_s']} s, critical path + 1 what-if {report['critical_path_s']} s, idle causes "
          f"{report['idle_s']} s, peak RSS {report['peak_rss_mb']} MB; path {path['path_us']:.1f} µs "
          f"(expected {expected:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
