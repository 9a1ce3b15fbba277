"""A private second lumi-sim (own folder and ports): the LUMI-shaped mode without accounting, node crashes
and recovery, and up/down idempotency, without disturbing the shared cluster others test against."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lumikit.site import load_site

pytestmark = pytest.mark.slurm


def test_mode_json_describes_the_lumi_shaped_mode(lumi_shaped_cluster):
    mode = lumi_shaped_cluster.mode
    assert (mode["accounting"], mode["profile"], mode["nodes"]) == (False, "lumi", ["nid005001", "nid005002"])
    assert (mode["cpus_per_node"], mode["gpus_per_node"]) == (128, 8)
    assert mode["slurm_conf"] == str(lumi_shaped_cluster.sim_dir / "etc" / "slurm.conf")
    assert lumi_shaped_cluster.slurm.node_states() == {"nid005001": "idle", "nid005002": "idle"}


def test_full_lumi_node_shape_with_cpu_masks_runs_on_standard_g(lumi_shaped_cluster, tmp_path: Path):
    sl = lumi_shaped_cluster.slurm
    masks = load_site("lumi-sim").node.masks()  # 0x00fe000000000000 (GCD 0: cores 49-55), ... in GCD order
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        "#SBATCH --partition=standard-g --nodes=2 --ntasks-per-node=8 --cpus-per-task=7\n"
        "#SBATCH --gpus-per-node=8 --mem-per-gpu=60G --time=0:10:00\n"
        f"srun --cpu-bind=mask_cpu:{','.join(masks)} "
        "bash -c 'echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_LOCALID $SLURM_CPUS_PER_TASK $SLURM_CPU_BIND_LIST'\n")
    job = sl.sbatch("-o", "out-%j.txt", str(script), cwd=tmp_path)
    assert sl.wait_job_done(job) == "COMPLETED"
    output = (tmp_path / f"out-{job}.txt").read_text()
    # task/none: the masks are accepted, not applied (srun says so once; the real profile applies them)
    assert "srun: cluster configuration lacks support for cpu binding" in output
    ranks = sorted((line.split() for line in output.splitlines() if line.startswith("nid")), key=lambda r: int(r[1]))
    assert len(ranks) == 16
    assert [r[0] for r in ranks] == ["nid005001"] * 8 + ["nid005002"] * 8
    assert [int(r[2]) for r in ranks] == list(range(8)) * 2
    assert {r[3] for r in ranks} == {"7"}
    assert {r[4] for r in ranks} == {",".join(m.removeprefix("0x") for m in masks)}


def test_without_accounting_any_account_is_accepted_and_sacct_c_answers(lumi_shaped_cluster, poll):
    sl = lumi_shaped_cluster.slurm
    job = sl.sbatch("--account", "project_999", "-o", "/dev/null", "--wrap", "true")
    assert sl.wait_job_done(job) == "COMPLETED"
    plain = sl("sacct", "-j", job)
    assert plain.returncode == 1 and "accounting storage is disabled" in plain.stderr
    def record() -> str | None:
        out = sl("sacct", "-c", "-n", "-P", "--format=JobID,Account,State")
        return next((line for line in out.stdout.splitlines() if line.startswith(f"{job}|")), None)
    assert poll(record, 15, f"job {job} in the job completion log") == f"{job}|project_999|COMPLETED"


def test_reservation_checks_the_account_name_even_without_accounting(lumi_shaped_cluster):
    sl = lumi_shaped_cluster.slurm
    inside = sl("srun", "-A", "project_465000000", "--reservation", "lumikit-course", "bash", "-c",
                "echo $SLURM_JOB_RESERVATION")
    assert (inside.returncode, inside.stdout.strip()) == (0, "lumikit-course")
    denied = sl("srun", "-A", "project_465000001", "--reservation", "lumikit-course", "true")
    assert denied.returncode == 1 and "Access denied to requested reservation" in denied.stderr


def test_a_killed_node_fails_its_job_and_up_brings_it_back(lumi_shaped_cluster, tmp_path: Path, poll):
    sim, sl = lumi_shaped_cluster, lumi_shaped_cluster.slurm
    job = sl.sbatch("-N2", "-o", str(tmp_path / "crash.out"), "--wrap", "srun sleep 300")
    poll(lambda: f"{job}.0" in sl("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split(), 30,
         f"job {job} to start its step")
    old_pid = sim.pids()["slurmd-nid005002.pid"]

    killed = sim.run("kill-node.sh", "nid005002")
    assert killed.returncode == 0, killed.stderr
    assert sl.wait_job_done(job, timeout=20) == "NODE_FAIL"
    assert sl.node_states()["nid005002"].startswith("down")

    up = sim.run("up.sh")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "restarting only those" in up.stdout
    assert sl.wait_idle() == {"nid005001": "idle", "nid005002": "idle"}
    assert sim.pids()["slurmd-nid005002.pid"] != old_pid
    both = sl("srun", "-N2", "bash", "-c", "echo $SLURMD_NODENAME")
    assert sorted(both.stdout.split()) == ["nid005001", "nid005002"]


def test_kill_node_rejects_an_unknown_node(lumi_shaped_cluster):
    out = lumi_shaped_cluster.run("kill-node.sh", "nid009999")
    assert out.returncode == 1
    assert "no node 'nid009999'" in out.stderr


def test_up_and_down_are_idempotent(lumi_shaped_cluster):
    sim = lumi_shaped_cluster
    before = sim.pids()
    again = sim.run("up.sh")
    assert again.returncode == 0 and "already up" in again.stdout
    assert sim.pids() == before

    for _ in range(2):
        down = sim.run("down.sh")
        assert down.returncode == 0, down.stderr
    assert not (sim.sim_dir / "mode.json").exists()
    assert sim.pids() == {}
    assert all(not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
               for pid in before.values())

    up = sim.run("up.sh")  # and back, fresh: the module's teardown stops it again
    assert up.returncode == 0, up.stdout + up.stderr
    assert sim.slurm.node_states() == {"nid005001": "idle", "nid005002": "idle"}


def test_down_on_a_folder_with_no_cluster_does_nothing(tmp_path: Path, scripts_dir: Path):
    import subprocess
    out = subprocess.run(["bash", str(scripts_dir / "down.sh")], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "LUMIKIT_SLURM_SIM_DIR": str(tmp_path / "none")})
    assert out.returncode == 0
    assert "nothing to stop" in out.stdout
    assert not (tmp_path / "none").exists()
