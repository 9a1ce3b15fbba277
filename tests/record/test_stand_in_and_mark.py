"""lumi-sim's generated rocm-smi follows the job's ranks; lumikit.mark writes markers into the run folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lumikit
from lumikit.record import read_markers
from lumikit.smi.calibration import envelopes
from lumikit.smi.parse import parse_smi
from lumikit.testing.fake_rocm_smi import JobStory, job_gcds

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 30: pass"
IDLE = "import time; time.sleep(30)"


@pytest.fixture
def ranks():
    """Two 'ranks' of job 777001 on this node: local rank 0 computes (a busy loop), local rank 1 sleeps."""
    procs = [subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "SLURM_JOB_ID": "777001",
                                                                  "SLURM_LOCALID": str(local)})
             for local, code in ((0, BUSY), (1, IDLE))]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_the_stand_in_shows_the_gcd_of_a_computing_rank_computing(ranks):
    story = JobStory(2, env={"SLURM_JOB_ID": "777001", "SLURMD_NODENAME": "nid005001"}, seed=3)
    story.states()  # the first look only notes each rank's CPU time so far
    time.sleep(3)
    snap = parse_smi(story.reading())  # the states since the first look, rendered as rocm-smi --json
    gcd0, gcd1 = snap.devices
    assert gcd0.gpu_busy_pct >= 95 and gcd0.sclk_mhz >= 1600 and gcd1.gpu_busy_pct == 0 and gcd1.sclk_mhz == 800
    assert gcd1.power_w is None  # the package power is on the even GCD, as an MI250X prints it
    # the package with one GCD computing draws what the real one-GCD-busy LUMI reading shows (~300 W)
    assert envelopes()["one-compute"].contains_power(gcd0.power_w), gcd0.power_w


def test_outside_a_job_the_stand_in_prints_an_idle_node():
    assert job_gcds({}) == 0 and job_gcds({"SLURM_JOB_GPUS": "0,1"}) == 2
    out = subprocess.run([sys.executable, "-m", "lumikit.testing.fake_rocm_smi"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, check=True).stdout
    assert len(parse_smi(out).devices) == 8


def test_mark_writes_one_line_per_call_and_does_nothing_outside_a_run(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("LUMIKIT_RUN_DIR", raising=False)
    assert lumikit.mark("outside") is None
    monkeypatch.setenv("LUMIKIT_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("SLURMD_NODENAME", "nid005002")
    first = lumikit.mark("warm-up")
    lumikit.mark("training")
    lines = [json.loads(line) for line in (tmp_path / "markers.jsonl").read_text().splitlines()]
    assert lines[0] == first == {"time": first["time"], "name": "warm-up", "rank": 3, "node": "nid005002"}
    assert [m["name"] for m in read_markers(tmp_path)] == ["warm-up", "training"]
    with (tmp_path / "markers.jsonl").open("a") as fh:
        fh.write('{"time": "soon", "name": 1}\nnot json\n')
    assert len(read_markers(tmp_path)) == 2  # damaged lines are skipped: a marker is a hint, not a reading
