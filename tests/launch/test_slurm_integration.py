"""The Slurm backend against the real local lumi-sim cluster (`make slurm-up`): what learners will see on LUMI."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import attach_argv, render_salloc, spec
from lumikit.launch import RunFolder, SlurmBackend, launch

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def submit(tmp_path, command, **options):
    return launch(spec(command, **options), site="lumi-sim", runs_dir=tmp_path)


def final_loss(text: str) -> str:
    m = re.search(r"^FINAL loss=(\S+)$", text, re.MULTILINE)
    assert m, f"no FINAL line in:\n{text}"
    return m.group(1)


def test_a_job_that_succeeds_is_completed_with_its_output(slurm_cluster, tmp_path):
    run = submit(tmp_path, [PY, "-c", "print(42)"], partition="small-g", ntasks_per_node=1)
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    assert run.stdout().strip() == "42"
    m = run.manifest
    assert m["exit_code"] == 0 and m["job_id"].isdigit() and (run.path / "job.sbatch").is_file()


def test_exit_3_is_failed_with_the_code_and_the_tail(slurm_cluster, tmp_path):
    run = submit(tmp_path, [PY, "-c", "import sys; print('bad input', file=sys.stderr); sys.exit(3)"])
    with pytest.raises(LaunchError) as err:
        run.result(timeout=120, progress=False)
    assert "FAILED (exit code 3)" in str(err.value) and "bad input" in str(err.value)


def test_scancel_gives_cancelled(slurm_cluster, tmp_path):
    run = submit(tmp_path, ["sleep", "300"])
    for _ in range(60):
        if run.status() == "RUNNING":
            break
        time.sleep(1)
    run.cancel()
    assert run.wait(timeout=120, progress=False) == "CANCELLED"


def test_time_limit_gives_timeout(slurm_cluster, tmp_path):
    run = submit(tmp_path, ["sleep", "600"], time="0:00:05")
    assert run.wait(timeout=240, poll=2, progress=False) == "TIMEOUT"


def test_unknown_account_is_rejected_with_slurms_words(slurm_cluster, tmp_path):
    if not slurm_cluster.accounting:
        pytest.skip("accounting is off: Slurm checks no accounts")
    with pytest.raises(LaunchError, match=r"Slurm rejected the job: .*(account|Account)") as refused:
        submit(tmp_path, ["true"], account="project_999999999")
    assert "LUMIKIT_SLURM_USERS=root," in str(refused.value)  # and how a user without an account gets one


def test_unknown_partition_is_rejected_by_slurm_too(slurm_cluster, tmp_path):
    # lumikit's validator stops this first; bypass it to see that Slurm's own message reaches the learner
    backend = SlurmBackend("lumi-sim")
    folder = RunFolder.create("nopart", tmp_path)
    bad = spec(["true"], partition="small-g")
    backend.script = lambda s, f: "#!/bin/bash\n#SBATCH --partition=no-such-partition\ntrue\n"  # type: ignore
    with pytest.raises(LaunchError, match="Slurm rejected the job: .*(partition|Partition)"):
        backend.submit(bad, folder)
    assert folder.read()["state"] == "FAILED"


def test_two_nodes_two_tasks_ddp_and_the_same_loss_as_locally(slurm_cluster, tmp_path):
    job = spec([PY, "-m", "lumikit.workloads.ddp_check"], nodes=2, ntasks_per_node=2, partition="small-g")
    run = launch(job, site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=180, progress=False) == "COMPLETED", run.tail()
    losses = {final_loss(run.stdout(r)) for r in range(4)}
    assert len(losses) == 1
    hosts = {line.split(" on ")[1].split()[0] for r in range(4) for line in run.stdout(r).splitlines()
             if line.startswith("rank ")}
    assert hosts  # every rank says where it ran
    local = launch(job, site="laptop", backend="local", runs_dir=tmp_path)
    assert local.wait(timeout=180, progress=False) == "COMPLETED", local.tail()
    assert {final_loss(local.stdout(r)) for r in range(4)} == losses


def test_salloc_then_attach_runs_inside_the_job(slurm_cluster):
    backend = SlurmBackend("lumi-sim")
    argv = list(render_salloc(spec(["bash"], partition="small-g", time="0:05:00"), "lumi-sim").argv)
    proc = backend.run(argv[:1] + ["--no-shell"] + argv[1:], timeout=60)
    m = re.search(r"Granted job allocation (\d+)", proc.stderr)
    assert m, proc.stderr
    job_id = m.group(1)
    try:
        out = backend.run(attach_argv(job_id, ["printenv", "SLURM_JOB_ID"], pty=False), timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == job_id
    finally:
        backend.run(["scancel", job_id])


@pytest.mark.usefixtures("slurm_admin")
def test_killing_a_slurmd_is_reported_and_never_hangs(slurm_cluster, tmp_path):
    run = submit(tmp_path, ["sleep", "600"], nodes=2, ntasks_per_node=1)
    for _ in range(60):
        if run.status() == "RUNNING":
            break
        time.sleep(1)
    node = slurm_cluster.nodes[-1]
    subprocess.run(["bash", str(REPO / "scripts/slurm-sim/kill-node.sh"), node], check=True, timeout=60)
    try:
        state = run.wait(timeout=300, poll=3, progress=False)
        assert state in ("NODE_FAIL", "FAILED"), state
    finally:
        run.backend.run(["scancel", str(run.job_id)])
        subprocess.run(["bash", str(REPO / "scripts/slurm-sim/up.sh")], check=True, timeout=120,
                       capture_output=True)


def test_manifest_holds_the_billing_estimate_and_the_actual_from_sacct(slurm_cluster, tmp_path):
    run = submit(tmp_path, [PY, "-c", "import time; time.sleep(2)"], partition="small-g", gpus_per_node=1,
                 time="0:06:00")
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    m = run.manifest
    assert m["billing_estimate"]["gpu_hours"] == pytest.approx(0.5 * 0.1)  # 1 GCD x 0.5 x 6 min
    actual = m["billing_actual"]
    assert m["elapsed_s"] >= 1 and actual["hours"] == pytest.approx(m["elapsed_s"] / 3600)
    assert actual["gpu_hours"] == pytest.approx(0.5 * m["elapsed_s"] / 3600)


def test_status_of_a_run_whose_job_id_now_names_another_job_says_so(slurm_cluster, tmp_path, capsys):
    from lumikit.cli import main

    run = submit(tmp_path, [PY, "-c", "print(1)"], name="mine")
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    mine = run.job_id
    other = subprocess.run(["sbatch", "--parsable", "--job-name=someone-else", "-p", "small-g", "--output=/dev/null",
                            "--wrap", "sleep 120"], env=slurm_cluster.env, capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    other_id = other.stdout.strip().split(";")[0]
    try:
        # as after a rebuilt cluster: the run's recorded id now names another job, still running
        run.folder.update(state="RUNNING", job_id=other_id)
        with pytest.raises(LaunchError, match=f"job {other_id} is not .*'s any more.*'someone-else'.*'mine'"):
            run.status()
        assert main(["status", str(run.path)]) == 2
        assert "its last known state is RUNNING" in capsys.readouterr().err
        assert run.manifest["state"] == "RUNNING"  # the other job's state was not taken for this run's
    finally:
        subprocess.run(["scancel", other_id], env=slurm_cluster.env, capture_output=True, timeout=60)
    # the same id and name, submitted an hour from when the run submitted its job: another job too
    run.folder.update(job_id=mine, submitted_epoch=run.manifest["submitted_epoch"] - 3600)
    with pytest.raises(LaunchError, match=f"job {mine} is not .*'s any more.*'mine'"):
        run.status()
    run.folder.update(submitted_epoch=run.manifest["submitted_epoch"] + 3600)  # its own job again
    assert run.status() == "COMPLETED"
