"""The capstone workload: the case token picks a variant from the learner's seed, each variant wastes time its own
way, and nothing the learner reads in its options names the cause."""
from __future__ import annotations

import argparse
import statistics

import pytest
import torch

from lumikit.workloads import capstone
from lumikit.workloads.trainer import Setup


def test_twenty_learners_get_at_least_three_variants_and_each_keeps_theirs() -> None:
    cases = [capstone.case_for(f"learner-{i}") for i in range(20)]
    assert len({capstone.variant(c) for c in cases}) == 3
    assert cases == [capstone.case_for(f"learner-{i}") for i in range(20)]  # stable: the same learner, the same case
    assert len(set(cases)) == 20
    assert all(len(c) == 6 and c.isdigit() for c in cases)


def test_the_options_the_learner_reads_name_no_cause() -> None:
    text = capstone.parser().format_help().lower()
    own = text[text.index("\n  --case"):text.index("speed knobs")]
    for word in ("slow", "delay", "sync", "bottleneck", "loader", "readback", "small", "input"):
        assert word not in own, word


def _args(*argv: str) -> argparse.Namespace:
    return capstone.parser().parse_args(["--model-size", "tiny", *argv])


def _case(kind: str) -> str:
    return next(f"{i:06d}" for i in range(1000) if capstone.variant(f"{i:06d}") == kind)


@pytest.fixture
def setup(monkeypatch) -> Setup:
    from lumikit.workloads.trainer import setup_process

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    return setup_process(_args("--device", "cpu"))


def test_each_variant_builds_its_own_task(setup) -> None:
    a = capstone.build_task(_args("--case", _case("a")), setup)
    assert isinstance(a.dataset, capstone.SlowInput) and a.info["case"] == _case("a")
    b_args = _args("--case", _case("b"))
    b = capstone.build_task(b_args, setup)
    assert not isinstance(b.dataset, capstone.SlowInput) and b_args.batch_size == capstone.DEFAULT_BATCH
    c_args = _args("--case", _case("c"))
    capstone.build_task(c_args, setup)
    assert c_args.batch_size == capstone.SMALL_BATCH
    given = _args("--case", _case("c"), "--batch-size", "32")
    capstone.build_task(given, setup)
    assert given.batch_size == 32  # a batch size on the command line always wins


def test_the_weights_summary_is_the_same_number_either_way() -> None:
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]))
        model.bias.copy_(torch.tensor([0.5, -0.5]))
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5, 0.5]
    expected = {"median_abs": 2.0, "std_abs": statistics.pstdev(values)}  # median: the lower middle, as torch's
    for copy_out in (True, False):
        assert capstone._summary(model, copy_out=copy_out) == pytest.approx(expected)


def test_the_summary_runs_every_n_steps_only(monkeypatch) -> None:
    monkeypatch.setattr(capstone, "STEP_SETUP_S", 0.0)
    summaries = []
    monkeypatch.setattr(capstone, "_summary", lambda model, copy_out: summaries.append(copy_out) or {"median_abs": 0.5})
    seen, log = [], {}
    forward = capstone._logging_forward(lambda m, b, d: seen.append(b), every=3, copy_out=True, log=log)
    for step in range(7):
        forward(torch.nn.Linear(2, 1), step, torch.device("cpu"))
    assert seen == list(range(7)) and summaries == [True, True]  # steps 3 and 6
    assert log == {"weights": {"median_abs": 0.5}}
    never = capstone._logging_forward(lambda m, b, d: None, every=0, copy_out=True, log={})
    never(torch.nn.Linear(2, 1), 0, torch.device("cpu"))
    assert summaries == [True, True]
