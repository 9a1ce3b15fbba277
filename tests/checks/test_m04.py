"""Module 04 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None."""
from __future__ import annotations

import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m04 import (
    check_busy_without_power,
    check_package_activity,
    check_power_reporting,
    check_starved_gcd,
)
from lumikit.errors import LumikitError
from lumikit.smi import DeviceReading, Snapshot, load_session


@pytest.fixture(scope="module")
def starved() -> list[Snapshot]:
    """The shipped DDP session in which GCD 4 waits for data."""
    return load_session("ddp-8gcd-starved")


def node(power: dict[int, float], busy: dict[int, float], sclk: dict[int, float]) -> Snapshot:
    """A 4-GCD snapshot (packages 0 and 1), power printed on the even GCDs only."""
    return Snapshot(devices=tuple(
        DeviceReading(index=i, package=i // 2, power_w=power.get(i), gpu_busy_pct=busy[i], sclk_mhz=sclk[i])
        for i in range(4)), format="rocm-smi")


# GCD 1 idles at 800 MHz while 0, 2 and 3 work: package 0 draws one GCD's worth, package 1 both.
SMALL = [node({0: 310.0, 2: 495.0}, {0: 97, 1: 0, 2: 98, 3: 99}, {0: 1650, 1: 800, 2: 1650, 3: 1650})] * 3


def test_starved_gcd_is_the_one_the_session_interpretation_finds(starved):
    result = check_starved_gcd(4, starved)
    assert isinstance(result, Passed) and result.exercise == "04.1" and "GCD 4" in str(result)
    assert check_starved_gcd(1, SMALL)


@pytest.mark.parametrize("answer, words", [
    (5, "the index of the starved GCD is not right; expected 4; found 5"),  # its package neighbour
    ("4", "has the wrong type"),
    (None, "No answer yet for 04.1"),
])
def test_starved_gcd_fails_on_wrong_answers(starved, answer, words):
    with pytest.raises(CheckFailed, match="04.1") as err:
        check_starved_gcd(answer, starved)
    assert words in str(err.value)


def test_starved_gcd_refuses_a_session_without_a_starved_gcd():
    with pytest.raises(LumikitError, match="ddp-8gcd-starved"):
        check_starved_gcd(0, load_session("idle-node"))


def test_power_reporting_lists_the_even_gcds_and_the_mean_package_power(starved):
    result = check_power_reporting([0, 2, 4, 6], {0: 180.3, 1: 180.8, 2: 198.1, 3: 180.6}, starved)
    assert "GCDs 0, 2, 4, 6" in str(result)
    assert check_power_reporting((2, 0), {0: 310.0, 1: 495.0}, SMALL)


@pytest.mark.parametrize("gcds, power, words", [
    (list(range(8)), {0: 180.3, 1: 180.8, 2: 198.1, 3: 180.6}, "the GCDs that report power is not right"),
    ([0, 2, 4, 6], {0: 90.2, 1: 90.4, 2: 99.1, 3: 90.3}, "the mean power of package 0 (W) is off"),  # per GCD
    ([0, 2, 4, 6], {0: 180.3, 1: 180.8}, "the packages in your dict is not right"),
    ([0, 2, 4, 6], [180.3, 180.8, 198.1, 180.6], "has the wrong type"),
    (["GCD 0"], {}, "should hold GCD numbers"),
    (None, None, "No answer yet for 04.2"),
])
def test_power_reporting_fails_on_wrong_answers(starved, gcds, power, words):
    with pytest.raises(CheckFailed, match="04.2") as err:
        check_power_reporting(gcds, power, starved)
    assert words in str(err.value)


def test_package_activity_follows_the_site_thresholds(starved):
    # the mean power mixes ~130 W of waiting with ~500 W bursts: every package averages one GCD's worth
    result = check_package_activity({0: "one", 1: "one", 2: "one", 3: "one"}, starved)
    assert "package 0, 1, 2, 3" in str(result)
    assert check_package_activity({0: "one", 1: "both"}, SMALL)


@pytest.mark.parametrize("answer, words", [
    ({0: "both", 1: "both", 2: "both", 3: "both"}, "the activity of package 0 is not right"),  # 100 % read as full
    ({0: "one", 1: "one", 2: "half", 3: "one"}, "is not one of the possible answers"),
    ({0: "one", 1: "one", 2: "one"}, "the packages in your dict is not right"),
    (None, "No answer yet for 04.3"),
])
def test_package_activity_fails_on_wrong_answers(starved, answer, words):
    with pytest.raises(CheckFailed, match="04.3") as err:
        check_package_activity(answer, starved)
    assert words in str(err.value)


WAITING = Snapshot(devices=(
    DeviceReading(index=0, package=0, power_w=110.0, sclk_mhz=1650, gpu_busy_pct=100.0),
    DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0),
), format="rocm-smi")


def test_busy_without_power_passes_when_the_gpu_is_called_waiting():
    assert "waiting, not computing" in str(check_busy_without_power("busy-without-power", False, WAITING))


@pytest.mark.parametrize("kind, computing, words", [
    ("starved", False, "the finding's kind is not right"),
    ("busy-without-power", True, "whether the GCD is computing is not right"),
    ("busy-without-power", "no", "has the wrong type"),
    ("busy", False, "is not one of the possible answers"),
    (None, None, "No answer yet for 04.4"),
    ("busy-without-power", None, "No answer yet for 04.4"),
])
def test_busy_without_power_fails_on_wrong_answers(kind, computing, words):
    with pytest.raises(CheckFailed, match="04.4") as err:
        check_busy_without_power(kind, computing, WAITING)
    assert words in str(err.value)


def test_busy_without_power_refuses_a_snapshot_that_does_not_show_it(starved):
    with pytest.raises(LumikitError, match="snapshot built above"):
        check_busy_without_power("busy-without-power", False, load_session("idle-node")[0])
