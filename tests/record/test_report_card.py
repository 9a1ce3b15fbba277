"""The report card on small sessions whose numbers are computed by hand."""
from __future__ import annotations

import json

import pytest

from lumikit.json_output import to_json
from lumikit.record.card import J_PER_KWH, energy_counters, report_card
from lumikit.smi.sessions import Frame, Session, SessionHeader
from lumikit.smi.synth import Gcd, rocm_json

STARTED = 1000.0


def one_busy_gcd(power_w: float, busy: int = 100) -> str:
    """rocm-smi --json of one MI250X: GCD 0 computing at ``power_w`` (package power), GCD 1 idle at 800 MHz."""
    return rocm_json([Gcd(0, 50.0, power_w, 500.0, 1650, busy, 50), Gcd(1, 40.0, None, 0.0, 800, 0, 0)])


def session(powers=(300.0, 320.0, 340.0), name="nid005001", kind="recorded") -> Session:
    frames = [Frame(t=2.0 * i, stdout=one_busy_gcd(p)) for i, p in enumerate(powers)]
    return Session(SessionHeader(name=name, kind=kind, interval_s=2.0, started=STARTED, source="rocm-smi --json"),
                   frames)


MANIFEST = {"site": "lumi", "elapsed_s": 36, "billing_actual": {"gpu_hours": 0.01},
            "billing_estimate": {"gpu_hours": 0.5}, "gpu_record": {"enabled": True, "interval_s": 2.0}}


def test_per_gcd_numbers_equal_the_hand_computed_ones():
    card = report_card({"nid005001": session()}, MANIFEST, run="r")
    gcd0, gcd1 = card.rows
    assert (gcd0.node, gcd0.gcd, gcd0.samples, gcd1.gcd) == ("nid005001", 0, 3, 1)
    assert (gcd0.busy_mean_pct, gcd0.busy_max_pct, gcd1.busy_max_pct) == (100.0, 100.0, 0.0)
    assert (gcd0.power_mean_w, gcd0.power_max_w) == (320.0, 340.0)
    assert gcd1.power_mean_w is None and gcd1.power_note == "on GCD 0"  # the package power is on the even GCD
    # trapezoid: 2 s x (300 + 320) / 2 + 2 s x (320 + 340) / 2 = 620 + 660
    assert gcd0.energy_j == pytest.approx(1280.0) and gcd0.energy_kwh == pytest.approx(1280.0 / 3.6e6)
    assert "integrated" in gcd0.energy_source and gcd1.energy_j is None
    # 50 % of 64 GiB plus the 11 MB the generator adds as a driver's baseline (a record keeps whole MiB)
    assert gcd0.vram_peak_gib == pytest.approx(32 + 11e6 / 2**30, abs=1 / 1024) and gcd0.vram_peak_pct == 50.0
    assert (gcd0.sclk_mean_mhz, gcd1.sclk_max_mhz) == (1650.0, 800.0)
    # busy at >= 225 W in all 3 samples: the window (no job times: the record's span, 0 to 4 s) is all computing
    assert (gcd0.computing_s, gcd1.computing_s) == (4.0, 0.0)


def test_billed_gpu_hours_stand_beside_the_computing_ones():
    b = report_card({"nid005001": session()}, MANIFEST).billing
    assert b["billed_gpu_hours"] == 0.01 and "36 s" in b["billed_from"]
    assert b["computing_gpu_hours"] == pytest.approx(4.0 / 3600 * 0.5)  # LUMI: 0.5 GPU-hours per GCD-hour


def test_findings_name_the_idle_half_of_the_package():
    card = report_card({"nid005001": session()}, MANIFEST)
    kinds = {(f["kind"], tuple(f["devices"])) for f in card.findings}
    assert ("one-gcd-of-package", (0, 1)) in kinds and ("idle", (1,)) in kinds


def test_busy_without_power_is_not_counted_as_computing():
    card = report_card({"n": session(powers=(110.0, 110.0, 110.0))}, MANIFEST)
    assert card.rows[0].computing_s == 0.0
    assert "busy-without-power" in {f["kind"] for f in card.findings}


def test_phases_from_markers_and_steps_from_a_workloads_metrics():
    markers = [{"time": STARTED + 0.0, "name": "load", "rank": 0, "node": "nid005001"},
               {"time": STARTED + 2.0, "name": "train", "rank": 0, "node": "nid005001"},
               {"time": STARTED + 2.5, "name": "train", "rank": 1, "node": "nid005001"}]
    steps = [{"step": 1, "time": STARTED + 2.0, "step_time_s": 2.0}, {"step": 2, "time": STARTED + 4.0,
                                                                     "step_time_s": 2.0}]
    card = report_card({"nid005001": session()}, MANIFEST, markers, steps)
    load, train = card.phases
    assert (load["name"], load["duration_s"], load["energy_j"], load["mean_power_w"]) == ("load", 2.0, 620.0, 310.0)
    assert (train["name"], train["start_s"], train["energy_j"], train["mean_power_w"]) == ("train", 2.0, 660.0,
                                                                                           330.0)
    assert card.steps["steps"] == 2 and card.steps["energy_per_step_j"] == pytest.approx(640.0)
    assert card.steps["mean_power_w"] == pytest.approx(320.0)
    assert "phase 'train': 2.0 s, 660 J, mean 330 W" in card.text()


def amd_metric(power: float, joules: float) -> str:
    return json.dumps([{"gpu": 0, "power": {"socket_power": {"value": power, "unit": "W"}},
                        "usage": {"gfx_activity": {"value": 100, "unit": "%"}},
                        "energy": {"total_energy_consumption": {"value": joules, "unit": "J"}}}])


def test_energy_comes_from_the_tools_counter_where_it_prints_one():
    assert energy_counters(amd_metric(300, 12.5)) == {0: 12.5}
    assert energy_counters(one_busy_gcd(300)) == {}
    frames = [Frame(0.0, amd_metric(300, 5000.0)), Frame(2.0, amd_metric(300, 5900.0))]
    sess = Session(SessionHeader(name="n", kind="recorded", started=STARTED, source="amd-smi metric --json"), frames)
    whole_node = {**MANIFEST, "spec": {"partition": "standard-g"}}  # the job owns every package of its node
    row = report_card({"n": sess}, whole_node).rows[0]
    assert row.energy_j == 900.0 and row.energy_kwh == 900.0 / J_PER_KWH  # not the 600 J the power would give
    assert "counter" in row.energy_source and "amd-smi" in row.energy_source
    # the same GPU as the only GCD of a small-g job: its package's other GCD is not the job's
    shared = report_card({"n": sess}, MANIFEST)
    assert shared.rows[0].energy_j is None and shared.rows[0].power_note.startswith(
        "package power includes GCDs outside this job")
    assert shared.packages[0].energy_j == 900.0 and shared.packages[0].outside == [1]


def test_generated_readings_say_so_and_the_json_is_standard():
    card = report_card({"nid005001": session(kind="generated")}, MANIFEST)
    assert "GENERATED readings" in card.text()
    text, notes = to_json(card.to_dict())
    assert json.loads(text)["nodes"]["nid005001"]["kind"] == "generated" and notes == []


def test_a_record_without_readings_says_why():
    absent = Session(SessionHeader(name="laptop", kind="absent",
                                   description="none of amd-smi, rocm-smi, nvidia-smi was found on PATH on node "
                                               "laptop: nothing was sampled, nothing is invented"))
    card = report_card({"laptop": absent}, MANIFEST, run="r")
    assert card.text().startswith("r: no GPU record: none of amd-smi") and card.rows == []
    off = report_card({}, {"gpu_record": {"enabled": False, "why": "the job asks for no GPUs"}}, run="r")
    assert off.absent == "the record was off: the job asks for no GPUs"


def test_a_node_without_a_tool_beside_one_with_a_tool_is_said_not_filled_in():
    absent = Session(SessionHeader(name="nid005002", kind="absent", description="none of amd-smi, rocm-smi, "
                                   "nvidia-smi was found on PATH on node nid005002: nothing was sampled"))
    card = report_card({"nid005001": session(), "nid005002": absent}, MANIFEST)
    assert {r.node for r in card.rows} == {"nid005001"}
    assert "  nid005002: no GPU record: none of amd-smi" in card.text()
    assert card.to_dict()["nodes"]["nid005002"]["kind"] == "absent"


def test_a_phase_shorter_than_the_interval_is_interpolated_between_samples():
    markers = [{"time": STARTED + 1.0, "name": "a"}, {"time": STARTED + 1.5, "name": "b"}]
    a, b = report_card({"nid005001": session()}, MANIFEST, markers).phases
    # power 300 W at 0 s and 320 W at 2 s: 310 W at 1.0 s, 315 W at 1.5 s
    assert a["energy_j"] == pytest.approx(0.5 * (310 + 315) / 2) and a["mean_power_w"] == pytest.approx(312.5)
    # 1.5 s to the record's end at 4 s: 0.5 x (315 + 320) / 2 + 2 x (320 + 340) / 2
    assert b["energy_j"] == pytest.approx(158.75 + 660.0)
