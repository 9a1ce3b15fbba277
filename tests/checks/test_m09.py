"""Module 09's checks pass on right answers and fail, naming the exercise, on wrong ones and on the stub's None."""
from __future__ import annotations

import pytest

import lumikit.checks.m09 as m09
from lumikit.checks import CheckFailed
from lumikit.smi import DeviceReading, Snapshot


def test_archive_speedup_is_small_files_over_one_file():
    assert m09.check_archive_speedup(40.0, small_files_s=0.2, one_file_s=0.005).exercise == "09.1"


@pytest.mark.parametrize("wrong", [0.025, 1 / 40, 4.0, "40"])
def test_archive_speedup_rejects_the_inverse_and_other_numbers(wrong):
    with pytest.raises(CheckFailed, match="Exercise 09.1"):
        m09.check_archive_speedup(wrong, small_files_s=0.2, one_file_s=0.005)


def test_archive_speedup_unanswered():
    with pytest.raises(CheckFailed, match="No answer yet for 09.1"):
        m09.check_archive_speedup(None, small_files_s=0.2, one_file_s=0.005)


@pytest.mark.parametrize("times, expected", [
    ({0: 0.50, 1: 0.30, 2: 0.29, 4: 0.28}, 1),  # 0.30 is within 10 % of 0.28
    ({0: 0.50, 1: 0.40, 2: 0.20}, 2),
    ({0: 0.10, 1: 0.12, 2: 0.15}, 0),           # workers only cost time (a few-core laptop)
])
def test_enough_workers_is_the_fewest_within_tolerance(times, expected):
    assert m09.enough_workers(times) == expected
    assert m09.check_enough_workers(expected, times).exercise == "09.2"


def test_enough_workers_rejects_the_fastest_when_fewer_suffice():
    times = {0: 0.50, 1: 0.30, 2: 0.29, 4: 0.28}
    with pytest.raises(CheckFailed, match="Exercise 09.2.*fewest workers"):
        m09.check_enough_workers(4, times)
    with pytest.raises(CheckFailed, match="Exercise 09.2.*not one of"):
        m09.check_enough_workers(3, times)
    with pytest.raises(CheckFailed, match="No answer yet for 09.2"):
        m09.check_enough_workers(None, times)


def _snapshot(t: float, starved: int) -> Snapshot:
    """Eight GCDs at work except ``starved``, idle at a low clock (power on the even GCD of each package)."""
    devices = tuple(DeviceReading(index=i, power_w=(300.0 if i // 2 == starved // 2 else 500.0) if i % 2 == 0 else None,
                                  sclk_mhz=800.0 if i == starved else 1650.0,
                                  gpu_busy_pct=0.0 if i == starved else 100.0, package=i // 2)
                    for i in range(8))
    return Snapshot(devices=devices, format="rocm-smi", timestamp=t)


def test_starved_gcd_comes_from_the_session(monkeypatch):
    snapshots = [_snapshot(float(t), starved=5) for t in range(4)]
    monkeypatch.setattr(m09, "exercise_session", lambda: snapshots)
    assert m09.check_starved_gcd(5).exercise == "09.3"
    with pytest.raises(CheckFailed, match="Exercise 09.3.*not the starved one"):
        m09.check_starved_gcd(4)
    with pytest.raises(CheckFailed, match="Exercise 09.3.*not one of"):
        m09.check_starved_gcd(8)
    with pytest.raises(CheckFailed, match="No answer yet for 09.3"):
        m09.check_starved_gcd(None)


def test_the_09_session_is_the_learners_own_and_not_the_04_one(monkeypatch):
    from lumikit.checks.datasets import starved_gcd

    for learner in ("ada", "bob", "cy", "dan", "eve"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        mine = starved_gcd("09.3", avoid=starved_gcd("04"))
        assert mine != starved_gcd("04")
        assert m09.check_starved_gcd(mine).exercise == "09.3"
        with pytest.raises(CheckFailed, match="Exercise 09.3"):
            m09.check_starved_gcd(starved_gcd("04"))


@pytest.mark.parametrize("rounds, shown", [
    ({0: [0.10, 0.11, 0.12], 2: [0.05, 0.06, 0.055]}, "a"),   # ranges apart, medians 2x apart: a drop
    ({0: [0.10, 0.11, 0.12], 2: [0.09, 0.13, 0.10]}, "b"),    # ranges overlap: within the noise
    ({"0": [0.10, 0.11, 0.12], "2": [0.20, 0.22, 0.21]}, "c"),  # keys as read back from JSON
    ({0: 0.10, 2: 0.05}, "b"),                                # one run each is never beyond the noise
])
def test_more_workers_outcome_follows_lumikit_measure(rounds, shown):
    assert str(m09.check_more_workers_outcome(shown, "b", measured=rounds)).count(f"({shown})") >= 1
    with pytest.raises(CheckFailed, match="09.q3"):
        m09.check_more_workers_outcome({"a": "c", "b": "a", "c": "b"}[shown], "b", measured=rounds)
