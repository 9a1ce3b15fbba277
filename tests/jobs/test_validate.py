"""Specs LUMI would reject are refused before submission, with the field, the limit and the fix."""
from __future__ import annotations

import pytest

from lumikit.errors import SpecError
from lumikit.jobs import parse_time, problems, spec, validate
from lumikit.site import load_site

LUMI = load_site("lumi")
OK = dict(partition="small-g", gpus_per_node=1, cpus_per_task=7, mem_per_gpu="60G", time="0:15:00")


def job(**changes):
    options = {**OK, **changes}
    command = options.pop("command", ["python", "train.py"])
    return spec(command, **options)


INVALID = [
    # (what is wrong, the spec changes, field named, words the message must hold)
    ("9 GCDs", dict(gpus_per_node=9), "gpus_per_node", "8 GCDs"),
    ("negative GCDs", dict(gpus_per_node=-1), "gpus_per_node", "0 to 8"),
    ("GPUs on a CPU partition", dict(partition="small", mem_per_gpu=None), "gpus_per_node", "GPU partition"),
    ("zero CPUs", dict(cpus_per_task=0), "cpus_per_task", "at least 1"),
    ("more cores than a node has", dict(gpus_per_node=8, ntasks_per_node=2, cpus_per_task=32, mem_per_gpu=None),
     "cpus_per_task", "56 usable cores per node"),
    ("61 GB per GCD on 8 GCDs", dict(mem_per_gpu="61G", gpus_per_node=8), "mem_per_gpu", "480 GB usable per node"),
    ("mixed --mem kinds", dict(mem="60G"), "mem_per_gpu", "only one kind"),
    ("--mem over a node's memory", dict(mem_per_gpu=None, mem="500G"), "mem", "480 GB usable per node"),
    ("--mem=0 on a shared partition", dict(mem_per_gpu=None, mem="0"), "mem", "--exclusive"),
    ("memory without a unit we know", dict(mem_per_gpu="lots"), "mem_per_gpu", "memory size"),
    ("memory per GPU without GPUs", dict(gpus_per_node=None, cpus_per_task=None), "mem_per_gpu", "without GPUs"),
    ("CPU masks on a shared partition", dict(cpu_bind="auto"), "cpu_bind", "--exclusive"),
    ("auto masks without GPUs", dict(partition="standard-g", gpus_per_node=None, cpus_per_task=None,
                                     mem_per_gpu=None, cpu_bind="auto"), "cpu_bind", "no GPUs"),
    ("auto masks with 3 tasks on 8 GCDs", dict(partition="standard-g", gpus_per_node=8, ntasks_per_node=3,
                                               cpu_bind="auto"), "cpu_bind", "divisor"),
    ("a cpu-bind we do not know", dict(partition="standard-g", cpu_bind="sideways"), "cpu_bind", "auto"),
    ("unknown partition", dict(partition="gpu"), "partition", "small-g"),
    ("5 nodes on small-g", dict(nodes=5), "nodes", "4 nodes on small-g"),
    ("zero nodes", dict(nodes=0), "nodes", "at least 1"),
    ("zero tasks", dict(ntasks_per_node=0), "ntasks_per_node", "at least 1"),
    ("4 days on small-g", dict(time="4-00:00:00"), "time", "3-00:00:00"),
    ("4 hours on dev-g", dict(partition="dev-g", time="4:00:00"), "time", "3:00:00"),
    ("malformed time", dict(time="15min"), "time", "not a Slurm time"),
    ("zero time", dict(time="0"), "time", "no time"),
    ("reservation without account", dict(reservation="AI_workshop_Day1"), "reservation", "--account"),
    ("unknown container", dict(container="tensorflow"), "container", "pytorch"),
    ("empty command", dict(command=[]), "command", "no command"),
    ("bad environment name", dict(env={"1BAD": "x"}), "env", "valid variable name"),
    ("unknown environment recipe", dict(env_recipes=["turbo"]), "env_recipes", "caches"),
    ("unknown profiling mode", dict(profile="nsys"), "profile", "rocprof"),
    ("profiling a rank that does not exist", dict(profile="rocprof", profile_ranks=[3]), "profile_ranks", "0..0"),
    ("ranks to profile without a mode", dict(profile_ranks=[0]), "profile_ranks", "mode"),
    ("three threads per core", dict(threads_per_core=3), "threads_per_core", "1 or 2"),
    ("unknown bind set", dict(bind_sets=["everything"]), "bind_sets", "user"),
]


@pytest.mark.parametrize("what, changes, field, words", INVALID, ids=[row[0] for row in INVALID])
def test_invalid_spec_names_field_limit_and_fix(what, changes, field, words):
    found = problems(job(**changes), LUMI)
    assert found, f"{what}: accepted"
    first = found[0]
    assert isinstance(first, SpecError)
    assert first.field == field
    assert words in str(first)
    assert "Fix:" in str(first)
    with pytest.raises(SpecError):
        validate(job(**changes), LUMI)


def test_there_are_at_least_twenty_distinct_invalid_specs():
    assert len({row[0] for row in INVALID}) >= 20


@pytest.mark.parametrize("changes", [
    {},
    dict(partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8, exclusive=True, cpu_bind="auto"),
    dict(partition="small-g", exclusive=True, gpus_per_node=8, ntasks_per_node=1, cpus_per_task=56, cpu_bind="auto"),
    dict(partition="standard-g", gpus_per_node=8, mem_per_gpu=None, mem="0"),
    dict(partition="dev-g", time="3:00:00", reservation="AI_workshop_Day2", account="project_465002178"),
    dict(partition="small", gpus_per_node=None, mem_per_gpu=None, cpus_per_task=4, time="2-00"),
])
def test_valid_specs_pass(changes):
    assert problems(job(**changes), LUMI) == []


@pytest.mark.parametrize("text, seconds", [("30", 1800), ("5:30", 330), ("1:00:00", 3600), ("2-00", 172800),
                                           ("1-12:30", 131400), ("3-00:00:00", 259200)])
def test_slurm_time_formats(text, seconds):
    assert parse_time(text) == seconds
