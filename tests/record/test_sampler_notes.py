"""How a record was sampled reaches the report card: the recorder's sampler notes (an interval raised to the floor
or to a per-call tool's run time) and the launch's own note when it raised the asked interval to the floor, which
it does instead of passing on an interval the recorder would not keep. The readings are GENERATED (a stand-in with
amdsmi's API)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch.gpu_record import plan
from lumikit.record.card import open_records, report_card, sampler_notes
from lumikit.record.recorder import Recorder
from lumikit.smi.sources import MIN_INTERVAL_S
from lumikit.testing import fake_amdsmi

GPU_JOB = spec(["python", "train.py"], gpus_per_node=1)


def test_the_launch_raises_a_short_interval_to_the_recorders_floor_and_says_so():
    with pytest.warns(UserWarning, match="recorded every 0.5 s, the recorder's floor"):
        got = plan(GPU_JOB, interval=0.1)
    assert got["interval_s"] == MIN_INTERVAL_S == 0.5
    assert got["note"].startswith("interval 0.1 s asked; recorded every 0.5 s")
    assert plan(GPU_JOB, interval=0.5) == {"enabled": True, "interval_s": 0.5}  # the floor itself: no note
    assert plan(GPU_JOB, interval=2) == {"enabled": True, "interval_s": 2.0}


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 3601, True, "2"])
def test_no_interval_at_all_is_refused_with_the_range(bad):
    with pytest.raises(LaunchError, match=r"from 0.5 \(the recorder's floor\) to 3600"):
        plan(GPU_JOB, interval=bad)


def test_the_recorders_sampler_notes_are_on_the_card(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.1, library=fake_amdsmi)
    assert rec.run(max_samples=2) == 2
    card = report_card(open_records(tmp_path), {"site": "lumi"}, run="r")
    assert card.nodes["n1"]["notes"][0] == ("sampler (library): interval 0.1 s asked; sampled every 0.5 s, the "
                                            "recorder's floor")
    assert "    note: sampler (library): interval 0.1 s asked" in card.text()


def test_a_per_call_tools_notes_are_on_the_card(tmp_path: Path):
    tool = tmp_path / "slow_amd_smi.py"
    reading = [{"gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}},
                "usage": {"gfx_activity": {"value": 100, "unit": "%"}}}]
    tool.write_text(f"import time\ntime.sleep(0.6)\nprint({json.dumps(json.dumps(reading))})\n")
    rec = Recorder(tmp_path / "run", node="n1", interval=0.5, command=[sys.executable, str(tool)])
    assert rec.run(max_samples=2) == 2
    text = report_card(open_records(tmp_path / "run"), {"site": "lumi"}, run="r").text()
    assert "note: sampler (per-call): " in text and "is started once per sample" in text
    assert f"interval raised from 0.5 s to {rec.interval:g} s" in text


def test_the_launchs_record_note_is_on_the_card(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.5, library=fake_amdsmi)
    assert rec.run(max_samples=2) == 2
    with pytest.warns(UserWarning):
        manifest = {"site": "lumi", "gpu_record": plan(GPU_JOB, interval=0.2)}
    card = report_card(open_records(tmp_path), manifest, run="r")
    assert card.record_note.startswith("interval 0.2 s asked") and card.to_dict()["record_note"] == card.record_note
    assert card.text().splitlines()[1].startswith("  record note: interval 0.2 s asked; recorded every 0.5 s")


def test_sampler_notes_from_a_damaged_header_are_escaped_capped_or_absent():
    assert sampler_notes({}) == [] and sampler_notes({"sampler": "x"}) == []
    assert sampler_notes({"sampler": {"how": "stream", "notes": "not a list"}}) == []
    notes = sampler_notes({"sampler": {"how": "stream\x1b[2J", "notes": ["a\x1b]0;t\x07", 7, " ", "b" * 1000]}})
    assert notes[0] == "sampler (stream\\x1b[2J): a\\x1b]0;t\\x07" and len(notes) == 2
    assert len(notes[1]) < 340
    assert len(sampler_notes({"sampler": {"notes": ["n"] * 100}})) == 8
