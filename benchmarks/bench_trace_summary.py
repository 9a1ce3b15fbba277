"""One file close to the machine's limit: a fresh ``lumikit trace summary --json`` on a generated 100 MB one-rank
ROCm-style trace (8 steps, kernels on stream 0), against HTA building its ``TraceAnalysis`` plus the temporal
breakdown on the same file, with a breakdown of where lumikit's time goes (start-up, imports, read, decode,
tables, analyses). Saves ``benchmarks/results/trace_summary_one_file.json`` and ``.md``.

    .venv/bin/python benchmarks/bench_trace_summary.py            # 100 MB, 5 interleaved runs against HTA
    .venv/bin/python benchmarks/bench_trace_summary.py --quick    # 10 MB, one run, no HTA
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_bench_common import REPO, generate_rocm_rank, run_measured  # noqa: E402

HTA_CODE = ("import sys; from lumikit.trace.hta_bridge import trace_analysis; "
            "ta = trace_analysis(sys.argv[1]); ta.get_temporal_breakdown(visualize=False)")


def warm(path: Path) -> None:
    """Read the file once, so every run starts with it in the page cache (a VM may reclaim it in between)."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def breakdown(path: str) -> dict:
    """Phases of the summary in this (fresh) process, wall and CPU seconds each; decode runs in the loader's own
    worker processes as the command does."""
    marks = [("start", time.perf_counter(), time.process_time())]

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter(), time.process_time()))

    import lumikit.cli as cli

    cli.build_parser("trace")
    from lumikit.trace import loader  # noqa: F401
    mark("imports")
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass
    mark("read (page cache)")
    trace = loader.load_trace(path)
    mark("decode (loader, parallel) + table")
    from lumikit.trace.analyses import TraceAnalyzer

    analyzer = TraceAnalyzer(trace)
    rank = trace.rank_ids[0]
    analyzer.step_columns(rank)
    analyzer.gpu_columns(rank)
    analyzer.window_columns(rank)
    mark("tables (steps, GPU, window)")
    analyzer.summary()
    mark("analyses (summary)")
    phases = {name: {"wall_s": round(t - marks[i][1], 3), "cpu_s": round(c - marks[i][2], 3)}
              for i, (name, t, c) in enumerate(marks[1:])}
    return {"phases": phases, "pandas_imported": "pandas" in sys.modules}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=5, help="interleaved runs of each contender (default 5)")
    ap.add_argument("--quick", action="store_true", help="10 MB, one run, no HTA (a smoke run)")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--breakdown", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.breakdown:
        print(json.dumps(breakdown(args.breakdown)))
        return 0
    mb, repeat, hta = (10.0, 1, False) if args.quick else (args.mb, args.repeat, not args.no_hta)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="lumikit-bench-one-", dir="/tmp") as tmp:
        path, layers = generate_rocm_rank(Path(tmp), mb)
        size_mb = path.stat().st_size / 1e6
        print(f"generated {path.name}: {size_mb:.1f} MB, 8 steps, {layers} layers per step, kernels on stream 0")
        startup = [run_measured([py, "-c", "pass"], sample=False)["seconds"] for _ in range(3)]
        runs: dict[str, list[float]] = {"lumikit": [], "hta": []}
        ours = [py, "-m", "lumikit", "trace", "summary", "--json", str(path)]
        theirs = [py, "-c", HTA_CODE, str(path)]
        for _ in range(repeat):  # interleaved, timed without the memory sampler (it would take a core's share)
            warm(path)
            r = run_measured(ours, sample=False)
            assert r["returncode"] == 0, r["stderr"]
            runs["lumikit"].append(r["seconds"])
            if hta:
                warm(path)
                h = run_measured(theirs, sample=False)
                assert h["returncode"] == 0, h["stderr"]
                runs["hta"].append(h["seconds"])
        peaks = {"lumikit": run_measured(ours)["peak_pss_mb"]}
        if hta:
            peaks["hta"] = run_measured(theirs)["peak_pss_mb"]
        inside = json.loads(run_measured([py, __file__, "--breakdown", str(path)], sample=False)["stdout"])
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    report = {
        "machine": {"cpus_usable": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "load_average_1min": os.getloadavg()[0]},
        "file_mb": round(size_mb, 1), "layers_per_step": layers, "steps": 8, "runs": runs,
        "median_s": med, "peak_pss_mb": peaks, "interpreter_start_s": round(min(startup), 3),
        "breakdown": inside["phases"], "pandas_imported": inside["pandas_imported"],
        "speedup_vs_hta": round(med["hta"] / med["lumikit"], 1) if "hta" in med else None, "quick": args.quick,
    }
    print(json.dumps(report, indent=2))
    if not args.quick:
        out = REPO / "benchmarks" / "results"
        (out / "trace_summary_one_file.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / "trace_summary_one_file.md").write_text(_markdown(report))
    return 0


def _markdown(r: dict) -> str:
    lines = ["# One trace file: `lumikit trace summary --json` from a fresh process", "",
             f"Generated ROCm-style trace, {r['file_mb']} MB, {r['steps']} steps, {r['layers_per_step']} layers per "
             f"step; {r['machine']['cpus_usable']} usable CPUs, Python {r['machine']['python']}, 1-minute load "
             f"average {r['machine']['load_average_1min']:.1f} when it ended (the machine is shared).", "",
             "| contender | runs (s) | median (s) | peak PSS (MB) |", "|---|---|---|---|"]
    for k, v in r["runs"].items():
        if v:
            lines.append(f"| {k} | {', '.join(f'{x:.2f}' for x in v)} | {r['median_s'][k]:.2f} | "
                         f"{r['peak_pss_mb'].get(k, 0):.0f} |")
    vs_hta = f" Speed-up against HTA: {r['speedup_vs_hta']}x." if r["speedup_vs_hta"] else ""
    lines += ["", f"Interpreter start (`python -c pass`): {r['interpreter_start_s']} s.{vs_hta}", "",
              "| phase (one fresh process) | wall s | CPU s (this process; parser workers not counted) |",
              "|---|---|---|"]
    lines += [f"| {k} | {v['wall_s']} | {v['cpu_s']} |" for k, v in r["breakdown"].items()]
    lines += ["", f"pandas imported on the summary path: {'yes' if r['pandas_imported'] else 'no'}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
