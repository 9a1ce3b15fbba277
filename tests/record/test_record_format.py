"""The record file: a session that read_session reads, written by the recorder one line at a time."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lumikit.record import read_record, record_files
from lumikit.record.card import card_of_run
from lumikit.smi.parse import parse_smi
from lumikit.record.recorder import Recorder
from lumikit.smi.sessions import read_session
from lumikit.testing.fake_rocm_smi import READING

STAND_IN = [sys.executable, "-m", "lumikit.testing.fake_rocm_smi"]


def test_a_recording_keeps_numbers_per_gcd_and_the_first_raw_output(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_GPUS", raising=False)
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    rec = Recorder(tmp_path, node="nid000042", interval=0.05, command=STAND_IN, kind="generated", site="lumi")
    assert rec.run(max_samples=3) == 3
    assert record_files(tmp_path) == [tmp_path / "gpu" / "nid000042.jsonl"]
    sess = read_record(tmp_path)["nid000042"]
    assert (sess.header.name, sess.header.kind, sess.header.site) == ("nid000042", "generated", "lumi")
    assert sess.header.source == " ".join(STAND_IN) and sess.header.started == pytest.approx(rec.started)
    assert sess.header.record_format == "lumikit-readings-1"
    assert [f.exit_status for f in sess.frames] == [0, 0, 0]
    assert sess.frames[0].t < sess.frames[1].t < sess.frames[2].t
    lines = [json.loads(x) for x in (tmp_path / "gpu" / "nid000042.jsonl").read_text().splitlines()]
    assert lines[1]["raw"] == READING.read_text() and "raw" not in lines[2]  # provenance: the first output, whole
    want = parse_smi(READING.read_text(), site="lumi").devices
    got = sess.snapshots()[2].devices
    fields = ("index", "gpu_busy_pct", "power_w", "sclk_mhz", "mclk_mhz", "temp_c", "vram_pct")
    assert [[getattr(d, f) for f in fields] for d in got] == [[getattr(d, f) for f in fields] for d in want]
    assert len(got) == 8 and all(len(json.dumps(x)) < 400 for x in lines[2:])  # numbers, not 8 kB of JSON
    assert json.loads((tmp_path / "gpu" / "nid000042.jsonl.end").read_text())["state"] == "stopped"


def test_a_record_in_the_old_format_still_loads(tmp_path: Path):
    """Records written before the compact format keep the tool's output in every line."""
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    head = {"format": "lumikit-smi-session", "name": "n1", "kind": "generated", "interval_s": 2.0, "site": "lumi",
            "started": 1000.0, "source": "rocm-smi --json", "command": [], "description": ""}
    out = READING.read_text()
    lines = [head] + [{"t": 2.0 * i, "time": 1000.0 + 2 * i, "tool": "rocm-smi", "exit_status": 0, "stdout": out}
                      for i in range(3)]
    (gpu / "n1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    sess = read_record(tmp_path)["n1"]
    assert [f.stdout for f in sess.frames] == [out] * 3
    card = card_of_run(tmp_path)
    assert card.nodes["n1"]["samples"] == 3 and len(card.rows) == 8
    assert card.rows[0].power_mean_w == parse_smi(out, site="lumi").devices[0].power_w


def test_a_stream_tool_gives_one_frame_per_reading(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.1, command=[*STAND_IN, "--stream", "0.1"], kind="generated",
                   stream=True)
    assert rec.run(max_samples=3) == 3
    sess = read_session(tmp_path / "gpu" / "n1.jsonl")
    assert len(sess.frames) == 3 and all("@@lumikit-sample" not in f.stdout for f in sess.frames)
    assert sess.snapshots()[2].format == "lumikit-readings-1" and len(sess.snapshots()[2].devices) == 8
    first = json.loads((tmp_path / "gpu" / "n1.jsonl").read_text().splitlines()[1])
    assert parse_smi(first["raw"]).format == "rocm-smi-json"  # the tool's own output, kept once


def test_a_second_recording_of_a_node_keeps_the_first(tmp_path: Path):
    Recorder(tmp_path, node="n1", interval=0.05, command=STAND_IN).run(max_samples=1)
    Recorder(tmp_path, node="n1", interval=0.05, command=STAND_IN).run(max_samples=2)
    record = read_record(tmp_path)
    assert sorted(record) == ["n1", "n1#2"] and [len(s.frames) for s in record.values()] == [1, 2]


def test_a_killed_job_costs_at_most_the_torn_last_line(tmp_path: Path):
    Recorder(tmp_path, node="n1", interval=0.05, command=STAND_IN).run(max_samples=2)
    path = tmp_path / "gpu" / "n1.jsonl"
    with path.open("a") as fh:
        fh.write('{"t": 0.2, "exit_status": 0, "stdout": "{\\"card0\\": {\\"Temper')  # killed mid-write
    sess = read_record(tmp_path)["n1"]
    assert len(sess.frames) == 2
    assert len(sess.notes) == 1 and "the last one, is cut short" in sess.notes[0]


def test_without_a_tool_the_record_says_so_in_its_header_and_invents_nothing(tmp_path: Path):
    empty = tmp_path / "bin"
    empty.mkdir()
    rec = Recorder(tmp_path / "run", node="laptop", tool_path=str(empty))
    assert rec.run() == 0
    text = (tmp_path / "run" / "gpu" / "laptop.jsonl").read_text()
    assert text.count("\n") == 1  # the header alone
    sess = read_record(tmp_path / "run")["laptop"]
    assert sess.header.kind == "absent" and sess.frames == []
    assert "amd-smi, rocm-smi, nvidia-smi" in sess.header.description and "laptop" in sess.header.description


def test_a_stop_file_ends_the_recorder_after_its_next_sample(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.05, command=STAND_IN)
    (tmp_path / "gpu" / ".stop").touch()
    assert rec.run() == 1
