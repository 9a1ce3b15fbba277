"""Three secrets on lumi-sim: the job sees them; the run folder, ps and `scontrol show job` never do."""
from __future__ import annotations

import hashlib
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lumikit.jobs import spec
from lumikit.launch import launch

pytestmark = pytest.mark.slurm
PY = sys.executable
SECRETS = {"HF_TOKEN": "hf_s1m_s3cret_one", "WANDB_API_KEY": "wandb-s1m-s3cret-two",
           "COURSE_PASS_PHRASE": "s1m-s3cret-three"}


def test_three_secrets_reach_a_slurm_job_and_nothing_visible(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("LUMIKIT_SECRETS_DIR", str(tmp_path / "secrets"))
    code = ("import hashlib, os, time; print(*[hashlib.sha256(os.environ[k].encode()).hexdigest() for k in "
            f"{sorted(SECRETS)!r}], flush=True); time.sleep(4)")
    run = launch(spec([PY, "-c", code], partition="small-g", env=SECRETS, secrets=["COURSE_PASS_PHRASE"]),
                 site="lumi-sim", runs_dir=tmp_path / "runs")
    seen = []
    end = time.monotonic() + 120
    while not run.stdout().strip() and time.monotonic() < end:
        time.sleep(0.5)
    assert run.stdout().strip(), run.tail()
    seen.append(subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True).stdout)
    seen.append(subprocess.run(["scontrol", "show", "job", "-dd", str(run.job_id)], env=slurm_cluster.env,
                               capture_output=True, text=True).stdout)
    files = list((tmp_path / "secrets").iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    assert run.stdout().split() == [hashlib.sha256(SECRETS[k].encode()).hexdigest() for k in sorted(SECRETS)]
    assert "Command=" in seen[1] and str(run.path) in seen[1]  # scontrol did show the job
    everything = b"".join(p.read_bytes() for p in sorted(Path(run.path).rglob("*")) if p.is_file())
    for value in SECRETS.values():
        assert value.encode() not in everything
        assert all(value not in text for text in seen)
    assert not list((tmp_path / "secrets").iterdir())  # removed when the job ended


def test_a_secret_the_job_prints_in_two_writes_is_masked_in_every_rank_log(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("LUMIKIT_SECRETS_DIR", str(tmp_path / "secrets"))
    value = "plum7orchard"  # short and of no well-known token shape
    code = ("import os, sys, time\nv = os.environ['COURSE_PASS_PHRASE']\nfor s in (sys.stdout, sys.stderr):\n"
            "    for _ in range(2):\n        s.write('value=' + v[:5]); s.flush(); time.sleep(0.3)\n"
            "        s.write(v[5:] + ' end\\n'); s.flush()\n")
    run = launch(spec([PY, "-c", code], partition="small-g", ntasks_per_node=2, env={"COURSE_PASS_PHRASE": value},
                      secrets=["COURSE_PASS_PHRASE"]), site="lumi-sim", runs_dir=tmp_path / "runs")
    assert run.wait(timeout=180, progress=False) == "COMPLETED", run.tail()
    files = [p for p in sorted(Path(run.path).rglob("*")) if p.is_file()]
    assert [p.name for p in files if value.encode() in p.read_bytes()] == []
    for rank in (0, 1):
        assert (run.path / f"rank{rank}.out").read_text().count("value=*** end") == 2
        assert (run.path / f"rank{rank}.err").read_text().count("value=*** end") == 2
    assert value not in run.tail()
