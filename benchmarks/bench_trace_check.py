"""What the trace check costs: the cheap checks every trace command runs (one line when they warn) against loading
the trace, and the whole ``trace check`` (which also reads the file again for operator shapes), on a generated
ROCm-style rank.

    .venv/bin/python benchmarks/bench_trace_check.py            # 100 MB
    .venv/bin/python benchmarks/bench_trace_check.py --mb 5     # a smoke run
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_bench_common import generate_rocm_rank  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generated rank (default 100)")
    args = parser.parse_args()
    from lumikit.trace.analyses import TraceAnalyzer
    from lumikit.trace.health import check_trace, warning_line
    from lumikit.trace.loader import load_trace

    with tempfile.TemporaryDirectory() as tmp:
        path, _ = generate_rocm_rank(Path(tmp), args.mb)
        t0 = time.perf_counter()
        trace = load_trace(path)
        t1 = time.perf_counter()
        analyzer = TraceAnalyzer(trace)
        analyzer.gpu_columns(0)  # what the command's own analysis builds anyway
        t2 = time.perf_counter()
        warning_line(analyzer, path)
        t3 = time.perf_counter()
        check_trace(trace)
        t4 = time.perf_counter()
        size = path.stat().st_size / 1e6
    print(f"{size:.0f} MB generated rank, {len(trace[0].columns):,} events")
    print(f"  load                      {t1 - t0:7.3f} s")
    print(f"  GPU table (the analyses') {t2 - t1:7.3f} s")
    print(f"  checks of every command   {t3 - t2:7.3f} s ({100 * (t3 - t2) / (t1 - t0):.1f} % of the load)")
    print(f"  whole `trace check`       {t4 - t3:7.3f} s (a new analyzer and a second read for shapes)")


if __name__ == "__main__":
    main()
