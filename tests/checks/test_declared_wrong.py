"""Every check of terminal.py and seeds.py declares at least two known-wrong answers, and each of them fails (with
the words it promises) while the right answer passes. The capstone's checks are run the same way in test_m11.py."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, TensorDataset

from lumikit.checks import CheckFailed
from lumikit.checks import seeds, terminal
from lumikit.checks.framework import check_info
from lumikit.jobs import spec
from lumikit.launch.terminal import ShellResult
from lumikit.site import load_site

SKIPPED = ShellResult("...", None, skipped="no Slurm client on this machine")
VISIBLE = ("0 nid005001 ROCR_VISIBLE_DEVICES=0\n1 nid005001 ROCR_VISIBLE_DEVICES=1\n"
           "2 nid005002 ROCR_VISIBLE_DEVICES=0\n3 nid005002 ROCR_VISIBLE_DEVICES=1\n")


def assert_wrong_answers_fail(func, **right) -> int:
    """The right answer passes; each declared wrong answer fails, naming what it promised; returns how many."""
    info = check_info(func)
    assert info is not None and len(info.wrong) >= 2, f"{func.__name__} declares fewer than 2 wrong answers"
    assert func(**right)
    arguments = SimpleNamespace(**inspect.signature(func).bind(**right).arguments)
    for case in info.wrong:
        with pytest.raises(CheckFailed) as failure:
            func(**{**right, **case.values(arguments)})
        if case.mentions:
            assert case.mentions in str(failure.value), (case.why, str(failure.value))
    return len(info.wrong)


@pytest.fixture
def fixed_script(tmp_path):
    path = tmp_path / "fixed.sh"
    path.write_text("#!/bin/bash\n#SBATCH --account=project_465000000\n#SBATCH --partition=small-g\n"
                    "#SBATCH --nodes=1\n#SBATCH --tasks-per-node=2\n#SBATCH --gpus-per-node=2\nsrun hostname\n")
    return path


@pytest.fixture
def raw_trace(tmp_path):
    path = tmp_path / "trace.json"
    model = torch.nn.Linear(8, 8)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(6):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    return path


def test_terminal_checks_reject_their_wrong_answers(fixed_script) -> None:
    bind = ("srun --partition=small-g --nodes=1 --ntasks=2 --time=1 --cpu-bind=mask_cpu:0x1,0x2 "
            "bash -c 'echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status)' | sort -n")
    total = assert_wrong_answers_fail(terminal.check_topology_masks, masks=load_site("lumi").node.masks())
    total += assert_wrong_answers_fail(terminal.check_bind_test, bind_command=bind, bind_run=SKIPPED)
    total += assert_wrong_answers_fail(terminal.check_bind_test, bind_command=bind,
                                       bind_run="0 Cpus_allowed_list: 0\n1 Cpus_allowed_list: 1\n")
    total += assert_wrong_answers_fail(terminal.check_fixed_script, script_path=fixed_script, submit=SKIPPED)
    total += assert_wrong_answers_fail(terminal.check_cancelled_job, job_id=SKIPPED, squeue_seen=SKIPPED)
    total += assert_wrong_answers_fail(terminal.check_overlap_steps, allocation=SKIPPED)
    total += assert_wrong_answers_fail(terminal.check_gpu_visibility, visibility_run=VISIBLE,
                                       tasks_per_node=2)
    assert total >= 14


def test_seed_checks_reject_their_wrong_answers(raw_trace) -> None:
    loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=8, num_workers=1,
                        multiprocessing_context="spawn")
    job = spec(["python", "-c", "import jax"], partition="small-g", gpus_per_node=2, time="0:05:00", container="jax",
               env={"PYTHONNOUSERSITE": "1"})
    total = assert_wrong_answers_fail(seeds.check_raw_profiler, raw_trace=raw_trace, steps_run=6)
    total += assert_wrong_answers_fail(seeds.check_hip_log_reading, launches=3, slowest_call="hipMemcpyWithStream")
    total += assert_wrong_answers_fail(seeds.check_tensorboard_choice, answer="b")
    total += assert_wrong_answers_fail(seeds.check_spawn_loader, spawn_loader=loader, first_batch=[1], why_spawn="a")
    total += assert_wrong_answers_fail(seeds.check_visible_gcd, physical_gcd=5, device_count=1)
    total += assert_wrong_answers_fail(seeds.check_zero_stage, answer="a")
    total += assert_wrong_answers_fail(seeds.check_jax_job, jax_job=job, devices_expected=2, jax_output="")
    assert total >= 20
