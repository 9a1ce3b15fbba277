"""The controller-RPC benchmark runs from the checkout (a short version: 6 s of wait, 6 s of watch). About
half a minute: it starts and stops its own private lumi-sim."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]


def test_the_benchmark_counts_both_phases(slurm_admin, tmp_path):  # it starts a private lumi-sim
    out = tmp_path / "rpc.json"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_slurm_rpc.py"), "--minutes", "0.1",
                           "--json", str(out)], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["wait"]["state"] == "COMPLETED"
    assert min(result["watch"]["samples_per_node"]) >= 2
    assert result["wait"]["by_type"]["REQUEST_SUBMIT_BATCH_JOB"] == 1
    assert result["watch"]["by_type"]["REQUEST_JOB_STEP_CREATE"] == 3  # the job's own step + one per node
    assert re.search(r"total user RPCs: \d+", proc.stdout)
