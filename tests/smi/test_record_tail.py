"""Following a run's GPU record (gpu/<node>.jsonl): only new bytes are read, a torn last line waits for its end,
hostile files are refused; the grid picture shows every node and GCD. The records are GENERATED (test data)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lumikit.smi.plots import node_grid_html
from lumikit.record import read_record
from lumikit.smi.sampler import RecordTail, record_files, record_replay_sources
from lumikit.errors import LumikitError
from lumikit.testing.records import GeneratedRecord, write_generated_record


def test_a_growing_record_is_read_incrementally(tmp_path: Path) -> None:
    rec = GeneratedRecord(tmp_path / "run").add(3)
    tail = RecordTail(tmp_path / "run")
    assert tail.poll() == 6 and tail.nodes == ["nid005001", "nid005002"]
    assert tail.poll() == 0  # nothing new: nothing read
    rec.add(2)
    assert tail.poll() == 4
    assert [len(tail.snapshots(n)) for n in tail.nodes] == [5, 5]
    assert tail.kinds() == {"nid005001": "generated", "nid005002": "generated"}
    snap = tail.snapshots("nid005001")[-1]
    assert snap.timestamp == rec.started + 4 * rec.interval_s  # epoch: started + t
    rec.finish()
    assert tail.poll() == 0 and list(record_files(tmp_path / "run")) == ["nid005001", "nid005002"]


def test_a_torn_last_line_waits_and_is_noted(tmp_path: Path) -> None:
    run = write_generated_record(tmp_path / "run", samples=4)
    path = run / "gpu" / "nid005002.jsonl"
    with path.open("a") as fh:
        fh.write('{"t": 8.0, "exit_status": 0, "stdout": "{\\"card0\\": {')  # killed mid-write
    tail = RecordTail(run)
    tail.poll()
    assert len(tail.frames("nid005002")) == 4
    assert any("not yet ended" in n for n in tail.notes())
    assert {n: len(s.frames) for n, s in read_record(run).items()} == {"nid005001": 4, "nid005002": 4}


def test_a_fifo_or_foreign_file_is_refused_not_read(tmp_path: Path) -> None:
    run = write_generated_record(tmp_path / "run", samples=2)
    os.mkfifo(run / "gpu" / "nid009999.jsonl")
    (run / "gpu" / "nid009998.jsonl").write_text('{"not": "a session"}\n{"t": 0}\n')
    tail = RecordTail(run)
    tail.poll()  # returns: it never opens the FIFO
    assert "nid009999" not in tail.nodes  # a FIFO is never opened (it would block the notebook)
    assert "nid009998.jsonl" in "\n".join(tail.notes()) and tail.header("nid009998") is None
    assert [len(tail.snapshots(n)) for n in ("nid005001", "nid005002")] == [2, 2]


def test_grid_shows_every_node_and_gcd_with_power_on_the_even_gcd(tmp_path: Path) -> None:
    tail = RecordTail(write_generated_record(tmp_path / "run", samples=6))
    tail.poll()
    page = node_grid_html({n: tail.snapshots(n)[-1] for n in tail.nodes}, kinds=tail.kinds())
    for node in ("nid005001", "nid005002"):
        for gcd in (0, 1):
            assert f"data-node='{node}' data-gcd='{gcd}'" in page
    assert page.count("generated") == 2
    assert "pkg on GCD 0" in page  # the odd GCD prints no power on an MI250X
    # node 2's GCD 1 stays idle in the generated plan, the others compute
    assert "data-node='nid005002' data-gcd='1' data-activity='idle-low-clock'" in page
    assert "data-node='nid005001' data-gcd='1' data-activity='busy'" in page


def test_replay_sources_per_node_and_a_clear_error_without_record(tmp_path: Path) -> None:
    run = write_generated_record(tmp_path / "run", samples=3)
    sources = record_replay_sources(run, speed=None)
    assert [s.name for s in sources] == ["replay:nid005001 (generated)", "replay:nid005002 (generated)"]
    assert sources[0].read().snapshot.timestamp > 1e9  # clock times, not seconds since the start
    (tmp_path / "empty").mkdir()
    with pytest.raises(LumikitError, match="no GPU record"):
        record_replay_sources(tmp_path / "empty")


def test_failed_tool_calls_in_a_record_leave_gaps_not_errors(tmp_path: Path) -> None:
    run = write_generated_record(tmp_path / "run", samples=3)
    with (run / "gpu" / "nid005001.jsonl").open("a") as fh:  # rocm-smi failed once: status 2, nothing printed
        fh.write('{"exit_status": 2, "stdout": "", "t": 6.0, "time": 1764072006.0, "tool": "rocm-smi"}\n')
    tail = RecordTail(run)
    tail.poll()
    assert len(tail.frames("nid005001")) == 4 and len(tail.snapshots("nid005001")) == 3
    src = record_replay_sources(run, speed=None)[0]
    assert src.skipped == 1 and len(src.snapshots) == 3
