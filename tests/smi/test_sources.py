"""The GPU sources behind one interface: the amdsmi library read through a stand-in with its API (GENERATED
values), N/A where a metric is missing, the chooser's order, nvidia-smi's own stream, and the pm_counters."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lumikit.errors import LumikitError
from lumikit.smi.sources import (AmdSmiMonitorSource, CommandSource, LibrarySource, NvidiaStreamSource,
                                 PmCountersSource, choose_source)
from lumikit.smi.sources.library import _number
from lumikit.smi.sources.stream import by_gpu_rows, by_table_rounds, framed
from lumikit.testing import fake_amdsmi


@pytest.fixture
def fake(monkeypatch):
    """The stand-in, on a clock the test moves."""
    now = [1_000.0]
    monkeypatch.setattr(fake_amdsmi, "clock", lambda: now[0])
    monkeypatch.setattr(fake_amdsmi, "MISSING", set())
    return now


def test_the_library_source_reads_each_gcd_as_the_stand_in_gives_it(fake):
    src = LibrarySource("amdsmi", module=fake_amdsmi)
    fake[0] += 10.0  # 10 s after amdsmi_init
    sample = src.read()
    devs = sample.snapshot.devices
    assert [d.index for d in devs] == list(range(8)) and sample.snapshot.format == "amdsmi"
    first, second = devs[0], devs[1]
    # the package of GCDs 0 and 1: 250 W + 2 W per busy % of (100 + 40) = 530 W, on the first GCD; 0 W on the second
    assert (first.power_w, second.power_w) == (530.0, 0.0)
    assert (first.gpu_busy_pct, second.gpu_busy_pct) == (100.0, 40.0)
    assert (first.sclk_mhz, first.mclk_mhz) == (1700.0, 1600.0)
    assert second.temp_c == 41.0  # the edge sensor is "not supported" (as on MI250X): the hotspot is read
    assert second.vram_used_bytes == 2048 * 2**20 and second.vram_total_bytes == 65520 * 2**20
    assert second.vram_pct == round(100 * 2048 / 65520, 1)
    # the energy counter: ticks x resolution (µJ) -> J; 530 W for 10 s = 5300 J (to the tick), 0 J on GCD 1
    assert sample.energies[0] == pytest.approx(5300.0, abs=fake_amdsmi.RESOLUTION_UJ * 1e-6)
    assert sample.energies[1] == 0.0
    assert '"library":"amdsmi"' in sample.raw and "generated" in src.name


def test_a_metric_the_library_does_not_give_is_na_never_a_number(fake, monkeypatch):
    monkeypatch.setattr(fake_amdsmi, "MISSING", {"temp", "clock", "energy"})
    sample = LibrarySource("amdsmi", module=fake_amdsmi).read()
    d = sample.snapshot.devices[0]
    assert (d.temp_c, d.sclk_mhz, d.mclk_mhz) == (None, None, None)
    assert d.power_w == 530.0 and d.gpu_busy_pct == 100.0  # the others are still read
    assert sample.energies is None
    # "N/A" strings and amdsmi's all-ones marker of an unsupported field read as no value
    assert [_number(v) for v in ("N/A", 0xFFFF, 0xFFFFFFFF, 2**64 - 1, float("nan"), True, 7)] == \
        [None, None, None, None, None, None, 7.0]


def test_a_library_that_cannot_start_is_an_error_that_names_the_fix(fake, monkeypatch):
    def no_driver() -> None:
        raise fake_amdsmi.AmdSmiLibraryException("driver not loaded")

    monkeypatch.setattr(fake_amdsmi, "amdsmi_init", no_driver)
    with pytest.raises(LumikitError, match="amdsmi could not start .*driver not loaded.*command source"):
        LibrarySource("amdsmi", module=fake_amdsmi)


def _tool(folder: Path, name: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_chooser_takes_the_cheapest_source_found(tmp_path: Path, fake):
    tools = tmp_path / "bin"
    tools.mkdir()
    assert choose_source(path=str(tools), libraries=()) is None
    _tool(tools, "rocm-smi")
    assert isinstance(choose_source(path=str(tools), libraries=()), CommandSource)  # the last resort
    _tool(tools, "nvidia-smi")
    stream = choose_source(path=str(tools), libraries=(), interval=2.0)
    assert isinstance(stream, NvidiaStreamSource) and "--loop-ms=2000" in stream.argv
    assert isinstance(choose_source(path=str(tools), module=fake_amdsmi), LibrarySource)  # the library first
    assert isinstance(choose_source(["cat", "x"], module=fake_amdsmi), CommandSource)  # a command is obeyed


def test_nvidia_smi_rows_are_grouped_into_one_reading_per_round():
    rows = ["2026/01/05 10:00:00.000, 0, A100, ...\n", "2026/01/05 10:00:00.001, 1, A100, ...\n",
            "2026/01/05 10:00:01.000, 0, A100, ...\n", "2026/01/05 10:00:01.001, 1, A100, ...\n"]
    rounds = list(by_gpu_rows(iter(rows)))
    assert [r.count("\n") for r, _ in rounds] == [2, 2] and rounds[1][0].startswith("2026/01/05 10:00:01.000")
    assert list(framed(iter(["a\n", "b\n", "@@lumikit-sample 2\n"]))) == [("a\nb\n", 2)]


def test_the_pm_counters_source_reads_the_cray_layout(tmp_path: Path):
    (tmp_path / "energy").write_text("123456 J 1767600000123456 us\n")
    (tmp_path / "accel0_energy").write_text("4 kJ 1767600000123456 us\n")
    (tmp_path / "generation").write_text("7\n")
    src = PmCountersSource(tmp_path)
    assert src.available and src.how == "counters"
    counters = src.read().counters
    assert counters["energy"] == 123456.0 and counters["accel0_energy"] == 4000.0
    assert src.read_energies() == {"energy": 123456.0, "accel0_energy": 4000.0, "generation": 7.0,
                                   "time": pytest.approx(1767600000.123456)}
    assert not PmCountersSource(tmp_path / "none").available
    assert PmCountersSource(tmp_path / "none").read().counters == {}


def test_every_source_says_how_it_reads(tmp_path: Path, fake):
    assert LibrarySource("amdsmi", module=fake_amdsmi).how == "library"
    assert CommandSource(["true"]).how == "per-call" and not CommandSource(["true"]).paced
    assert NvidiaStreamSource(1.0).paced and os.path.basename(NvidiaStreamSource(1.0).argv[0]) == "nvidia-smi"


def test_amd_smi_monitor_rounds_parse_whether_or_not_the_header_comes_again(smi_dir: Path):
    from lumikit.smi.parse import parse_smi

    table = (smi_dir / "amd-smi_monitor_ptumv_rocm6.1_mi300x_8gpu.txt").read_text().splitlines(keepends=True)
    header, rows = table[0], table[1:]
    for lines in ([header, *rows, header, *rows], [header, *rows, "\n", *rows]):
        rounds = [text for text, _ in by_table_rounds(iter(lines))]
        assert len(rounds) == 2 and all(r.startswith(header) for r in rounds)
        snaps = [parse_smi(r, site="lumi") for r in rounds]
        assert [len(s.devices) for s in snaps] == [8, 8] and snaps[1].devices[0].power_w == 171.0


def test_the_chooser_takes_amd_smis_own_stream_for_whole_seconds(tmp_path: Path):
    tools = tmp_path / "bin"
    tools.mkdir()
    _tool(tools, "amd-smi")
    src = choose_source(path=str(tools), libraries=(), interval=2.0)
    assert isinstance(src, AmdSmiMonitorSource) and src.argv[-2:] == ["--watch", "2"]
    assert isinstance(choose_source(path=str(tools), libraries=(), interval=0.5), CommandSource)
