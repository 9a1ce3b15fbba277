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
from lumikit.checks import m04
from lumikit.errors import LumikitError
from lumikit.smi import DeviceReading, Snapshot, load_session


@pytest.fixture
def starved(monkeypatch) -> list[Snapshot]:
    """The shipped DDP session in which GCD 4 waits for data, as the learner's session the checks make."""
    session = load_session("ddp-8gcd-starved")
    monkeypatch.setattr(m04, "exercise_session", lambda: session)
    return session


def use(monkeypatch, session) -> None:
    """Make ``session`` the learner's session for the checks."""
    monkeypatch.setattr(m04, "exercise_session", lambda: session)


def node(power: dict[int, float], busy: dict[int, float], sclk: dict[int, float]) -> Snapshot:
    """A 4-GCD snapshot (packages 0 and 1), power printed on the even GCDs only."""
    return Snapshot(devices=tuple(
        DeviceReading(index=i, package=i // 2, power_w=power.get(i), gpu_busy_pct=busy[i], sclk_mhz=sclk[i])
        for i in range(4)), format="rocm-smi")


# GCD 1 idles at 800 MHz while 0, 2 and 3 work: package 0 draws one GCD's worth, package 1 both.
SMALL = [node({0: 310.0, 2: 495.0}, {0: 97, 1: 0, 2: 98, 3: 99}, {0: 1650, 1: 800, 2: 1650, 3: 1650})] * 3
# The same, then GCD 1 computes alone in sample 3 while the others wait at 100 % GPU% and near idle power.
SMALL_CATCHING_UP = SMALL + [node({0: 320.0, 2: 130.0}, {0: 100, 1: 100, 2: 100, 3: 100},
                                  {0: 1650, 1: 1650, 2: 1650, 3: 1650})]


def test_starved_gcd_is_the_one_the_session_interpretation_finds(starved, monkeypatch):
    result = check_starved_gcd(4)
    assert isinstance(result, Passed) and result.exercise == "04.1" and "GCD 4" in str(result)
    use(monkeypatch, SMALL)
    assert check_starved_gcd(1)


@pytest.mark.parametrize("answer, words", [
    (5, "you gave 5. It looks like the other GCD of the same package"),  # its package neighbour (or counted from 1)
    ("4", "has the wrong type"),
    (None, "No answer yet for 04.1"),
])
def test_starved_gcd_fails_on_wrong_answers(starved, answer, words):
    with pytest.raises(CheckFailed, match="04.1") as err:
        check_starved_gcd(answer)
    assert words in str(err.value)


def test_starved_gcd_refuses_a_session_without_a_starved_gcd(monkeypatch):
    use(monkeypatch, load_session("idle-node"))
    with pytest.raises(LumikitError, match="ddp-8gcd-starved"):
        check_starved_gcd(0)


def test_power_reporting_lists_the_even_gcds_and_the_mean_package_power(starved, monkeypatch):
    result = check_power_reporting([0, 2, 4, 6], {0: 180.3, 1: 180.8, 2: 198.1, 3: 180.6})
    assert "GCDs 0, 2, 4, 6" in str(result)
    use(monkeypatch, SMALL)
    assert check_power_reporting((2, 0), {0: 310.0, 1: 495.0})


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
        check_power_reporting(gcds, power)
    assert words in str(err.value)


def test_package_activity_reads_the_first_sample_in_which_the_starved_gcd_computes(starved, monkeypatch):
    # GCD 4 first computes in sample 9: its package draws ~320 W, the others ~130 W at 100 % GPU% (waiting)
    result = check_package_activity(9, {0: "idle", 1: "idle", 2: "one", 3: "idle"})
    assert "in sample 9 package 2 draws one GCD's worth (GCD 4 catches up)" in str(result)
    assert "package 0, 1, 3 near idle power at 100 % GPU%" in str(result)
    use(monkeypatch, SMALL_CATCHING_UP)
    assert "in sample 3 package 0 draws one GCD's worth (GCD 1 catches up); package 1 near" in str(
        check_package_activity(3, {0: "one", 1: "idle"}))


@pytest.mark.parametrize("sample, answer, words", [
    (9, {0: "one", 1: "one", 2: "one", 3: "one"}, "the activity of package 0 is not right"),  # the session's mean
    (9, {0: "both", 1: "both", 2: "both", 3: "both"}, "the activity of package 0 is not right"),  # GPU% as work
    (9, {0: "idle", 1: "idle", 2: "both", 3: "idle"}, "the activity of package 2 is not right"),  # 300 W as full
    (10, {0: "both", 1: "both", 2: "both", 3: "both"}, "the sample number is not right; you gave 10. It looks like an off-by-one"),
    (9, {0: "idle", 1: "idle", 2: "half", 3: "idle"}, "is not one of the possible answers"),
    (9, {0: "idle", 1: "idle", 2: "one"}, "the packages in your dict is not right"),
    ("9", {}, "has the wrong type"),
    (None, None, "No answer yet for 04.3"),
])
def test_package_activity_fails_on_wrong_answers(starved, sample, answer, words):
    with pytest.raises(CheckFailed, match="04.3") as err:
        check_package_activity(sample, answer)
    assert words in str(err.value)


def test_package_activity_refuses_a_session_in_which_the_starved_gcd_never_computes(monkeypatch):
    use(monkeypatch, SMALL)
    with pytest.raises(LumikitError, match="GCD 1 never computes"):
        check_package_activity(0, {0: "one", 1: "both"})


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


def test_each_learner_gets_a_session_of_their_own_and_the_check_follows_it(monkeypatch):
    from lumikit.checks.datasets import starved_gcd

    answers = {}
    for learner in ("ada", "bob", "cy", "dan", "eve", "fay"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        answers[learner] = starved_gcd("04")
        assert check_starved_gcd(answers[learner]).exercise == "04.1"
        with pytest.raises(CheckFailed, match="04.1"):
            check_starved_gcd(4)  # the shipped session's GCD is never a learner's
    assert len(set(answers.values())) > 1


def test_power_reporting_takes_a_numpy_array_and_a_series(starved, monkeypatch):  # issue 40: right answers refused
    import numpy as np
    import pandas as pd

    power = pd.Series({0: 180.3, 1: 180.8, 2: 198.1, 3: 180.6})
    assert check_power_reporting(np.array([0, 2, 4, 6]), power)
    assert check_power_reporting(pd.Series([6, 4, 2, 0]), power.to_dict())
