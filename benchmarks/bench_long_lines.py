"""Long-line benchmark: every text reader on one 10 MB line of letters, of digits and of tqdm bars.

A job killed mid-epoch, or a tqdm bar without a terminal, leaves a log whose "line" is megabytes long; before
issue 15 `lumikit logs progress` took 7 s on 20,000 letters and never finished on 10 MB. Each reader runs through
the command line in this process (``lumikit ... --json``, best of ``--repeat``), so the time includes reading the
file and printing JSON. Target: under 1 s per case. Prints a table and saves
``benchmarks/results/long_lines.json`` and ``long_lines.md``; asserts nothing.

    .venv/bin/python benchmarks/bench_long_lines.py              # 10 MB lines
    .venv/bin/python benchmarks/bench_long_lines.py --mb 1       # quicker
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.testing.fuzz import run_cli  # noqa: E402

READERS = {
    "logs progress": ["logs", "progress"], "logs hip": ["logs", "hip"], "logs rccl": ["logs", "rccl"],
    "doctor": ["doctor"], "smi parse": ["smi", "parse"], "rocprof stats": ["rocprof", "stats"],
}
TARGET_S = 1.0


def _bar(n: int) -> str:
    bar = "#" * (n % 100 // 10)
    return f"Epoch 1: {n % 100:3d}%|{bar:<10}| {n % 100}/100 [00:{n % 60:02d}<00:30, 2.51it/s, loss=0.{n}]"


def lines(size: int) -> dict[str, str]:
    """One line of each kind, ``size`` characters long."""
    bars = []
    total = 0
    while total < size:
        bars.append(_bar(len(bars)))
        total += len(bars[-1]) + 1
    return {
        "letters": "a" * size,
        "digits": "7" * size,
        "tqdm bars (\\r-joined)": "\r".join(bars)[:size],
        "tqdm bars (no separator)": "".join(bars)[:size],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="line length in MB (default 10)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per case, the best is kept (default 2)")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    rows = []
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="lumikit-long-lines-") as tmp:
        run_cli(["logs", "progress", os.devnull])  # imports outside the timing
        for kind, text in lines(size).items():
            for reader, argv in READERS.items():
                name = "long_kernel_stats.csv" if reader == "rocprof stats" else "long.txt"
                path = Path(tmp) / name
                path.write_text(text + "\n")
                best, status = float("inf"), None
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    status, _, _ = run_cli([*argv, str(path), "--json"])
                    best = min(best, time.perf_counter() - start)
                rows.append({"line": kind, "reader": reader, "mb": args.mb, "seconds": round(best, 6),
                             "exit_status": status, "under_target": best < TARGET_S})
                print(f"{kind:<26} {reader:<14} {best:7.3f} s  exit {status}", flush=True)
    report = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "target_s": TARGET_S, "rows": rows}
    args.results.mkdir(parents=True, exist_ok=True)
    stem = "long_lines" if args.mb >= 10 else f"long_lines_{args.mb:g}mb"
    (args.results / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    md = [f"# One {args.mb:g} MB line through each text reader (best of {args.repeat}, `lumikit ... --json`)", "",
          f"{report['machine']}, Python {report['python']}, {report['cpus']} cores, load average "
          f"{report['load_average'][0]:.1f} (machine shared while measured). Target: under {TARGET_S:g} s.", "",
          "| line | reader | seconds | exit status |", "|---|---|---|---|"]
    md += [f"| {r['line']} | {r['reader']} | {r['seconds']:.3f} | {r['exit_status']} |" for r in rows]
    (args.results / f"{stem}.md").write_text("\n".join(md) + "\n")
    slowest = max(rows, key=lambda r: r["seconds"])
    print(f"slowest: {slowest['reader']} on {slowest['line']}: {slowest['seconds']:.3f} s "
          f"({sum(r['under_target'] for r in rows)}/{len(rows)} cases under {TARGET_S:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
