"""Module 03 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None."""
from __future__ import annotations

import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m03 import (
    check_resume,
    check_steps_in_limit,
    check_time_limit,
    check_warm_step_time,
)
from lumikit.errors import LumikitError

# A first step paying for warm-up, then steady steps of about 50 ms (median 0.050 s, mean 0.0505 s).
STEP_TIMES = [0.400, 0.050, 0.048, 0.052, 0.050, 0.053, 0.050]
TIME_LIMIT_LOG = ("lm:  62%|######1   | 620/1000 [14:41<09:00,  0.70step/s, loss=1.88]\n"
                  "slurmstepd: error: *** JOB 99 ON nid005077 CANCELLED AT 2025-05-27T11:03:44 DUE TO TIME LIMIT ***\n")


def test_warm_step_time_passes_with_the_median_or_the_mean_of_the_steps_after_the_first():
    result = check_warm_step_time(0.050, 0.350, STEP_TIMES)
    assert isinstance(result, Passed) and result.exercise == "03.1"
    assert "50.0 ms" in str(result) and "+350.0 ms" in str(result)
    assert check_warm_step_time(0.0505, 0.3495, STEP_TIMES)


@pytest.mark.parametrize("warm, overhead, words", [
    (sum(STEP_TIMES) / len(STEP_TIMES), 0.35, "the mean of every step, the cold first step in it"),
    (0.050, 0.400, "the first step's overhead (s) is off"),                    # step 1's time, not the difference
    (None, None, "No answer yet for 03.1"),
    (0.050, None, "No answer yet for 03.1"),
    ("fast", 0.35, "should be a number"),
])
def test_warm_step_time_fails_on_wrong_answers(warm, overhead, words):
    with pytest.raises(CheckFailed, match="03.1") as err:
        check_warm_step_time(warm, overhead, STEP_TIMES)
    assert words in str(err.value)


def test_the_mean_with_the_cold_step_is_refused_even_when_the_cold_step_is_barely_slower():
    mild = [0.0530, 0.050, 0.048, 0.052, 0.050, 0.053, 0.050]  # mean of all within 1 % of the warm mean
    with pytest.raises(CheckFailed, match="cold first step"):
        check_warm_step_time(sum(mild) / len(mild), 0.0025, mild)
    assert check_warm_step_time(sum(mild[1:]) / 6, mild[0] - sum(mild[1:]) / 6, mild)


def test_warm_step_time_needs_a_few_measured_steps():
    with pytest.raises(LumikitError, match="more --steps"):
        check_warm_step_time(0.05, 0.3, [0.4, 0.05])


def test_resume_passes_with_the_first_step_after_the_checkpoint_and_the_steps_trained():
    result = check_resume(13, 12, range(1, 13), range(13, 25))
    assert "checkpoint held step 12" in str(result) and "steps 13-24" in str(result)


@pytest.mark.parametrize("continued_at, steps_trained, words", [
    (1, 12, "started afresh"),
    (12, 12, "the first step of the resumed job is not right; you gave 12. It looks like the checkpoint's own step"),
    (13, 24, "the number of steps the resumed job trained is not right"),  # the total, not this job's share
    (13.0, 12, "has the wrong type"),
    (None, None, "No answer yet for 03.2"),
])
def test_resume_fails_on_wrong_answers(continued_at, steps_trained, words):
    with pytest.raises(CheckFailed, match="03.2") as err:
        check_resume(continued_at, steps_trained, range(1, 13), range(13, 25))
    assert words in str(err.value)


def test_steps_in_limit_is_the_budget_over_the_warm_step_time():
    # (15 min - 60 s) / 0.050 s = 16800 steps
    assert "16,800 steps fit in 840 s" in str(check_steps_in_limit(16800, STEP_TIMES))
    assert check_steps_in_limit(16633, STEP_TIMES)  # with the mean step time: 840 / 0.0505
    assert "3,540" in str(check_steps_in_limit(3540, STEP_TIMES, time_limit="0:03:00", reserve_s=3))


@pytest.mark.parametrize("answer, words", [
    (18000, "the reserve for start-up and the checkpoint is left out"),
    (16634, "rounded up"),                        # 840 / 0.0505 = 16633.7, rounded up
    (2100, "the number of steps is off"),         # the first step's time
    (16800.0, "has the wrong type"),
    (None, "No answer yet for 03.3"),
])
def test_steps_in_limit_fails_on_wrong_answers(answer, words):
    with pytest.raises(CheckFailed, match="03.3") as err:
        check_steps_in_limit(answer, STEP_TIMES)
    assert words in str(err.value)


def test_time_limit_is_the_doctors_signature_and_the_timeout_state():
    assert "TIMEOUT" in str(check_time_limit("time-limit", "TIMEOUT", TIME_LIMIT_LOG))


@pytest.mark.parametrize("signature, state, words", [
    ("job-cancelled", "TIMEOUT", "the log doctor's signature id is not right; you gave 'job-cancelled'"),
    ("time-limit", "CANCELLED", "the state of a job stopped at its time limit is not right"),
    ("time-limit", "TIMED_OUT", "is not one of the possible answers"),
    (None, "TIMEOUT", "No answer yet for 03.4"),
    ("time-limit", None, "No answer yet for 03.4"),
])
def test_time_limit_fails_on_wrong_answers(signature, state, words):
    with pytest.raises(CheckFailed, match="03.4") as err:
        check_time_limit(signature, state, TIME_LIMIT_LOG)
    assert words in str(err.value)
