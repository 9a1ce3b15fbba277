"""Noise as a lesson: 05.4 and 07.2-07.6 compare the learner's own runs with their spread, and say when a
difference is within noise on this machine (and what LUMI should show instead)."""
from __future__ import annotations

import pandas as pd

from lumikit.checks.m05 import check_profiler_slowdown
from lumikit.checks.m07 import check_batch_size, check_ddp_gain, check_first_epoch, check_model_size
from lumikit.measure import measured, middle, noise_note

BASE = {"batch_size": 8, "global_batch_size": 8, "world_size": 1, "parameters": 80_000}


def _run(times: list[float], **more) -> dict:
    mean = sum(times) / len(times)
    return {**BASE, **more, "step_times_s": times, "mean_step_time_s": mean,
            "global_samples_per_s": more.get("global_batch_size", 8) / mean}


def test_overlapping_step_times_are_within_noise_with_what_lumi_should_show() -> None:
    single = _run([0.050, 0.061, 0.047, 0.058, 0.052, 0.049, 0.060, 0.055])
    ddp = _run([0.095, 0.120, 0.090, 0.118, 0.101, 0.099, 0.121, 0.110], world_size=2, global_batch_size=16)
    speedup = ddp["global_samples_per_s"] / single["global_samples_per_s"]
    text = str(check_ddp_gain(speedup, speedup / 2, single, ddp))
    assert "within noise on this machine" in text and "on LUMI expect DDP on 2 GCDs" in text


def test_separated_step_times_are_beyond_noise_and_promise_nothing_about_lumi() -> None:
    base = _run([0.050, 0.051, 0.049, 0.050, 0.052])
    other = _run([0.250, 0.251, 0.249, 0.252, 0.250], parameters=640_000)
    text = str(check_model_size(8.0, other["mean_step_time_s"] / base["mean_step_time_s"], base, other))
    assert "beyond noise on this machine" in text and "on LUMI expect" not in text


def test_a_batch_comparison_and_a_summary_without_steps_say_so() -> None:
    small = {k: v for k, v in _run([0.05] * 6).items() if k != "step_times_s"}
    large = _run([0.075] * 6, batch_size=16, global_batch_size=16)
    rate = large["global_samples_per_s"] / small["global_samples_per_s"]
    assert "noise cannot be judged" in str(check_batch_size(1.5, rate, small, large))


def test_the_first_step_and_the_profiler_cost_are_judged_against_the_spread() -> None:
    steps = pd.DataFrame({"step": range(1, 9), "epoch": [0] * 4 + [1] * 4,
                          "step_time_s": [0.35, 0.05, 0.06, 0.05, 0.05, 0.05, 0.05, 0.06]})
    epochs = pd.DataFrame({"epoch_end": [0, 1], "epoch_time_s": [0.51, 0.21]})
    assert "beyond noise on this machine" in str(check_first_epoch(0.30, 0.30, epochs, steps))
    times = {1: 0.9, 2: 0.10, 3: 0.12, 4: 0.11, 5: 0.10, 6: 0.11, 7: 0.13, 8: 0.11, 9: 0.12, 10: 0.12}
    text = str(check_profiler_slowdown(0.12 / 0.105, times, "5,1,3,1"))  # steps 7-9 against 2-5
    assert "within noise on this machine" in text and "on LUMI expect recorded steps measurably slower" in text


def test_the_middle_of_a_run_drops_its_outliers_and_the_note_is_built_from_the_numbers() -> None:
    assert middle([9.0, 1.0, 1.1, 1.2, 1.0, 1.1, 1.2, 1.0, 1.1, 0.1]) == [1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.2, 1.2]
    note = noise_note(measured("a", [1.0, 1.1]), measured("b", [1.05, 1.2]), on_lumi="a faster")
    assert note.startswith("within noise on this machine (a: 1.05") and note.endswith("on LUMI expect a faster")
