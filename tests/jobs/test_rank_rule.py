"""One rule for devices and cores per rank: shapes that Slurm accepts but that misplace GPUs or cores are warned
about, and ``--explain`` states the rule with its source."""
from __future__ import annotations

import pytest

from lumikit.cli import main
from lumikit.jobs import spec
from lumikit.jobs.spec import JobSpec
from lumikit.jobs.validate import advice, device_rule
from lumikit.site import load_site

LUMI = load_site("lumi")


def test_gpus_per_task_with_four_tasks_warns_naming_gpus_per_node_and_local_rank(capsys):
    assert main(["srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "small-g", "--gpus-per-task", "1",
                 "--ntasks-per-node", "4", "-c", "7", "--", "python", "train.py"]) == 0
    err = capsys.readouterr().err
    assert "warning: --gpus-per-task=1 with 4 tasks per node" in err
    assert "--gpus-per-node=4" in err and "LOCAL_RANK" in err
    assert "local ranks 1-3" in err and "Failed to find reverse path" in err


def test_explain_no_longer_calls_gpus_per_task_correct(capsys):
    main(["srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "small-g", "--gpus-per-task", "1",
          "--ntasks-per-node", "4", "-c", "7", "--explain", "--", "python", "train.py"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("--gpus-per-task=1"))
    assert "binds each task to its own" not in line
    assert "prefer --gpus-per-node" in line and "RCCL loses peer access" in line


def test_one_task_with_one_gpu_per_task_is_fine():
    one = spec(["python", "x.py"], partition="small-g", gpus_per_task=1, cpus_per_task=7, time="1:00:00")
    assert advice(one, LUMI) == []


def test_multi_rank_cli_srun_without_cores_warns(capsys):
    assert main(["srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "standard-g", "--gpus-per-node", "8",
                 "--ntasks-per-node", "8", "--", "python", "train.py"]) == 0
    captured = capsys.readouterr()
    assert "--cpus-per-task" not in captured.out  # the command is printed as asked; the warning says what is missing
    assert "8 tasks per node without --cpus-per-task: Slurm gives each rank one core" in captured.err
    assert "--cpus-per-task=7" in captured.err and "--cpu-bind=auto" in captured.err


def test_the_right_shape_gets_no_rank_warning():
    good = spec(["python", "x.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
                cpu_bind="auto", time="1:00:00")
    assert advice(good, LUMI) == []


def test_explain_states_the_device_and_core_rule_with_its_source(capsys):
    main(["srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "standard-g", "--gpus-per-node", "8",
          "--ntasks-per-node", "8", "-c", "7", "--cpu-bind", "auto", "--explain", "--", "python", "train.py"])
    out = capsys.readouterr().out
    rule = next(x for x in out.splitlines() if x.startswith("rule: one rank per GCD"))
    for words in ("--gpus-per-node", "LOCAL_RANK", "7 cores", "mask", "taskset", "--numa-binding",
                  "distribution-binding.md"):
        assert words in rule


def test_a_single_rank_job_has_no_device_rule():
    assert device_rule(spec(["python"], partition="small-g", gpus_per_node=1), LUMI) is None


def test_per_task_gpus_on_lumi_name_allow_task_sharing_as_the_fix() -> None:
    from lumikit.jobs.validate import rank_advice
    from lumikit.site import load_site

    lumi = load_site("lumi")
    per_task = JobSpec(command=("python", "train.py"), partition="standard-g", ntasks_per_node=8, gpus_per_task=1,
                       cpus_per_task=7)
    advice = " ".join(rank_advice(per_task, lumi))
    assert "--gres-flags=allow-task-sharing" in advice
    shared = " ".join(rank_advice(per_task.with_(gres_flags="allow-task-sharing"), lumi))
    assert "cuda:0" in shared and "peer access" in shared


def test_allow_task_sharing_renders_on_lumi_and_is_refused_where_slurm_lacks_it() -> None:
    from lumikit.errors import SpecError
    from lumikit.jobs.render import render_sbatch
    from lumikit.jobs.validate import validate
    from lumikit.site import load_site

    job = JobSpec(command=("python", "train.py"), partition="standard-g", ntasks_per_node=8, gpus_per_task=1,
                  cpus_per_task=7, gres_flags="allow-task-sharing", account="project_465000000")
    assert "#SBATCH --gres-flags=allow-task-sharing" in render_sbatch(validate(job, load_site("lumi")),
                                                                     load_site("lumi"))
    with pytest.raises(SpecError, match="22.05"):
        validate(job, load_site("lumi-sim"))
