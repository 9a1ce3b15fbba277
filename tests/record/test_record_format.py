"""The record file: a session that read_session reads, written by the recorder one line at a time."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lumikit.record import read_record, record_files
from lumikit.record.recorder import Recorder
from lumikit.smi.sessions import read_session
from lumikit.testing.fake_rocm_smi import READING

STAND_IN = [sys.executable, "-m", "lumikit.testing.fake_rocm_smi"]


def test_a_recording_round_trips_with_the_tools_output_byte_for_byte(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_GPUS", raising=False)
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    rec = Recorder(tmp_path, node="nid000042", interval=0.05, command=STAND_IN, kind="generated", site="lumi")
    assert rec.run(max_samples=3) == 3
    assert record_files(tmp_path) == [tmp_path / "gpu" / "nid000042.jsonl"]
    sess = read_record(tmp_path)["nid000042"]
    assert (sess.header.name, sess.header.kind, sess.header.site) == ("nid000042", "generated", "lumi")
    assert sess.header.source == " ".join(STAND_IN) and sess.header.started == pytest.approx(rec.started)
    assert [f.stdout for f in sess.frames] == [READING.read_text()] * 3
    assert [f.exit_status for f in sess.frames] == [0, 0, 0]
    assert sess.frames[0].t < sess.frames[1].t < sess.frames[2].t
    lines = (tmp_path / "gpu" / "nid000042.jsonl").read_text().splitlines()
    extra = json.loads(lines[1])  # the fields a frame carries beyond read_session's
    assert extra["tool"] == sys.executable and extra["time"] == pytest.approx(rec.started + extra["t"], abs=0.01)
    assert len(sess.snapshots()[0].devices) == 8


def test_a_stream_tool_gives_one_frame_per_reading(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.1, command=[*STAND_IN, "--stream", "0.1"], kind="generated",
                   stream=True)
    assert rec.run(max_samples=3) == 3
    sess = read_session(tmp_path / "gpu" / "n1.jsonl")
    assert len(sess.frames) == 3 and all("@@lumikit-sample" not in f.stdout for f in sess.frames)
    assert sess.snapshots()[2].format == "rocm-smi-json"


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
