"""A course workload as a job: one spec for every site, and its measurements read back from the run folder."""
from __future__ import annotations

import sys

import pytest

from lumikit.errors import LaunchError, SpecError
from lumikit.jobs import gcd_resources, render_srun, workload_spec
from lumikit.launch import launch
from lumikit.site import load_site


def test_the_workload_runs_with_this_python_in_the_course_container_on_lumi() -> None:
    job = workload_spec("lm", "--steps", "3", partition="small-g", gpus_per_node=1)
    assert job.command == (sys.executable, "-m", "lumikit.workloads.lm", "--steps", "3")
    assert (job.name, job.container, dict(job.env)) == ("lm", "pytorch", {"OMP_NUM_THREADS": "1"})
    text = render_srun(job, load_site("lumi")).text()
    assert "singularity exec" in text and "lumikit.workloads.lm" in text


def test_an_unknown_workload_names_the_known_ones() -> None:
    with pytest.raises(SpecError, match="'bert' is not one of the course workloads.*lm, resnet, ddp_check"):
        workload_spec("bert")


def test_a_local_run_gives_its_metrics_per_step_and_its_summary(tmp_path) -> None:
    run = launch(workload_spec("lm", "--steps", "3", "--model-size", "tiny", "--no-progress", time="0:05:00"),
                 site="laptop", runs_dir=tmp_path)
    assert run.wait(timeout=180, progress=False) == "COMPLETED", run.tail()
    metrics = run.metrics()
    assert metrics.steps["step"].tolist() == [1, 2, 3]
    assert (metrics.steps["step_time_s"] > 0).all()
    assert metrics.result["steps"] == 3


def test_a_folder_without_metrics_says_what_to_look_at(tmp_path) -> None:
    run = launch(workload_spec("lm", "--help", time="0:05:00"), site="laptop", runs_dir=tmp_path)
    run.wait(timeout=120, progress=False)
    with pytest.raises(LaunchError, match="no metrics.*run.tail"):
        run.metrics(rank=0)


def test_gcds_fill_the_resources_from_the_site_and_explicit_fields_win() -> None:
    assert gcd_resources(2, tasks=2, site="lumi") == {"partition": "small-g", "gpus_per_node": 2, "cpus_per_task": 7,
                                                      "mem_per_gpu": "60G"}
    job = workload_spec("resnet", gcds=2, ntasks_per_node=1, time="0:30:00")
    assert (job.partition, job.gpus_per_node, job.cpus_per_task, job.mem_per_gpu) == ("small-g", 2, 14, "60G")
    assert workload_spec("lm", gcds=1, partition="dev-g").partition == "dev-g"
