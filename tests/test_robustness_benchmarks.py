"""The robustness benchmark scripts run from a checkout and save their tables (quick runs: the numbers belong to
``benchmarks/results``, never to a test)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def test_long_lines_benchmark_times_every_reader(tmp_path: Path) -> None:
    run = _run("bench_long_lines.py", "--mb", "0.05", "--repeat", "1", "--results", str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "long_lines_0.05mb.json").read_text())
    assert len(report["rows"]) == 4 * 6 and all(r["seconds"] > 0 for r in report["rows"])
    assert "slowest:" in run.stdout


def test_fuzz_benchmark_prints_counts_per_family(tmp_path: Path) -> None:
    run = _run("bench_fuzz.py", "--inputs", "8", "--results", str(tmp_path))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((tmp_path / "fuzz_partial.json").read_text())
    from lumikit.testing.fuzz import FAMILIES

    assert [f["family"] for f in report["families"]] == list(FAMILIES)
    assert {"smi", "trace", "logs", "rocprof", "counters", "flightrec", "rccltests", "manifest",
            "markers"} <= set(FAMILIES)
    assert all(f["inputs"] == 8 for f in report["families"])
    assert f"total: {8 * len(FAMILIES)} inputs" in run.stdout
