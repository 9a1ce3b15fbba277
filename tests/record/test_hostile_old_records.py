"""Old-format GPU records (the tool's own output in each line) and Omnistat exports with hostile values read through
the compact format's bounds: finite numbers, integers of at most 40 digits, units as strings, card ids in ASCII
digits. A bad value is dropped and counted on the card, or the file is refused in one line; a name with escape codes
is printed escaped. Each case once ended in a traceback (issue 41)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.errors import ParseError
from lumikit.record.card import card_of_run
from lumikit.smi.omnistat import parse_frame, read_omnistat
from lumikit.smi.readings import energy_counters
from lumikit.smi.values import ascii_index
from lumikit.testing.records import write_generated_record

HUGE_INT = "1" + "0" * 400  # past a double's range (1.8e308) as a JSON integer
INT_4300 = "9" * 4300  # the most digits Python's int() reads by default


def amd_metric(joules: str, unit: object = "J") -> str:
    """``amd-smi metric --json`` for one GPU, with the energy counter's value written as given (JSON text)."""
    text = json.dumps([{"gpu": 0, "usage": {"gfx_activity": {"value": 100, "unit": "%"}},
                        "energy": {"total_energy_consumption": {"value": "@J@", "unit": unit}}}])
    return text.replace('"@J@"', joules)


def old_format_run(tmp_path: Path, outputs: list[str]) -> Path:
    """A run folder whose record is in the format before the compact one: the tool's whole output each line."""
    gpu = tmp_path / "run" / "gpu"
    gpu.mkdir(parents=True)
    head = {"format": "lumikit-smi-session", "name": "n1", "kind": "generated", "interval_s": 2.0, "site": "lumi",
            "started": 1000.0, "source": "amd-smi metric --json", "command": [], "description": ""}
    lines = [head] + [{"t": 2.0 * i, "time": 1000.0 + 2 * i, "tool": "amd-smi", "exit_status": 0, "stdout": out}
                      for i, out in enumerate(outputs)]
    (gpu / "n1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path / "run"


@pytest.mark.parametrize("bad, dropped", [
    (amd_metric(HUGE_INT), 1),                       # OverflowError once
    (amd_metric("5900.0", unit={"value": "J"}), 1),  # TypeError: unhashable type: 'dict' once
    (amd_metric(INT_4300), 1),                       # a 4,300-digit integer
    (amd_metric("1e308", unit="kJ"), 1),             # finite in the file, infinite in joules
])
def test_a_bad_energy_counter_is_dropped_and_counted_on_the_card(tmp_path: Path, bad: str, dropped: int,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = old_format_run(tmp_path, [amd_metric("5000.0"), bad, amd_metric("5100.0")])
    card = card_of_run(run)
    assert card.nodes["n1"]["samples"] == 3  # the sample stays; only its counter is left out
    notes = " ".join(card.nodes["n1"]["notes"])
    assert f"{dropped} value(s) outside the readable bounds" in notes
    assert main(["report", str(run)]) == 0
    assert "outside the readable bounds" in capsys.readouterr().out


def test_the_energy_reader_keeps_sound_counters_and_counts_the_rest() -> None:
    lost: list[int] = []
    assert energy_counters(amd_metric("12.5"), lost) == {0: 12.5} and lost == []
    for bad in (amd_metric(HUGE_INT), amd_metric("1", unit=["J"]), amd_metric("true")):
        assert energy_counters(bad, lost) == {}
    assert len(lost) == 3


def test_card_ids_are_ascii_digits_only() -> None:
    assert "²".isdigit() and ascii_index("²") is None  # str.isdigit() is no test: int('²') fails
    assert [ascii_index(x) for x in ("3", " 12 ", "٣", "1e3", "-1", "1" * 10, True, 7)] == \
        [3, 12, None, None, None, None, None, 7]


def test_an_omnistat_card_named_superscript_two_is_a_one_line_error(tmp_path: Path) -> None:
    export = tmp_path / "omnistat-rocm.gpu.csv"
    export.write_text("metric,rocm_utilization_percentage\ninstance,n1:8001\ncard,²\ntimestamp,\n"
                      "2025-01-01 10:00:00,3\n")
    with pytest.raises(ParseError, match=r"GPU \(card\) label '\\xb2' is not a number in ASCII digits"):
        read_omnistat(export)
    with pytest.raises(ParseError, match="ASCII digits"):
        parse_frame({"cards": {"²": {"rocm_utilization_percentage": 3}}})
    frame = parse_frame({"cards": {"0": {"rocm_vram_total_bytes": float("inf"),
                                         "rocm_utilization_percentage": 50}}})
    assert frame.devices[0].index == 0  # an infinite size is left out, the card kept


def test_a_phase_name_with_escape_codes_is_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "train\x1b]0;pwned\x07\x1b[2J$\\frac$"
    run = write_generated_record(tmp_path / "run", samples=5, markers=[(name, 2)])
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "train\\x1b]0;pwned" in out
    import matplotlib
    matplotlib.use("Agg")
    fig = card_of_run(run).figure()
    fig.canvas.draw()  # mathtext would refuse "$\frac$"; drawn as plain text
    assert any("pwned" in t.get_text() and "\x1b" not in t.get_text() for t in fig.axes[0].texts)
