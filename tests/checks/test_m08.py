"""Module 08's checks pass on right answers and fail, naming the exercise, on wrong ones and on the stub's None."""
from __future__ import annotations

import pytest

import lumikit.checks.m08 as m08
from lumikit.checks import CheckFailed
from lumikit.jobs import spec

HEAD = "nid005001:40121:40121 [7] NCCL INFO "
GDR_LOG = "".join(HEAD + line + "\n" for line in (
    "NET/OFI Using aws-ofi-rccl 1.4.0",
    "NCCL_NET_GDR_LEVEL set by environment to PHB",
    "Channel 00/0 : 7[d1000] -> 8[c1000] [send] via NET/AWS Libfabric/0/GDRDMA",
))
MIOPEN_LOG = "MIOpen Error: /src/MIOpen/src/sqlite_db.cpp:220: Internal error while accessing SQLite database: locking protocol\n"
TWO_NODES = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                 cpus_per_task=7, exclusive=True, cpu_bind="auto")


@pytest.fixture
def task_11(monkeypatch):
    monkeypatch.setattr(m08, "task_to_study", lambda tasks_per_node=8: 11)


def test_task_mask_of_task_11_is_gcd_3s(task_11):
    assert m08.check_task_mask("0x00000000fe000000").exercise == "08.1"
    assert m08.check_task_mask(0xfe000000)  # an int with the same bits is the same mask


@pytest.mark.parametrize("wrong", ["0x0000fe0000000000", "0xfe00000000000000", "cores 25-31"])
def test_task_mask_rejects_other_masks(task_11, wrong):
    with pytest.raises(CheckFailed, match="Exercise 08.1"):
        m08.check_task_mask(wrong)


def test_each_learner_gets_a_task_on_the_second_node(monkeypatch):
    tasks = set()
    for learner in ("ada", "bob", "cy", "dan", "eve", "fay", "gus"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        tasks.add(m08.task_to_study())
    assert len(tasks) > 2 and tasks <= set(range(9, 16))


def test_task_mask_unanswered():
    with pytest.raises(CheckFailed, match="No answer yet for 08.1"):
        m08.check_task_mask(None)


def test_gdr_recipe_is_found_in_the_site_profile():
    assert m08.gdr_recipes() == ["rccl-gdr"]


def test_gdr_passes_on_the_recipe_and_the_transport_line():
    assert m08.check_gdr("rccl-gdr", 3, GDR_LOG).exercise == "08.2"


@pytest.mark.parametrize("recipe, line, words", [
    ("rccl", 3, "GPU-direct RDMA"),          # a real recipe, but not the GDR one
    ("rccl-gdr", 2, "first line that proves"),  # the line echoing the variable is not the proof
    ("rccl-gdr", 99, "outside the log"),
])
def test_gdr_fails_on_wrong_answers(recipe, line, words):
    with pytest.raises(CheckFailed, match=f"Exercise 08.2.*{words}"):
        m08.check_gdr(recipe, line, GDR_LOG)


def test_gdr_unanswered():
    with pytest.raises(CheckFailed, match="No answer yet for 08.2"):
        m08.check_gdr(None, None, GDR_LOG)


def test_miopen_fix_is_the_miopen_recipe():
    assert m08.check_miopen_fix("miopen", MIOPEN_LOG).exercise == "08.3"
    with pytest.raises(CheckFailed, match="Exercise 08.3.*moves MIOpen"):
        m08.check_miopen_fix("caches", MIOPEN_LOG)
    with pytest.raises(CheckFailed, match="No answer yet for 08.3"):
        m08.check_miopen_fix(None, MIOPEN_LOG)


def test_profile_one_rank_on_the_second_node():
    good = TWO_NODES.with_(profile="rocprof", profile_ranks=(14,), profile_steps=32)
    assert m08.check_profile_one_rank(good).exercise == "08.4"
    with pytest.raises(CheckFailed, match="cold steps"):
        m08.check_profile_one_rank(good.with_(profile_steps=1))
    with pytest.raises(CheckFailed, match="trace of gigabytes"):
        m08.check_profile_one_rank(good.with_(profile_steps=1000))
    with pytest.raises(CheckFailed, match="08.4: the job does not stop after a few steps"):
        m08.check_profile_one_rank(good.with_(profile_steps=None))


@pytest.mark.parametrize("changes, words", [
    ({"profile": "rocprof", "profile_ranks": ()}, "exactly one rank"),  # empty = every rank
    ({"profile": "rocprof", "profile_ranks": (3,)}, "not on the second node"),
    ({"profile": "torch", "profile_ranks": (14,)}, "profiling mode"),
    ({"profile": "rocprof", "profile_ranks": (14, 15)}, "exactly one rank"),
])
def test_profile_one_rank_fails_on_wrong_specs(changes, words):
    with pytest.raises(CheckFailed, match=f"Exercise 08.4.*{words}"):
        m08.check_profile_one_rank(TWO_NODES.with_(**changes))


def test_profile_one_rank_unanswered():
    with pytest.raises(CheckFailed, match="No answer yet for 08.4"):
        m08.check_profile_one_rank(None)
