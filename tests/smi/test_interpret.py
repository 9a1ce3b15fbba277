"""Findings on snapshots: starvation, busy without power, one GCD of a package, memory full."""
from __future__ import annotations

from dataclasses import replace

from lumikit.site import PowerThresholds
from lumikit.smi.interpret import (interpret, interpret_window, package_activity, packages_of)
from lumikit.smi.model import DeviceReading, Snapshot
from lumikit.smi.parse import parse_smi
from lumikit.smi.sessions import load_session


def node(busy: list[float], sclk: list[float], power: list[float], vram: float = 50.0) -> Snapshot:
    """An 8-GCD LUMI node: package power on the even GCD, None on the odd one."""
    devs = tuple(DeviceReading(index=i, gpu_busy_pct=busy[i], sclk_mhz=sclk[i], vram_pct=vram, package=i // 2,
                               power_w=power[i // 2] if i % 2 == 0 else None) for i in range(8))
    return Snapshot(devices=devs, format="test")


def test_starved_gcd_while_the_others_work() -> None:
    busy = [100.0] * 8
    busy[4] = 0.0
    sclk = [1650.0] * 8
    sclk[4] = 800.0
    found = interpret(node(busy, sclk, [480, 470, 300, 490]))
    assert [(f.kind, f.devices) for f in found] == [("starved", (4,))]
    assert "GCD 4 idle at 800 MHz / 0 %" in found[0].message


def test_busy_without_power_is_waiting() -> None:
    found = interpret(node([100.0] * 8, [1650.0] * 8, [480, 130, 470, 490]))
    assert [(f.kind, f.devices) for f in found] == [("busy-without-power", (2, 3))]
    assert "130 W" in found[0].message


def test_one_gcd_of_a_package_from_the_output_pattern(rocm5_table: str) -> None:
    found = interpret(parse_smi(rocm5_table))
    assert [(f.kind, f.devices) for f in found] == [("one-gcd-of-package", (0, 1)), ("one-gcd-of-package", (2, 3)),
                                                    ("memory-full", (2,))]


def test_thresholds_come_from_the_site_profile(rocm5_table: str) -> None:
    lenient = PowerThresholds(memory_full_pct=99)
    assert [f.kind for f in interpret(parse_smi(rocm5_table), lenient)].count("memory-full") == 0
    assert package_activity(100, lenient) == "idle"
    assert package_activity(320, lenient) == "one" and package_activity(470, lenient) == "both"


def test_idle_node_has_no_findings() -> None:
    assert interpret(node([0.0] * 8, [800.0] * 8, [88, 85, 82, 83], vram=0.0)) == []


def test_packages_need_the_mi250x_signature() -> None:
    two = Snapshot(devices=(DeviceReading(index=0, power_w=300.0), DeviceReading(index=1, power_w=120.0)),
                   format="test")
    assert packages_of(list(two.devices)) == {}
    paired = replace(two, devices=(two.devices[0], replace(two.devices[1], power_w=None)))
    assert list(packages_of(list(paired.devices))) == [0]


def test_window_keeps_what_holds_most_of_the_time() -> None:
    snaps = load_session("ddp-8gcd-starved")
    # GCD 4 starved; the seven others wait for it in the all-reduce: 100 % busy at near-idle package power
    assert [(f.kind, f.devices) for f in interpret_window(snaps[-20:])] == [
        ("starved", (4,)), ("busy-without-power", (0, 1)), ("busy-without-power", (2, 3)),
        ("busy-without-power", (5,)), ("busy-without-power", (6, 7))]
    assert interpret_window(load_session("idle-node")) == []
    single = interpret_window(load_session("single-gcd-training")[10:80])
    assert [(f.kind, f.devices) for f in single] == [("one-gcd-of-package", (0, 1))]
