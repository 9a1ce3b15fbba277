"""Runs tell the truth after faults, on a private lumi-sim with accounting (own folder and ports, see the
``faulty_cluster`` fixture): the controller restarted during a wait, the controller and the accounting database both
gone for a minute, a cancel of a run that ended and of a job id that Slurm now gives to another job, and
`make slurm-up` after a controller crash keeping the jobs it knew."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch import launch

pytestmark = pytest.mark.slurm
PY = sys.executable


def submit(tmp_path: Path, seconds: float, name: str = "fault"):
    return launch(spec([PY, "-c", f"import time; time.sleep({seconds}); print('done', flush=True)"], name=name,
                       partition="small-g", time="0:10:00"), site="lumi-sim", runs_dir=tmp_path)


def kill_daemon(sim, pid_file: str) -> None:
    """SIGKILL one daemon of the cluster by its PID file (a crash, not a clean stop)."""
    pid = int(next(p for p in (sim.sim_dir / "state").rglob(pid_file)).read_text().strip())
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def wait_saved(sim, since: float, timeout: float = 60) -> None:
    """Until slurmctld has saved its job state after ``since`` (a few seconds after a change)."""
    saved = sim.sim_dir / "state" / "ctld" / "job_state"
    deadline = time.monotonic() + timeout
    while not (saved.exists() and saved.stat().st_mtime > since + 0.5):
        assert time.monotonic() < deadline, f"slurmctld did not save its job state within {timeout} s"
        time.sleep(0.5)


def wait_running(run, sim, timeout: float = 60) -> None:
    """Until the job runs and the controller has saved that to its state files (it does so a few seconds after a
    change: a crash before then loses the job, on LUMI as here)."""
    deadline = time.monotonic() + timeout
    while run.status() != "RUNNING":
        assert time.monotonic() < deadline, f"{run.path.name} did not start within {timeout} s"
        time.sleep(0.5)
    wait_saved(sim, time.time(), timeout)


def test_a_controller_restart_during_a_wait_ends_with_the_true_state(faulty_cluster, tmp_path, capsys):
    run = submit(tmp_path, 15)
    wait_running(run, faulty_cluster)
    kill_daemon(faulty_cluster, "slurmctld.pid")
    restart = threading.Timer(5, lambda: faulty_cluster.run("up.sh"))
    restart.start()
    try:
        assert run.wait(timeout=300, poll=1, progress=False) == "COMPLETED"
    finally:
        restart.join()
    assert run.manifest["exit_code"] == 0 and run.stdout().strip() == "done"


def test_controller_and_accounting_gone_for_a_minute_is_waited_out(faulty_cluster, tmp_path, capsys):
    run = submit(tmp_path, 30)
    wait_running(run, faulty_cluster)
    kill_daemon(faulty_cluster, "slurmctld.pid")
    kill_daemon(faulty_cluster, "slurmdbd.pid")
    restart = threading.Timer(60, lambda: faulty_cluster.run("up.sh"))
    restart.start()
    try:
        state = run.wait(timeout=600, poll=1, progress=False)
    finally:
        restart.join()
    said = capsys.readouterr().err
    assert "Slurm is not answering" in said and "Slurm answers again" in said
    assert "knows no job" not in said
    # The true final state is Slurm's own: COMPLETED, or NODE_FAIL when the restarted controller found a node silent
    # for longer than SlurmdTimeout (60 s, as long as the outage) and marked it down. Never "gone", never invented.
    sacct = faulty_cluster.slurm("sacct", "-n", "-P", "-X", "-j", str(run.job_id), "-o", "State,ExitCode")
    slurm_state = sacct.stdout.split("|")[0].strip()
    m = run.manifest
    assert state == m["state"] == slurm_state and state in ("COMPLETED", "NODE_FAIL"), (state, sacct.stdout)
    assert m["exit_code"] == (0 if state == "COMPLETED" else None)


def test_slurm_up_after_a_controller_crash_keeps_the_jobs_it_knew(faulty_cluster, tmp_path):
    run = submit(tmp_path, 1)
    assert run.wait(timeout=120, poll=1, progress=False) == "COMPLETED"
    ended = datetime.fromisoformat(run.manifest["end_time"]).timestamp()  # Slurm's EndTime, whole seconds
    wait_saved(faulty_cluster, ended - 0.5)  # saved after the job ended: a crash before that loses it, on LUMI too
    kill_daemon(faulty_cluster, "slurmctld.pid")
    up = faulty_cluster.run("up.sh")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "jobs, state and accounting kept" in up.stdout + up.stderr
    sacct = faulty_cluster.slurm("sacct", "-n", "-P", "-X", "-j", str(run.job_id), "-o", "State")
    assert sacct.stdout.strip() == "COMPLETED", sacct.stdout + sacct.stderr
    assert int(faulty_cluster.slurm.sbatch("--wrap", "true", "-p", "small-g", "--output=/dev/null")) > int(run.job_id)


def test_cancel_of_a_run_that_ended_does_nothing_and_says_why(faulty_cluster, tmp_path):
    run = submit(tmp_path, 0)
    assert run.wait(timeout=120, poll=1, progress=False) == "COMPLETED"
    with pytest.raises(LaunchError, match="already ended .COMPLETED.: nothing to cancel"):
        run.cancel()
    run.folder.update(state="RUNNING")  # a stale manifest: Slurm is asked, and says the job ended
    with pytest.raises(LaunchError, match="already ended .COMPLETED."):
        run.cancel()
    assert run.manifest["state"] == "COMPLETED"


def test_cancel_of_a_job_id_slurm_gave_to_another_job_does_nothing(faulty_cluster, tmp_path):
    run = submit(tmp_path, 0, name="mine")
    assert run.wait(timeout=120, poll=1, progress=False) == "COMPLETED"
    other = faulty_cluster.slurm.sbatch("--job-name=someone-else", "-p", "small-g", "--output=/dev/null",
                                          "--wrap", "sleep 120")
    try:
        # as after a rebuilt cluster: the run's recorded id now names another, running job
        run.folder.update(state="RUNNING", job_id=other)
        with pytest.raises(LaunchError, match="not .*'s any more.*someone-else.*Nothing was cancelled"):
            run.cancel()
        assert faulty_cluster.slurm.job_field(other, "JobState") in ("PENDING", "RUNNING")
    finally:
        faulty_cluster.slurm("scancel", other)


def test_cancel_of_this_runs_job_cancels_it(faulty_cluster, tmp_path):
    run = submit(tmp_path, 120)
    wait_running(run, faulty_cluster)
    assert run.cancel().startswith(f"cancel requested for job {run.job_id}")
    assert run.wait(timeout=120, poll=1, progress=False) == "CANCELLED"
