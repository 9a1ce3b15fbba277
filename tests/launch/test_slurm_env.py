"""Submitting from inside a Slurm job (an Open OnDemand notebook, an salloc shell): the enclosing job's variables
never reach the new job's sbatch/srun."""
from __future__ import annotations

import sys

import pytest

from lumikit.jobs import spec
from lumikit.jobs.cli import inside_job_note
from lumikit.launch import SlurmBackend, launch
from lumikit.launch.slurm import enclosing_job, submission_env

# What a Jupyter job started with `sbatch --mem=4G --cpus-per-task=7` and an salloc shell leave behind.
ENCLOSING = {"SLURM_JOB_ID": "4242", "SLURM_MEM_PER_NODE": "4096", "SLURM_MEM_PER_CPU": "1024",
             "SLURM_CPU_BIND": "verbose,map_cpu:1", "SLURM_CPU_BIND_TYPE": "map_cpu:",
             "SLURM_CPUS_PER_TASK": "7", "SBATCH_PARTITION": "debug", "SRUN_CPUS_PER_TASK": "7",
             "SALLOC_PARTITION": "small", "PMIX_RANK": "0"}


def test_the_enclosing_jobs_variables_are_dropped_and_slurm_conf_kept():
    env = submission_env({**ENCLOSING, "SLURM_CONF": "/etc/slurm/slurm.conf", "HOME": "/root", "PATH": "/bin",
                          "MY_SLURM_NOTE": "x"})
    assert env == {"SLURM_CONF": "/etc/slurm/slurm.conf", "HOME": "/root", "PATH": "/bin", "MY_SLURM_NOTE": "x"}


def test_names_the_learner_set_on_purpose_are_kept():
    env = submission_env(ENCLOSING, keep=["SLURM_CPU_BIND"])
    assert env == {"SLURM_CPU_BIND": "verbose,map_cpu:1"}


def test_the_backend_runs_slurm_commands_without_them(monkeypatch):
    for k, v in ENCLOSING.items():
        monkeypatch.setenv(k, v)
    env = SlurmBackend("lumi-sim").env() if _sim_conf_exists() else SlurmBackend("lumi").env()
    assert not [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "PMIX_"))
                and k != "SLURM_CONF"]
    assert enclosing_job() == "4242"


def test_a_printed_srun_inside_a_job_says_it_becomes_a_step(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_JOBID", raising=False)
    assert inside_job_note("srun") is None
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    note = inside_job_note("srun")
    assert note is not None and "step of that job" in note and "4242" in note and "\n" not in note
    assert inside_job_note("salloc") is None  # salloc asks for a new allocation wherever it runs


def _sim_conf_exists() -> bool:
    from lumikit.launch.slurm import expand
    from lumikit.site import load_site
    from pathlib import Path

    return Path(expand(str(load_site("lumi-sim").slurm["conf"]))).is_file()


@pytest.mark.slurm
def test_a_job_submitted_from_inside_a_job_gets_its_own_memory_and_binding(slurm_cluster, tmp_path, monkeypatch):
    for k, v in ENCLOSING.items():
        monkeypatch.setenv(k, v)
    code = ("import os; print(*(f'{k}={os.environ.get(k)}' for k in "
            "('SLURM_CPU_BIND', 'SLURM_CPUS_PER_TASK', 'SLURM_MEM_PER_NODE', 'SLURM_MEM_PER_GPU', 'SBATCH_PARTITION')))")
    run = launch(spec([sys.executable, "-c", code], partition="small-g", gpus_per_node=1, mem_per_gpu="500M"),
                 site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    seen = dict(item.split("=", 1) for item in run.stdout().split())
    assert seen["SLURM_CPU_BIND"] != ENCLOSING["SLURM_CPU_BIND"]
    assert seen["SLURM_CPUS_PER_TASK"] != "7"
    assert seen["SLURM_MEM_PER_NODE"] == "None" and seen["SLURM_MEM_PER_GPU"] == "500"
    assert seen["SBATCH_PARTITION"] == "None"


def test_srun_explain_inside_a_job_ends_with_the_note(monkeypatch, capsys):
    from lumikit.cli import main

    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert main(["srun", "--explain", "--site", "lumi", "-A", "project_465000000", "-p", "small-g", "--",
                 "true"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1].startswith("note: this shell is inside Slurm job 4242")
    assert main(["srun", "--site", "lumi", "-A", "project_465000000", "-p", "small-g", "--", "true"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("srun ") and "step of that job" in captured.err  # the text stays pasteable


def test_the_dashboards_own_job_source_says_whose_job_it_is(monkeypatch):
    from lumikit.smi import sampler

    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setattr(sampler.shutil, "which", lambda name: "/usr/bin/" + name if name == "srun" else None)
    opts = [o for o in sampler.available_sources() if o.live]
    assert [o.label for o in opts] == ["this session's own job 4242: rocm-smi --json"]
    src = opts[0].make()
    assert isinstance(src, sampler.StreamSource) and src.argv[:3] == ["srun", "--jobid=4242", "--overlap"]
