"""Watching a launched job on lumi-sim: one long-lived `srun --overlap` step per node for the whole watch,
through `lumikit smi watch RUN` and `GpuDashboard(source=watch_job(run)[0])` (lumi-sim's nodes stream a generated rocm-smi reading)."""
from __future__ import annotations

import contextlib
import time

import pytest

from lumikit.cli import main
from lumikit.errors import LaunchError, LumikitError
from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.smi.sampler import watch_job

pytestmark = pytest.mark.slurm


@pytest.fixture
def running(slurm_cluster, tmp_path):
    """A 2-node job that sleeps, RUNNING when the test starts; cancelled after."""
    run = launch(spec(["sleep", "120"], nodes=2, time="0:03:00", name="watched"), site="lumi-sim", runs_dir=tmp_path)
    try:
        for _ in range(60):
            if run.status() == "RUNNING":
                break
            time.sleep(1)
        assert run.status() == "RUNNING"
        yield run
    finally:
        with contextlib.suppress(LaunchError):  # it may have ended by itself already
            run.cancel()
        run.wait(timeout=120, progress=False)


def steps(run) -> list[str]:
    """The job's step ids as Slurm lists them (squeue -s while it runs)."""
    out = run.backend.run(["squeue", "-h", "-s", "-j", str(run.job_id), "-o", "%i"])
    return sorted(out.stdout.split())


def test_smi_watch_run_reads_every_node_through_one_step_each(running, slurm_cluster, capsys):
    # The job's own steps: its batch step and its srun (step 0), which may start a moment after the job is RUNNING
    # (later still while the controller is busy), so they are named rather than taken from a snapshot before.
    own = {f"{running.job_id}.{s}" for s in ("batch", "extern", "0")}
    assert main(["smi", "watch", str(running.path), "--interval", "0.5", "--count", "3"]) == 0
    out = capsys.readouterr().out
    for node in ("nid005001", "nid005002"):
        assert out.count(f"job {running.job_id} on {node}") >= 3
    assert "rocm-smi-json" in out
    for _ in range(60):  # the steps end a moment after their srun (and reach the accounting a moment later)
        acct = running.backend.run(["sacct", "-n", "-P", "-j", str(running.job_id), "-o", "JobID"])
        ids = {line.split(".", 1)[1] for line in acct.stdout.split() if "." in line} - {"batch", "extern"}
        if set(steps(running)) <= own and (len(ids) >= 3 or not slurm_cluster.accounting):
            break
        time.sleep(0.5)
    assert set(steps(running)) <= own, steps(running)  # the watch steps ended with the watch
    # the job's own step (0), plus one step per node for the whole watch, not one per sample (6 samples)
    if slurm_cluster.accounting:
        assert ids == {"0", "1", "2"}, acct.stdout


def test_the_dashboard_attaches_to_a_stream_of_the_run_it_is_given(running):
    from lumikit.widgets.gpu_dashboard import GpuDashboard

    dash = GpuDashboard(source=watch_job(running, interval=0.5)[0], interval=0.5)
    assert dash.picker.value == f"given: job {running.job_id} on nid005001: python3"
    dash.start()
    try:
        for _ in range(120):
            if dash.sampler is not None and dash.sampler.samples >= 2:
                break
            time.sleep(0.5)
        assert dash.sampler is not None and dash.sampler.samples >= 2, dash.status.value
        assert dash.sampler.source.name == f"job {running.job_id} on nid005001: python3"
        assert len(dash.sampler.latest().devices) == 8
    finally:
        dash.stop()


def test_a_pending_or_ended_run_cannot_be_watched_and_says_so(slurm_cluster, tmp_path):
    run = launch(spec(["true"]), site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    with pytest.raises(LumikitError, match="COMPLETED: its nodes can be watched only while it runs"):
        watch_job(run)
