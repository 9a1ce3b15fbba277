"""What modules 04 and 07 show from GPU records: the learner's own card or a labelled generated one, a predicted
energy against the measured one, and energy per step and per sample side by side (numbers computed by hand)."""
from __future__ import annotations

import shutil
import sys

import pandas as pd
import pytest

from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.record.card import report_card
from lumikit.record.lesson import card_or_generated, energy_check, energy_per_step
from lumikit.smi.sessions import Frame, Session, SessionHeader
from lumikit.smi.synth import Gcd, rocm_json

STARTED = 1000.0


def package_at(power_w: float) -> str:
    """rocm-smi --json of one MI250X: GCD 0 computing at ``power_w`` (the package's power), GCD 1 idle."""
    return rocm_json([Gcd(0, 50.0, power_w, 500.0, 1650, 100, 50), Gcd(1, 40.0, None, 0.0, 800, 0, 0)])


def recorded(powers=(300.0, 320.0, 340.0), kind="recorded") -> Session:
    frames = [Frame(t=2.0 * i, stdout=package_at(p)) for i, p in enumerate(powers)]
    return Session(SessionHeader(name="nid005001", kind=kind, interval_s=2.0, started=STARTED,
                                 source="rocm-smi --json"), frames)


STEPS = [{"step": 1, "time": STARTED + 2.0, "step_time_s": 2.0}, {"step": 2, "time": STARTED + 4.0, "step_time_s": 2.0}]


def test_a_prediction_stands_beside_the_measured_energy():
    card = report_card({"nid005001": recorded()}, {"site": "lumi"}, run="r")
    table = energy_check(card, watts_per_package=300)
    row = table.loc["nid005001"]
    # measured: (300+320)/2 * 2 s + (320+340)/2 * 2 s = 1280 J; predicted: 300 W x 1 package x 4 s = 1200 J
    assert (row["packages"], row["seconds"], row["predicted kJ"], row["measured kJ"]) == (1, 4.0, 1.2, 1.28)
    assert row["measured / predicted"] == pytest.approx(1.07)
    assert row["readings"] == "recorded"


def test_energy_per_sample_divides_the_step_energy_by_the_global_batch():
    with_steps = report_card({"nid005001": recorded()}, {"site": "lumi"}, (), STEPS, run="single")
    generated = report_card({"nid005001": recorded(kind="generated")}, {"site": "lumi"}, (), STEPS, run="ddp")
    absent = report_card({}, {"site": "laptop", "gpu_record": {"enabled": True}}, run="dp")
    table = energy_per_step({"single": with_steps, "ddp": generated, "dp": absent},
                            {"single": {"global_batch_size": 8, "steps": 2}, "ddp": {"global_batch_size": 16},
                             "dp": {"steps": 2}})
    # the steps' window is 0-4 s: 1280 J over 2 steps = 640 J per step, 80 J per sample at a global batch of 8
    assert table.loc["single", ["readings", "steps", "J per step", "J per sample"]].tolist() == ["recorded", 2, 640.0,
                                                                                                  80.0]
    assert table.loc["ddp", "readings"] == "generated" and table.loc["ddp", "J per sample"] == 40.0
    assert table.loc["dp", "readings"] == "none" and pd.isna(table.loc["dp", "J per step"])
    assert "no gpu/<node>.jsonl" in table.loc["dp", "why not"]


def test_a_laptop_run_without_a_gpu_tool_shows_the_generated_session_and_says_so(tmp_path, monkeypatch):
    if any(shutil.which(t) for t in ("amd-smi", "rocm-smi", "nvidia-smi")):
        pytest.skip("this machine has a GPU tool: its run has a real record")
    run = launch(spec([sys.executable, "-c", "print('hello')"], gpus_per_node=1, time="0:05:00"), site="laptop",
                 runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    card, where = card_or_generated(run)
    assert where.startswith("your run has no GPU record (none of amd-smi, rocm-smi, nvidia-smi was found")
    assert "the GENERATED session ddp-8gcd-starved" in where
    assert {info["kind"] for info in card.nodes.values()} == {"generated"} and len(card.rows) == 8
