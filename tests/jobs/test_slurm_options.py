"""Slurm's options mean what Slurm means: each combination is rendered by lumikit, submitted held to lumi-sim, and
``scontrol show job`` must read the same job as lumikit's spec and its ``--explain`` lines (then it is cancelled)."""
from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from lumikit.cli import build_parser
from lumikit.config import UserConfig
from lumikit.errors import SpecError
from lumikit.jobs import render_sbatch, render_srun, resolve, validate
from lumikit.jobs.cli import spec_from_args
from lumikit.jobs.spec import parse_mem_mb, parse_time
from lumikit.site import load_site

pytestmark = pytest.mark.slurm
SIM = load_site("lumi-sim")

# lumi-sim's nodes have 2 CPUs and ~22 GB each (the "real" profile): every combination fits them.
SUBMITTED = [
    "-p small-g -n 2",
    "-p small-g -N 2 -n 4",
    "-p small-g -N 2 --ntasks-per-node 2",
    "-p small-g -G 2",
    "-p small-g --gpus 8",
    "-p small-g -N 2 --gpus-per-node 4",
    "-p small-g -n 2 --gpus-per-task 1",
    "-p small-g -N 2 -n 4 --gpus-per-task 2",
    "-p small-g --mem 16",
    "-p small-g --mem 2G",
    "-p small-g --mem 16GB",
    "-p small-g --gpus-per-node 1 --mem-per-gpu 1G",
    "-p small-g --mem-per-cpu 500",
    "-p small-g -t 10",
    "-p dev-g -t 1:30:00 -G 1",
    "-p small-g -A project_465000001",
    "-p standard-g --exclusive -N 2 --ntasks-per-node 2 --gpus-per-node 8",
    "-p small -c 2",
    "-p small-g -J my-job --threads-per-core 1",
]

# Refused by lumikit with a fix; the first is refused by Slurm too (it reads whole numbers only).
REFUSED = [
    ("-p small-g --mem 1.5G", "whole numbers", "--mem=1.5G"),
    ("-p small-g -N 2 -G 8", "--gpus-per-node", None),
    ("-p small-g -N 2 -n 3", "multiple of 2", None),
    ("-p small-g -n 4 --ntasks-per-node 2", "only one of", None),
]


def job_from(options: str):
    args = build_parser().parse_args(["sbatch", "--site", "lumi-sim", *shlex.split(options), "--", "true"])
    return resolve(spec_from_args(args), SIM, UserConfig())


def slurm(cluster, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), env=cluster.env, capture_output=True, text=True, timeout=60)


def megabytes(text: str) -> float:
    """Slurm's own memory display (``16M``, ``2G``, ``1.50G``) -> MB."""
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", text)
    assert m, text
    return float(m.group(1)) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 ** 2}[m.group(2)]


def seconds(text: str) -> int:
    days, _, rest = text.rpartition("-")
    h, mi, s = (int(x) for x in rest.split(":"))
    return (int(days or 0) * 24 + h) * 3600 + mi * 60 + s


def gpus_in(fields: dict[str, str], tasks: int, nodes: int) -> int:
    for key, times in (("TresPerJob", 1), ("TresPerNode", nodes), ("TresPerTask", tasks)):
        m = re.search(r"gpu(?::\w+)?:(\d+)", fields.get(key, ""))
        if m:
            return int(m.group(1)) * times
    return 0


def held(cluster, tmp_path, job) -> dict[str, str]:
    """Submit the rendered script held, read scontrol's view of it, cancel it."""
    script = tmp_path / "job.sbatch"
    script.write_text(render_sbatch(job, SIM))
    sub = slurm(cluster, "sbatch", "--hold", "--parsable", str(script))
    assert sub.returncode == 0, sub.stderr
    job_id = sub.stdout.strip().split(";")[0]
    try:
        shown = slurm(cluster, "scontrol", "show", "job", "-o", job_id).stdout
    finally:
        slurm(cluster, "scancel", job_id)
    return dict(token.split("=", 1) for token in shown.split() if "=" in token)


@pytest.mark.parametrize("options", SUBMITTED)
def test_slurm_reads_the_job_as_lumikit_renders_and_explains_it(options, slurm_cluster, tmp_path):
    job = job_from(options)
    validate(job, SIM)
    f = held(slurm_cluster, tmp_path, job)
    explain = render_srun(job, SIM).explain()
    assert int(f["NumNodes"].split("-")[0]) == job.nodes
    assert int(f["NumTasks"]) == job.total_tasks
    assert gpus_in(f, job.total_tasks, job.nodes) == (job.gpus_per_node or 0) * job.nodes
    assert f["Partition"] == job.partition and f["Account"] == job.account and f["JobName"] == job.name
    assert int(f["CPUs/Task"]) == (job.cpus_per_task or 1)
    if job.ntasks is not None:
        assert f"{job.ntasks} tasks (processes) in the whole job" in explain
    if job.gpus is not None:
        assert f"{job.gpus} GCDs in the whole job" in explain
    if job.gpus_per_task is not None:
        assert f"{job.gpus_per_task} GCD(s) per task, {job.gpus_per_node} per node" in explain
    if job.mem is not None:
        assert megabytes(f["MinMemoryNode"]) == parse_mem_mb(job.mem, "mem")
        mb = parse_mem_mb(job.mem, "mem")
        assert (f"{mb / 1024:g} GB" if mb >= 1024 else f"{mb:g} MB") in explain
    if job.mem_per_cpu is not None:
        assert megabytes(f["MinMemoryCPU"]) == parse_mem_mb(job.mem_per_cpu, "mem_per_cpu")
        assert "no unit: Slurm reads megabytes" in explain
    if job.mem_per_gpu is not None:
        assert f["MemPerTres"] == f"gres:gpu:{parse_mem_mb(job.mem_per_gpu, 'mem_per_gpu'):.0f}"
    if job.time is not None:
        assert seconds(f["TimeLimit"]) == parse_time(job.time)
    if job.exclusive:
        assert f["OverSubscribe"] == "NO"
    if job.threads_per_core is not None:
        assert f["ReqB:S:C:T"].endswith(f":{job.threads_per_core}")


@pytest.mark.parametrize("options, fix, slurm_option", REFUSED)
def test_what_lumikit_refuses_it_refuses_with_a_fix(options, fix, slurm_option, slurm_cluster, tmp_path):
    with pytest.raises(SpecError, match=re.escape(fix)):
        validate(job_from(options), SIM)
    if slurm_option:  # and Slurm agrees that it is no memory size
        script = tmp_path / "job.sbatch"
        script.write_text(f"#!/bin/bash\n#SBATCH {slurm_option}\n#SBATCH --partition=small-g\ntrue\n")
        sub = slurm(slurm_cluster, "sbatch", "--hold", "--parsable", str(script))
        if sub.returncode == 0:
            slurm(slurm_cluster, "scancel", sub.stdout.strip().split(";")[0])
        assert sub.returncode != 0 and "invalid --mem" in sub.stderr.lower(), sub.stderr


def test_slurm_reads_the_vllm_server_job_as_lumikit_renders_it(slurm_cluster, tmp_path):
    """LUMI's vLLM recipe (lumikit.jobs.vllm) is submitted held like the jobs above: one task, 2 GCDs, 14 cores."""
    from lumikit.jobs import vllm

    job = resolve(vllm.server_spec(site=SIM), SIM, UserConfig())
    validate(job, SIM)
    f = held(slurm_cluster, tmp_path, job)
    assert f["JobName"] == "vllm-server" and f["Partition"] == job.partition == "small-g"
    assert int(f["NumTasks"]) == 1 and int(f["CPUs/Task"]) == 14
    assert gpus_in(f, 1, 1) == 2
    assert seconds(f["TimeLimit"]) == parse_time("2:00:00")
