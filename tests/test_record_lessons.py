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


def _run_folder(tmp_path, site_in_header: str, kind: str = "recorded"):
    """A packed run folder: manifest naming a shipped site, one node's compact record whose header names a site
    file of the machine it ran on (gone here), as `lumikit reference add` leaves one."""
    import json

    from lumikit.smi.readings import frame_text
    from lumikit.smi.sessions import write_session

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "manifest.json").write_text(json.dumps({"site": "nvidia-h100", "state": "COMPLETED"}))
    frames = [Frame(t=0.5 * i, stdout=frame_text({"r": [[busy, watts, 1980, 2619, 40, 4]]}))
              for i, (busy, watts) in enumerate([(0, 72.6), (86, 450.0), (10, 216.3)])]
    header = SessionHeader(name="vm", kind=kind, interval_s=0.5, started=STARTED, source="library:pynvml",
                           site=site_in_header)
    write_session(Session(header, frames), tmp_path / "gpu" / "vm.jsonl")
    return tmp_path


def test_a_packed_record_from_another_machine_is_drawn_with_the_manifests_site(tmp_path):
    from lumikit.plotting import is_marked_generated
    from lumikit.record.lesson import record_snapshots, record_timeline

    run = _run_folder(tmp_path, site_in_header="/elsewhere/benchmarks/nvidia-h100.toml")
    snaps, kind = record_snapshots(run)
    assert kind == "recorded" and [s.timestamp for s in snaps] == [0.0, 0.5, 1.0]
    assert [(s.devices[0].gpu_busy_pct, s.devices[0].power_w) for s in snaps] == [(0, 72.6), (86, 450.0),
                                                                                  (10, 216.3)]
    fig = record_timeline(run, "recorded on an NVIDIA H100 (not LUMI's MI250X)")
    power, busy = fig.axes[0].lines[0], fig.axes[1].lines[0]
    assert list(power.get_ydata()) == [72.6, 450.0, 216.3] and list(busy.get_ydata()) == [0, 86, 10]
    assert fig._suptitle.get_text() == "recorded on an NVIDIA H100 (not LUMI's MI250X)"
    assert not is_marked_generated(fig)


def test_a_generated_record_is_marked_and_a_folder_without_one_is_named(tmp_path):
    from lumikit.errors import LumikitError
    from lumikit.plotting import is_marked_generated
    from lumikit.record.lesson import record_timeline

    assert is_marked_generated(record_timeline(_run_folder(tmp_path / "g", "lumi", kind="generated"), "t"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LumikitError, match="no GPU record"):
        record_timeline(tmp_path / "empty", "t")
    with pytest.raises(LumikitError, match="no record of node 'nid1'; its record has vm"):
        record_timeline(tmp_path / "g", "t", node="nid1")
