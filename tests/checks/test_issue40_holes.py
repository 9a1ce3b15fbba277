"""Issue 40's holes and false refusals: each known-wrong answer that passed now fails naming the kind of mistake, and
each right answer in another form that was refused now passes."""
from __future__ import annotations

import pytest

from lumikit.checks import CheckFailed, m01
from lumikit.checks.framework import check_info
from lumikit.jobs import spec
from lumikit.site import load_site

SITE = load_site("lumi")
FULL = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
            cpus_per_task=7, mem_per_gpu="60G", time="0:30:00", cpu_bind="auto")
RULE = spec(["python", "train.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
            cpu_bind="auto", time="0:30:00")


def fails(func, *args, match: str, **kwargs) -> str:
    """The call fails with a real failure (not "no answer yet") whose message matches ``match``."""
    with pytest.raises(CheckFailed, match=match) as err:
        func(*args, **kwargs)
    assert not err.value.unanswered, str(err.value)
    return str(err.value)


def declares(func, why: str) -> None:
    """The check lists the wrong answer among its known-wrong answers, so `lumikit verify` tries it too."""
    assert any(why in w.why for w in check_info(func).wrong), [w.why for w in check_info(func).wrong]


def test_01_1_one_core_per_task_fails() -> None:
    masks = SITE.node.masks()
    assert m01.check_full_node_job(FULL, masks)
    fails(m01.check_full_node_job, FULL.with_(cpus_per_task=None), masks, match="cores given to each task")
    fails(m01.check_full_node_job, FULL.with_(cpus_per_task=1), masks, match="one core per task")
    declares(m01.check_full_node_job, "one core per task")


def test_01_4_two_nodes_fail() -> None:
    mask = f"{SITE.node.gcd(m01.rank_to_check()).mask:x}"
    assert m01.check_rank_rule(RULE, mask)
    fails(m01.check_rank_rule, RULE.with_(nodes=2), mask, match="one-node job")
    declares(m01.check_rank_rule, "two nodes")


def test_02_1_the_shape_and_partition_of_the_job_count() -> None:
    from lumikit.checks import m02
    from lumikit.jobs import render_srun

    right = m02._two_node_command()
    assert m02.check_two_node_container(right)
    fails(m02.check_two_node_container, m02._two_node_command(ntasks_per_node=1), match="one task per node")
    fails(m02.check_two_node_container, m02._two_node_command(gpus_per_node=4),
          match="GCDs per node.*part of each node")
    fails(m02.check_two_node_container, m02._two_node_command(partition="small-g"), match="partition")
    for why in ("one task per node", "four GCDs per node", "on small-g"):
        declares(m02.check_two_node_container, why)
    assert render_srun  # the command is rendered by lumikit, as the exercise asks


MIOPEN = spec(["python", "train.py"], partition="small-g", gpus_per_node=1, time="0:10:00",
              env={"MIOPEN_ENABLE_LOGGING": "1", "MIOPEN_ENABLE_LOGGING_CMD": "1"})


def test_05_s4_the_gcds_partition_and_time_the_question_fixes_count() -> None:
    from lumikit.checks import handson

    assert handson.check_miopen_logging(MIOPEN)
    assert handson.check_miopen_logging(MIOPEN.with_(time="10"))  # ten minutes in another spelling
    fails(handson.check_miopen_logging, MIOPEN.with_(partition="standard-g", gpus_per_node=8), match="whole nodes")
    fails(handson.check_miopen_logging, MIOPEN.with_(gpus_per_node=8), match="every GCD of the node")
    fails(handson.check_miopen_logging, MIOPEN.with_(time="1:00:00"), match="time limit")
    fails(handson.check_miopen_logging, MIOPEN.with_(time=None), match="no time limit")
    for why in ("standard-g with the node's 8 GCDs", "8 GCDs on small-g", "no time limit"):
        declares(handson.check_miopen_logging, why)


def test_10_s1_standard_g_fails() -> None:
    from lumikit.checks import seeds

    job = spec(["python", "-c", "import jax"], partition="small-g", gpus_per_node=2, time="0:05:00",
               container="jax", env={"PYTHONNOUSERSITE": "1"})
    assert seeds.check_jax_job(job, 2, "")
    fails(seeds.check_jax_job, job.with_(partition="standard-g"), 2, "", match="whole nodes")
    declares(seeds.check_jax_job, "on standard-g")


SRUN = ('srun singularity exec $CONTAINER bash -c "export RANK=\\$SLURM_PROCID LOCAL_RANK=\\$SLURM_LOCALID '
        'WORLD_SIZE=\\$SLURM_NPROCS && python train.py"')
WRAPPER = ("#!/bin/bash\nexport RANK=$SLURM_PROCID\nexport LOCAL_RANK=$SLURM_LOCALID\n"
           "export WORLD_SIZE=$SLURM_NPROCS\nexec \"$@\"\n")


def test_08_s4_srun_without_the_container_fails() -> None:
    from lumikit.checks import handson

    assert handson.check_slurm_escaping(SRUN, WRAPPER)
    fails(handson.check_slurm_escaping, SRUN.replace("singularity exec $CONTAINER ", ""), WRAPPER,
          match="not run its tasks in the container.*host")
    declares(handson.check_slurm_escaping, "srun without the container")


@pytest.mark.parametrize("wrapper", [
    WRAPPER.replace('exec "$@"', '"$@"'),  # a wrapper without exec still runs its arguments
    "#!/bin/bash\nexport RANK=$SLURM_PROCID && export LOCAL_RANK=$SLURM_LOCALID && "
    'export WORLD_SIZE=$SLURM_NTASKS && exec "$@"\n',  # one && line
])
def test_08_s4_a_right_wrapper_in_another_form_passes(wrapper: str) -> None:
    from lumikit.checks import handson

    assert handson.check_slurm_escaping(SRUN, wrapper)


def test_02_s1_a_hand_written_bind_list_fails() -> None:
    from lumikit.checks import handson

    right = ["module purge", "module use /appl/local/laifs/modules", "module load lumi-aif-singularity-bindings",
             "singularity shell $CONTAINER"]
    assert handson.check_container_shell(right)
    fails(handson.check_container_shell, ["singularity shell -B /project,/scratch $CONTAINER"],
          match="no bindings module.*hand-written bind list")
    declares(handson.check_container_shell, "hand-written -B")


def test_09_s1_the_batch_size_counts_and_05_s1_the_steps_run() -> None:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from lumikit.checks import seeds

    data = TensorDataset(torch.arange(16.0))
    right = DataLoader(data, batch_size=8, num_workers=1, multiprocessing_context="spawn")
    assert seeds.check_spawn_loader(right, [torch.zeros(8)], "a")
    fails(seeds.check_spawn_loader, DataLoader(data, batch_size=1, num_workers=1, multiprocessing_context="spawn"),
          [torch.zeros(1)], "a", match="batch size.*one sample")
    declares(seeds.check_spawn_loader, "batches of one sample")
    declares(seeds.check_raw_profiler, "one step more")


def test_05_s1_a_wrong_number_of_steps_run_fails(tmp_path) -> None:
    from torch.profiler import ProfilerActivity, profile, schedule

    from lumikit.checks import seeds

    path = tmp_path / "trace.json"
    model = __import__("torch").nn.Linear(4, 4)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(6):
            model(__import__("torch").randn(2, 4)).sum().backward()
            prof.step()
    assert seeds.check_raw_profiler(path, 6)
    fails(seeds.check_raw_profiler, path, 7, match="steps run")
    fails(seeds.check_raw_profiler, path, 4, match="steps run")


def test_03_t1_a_script_with_short_sbatch_options_passes(tmp_path) -> None:
    from lumikit.checks import terminal
    from lumikit.checks.framework import NotChecked
    from lumikit.launch.terminal import ShellResult

    script = tmp_path / "fixed.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A project_465000000\n#SBATCH -p small-g\n#SBATCH -N 1\n"
                      "#SBATCH --tasks-per-node=2\n#SBATCH --gpus-per-node=2\nsrun hostname\n")
    result = terminal.check_fixed_script(script, ShellResult("...", None, skipped="no Slurm client on this machine"))
    assert isinstance(result, NotChecked) and "project_465000000" in str(result)  # right, not run here


def test_02_4_a_bounded_pin_passes() -> None:
    from lumikit.checks import m02

    base = {"torch": "2.6.0", "numpy": "1.26.4"}
    assert m02.check_pins(["torch>=2.6.0,<=2.6.0", "numpy<=1.26.4, >=1.26.4"], base)
    fails(m02.check_pins, ["torch>=2.6.0,<=2.7.0", "numpy==1.26.4"], base, match="not pinned")


def test_a_job_field_left_unset_is_not_no_answer_yet() -> None:
    from lumikit.checks import seeds

    job = spec(["python", "-c", "import jax"], partition="small-g", gpus_per_node=2, time="0:05:00",
               env={"PYTHONNOUSERSITE": "1"})  # container=None: the learner answered, with a field unset
    message = fails(seeds.check_jax_job, job, 2, "", match="the container is not set")
    assert "No answer yet" not in message
    message = fails(m01.check_full_node_job, FULL.with_(nodes=None), SITE.node.masks(), match="not set")
    assert "No answer yet" not in message


def test_a_speed_up_given_in_percent_is_named_a_percentage_not_a_fraction() -> None:
    from lumikit.checks import m09

    message = fails(m09.check_archive_speedup, 400.0, 4.0, 1.0, match="a percentage where a ratio")
    assert "fraction" not in message
    fails(m09.check_archive_speedup, 300.0, 4.0, 1.0, match="gain in percent")


def test_08_t1_one_task_per_node_pasted_fails() -> None:
    from lumikit.checks import terminal

    right = ("0 nid005001 ROCR_VISIBLE_DEVICES=0\n1 nid005001 ROCR_VISIBLE_DEVICES=1\n"
             "2 nid005002 ROCR_VISIBLE_DEVICES=0\n3 nid005002 ROCR_VISIBLE_DEVICES=1\n")
    assert terminal.check_gpu_visibility(right, nodes=2, tasks_per_node=2)
    pasted = "0 nid005001 ROCR_VISIBLE_DEVICES=0\n1 nid005002 ROCR_VISIBLE_DEVICES=0\n"
    fails(terminal.check_gpu_visibility, pasted, nodes=2, tasks_per_node=2, match="one task per node")
    declares(terminal.check_gpu_visibility, "one task per node")


def test_08_1_no_learner_gets_a_task_where_task_over_2_is_its_local_task(monkeypatch) -> None:
    from lumikit.checks import m08

    for learner in range(40):
        monkeypatch.setenv("LUMIKIT_SEED", f"learner-{learner}")
        task = m08.task_to_study(8)
        assert 9 <= task <= 15 and task // 2 != task % 8
    declares(m08.check_task_mask, "task // 2")


def test_no_seed_starves_gcd_0() -> None:
    from lumikit.checks.datasets import starved_gcd

    assert all(starved_gcd("04", seed=f"learner-{i}") != 0 for i in range(60))
