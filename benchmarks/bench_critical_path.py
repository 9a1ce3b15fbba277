"""The critical path on the 100 MB benchmark trace: lumikit's ``critical_path`` against HTA's
``critical_path_analysis`` on the same window (the profiler steps but the last), each in a fresh process.

Prints, per contender: the critical-path time alone (after the trace is loaded, in the process), the whole run, and
the peak proportional memory (PSS) of the process tree; lumikit's time includes one what-if. Saves
``benchmarks/results/critical_path.json`` and ``.md`` at full size.

    .venv/bin/python benchmarks/bench_critical_path.py            # 100 MB generated ROCm-style rank, with HTA
    .venv/bin/python benchmarks/bench_critical_path.py --quick    # 5 MB, with HTA (a smoke run)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_bench_common import REPO, generate_rocm_rank, run_measured  # noqa: E402

OURS = """
import json, sys, time
from lumikit.trace.loader import load_trace
from lumikit.trace.critical_path import critical_path
t0 = time.perf_counter()
trace = load_trace(sys.argv[1])
t1 = time.perf_counter()
r = critical_path(trace[0].columns, what_if=["Cijk=2"])
t2 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "critical_path_s": t2 - t1, "path_us": r["path_us"],
                  "bound_by": r["bound_by"], "events": r["events"], "edges": r["edges"]}))
"""

THEIRS = """
import json, sys, time
from lumikit.trace.hta_bridge import trace_analysis
t0 = time.perf_counter()
ta = trace_analysis(sys.argv[1], exact_timestamps=True)
t1 = time.perf_counter()
steps = int(sys.argv[2])
graph, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=(0, steps - 2))
df = graph.get_critical_path_breakdown()
total = float(df["duration"].sum())
t2 = time.perf_counter()
shares = (df.groupby("bound_by")["duration"].sum() / total).to_dict()
print(json.dumps({"load_s": t1 - t0, "critical_path_s": t2 - t1, "path_us": total, "ok": bool(ok),
                  "bound_by": {k: v for k, v in shares.items() if k}}))
"""


def run(code: str, *args: str) -> dict:
    """One fresh process: its own timings (printed as JSON), wall time and peak PSS from outside."""
    r = run_measured([sys.executable, "-c", code, *args])
    if r["returncode"] != 0:
        raise SystemExit(f"benchmark process failed:\n{r['stderr']}")
    return {**json.loads(r["stdout"].strip().splitlines()[-1]), "wall_s": r["seconds"],
            "peak_pss_mb": r["peak_pss_mb"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--quick", action="store_true", help="5 MB (a smoke run; nothing saved)")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    mb = 5.0 if args.quick else args.mb
    steps = 8
    with tempfile.TemporaryDirectory(prefix="lumikit-bench-cp-", dir="/tmp") as tmp:
        path, layers = generate_rocm_rank(Path(tmp), mb, steps=steps)
        size_mb = path.stat().st_size / 1e6
        print(f"generated {path.name}: {size_mb:.1f} MB, {steps} steps, {layers} layers per step")
        ours = run(OURS, str(path))
        theirs = None if args.no_hta else run(THEIRS, str(path), str(steps))
    report = {"file_mb": round(size_mb, 1), "steps": steps, "layers_per_step": layers,
              "machine": {"cpus_usable": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                          "load_average_1min": os.getloadavg()[0]},
              "lumikit": ours, "hta": theirs, "quick": args.quick}
    if theirs:
        report["time_vs_hta"] = round(ours["critical_path_s"] / theirs["critical_path_s"], 4)
        report["memory_vs_hta"] = round(ours["peak_pss_mb"] / theirs["peak_pss_mb"], 4)
    print(json.dumps(report, indent=2))
    for line in _table(report):
        print(line)
    if not args.quick:
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / "critical_path.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.results / "critical_path.md").write_text("\n".join(_markdown(report)) + "\n")
    return 0


def _table(r: dict) -> list[str]:
    lines = ["| contender | critical path (s) | load (s) | whole run (s) | peak PSS (MB) | path (ms) |",
             "|---|---|---|---|---|---|"]
    for name in ("lumikit", "hta"):
        x = r[name]
        if x:
            lines.append(f"| {name} | {x['critical_path_s']:.2f} | {x['load_s']:.2f} | {x['wall_s']:.2f} | "
                         f"{x['peak_pss_mb']:.0f} | {x['path_us'] / 1000:.1f} |")
    if r.get("time_vs_hta") is not None:
        lines.append("")
        lines.append(f"lumikit/HTA: critical-path time {r['time_vs_hta']:.3f}, peak memory {r['memory_vs_hta']:.3f}")
    return lines


def _markdown(r: dict) -> list[str]:
    m = r["machine"]
    head = ["# Critical path: lumikit against HTA on one generated trace", "",
            f"Generated ROCm-style trace (`benchmarks/trace_bench_common.py`), {r['file_mb']} MB, {r['steps']} steps, "
            f"{r['layers_per_step']} layers per step; the window is the first {r['steps'] - 1} steps (the last left "
            f"out). {m['cpus_usable']} usable CPUs, Python {m['python']}, 1-minute load average "
            f"{m['load_average_1min']:.1f} at the end (the machine is shared). Each contender runs in a fresh process; "
            "the critical-path time is measured inside it after the trace is loaded (lumikit's includes one "
            "what-if), the peak PSS from outside over the whole run.", ""]
    shares = ["", "Shares of the path (generated trace: GPU-bound by construction):", "",
              "| category | lumikit | HTA |", "|---|---|---|"]
    for k in r["lumikit"]["bound_by"]:
        theirs = r["hta"]["bound_by"].get(k, 0.0) if r["hta"] else float("nan")
        shares.append(f"| {k} | {100 * r['lumikit']['bound_by'][k]:.2f} % | {100 * theirs:.2f} % |")
    return head + _table(r) + shares


if __name__ == "__main__":
    sys.exit(main())
