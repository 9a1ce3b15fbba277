"""Checks of the seeds' topics: each passes the right answer and rejects the known wrong ones with its reason."""
from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, TensorDataset

from lumikit.checks import CheckFailed
from lumikit.checks import seeds as s
from lumikit.jobs import spec


def _profile(tmp_path, *, wait: int, warmup: int, active: int, steps: int = 6):
    model = torch.nn.Linear(8, 8)
    path = tmp_path / f"trace-{wait}{warmup}{active}.json"
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=wait, warmup=warmup, active=active,
                                                                      repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(steps):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    return path


def test_raw_profiler_reads_the_recorded_steps_from_the_trace(tmp_path) -> None:
    assert "steps [2, 3] recorded" in str(s.check_raw_profiler(_profile(tmp_path, wait=1, warmup=1, active=2), 6))
    with pytest.raises(CheckFailed, match="steps the trace recorded"):  # no warm-up: steps 1 and 2
        s.check_raw_profiler(_profile(tmp_path, wait=1, warmup=0, active=2), 6)
    with pytest.raises(CheckFailed, match="no trace file"):
        s.check_raw_profiler(tmp_path / "none.json", 6)
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(CheckFailed, match="not a chrome trace"):
        s.check_raw_profiler(tmp_path / "x.json", 6)


def test_hip_log_answers_come_from_the_generated_log() -> None:
    assert s.hip_exercise_log().count("hipLaunchKernel (") == 3
    assert "waits for the GPU" in str(s.check_hip_log_reading(3, "hipMemcpyWithStream"))
    with pytest.raises(CheckFailed, match="kernel launches"):
        s.check_hip_log_reading(9, "hipMemcpyWithStream")  # every record line of the launches counted
    with pytest.raises(CheckFailed, match="returns at once"):
        s.check_hip_log_reading(3, "hipLaunchKernel")
    with pytest.raises(CheckFailed, match="slowest HIP call"):
        s.check_hip_log_reading(3, "hipMemcpyAsync")


@pytest.mark.parametrize(("check", "right", "wrongs"), [
    (s.check_tensorboard_choice, "b", {"a": "deprecated", "c": "interactive session", "d": "nothing is uploaded"}),
    (s.check_zero_stage, "a", {"b": "stage 2", "c": "stage 3", "d": "plain DDP"}),
])
def test_multiple_choice_explains_each_wrong_option(check, right, wrongs) -> None:
    assert check(right)
    assert check(right.upper())
    for letter, words in wrongs.items():
        with pytest.raises(CheckFailed, match=words):
            check(letter)
    with pytest.raises(CheckFailed, match="one of the letters"):
        check("e")
    with pytest.raises(CheckFailed, match="No answer yet"):
        check(None)


def test_spawn_loader_is_read_from_the_loader_object() -> None:
    data = TensorDataset(torch.arange(8.0))
    spawned = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn")
    assert "started with spawn" in str(s.check_spawn_loader(spawned, [torch.zeros(2)], "a"))
    forked = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="fork")
    with pytest.raises(CheckFailed, match="start method"):
        s.check_spawn_loader(forked, [torch.zeros(2)], "a")
    with pytest.raises(CheckFailed, match="no worker processes"):
        s.check_spawn_loader(DataLoader(data, batch_size=8), [torch.zeros(2)], "a")
    with pytest.raises(CheckFailed, match="slower to start"):
        s.check_spawn_loader(spawned, [torch.zeros(2)], "b")


def test_visible_gcd_applies_rocr_then_hip() -> None:
    assert "GCD 5" in str(s.check_visible_gcd(5, 1))
    with pytest.raises(CheckFailed, match="counts among the devices ROCR left"):
        s.check_visible_gcd(1, 1)
    with pytest.raises(CheckFailed, match="how many devices"):
        s.check_visible_gcd(5, 2)
    with pytest.raises(CheckFailed, match="GCD behind cuda:0"):
        s.check_visible_gcd(4, 1)


def test_jax_job_is_graded_without_jax_and_reads_a_device_list_when_it_ran() -> None:
    job = spec(["python", "-c", "import jax"], partition="small-g", gpus_per_node=2, time="0:05:00", container="jax",
               env={"PYTHONNOUSERSITE": "1"})
    assert "not run here" in str(s.check_jax_job(job, 2, ""))
    with pytest.raises(CheckFailed, match="packages from your ~/.local"):
        s.check_jax_job(job.with_(env={}), 2, "")
    assert "2 device(s)" in str(s.check_jax_job(job, 2, "devices: [RocmDevice(id=0), RocmDevice(id=1)]"))
    with pytest.raises(CheckFailed, match="container"):
        s.check_jax_job(job.with_(container="pytorch"), 2, "")
    with pytest.raises(CheckFailed, match="how many devices JAX lists"):
        s.check_jax_job(job, 8, "")
    with pytest.raises(CheckFailed, match="lists no JAX device"):
        s.check_jax_job(job, 2, "Traceback: ModuleNotFoundError: No module named 'jax'")


@pytest.mark.parametrize("answer", ["(a)", " A ", "a)"])
def test_every_multiple_choice_parser_reads_a_letter_in_its_usual_forms(answer: str) -> None:
    assert s.check_zero_stage(answer)
