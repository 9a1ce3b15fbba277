"""An Open OnDemand rehearsal on lumi-sim: the notebook's kernel runs *inside* a Slurm job started with --mem (as
OOD's Jupyter app starts it), and the launching cells of modules 01 and 03 submit their jobs from there; an
salloc shell does the same with `lumikit run`. Every job must end COMPLETED with the expected output.

Module 03 asks for a LUMI GCD's share of a node (7 cores, 60 GB), more than the shared lumi-sim's nodes have, so
the kernel job runs on a private LUMI-shaped lumi-sim (own folder, ports 7990+, no accounting; the same scripts
as `make slurm-up`). Slow (3 to 6 minutes on a busy 2-core machine): a cluster start, a kernel, and four jobs
that import torch.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts" / "slurm-sim"
DRIVER = Path(__file__).with_name("ood_kernel_driver.py")
PORT_BASE = 7990
MODULES = ("01_node_and_slurm.py", "03_first_training_job.py")


def without_slurm(env: dict[str, str]) -> dict[str, str]:
    """This test's own environment, minus any Slurm job it might itself run in."""
    return {k: v for k, v in env.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}


@pytest.fixture(scope="module")
def lumi_shaped(slurm_admin):
    """A private lumi-sim in LUMI-shaped mode; yields (sim_dir, env for Slurm commands); stopped after."""
    sim_dir = Path(tempfile.mkdtemp(prefix="lumikit-slurm-sim-ood-"))
    sim_dir.chmod(0o755)  # munged wants every folder above its socket searchable
    knobs = {**os.environ, "LUMIKIT_SLURM_SIM_DIR": str(sim_dir), "LUMIKIT_SLURM_PORT_BASE": str(PORT_BASE),
             "LUMIKIT_SLURM_PROFILE": "lumi", "LUMIKIT_SLURM_ACCOUNTING": "0", "LUMIKIT_SLURM_INSTALL": "0"}
    up = subprocess.run(["bash", str(SCRIPTS / "up.sh")], env=knobs, capture_output=True, text=True, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield sim_dir, {**without_slurm(os.environ), "SLURM_CONF": str(sim_dir / "etc" / "slurm.conf")}
    finally:
        subprocess.run(["bash", str(SCRIPTS / "down.sh"), "--purge"], env=knobs, capture_output=True, text=True,
                       timeout=300)
        shutil.rmtree(sim_dir, ignore_errors=True)


def job_state(env: dict[str, str], job_id: str) -> str:
    out = subprocess.run(["scontrol", "--local", "-o", "show", "job", job_id], env=env, capture_output=True,
                         text=True, timeout=30).stdout
    m = re.search(r"JobState=(\S+)", out)
    return m.group(1) if m else "UNKNOWN"


def test_modules_01_and_03_launch_from_a_kernel_inside_an_ood_like_job(lumi_shaped, tmp_path):
    sim_dir, env = lumi_shaped
    work = tmp_path / "home"
    work.mkdir()
    result = tmp_path / "result.json"
    job_env = {**env, "PYTHONPATH": str(REPO), "LUMIKIT_SITE": "lumi-sim", "LUMIKIT_SLURM_SIM_DIR": str(sim_dir),
               "MPLBACKEND": "Agg", "LUMIKIT_RUNS_DIR": str(work / "runs")}  # not the clone's runs/
    notebooks = [str(REPO / "notebooks" / m) for m in MODULES]
    # what Open OnDemand does: a batch job with a memory request whose one task runs the Jupyter kernel
    sub = subprocess.run(["sbatch", "--parsable", "--mem=8G", "-p", "small-g", "-n1", "-c2", "-t", "0:30:00",
                          "-J", "ood-jupyter", f"--output={tmp_path}/jupyter-%j.out", f"--chdir={work}",
                          "--wrap", " ".join([sys.executable, str(DRIVER), str(result), str(work), *notebooks])],
                         env=job_env, capture_output=True, text=True, timeout=60)
    assert sub.returncode == 0, sub.stderr
    job_id = sub.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 900
    while job_state(env, job_id) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        assert time.monotonic() < deadline, f"the Jupyter job {job_id} still runs after 900 s"
        time.sleep(5)
    log = "".join(p.read_text() for p in tmp_path.glob("jupyter-*.out"))
    assert job_state(env, job_id) == "COMPLETED", log
    report = json.loads(result.read_text())
    assert report["slurm_job_id"] == job_id and report["slurm_mem_per_node"] == "8192"  # the kernel's own job
    for name in (Path(n).name for n in notebooks):
        nb = report["notebooks"][name]
        assert nb["error"] is None, f"{name}: {nb['error']['cell']}\n{nb['error']['output']}"
    m01 = "".join(report["notebooks"][MODULES[0]]["outputs"])
    assert re.search(r"-> COMPLETED\nrank 0 of 2 on \S+\nrank 1 of 2 on \S+", m01), m01
    m03 = "".join(report["notebooks"][MODULES[1]]["outputs"])
    assert m03.count("-> COMPLETED") == 3 and "stopped by max_time" in m03, m03
    manifests = [json.loads(p.read_text()) for p in work.glob("runs/*/manifest.json")]
    assert len(manifests) == 4  # 01: one job; 03: first, capped, resumed
    assert {(m["backend"], m["state"], m["exit_code"]) for m in manifests} == {("slurm", "COMPLETED", 0)}


def test_lumikit_run_in_an_salloc_shell_with_mem_completes(slurm_cluster, tmp_path):
    """The issue's own case, on the shared lumi-sim: an salloc --mem allocation, then `lumikit run --wait`."""
    env = {**without_slurm(os.environ), "SLURM_CONF": str(slurm_cluster.conf), "PYTHONPATH": str(REPO)}
    lumikit = str(Path(sys.executable).with_name("lumikit"))
    cmd = ["salloc", "--mem=1G", "-p", "small-g", "-n1", "--gpus-per-node=1", "-t", "0:05:00",
           lumikit, "run", "--site", "lumi-sim", "--partition", "small-g", "--gpus-per-node", "1",
           "--ntasks-per-node", "1", "--wait", "--quiet", "--runs-dir", str(tmp_path), "--",
           "python3", "-c", "print(42)"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "COMPLETED"
    (folder,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").exists()]
    assert (folder / "rank0.out").read_text().strip() == "42"
