"""The recorder samples through the cheapest source: the amdsmi library in its own process (here a stand-in with
amdsmi's API, GENERATED values), never faster than every 0.5 s; a tool started per sample only as the last
resort, with the interval raised to the tool's own run time and a note in the record's header."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lumikit.record import read_record
from lumikit.record.recorder import Recorder, main
from lumikit.smi.sources import MIN_INTERVAL_S
from lumikit.testing import fake_amdsmi
from lumikit.testing.hung_tool import hung_smi_tool
from lumikit.testing.processes import processes_with


def head_of(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[0])


def test_the_recorder_reads_the_library_in_its_own_process(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(fake_amdsmi, "MISSING", {"clock"})
    rec = Recorder(tmp_path, node="n1", interval=0.5, library=fake_amdsmi)
    assert rec.run(max_samples=2) == 2
    head = head_of(rec.path)
    assert head["sampler"]["how"] == "library" and head["kind"] == "generated"  # a stand-in's readings
    assert head["source"].startswith("library:amdsmi (stand-in lumikit.testing.fake_amdsmi")
    sess = read_record(tmp_path)["n1"]
    first = sess.snapshots()[0].devices
    assert [d.power_w for d in first[:2]] == [530.0, 0.0] and first[1].gpu_busy_pct == 40.0
    assert first[0].sclk_mhz is None  # the stand-in gives no clock here: N/A, not a number
    lines = [json.loads(x) for x in rec.path.read_text().splitlines()[1:]]
    assert '"library":"amdsmi"' in lines[0]["raw"] and "raw" not in lines[1]  # provenance: the first read, whole
    assert set(lines[0]["e0"]) == {str(i) for i in range(8)}  # the library's energy counters, kept from the start
    assert fake_amdsmi._state["init"] is False  # amdsmi_shut_down at the end


def test_the_interval_is_never_below_half_a_second(tmp_path: Path):
    rec = Recorder(tmp_path, node="n1", interval=0.1, library=fake_amdsmi)
    assert rec.interval == MIN_INTERVAL_S == 0.5
    rec.close()
    head = head_of(rec.path)
    assert head["interval_s"] == 0.5 and head["sampler"]["interval_asked_s"] == 0.1
    assert "interval 0.1 s asked; sampled every 0.5 s, the recorder's floor" in head["sampler"]["notes"]
    with pytest.raises(Exception, match="positive seconds"):
        Recorder(tmp_path, node="n2", interval=0.0, library=fake_amdsmi)


def test_a_tool_slower_than_the_interval_raises_it_and_the_record_says_so(tmp_path: Path):
    tool = tmp_path / "slow_amd_smi.py"
    reading = [{"gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}},
                "usage": {"gfx_activity": {"value": 100, "unit": "%"}}}]
    tool.write_text(f"import time\ntime.sleep(0.8)\nprint({json.dumps(json.dumps(reading))})\n")
    rec = Recorder(tmp_path, node="n1", interval=0.5, command=[sys.executable, str(tool)])
    assert head_of(rec.path)["interval_s"] == 0.5  # the header is there from the start
    assert rec.run(max_samples=2) == 2
    assert rec.interval >= 0.8  # at least one call's run time (rounded up to 0.1 s), from the first call on
    head = head_of(rec.path)  # rewritten in place after the first call, the samples still after it
    assert head["sampler"]["how"] == "per-call" and head["interval_s"] == rec.interval
    assert any(n.startswith("interval raised from 0.5 s to") for n in head["sampler"]["notes"])
    assert head["source"] == f"{sys.executable} {tool}"  # the command, as for every tool
    assert f"interval raised from 0.5 s to {rec.interval:g} s" in head["description"]
    assert "is started once per sample (no library or stream here); one call took" in head["description"]
    sess = read_record(tmp_path)["n1"]
    assert sess.header.interval_s == rec.interval and [s.devices[0].power_w for s in sess.snapshots()] == [300.0] * 2
    frames = [f.t for f in sess.frames]
    assert frames[1] - frames[0] >= 0.8  # the second call waited for the raised interval


def test_the_command_line_takes_a_library_with_amdsmis_api(tmp_path: Path):
    assert main(["sample", "--run-dir", str(tmp_path), "--node", "n1", "--interval", "0.2", "--max-samples", "2",
                 "--library", "lumikit.testing.fake_amdsmi"]) == 0
    sess = read_record(tmp_path)["n1"]
    assert len(sess.frames) == 2 and sess.header.interval_s == 0.5 and sess.header.kind == "generated"


def test_stopping_a_stream_ends_a_hung_tool_and_its_children(tmp_path: Path):
    """An amd-smi that hangs (a wedged driver; it forks a helper that hangs too), read as a stream at a whole-second
    interval: the record has its header, no sample, and stop() leaves no process of the tool behind."""
    import os
    import threading
    import time
    import uuid

    marker = f"lumikit-hung-stream-{uuid.uuid4().hex[:12]}"
    bin_dir = tmp_path / "bin"
    tool = hung_smi_tool(bin_dir, marker)
    rec = Recorder(tmp_path, node="n1", interval=1.0, tool_path=str(bin_dir))
    assert rec.stream and rec.source.argv[:2] == [str(tool), "monitor"]
    worker = threading.Thread(target=rec.run)
    worker.start()
    time.sleep(1.5)  # the tool and its helper are running
    rec.stop()
    worker.join(timeout=30)
    assert not worker.is_alive()

    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == [] and os.path.getsize(rec.path) > 0
    assert read_record(tmp_path)["n1"].frames == []  # no reading came: none is invented
