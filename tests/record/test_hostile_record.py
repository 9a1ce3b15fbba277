"""A GPU record (``RUN/gpu/<node>.jsonl``) that is hostile or damaged: `lumikit report RUN` ends with one line
naming the file, or reads what is sound; the cases are those issue 31's hostile files and its fuzz found."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.record.card import card_of_run
from lumikit.testing.records import node_names, write_generated_record

NODE = node_names(1)[0]


def finished_run(tmp_path: Path) -> tuple[Path, Path]:
    """A finished generated run of one node (4 samples) and its record file."""
    run = write_generated_record(tmp_path / "run", nodes=1, gcds=2, samples=4)
    return run, run / "gpu" / f"{NODE}.jsonl"


def one_line_error(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lumikit: error: ")
    return err[0]


def test_a_fifo_given_as_the_record_is_refused_by_name_not_skipped(tmp_path: Path, capsys) -> None:
    run, record = finished_run(tmp_path)
    record.unlink()
    os.mkfifo(record)  # opened for reading, it would block for ever
    line = one_line_error(run, capsys)
    assert f"{record}: is a FIFO (named pipe), not a regular file" in line


def test_nested_brackets_as_the_record_are_one_line(tmp_path: Path, capsys) -> None:
    run, record = finished_run(tmp_path)
    record.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    line = one_line_error(run, capsys)
    assert "the first line is not a JSON header (JSON nested more than 16 levels deep" in line and str(record) in line


def test_a_first_line_of_megabytes_is_no_header(tmp_path: Path, capsys) -> None:
    run, record = finished_run(tmp_path)
    record.write_bytes(b"\0" * (3 << 20))  # what a sparse file reads as
    assert "a first line longer than 1 MB" in one_line_error(run, capsys)


def test_a_header_with_a_nan_or_zero_interval_is_refused(tmp_path: Path, capsys) -> None:
    run, record = finished_run(tmp_path)
    head, *samples = record.read_text().splitlines(keepends=True)
    for bad in ("NaN", "0", "-2"):  # NaN once made the card print interval_s as null
        record.write_text(head.replace('"interval_s": 2.0', f'"interval_s": {bad}') + "".join(samples))
        assert "line 1" in one_line_error(run, capsys)


def test_damaged_numbers_in_pm_counters_and_rows_are_left_out_not_a_traceback(tmp_path: Path) -> None:
    run, record = finished_run(tmp_path)
    head, *samples = record.read_text().splitlines(keepends=True)
    header = json.loads(head)
    header["pm_start"] = {"energy": 1000.0, "time": "", "cpu_energy": 1e300}  # a time that is no number
    compact = [{"t": 2.0 * k, "r": [[100, 300.0, 1700], [10 ** 400, None, 800]],
                "pm": {"energy": 1000.0 + 50 * k, "time": 1_764_072_000 + 2 * k}} for k in range(4)]
    record.write_text(json.dumps(header) + "\n" + "".join(json.dumps(c) + "\n" for c in compact))
    Path(f"{record}.end").write_text('{"state": "stopped", "pm_end": {"energy": 1e999}}')  # 1e999: infinity
    card = card_of_run(run)
    assert card.nodes[NODE]["samples"] == 4
    gcd1 = [r for r in card.rows if r.gcd == 1][0]
    assert gcd1.busy_max_pct is None  # the 400-digit busy % is read as no reading
    assert card.nodes[NODE]["end_state"] == "unreadable"  # infinity in the end file: not JSON lumikit reads
    pm = card.totals["nodes"][NODE]["pm_counters"]
    # the start's reading has no time it can be placed at: the first sample's is used (1,150 J - 1,000 J over 6 s)
    assert pm["energy_j"] == {"energy": 150.0} and pm["span_s"] == 6.0
