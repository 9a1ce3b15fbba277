"""The capstone workload: the case token picks a variant from the learner's seed, each variant wastes time its own
way, and nothing the learner reads in its options names the cause."""
from __future__ import annotations

import argparse
import statistics

import pytest
import torch

from lumikit.workloads import capstone
from lumikit.workloads.trainer import Setup


def test_forty_learners_get_every_kind_dealt_and_each_keeps_theirs() -> None:
    cases = [capstone.case_for(f"learner-{i}", capstone.VARIANTS) for i in range(40)]
    assert {capstone.variant(c) for c in cases} == set(capstone.VARIANTS) == {"a", "b", "c", "d", "e"}
    assert cases == [capstone.case_for(f"learner-{i}", capstone.VARIANTS) for i in range(40)]  # stable
    assert len(set(cases)) == 40
    assert all(len(c) == 6 and c.isdigit() for c in cases)


def test_a_kind_not_dealt_here_is_never_drawn_and_the_others_keep_their_case() -> None:
    here = ("a", "b", "c")
    cases = [capstone.case_for(f"learner-{i}", here) for i in range(40)]
    assert {capstone.variant(c) for c in cases} == set(here)
    everywhere = [capstone.case_for(f"learner-{i}", capstone.VARIANTS) for i in range(40)]
    assert all(c == e for c, e in zip(cases, everywhere) if capstone.variant(e) in here)


@pytest.fixture
def no_kept_deal(monkeypatch):
    monkeypatch.setenv("LUMIKIT_PROGRESS", "off")


def test_the_deal_on_a_cpu_follows_the_probes_and_says_why_a_kind_is_not_dealt(no_kept_deal, monkeypatch) -> None:
    from lumikit.workloads import knobs

    monkeypatch.setattr(knobs, "precision_support", lambda precision, device: None)  # as a CPU with native bf16
    assert capstone.deal("laptop", probe=lambda: 2.0, cores_probe=lambda: 1.9).variants == capstone.VARIANTS
    slow = capstone.deal("laptop", probe=lambda: 1.1, cores_probe=lambda: 1.0)
    assert slow.variants == ("a", "b", "c")
    assert slow.not_here["d"].startswith("bf16 measured 1.10x the speed of fp32 on this CPU (under 1.7x)")
    assert "two threads measured 1.00x the speed of one" in slow.not_here["e"]
    monkeypatch.setattr(knobs, "precision_support", lambda precision, device: "this CPU has no native bf16")
    assert capstone.deal("laptop", probe=lambda: 9.0, cores_probe=lambda: 1.9).not_here == {
        "d": "this CPU has no native bf16"}


def test_on_lumi_every_kind_is_dealt_without_probing(no_kept_deal) -> None:
    def never() -> float:
        raise AssertionError("no probe on a site whose jobs get GCDs")

    assert capstone.deal("lumi", probe=never, cores_probe=never) == capstone.Deal(capstone.VARIANTS)


def test_the_first_deal_is_kept_so_a_restarted_kernel_keeps_its_case(tmp_path, monkeypatch) -> None:
    from lumikit.workloads import knobs

    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path))
    monkeypatch.delenv("LUMIKIT_PROGRESS", raising=False)
    monkeypatch.setattr(knobs, "precision_support", lambda precision, device: None)
    first = capstone.deal("laptop", probe=lambda: 1.0, cores_probe=lambda: 1.0)
    again = capstone.deal("laptop", probe=lambda: 9.0, cores_probe=lambda: 9.0)
    assert again == first and first.variants == ("a", "b", "c") and (tmp_path / capstone.DEAL_FILE).is_file()
    (tmp_path / capstone.DEAL_FILE).write_text("not json")  # unreadable: dealt again
    assert capstone.deal("laptop", probe=lambda: 9.0, cores_probe=lambda: 9.0).variants == capstone.VARIANTS


def test_the_probes_measure_positive_gains() -> None:
    assert capstone.parallel_gain(items=4, rounds=1) > 0
    assert capstone.bf16_gain(steps=1, batch=2) > 0


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


@pytest.fixture
def keep_affinity():
    """Variant "e" pins the process that builds it: give the test process its cores back."""
    import os

    cores = os.sched_getaffinity(0)
    yield cores
    os.sched_setaffinity(0, cores)


def test_variant_d_trains_a_wider_model_whose_steps_are_matrix_products(setup) -> None:
    args = _args("--case", _case("d"))
    task = capstone.build_task(args, setup)
    assert task.model.cfg.width == capstone.WIDE_WIDTH["cpu"] == 384 and task.model.cfg.heads == 6
    assert args.batch_size == capstone.DEFAULT_BATCH and task.info["cpus"] == "all"


def test_variant_d_honours_precision_like_every_run(tmp_path, capsys) -> None:
    import json

    from lumikit.workloads import knobs

    if knobs.precision_support("bf16", torch.device("cpu")) is not None:
        pytest.skip("no native bf16 here")
    assert capstone.main(["--model-size", "tiny", "--case", _case("d"), "--steps", "2", "--batch-size", "2",
                          "--no-progress", "--precision", "bf16", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "result.rank0.json").read_text())
    assert result["knobs"]["precision"] == "bf16" and result["parameters"] > 1_000_000


def test_variant_e_checks_each_sample_and_pins_itself_to_its_first_core(setup, keep_affinity, capsys) -> None:
    import os

    args = _args("--case", _case("e"))
    task = capstone.build_task(args, setup)
    assert isinstance(task.dataset, capstone.CheckedInput)
    assert torch.equal(task.dataset[3][0], task.dataset.inner[3][0])  # checked, not changed
    assert os.sched_getaffinity(0) == {min(keep_affinity)}
    assert (task.info["cpus"], task.info["cpu_cores"]) == (str(min(keep_affinity)), 1)
    assert f"cpus: runs on {min(keep_affinity)} (1 of the {len(keep_affinity)} cores it was given)" in capsys.readouterr().out
    os.sched_setaffinity(0, keep_affinity)
    fixed = _args("--case", _case("e"), "--cpus", "all")
    assert capstone.build_task(fixed, setup).info["cpu_cores"] == len(keep_affinity)
    assert os.sched_getaffinity(0) == keep_affinity


def test_only_variant_e_starts_worker_processes_by_default_and_the_command_line_wins() -> None:
    assert capstone.case_argv(["--case", _case("e")]) == ["--case", _case("e"), "--workers", "2"]
    assert capstone.case_argv(["--case", _case("e"), "--workers=0"]) == ["--case", _case("e"), "--workers=0"]
    assert capstone.case_argv(["--case", _case("a")]) == ["--case", _case("a")]


def test_cpus_outside_the_given_cores_are_refused_naming_the_option() -> None:
    from lumikit.errors import SpecError

    assert capstone.parse_cpus("0-2,5", {0, 1, 2, 3, 4, 5}) == {0, 1, 2, 5}
    assert capstone.parse_cpus("all", {4, 5}) == {4, 5}
    with pytest.raises(SpecError, match="--cpus.*not within the cores this run was given \\(4-5\\)"):
        capstone.parse_cpus("0", {4, 5})
    with pytest.raises(SpecError, match="--cpus.*cannot read"):
        capstone.parse_cpus("first", {4, 5})


def test_the_simulated_step_setup_is_paid_on_a_cpu_only(monkeypatch) -> None:
    slept = []
    monkeypatch.setattr(capstone.time, "sleep", slept.append)
    forward = capstone._logging_forward(lambda m, b, d: None, every=0, copy_out=False, log={})
    forward(None, 0, torch.device("cpu"))
    forward(None, 0, torch.device("cuda"))  # the forward is a stub: nothing runs on a GPU
    assert slept == [capstone.STEP_SETUP_S]


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
