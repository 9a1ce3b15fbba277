"""Module 07 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None.

The run summaries below have the keys the ResNet workload writes to ``result.rank0.json``; the numbers are made up
so that every ratio is easy to follow by hand.
"""
from __future__ import annotations

import pandas as pd
import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m07 import (check_batch_size, check_ddp_gain, check_ddp_steps, check_dp_cost,
                                check_first_epoch, check_model_size)

# One device: 128 images, batch 8 -> 16 steps per epoch, 0.05 s per step -> 160 samples/s.
SINGLE = {"mode": "single", "dataset_size": 128, "batch_size": 8, "world_size": 1, "global_batch_size": 8,
          "steps_per_epoch": 16, "mean_step_time_s": 0.05, "global_samples_per_s": 160.0, "parameters": 80_000,
          "model_size": "tiny"}
# Two DDP ranks: global batch 16 -> 8 steps per rank, 0.0625 s per step -> 256 samples/s (1.6x, 80 % per rank).
DDP = {**SINGLE, "mode": "ddp", "world_size": 2, "global_batch_size": 16, "steps_per_epoch": 8,
       "mean_step_time_s": 0.0625, "global_samples_per_s": 256.0}
# DataParallel without GPUs: one device, steps 10 % longer -> 160 / 1.1 samples/s.
DP = {**SINGLE, "mode": "dp", "mean_step_time_s": 0.055, "global_samples_per_s": 160 / 1.1}
# A model with 8x the parameters and 5x the step time; the same model with twice the batch, 1.5x the step time.
OTHER = {**SINGLE, "model_size": "small", "parameters": 640_000, "mean_step_time_s": 0.25,
         "global_samples_per_s": 32.0}
BIG_BATCH = {**SINGLE, "batch_size": 16, "global_batch_size": 16, "mean_step_time_s": 0.075,
             "global_samples_per_s": 16 / 0.075}

# Two epochs of four steps: the first step pays 0.3 s of warm-up, so the first epoch is 0.3 s longer.
STEPS = pd.DataFrame({"step": range(1, 9), "epoch": [0] * 4 + [1] * 4,
                      "step_time_s": [0.35, 0.05, 0.06, 0.05, 0.05, 0.05, 0.05, 0.06]})
EPOCHS = pd.DataFrame({"epoch_end": [0, 1], "epoch_time_s": [0.51, 0.21]})


def test_ddp_steps_passes_with_half_the_steps_and_half_the_batch():
    result = check_ddp_steps(8, 4, SINGLE, DDP)
    assert isinstance(result, Passed) and result.exercise == "07.1"
    assert "128 samples / (8 x 2 ranks) = 8 steps per rank" in str(result)
    assert "--batch-size 4" in str(result)


@pytest.mark.parametrize("steps, batch, words", [
    (16, 4, "the steps per epoch of one DDP rank is not right; you gave 16"),  # the single run's count
    (8, 8, "the --batch-size that keeps the single run's global batch is not right; you gave 8"),
    (8.0, 4, "has the wrong type"),
    (None, 4, "No answer yet for 07.1"),
    (8, None, "No answer yet for 07.1"),
])
def test_ddp_steps_fails_on_wrong_answers(steps, batch, words):
    with pytest.raises(CheckFailed, match="07.1") as err:
        check_ddp_steps(steps, batch, SINGLE, DDP)
    assert words in str(err.value)


def test_ddp_steps_names_a_summary_that_lacks_a_field():
    with pytest.raises(CheckFailed, match="no 'dataset_size'"):
        check_ddp_steps(8, 4, SINGLE, {"batch_size": 8})


def test_first_epoch_passes_with_both_differences():
    result = check_first_epoch(0.30, 0.30, EPOCHS, STEPS)
    assert result.exercise == "07.2" and "+0.300 s" in str(result)


@pytest.mark.parametrize("epoch_extra, step_extra, words", [
    (0.51, 0.30, "how much longer the first epoch took than the second (s) is off"),  # the first epoch's time, not the gap
    (0.30, 0.35, "how much longer the first step took than a typical one"),                     # the first step's time, not its excess
    (None, 0.30, "No answer yet for 07.2"),
    (0.30, None, "No answer yet for 07.2"),
])
def test_first_epoch_fails_on_wrong_answers(epoch_extra, step_extra, words):
    with pytest.raises(CheckFailed, match="07.2") as err:
        check_first_epoch(epoch_extra, step_extra, EPOCHS, STEPS)
    assert words in str(err.value)


def test_first_epoch_needs_two_epochs():
    with pytest.raises(CheckFailed, match="--epochs 2"):
        check_first_epoch(0.3, 0.3, EPOCHS.head(1), STEPS)


def test_ddp_gain_passes_with_the_speedup_and_its_share_per_rank():
    result = check_ddp_gain(1.6, 0.8, SINGLE, DDP)
    assert result.exercise == "07.3" and "1.60x" in str(result) and "80% of perfect scaling" in str(result)


@pytest.mark.parametrize("speedup, efficiency, words", [
    (0.8, 0.8, "DDP samples/s divided by the single run's samples/s is off"),  # step times compared instead
    (1.6, 1.6, "the speed-up per rank is off"),
    (None, 0.8, "No answer yet for 07.3"),
])
def test_ddp_gain_fails_on_wrong_answers(speedup, efficiency, words):
    with pytest.raises(CheckFailed, match="07.3") as err:
        check_ddp_gain(speedup, efficiency, SINGLE, DDP)
    assert words in str(err.value)


def test_dp_cost_passes_with_the_speedup_and_the_longer_step():
    result = check_dp_cost(1 / 1.1, 0.10, SINGLE, DP)
    assert result.exercise == "07.4" and "0.91x" in str(result) and "+10%" in str(result)


@pytest.mark.parametrize("speedup, overhead, words", [
    (1 / 1.1, 1.10, "the DP step time over the single step time, minus 1 is off"),  # the ratio without the -1
    (1.1, 0.10, "DP samples/s divided by the single run's samples/s is off"),
    (1 / 1.1, None, "No answer yet for 07.4"),
])
def test_dp_cost_fails_on_wrong_answers(speedup, overhead, words):
    with pytest.raises(CheckFailed, match="07.4") as err:
        check_dp_cost(speedup, overhead, SINGLE, DP)
    assert words in str(err.value)


def test_model_size_passes_with_both_ratios():
    result = check_model_size(8.0, 5.0, SINGLE, OTHER)
    assert result.exercise == "07.5" and "8.0x the parameters, 5.0x the step time" in str(result)


@pytest.mark.parametrize("params, times, words", [
    (1 / 8, 5.0, "how many times the base model's parameters the other has is off"),  # upside down
    (8.0, 8.0, "how many times the base model's step time the other takes is off"),  # assumed, not measured
    (None, 5.0, "No answer yet for 07.5"),
])
def test_model_size_fails_on_wrong_answers(params, times, words):
    with pytest.raises(CheckFailed, match="07.5") as err:
        check_model_size(params, times, SINGLE, OTHER)
    assert words in str(err.value)


def test_batch_size_passes_with_both_ratios():
    result = check_batch_size(1.5, 4 / 3, SINGLE, BIG_BATCH)
    assert result.exercise == "07.6" and "2x the batch: 1.50x the step time, 1.33x the samples/s" in str(result)


@pytest.mark.parametrize("times, rate, words", [
    (2.0, 4 / 3, "how many times the small batch's step time the large batch takes is off"),  # assumed proportional
    (1.5, 1.5, "how many times the small batch's samples/s the large batch reaches is off"),
    (1.5, None, "No answer yet for 07.6"),
])
def test_batch_size_fails_on_wrong_answers(times, rate, words):
    with pytest.raises(CheckFailed, match="07.6") as err:
        check_batch_size(times, rate, SINGLE, BIG_BATCH)
    assert words in str(err.value)
