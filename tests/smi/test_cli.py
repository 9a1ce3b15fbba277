"""`lumikit smi parse | watch | record` on files written here and on the shipped sessions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.cli import main


def test_parse_json_prints_devices(rocm5_table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.txt"
    path.write_text(rocm5_table)
    assert main(["smi", "parse", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["power_w"] for d in data["devices"]] == [305.0, None, 290.0, None]
    assert data["format"] == "rocm-smi-concise" and "gpu_busy_pct" in data["devices"][0]


def test_parse_table_shows_findings(rocm5_table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.txt"
    path.write_text(rocm5_table)
    assert main(["smi", "parse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "finding [one-gcd-of-package]" in out and "finding [memory-full]" in out


def test_parse_bad_file_exits_2_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    assert main(["smi", "parse", str(path)]) == 2
    assert f"{path}, line 1" in capsys.readouterr().err


def test_watch_prints_count_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["smi", "watch", "--replay", "ddp-8gcd-starved", "--interval", "0.01", "--count", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("rocm-smi-json") == 3 and "t=4" in out


def test_record_writes_a_session_and_refuses_to_overwrite(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec.jsonl"
    args = ["smi", "record", "--replay", "idle-node", "--interval", "0.02", "--duration", "0.3", "-o", str(out)]
    assert main(args) == 0
    assert main(["smi", "watch", "--replay", str(out), "--interval", "0.01", "--count", "1"]) == 0
    assert "rocm-smi-concise" in capsys.readouterr().out
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0
