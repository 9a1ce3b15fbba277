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
from lumikit.testing import fake_rocm_smi
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


def test_the_stand_in_finds_the_jobs_ranks_on_this_node(ranks):
    time.sleep(0.5)  # both have started
    usage = fake_rocm_smi._rank_usage("777001", None)
    assert sorted(usage) == [0, 1] and all(rss > 0 for _, rss in usage.values())


def test_a_gcd_computes_while_its_rank_uses_the_cpu(monkeypatch):
    looks = iter([{0: (1.0, 0), 1: (0.5, 0)}, {0: (2.5, 32 * 2**30), 1: (0.5, 2**30)}])
    monkeypatch.setattr(fake_rocm_smi, "_rank_usage", lambda job, step: next(looks))
    story = JobStory(2, env={"SLURM_JOB_ID": "777001", "SLURMD_NODENAME": "nid005001"}, seed=3)
    story.states()  # the first look only notes each rank's CPU time so far
    story.last_at -= 1.0  # one second later: rank 0 used 1.5 CPU s, rank 1 none
    gcd0, gcd1 = parse_smi(story.reading()).devices  # rendered as rocm-smi --json
    assert gcd0.gpu_busy_pct >= 95 and gcd0.sclk_mhz >= 1600 and gcd1.gpu_busy_pct == 0 and gcd1.sclk_mhz == 800
    assert gcd1.power_w is None  # the package power is on the even GCD, as an MI250X prints it
    # the package with one GCD computing draws what the real one-GCD-busy LUMI reading shows (~300 W)
    assert envelopes()["one-compute"].contains_power(gcd0.power_w), gcd0.power_w
    assert gcd0.vram_pct == 50 and gcd1.vram_pct == 2  # the rank's resident memory as a share of 64 GiB


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


def test_hostile_side_files_are_skipped_not_read(tmp_path: Path):
    os.mkfifo(tmp_path / "markers.jsonl")  # a FIFO would block a plain read forever
    assert read_markers(tmp_path) == []
    (tmp_path / "markers.jsonl").unlink()
    (tmp_path / "markers.jsonl").write_text('{"time": NaN, "name": "x"}\n' + "[" * 100_000 + "\n"
                                            '{"time": 5, "name": "ok"}\n')
    assert read_markers(tmp_path) == [{"time": 5, "name": "ok"}]
