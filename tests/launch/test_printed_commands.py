"""Printed commands work where they are pasted: `lumikit srun` text, run by bash from a plain shell on lumi-sim
(no allocation yet), trains the 2-node x 2-task gloo DDP check like the local backend does. Slow (about 2 min on a
busy 2-core machine): eight Python processes import torch, four under Slurm and four locally."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.launch.slurm import SlurmBackend, submission_env

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def accounted_state(name: str, timeout: float = 60) -> str:
    """The job's state in accounting once it is final: srun returns when the tasks end, and the database hears of
    the job's end a moment later (on a loaded machine, seconds later)."""
    deadline = time.monotonic() + timeout
    while True:
        acct = SlurmBackend("lumi-sim").run(["sacct", "-n", "-P", "-X", "--name", name, "-o", "JobID,State"])
        state = acct.stdout.strip().split("|")[-1].strip()
        if state not in ("", "PENDING", "RUNNING", "COMPLETING") or time.monotonic() > deadline:
            return state
        time.sleep(1)


def lumikit(*args: str) -> str:
    out = subprocess.run([PY, "-m", "lumikit", *args], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    return out.stdout


def plain_shell_env(conf: Path) -> dict[str, str]:
    """A login-node shell: no job of its own, the cluster's SLURM_CONF, the workbook on PYTHONPATH."""
    return {**submission_env(os.environ), "SLURM_CONF": str(conf), "PYTHONPATH": str(REPO)}


def test_the_printed_ddp_srun_runs_from_a_plain_shell_with_the_local_loss(slurm_cluster, tmp_path):
    name = f"pasted-{uuid.uuid4().hex[:8]}"
    options = ("--site", "lumi-sim", "-J", name, "-p", "small-g", "-N", "2", "--ntasks-per-node", "2", "--time",
               "0:05:00", "--", PY, "-m", "lumikit.workloads.ddp_check")
    text = lumikit("srun", *options)
    assert not text.startswith("export"), "the printed srun must not need an allocation's variables"
    assert json.loads(lumikit("srun", "--json", *options)) == shlex.split(text)  # --json carries the same
    proc = subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=240, cwd=tmp_path,
                          env=plain_shell_env(slurm_cluster.conf))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    losses = re.findall(r"^FINAL loss=(\S+)$", proc.stdout, re.MULTILINE)
    assert len(losses) == 4 and len(set(losses)) == 1, proc.stdout
    masters = set(re.findall(r"\(master (\S+):(\d+)\)", proc.stdout))
    assert len(masters) == 1, proc.stdout  # every rank found the same rendezvous, on the job's first node
    addr, port = masters.pop()
    assert addr in slurm_cluster.nodes and port != "20000"
    if slurm_cluster.accounting:
        assert accounted_state(name) == "COMPLETED"
    local = launch(spec([PY, "-m", "lumikit.workloads.ddp_check"], nodes=2, ntasks_per_node=2), site="laptop",
                   backend="local", runs_dir=tmp_path)
    assert local.wait(timeout=180, progress=False) == "COMPLETED", local.tail()
    assert {re.search(r"FINAL loss=(\S+)", local.stdout(r)).group(1) for r in range(4)} == set(losses)
