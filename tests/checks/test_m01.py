"""Module 01 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None."""
from __future__ import annotations

import numpy as np
import pytest

from lumikit.checks import m01

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m01 import (
    check_full_node_job,
    check_gcd_neighbours,
    check_rejected_job,
)
from lumikit.jobs import spec
from lumikit.site import load_site

LUMI = load_site("lumi")
FULL = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
            cpus_per_task=7, cpu_bind="auto")
MASKS_IN_GCD_ORDER = ["0x00fe000000000000", "0xfe00000000000000", "0x0000000000fe0000", "0x00000000fe000000",
                      "0x00000000000000fe", "0x000000000000fe00", "0x000000fe00000000", "0x0000fe0000000000"]
REJECTED = spec(["python", "train.py"], partition="small-g", ntasks_per_node=8, gpus_per_node=8, cpus_per_task=8)


def test_full_node_job_passes_with_the_profile_masks_in_gcd_order():
    assert MASKS_IN_GCD_ORDER == LUMI.node.masks()
    result = check_full_node_job(FULL, MASKS_IN_GCD_ORDER)
    assert isinstance(result, Passed) and result.exercise == "01.1"
    assert "0x00fe000000000000" in str(result)


@pytest.mark.parametrize("job, masks, words", [
    (FULL, sorted(MASKS_IN_GCD_ORDER), "the masks in GCD order"),          # sorted by value: not GCD order
    (FULL.with_(nodes=1), MASKS_IN_GCD_ORDER, "the number of nodes"),
    (FULL.with_(ntasks_per_node=1, cpus_per_task=56), MASKS_IN_GCD_ORDER, "tasks per node"),
    (FULL.with_(partition="small-g"), MASKS_IN_GCD_ORDER, "LUMI would reject"),  # masks on a shared partition
    (None, MASKS_IN_GCD_ORDER, "No answer yet for 01.1"),
    (FULL, None, "01.1"),
])
def test_full_node_job_fails_on_wrong_answers(job, masks, words):
    with pytest.raises(CheckFailed, match="01.1") as err:
        check_full_node_job(job, masks)
    assert words in str(err.value)


def test_gcd_neighbours_come_from_the_profile_not_from_k_times_8(monkeypatch):
    monkeypatch.setattr(m01, "gcd_to_study", lambda: 2)
    assert "NUMA 1, cores 17-23" in str(check_gcd_neighbours([17, 18, 19, 20, 21, 22, 23], 1))
    with pytest.raises(CheckFailed, match="Exercise 01.2: the cores next to GCD 2 is not right"):
        check_gcd_neighbours(list(range(16, 24)), 1)
    with pytest.raises(CheckFailed, match="Exercise 01.2: the NUMA domain of GCD 2 is not right"):
        check_gcd_neighbours(list(range(17, 24)), 0)
    with pytest.raises(CheckFailed, match="No answer yet for 01.2"):
        check_gcd_neighbours(None, None)
    monkeypatch.setattr(m01, "gcd_to_study", lambda: 0)
    assert check_gcd_neighbours(range(49, 56), 3)
    assert check_gcd_neighbours(np.arange(49, 56), np.int64(3))  # numpy's numbers (idxmax, arange) are numbers


def test_masks_are_accepted_with_or_without_0x(monkeypatch):
    masks = load_site("lumi").node.masks()
    assert check_full_node_job(FULL, [m.removeprefix("0x") for m in masks])
    assert check_full_node_job(FULL, [m.upper().replace("0X", "0x") for m in masks])


def test_each_learner_studies_their_own_gcd(monkeypatch):
    chosen = set()
    for learner in ("ada", "bob", "cy", "dan", "eve", "fay", "gus"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        chosen.add(m01.gcd_to_study())
    assert len(chosen) > 2 and chosen <= set(range(8))


def test_rejected_job_names_the_field_and_a_fix_that_keeps_the_shape():
    result = check_rejected_job("cpus_per_task", REJECTED.with_(cpus_per_task=7), REJECTED)
    assert "cpus_per_task" in str(result)
    with pytest.raises(CheckFailed, match="01.3: the field at fault is not one of"):
        check_rejected_job("gpus_per_node", REJECTED.with_(cpus_per_task=7), REJECTED)
    with pytest.raises(CheckFailed, match="01.3: `gpus_per_node` of the fixed job is not right"):
        # accepted by LUMI, but it is a smaller job than the one asked for
        check_rejected_job("cpus_per_task", REJECTED.with_(ntasks_per_node=7, gpus_per_node=7, cpus_per_task=7),
                           REJECTED)
    with pytest.raises(CheckFailed, match="01.3: the cores per task of the fixed job are not right; "
                                          "you gave 1\\."):
        check_rejected_job("cpus_per_task", REJECTED.with_(cpus_per_task=1), REJECTED)  # LUMI takes it, cores idle
    with pytest.raises(CheckFailed, match="01.3: the cores per task of the fixed job are not right; "
                                          "you gave None"):
        check_rejected_job("cpus_per_task", REJECTED.with_(cpus_per_task=None), REJECTED)
    with pytest.raises(CheckFailed, match="01.3: the fixed job is still rejected"):
        check_rejected_job("cpus_per_task", REJECTED, REJECTED)
    with pytest.raises(CheckFailed, match="No answer yet for 01.3"):
        check_rejected_job(None, None, REJECTED)
