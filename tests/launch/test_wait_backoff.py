"""Run.wait asks a Slurm controller gently: a pause that doubles up to 10 s, and after the first minute never
more than one query per 10 s. Checked on a simulated clock (no sleeping)."""
from __future__ import annotations

import pytest

from lumikit.launch import backend as backend_module
from lumikit.launch.backend import GENTLE_POLL_S, Run, next_poll


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


class CountingBackend:
    """Status is RUNNING until ``ends_at`` seconds of the clock; records when it was asked."""

    name = "fake-slurm"
    queries_controller = True

    def __init__(self, clock: Clock, ends_at: float) -> None:
        self.clock, self.ends_at, self.asked = clock, ends_at, []

    def status(self, folder) -> str:
        self.asked.append(self.clock.t)
        return "COMPLETED" if self.clock.t >= self.ends_at else "RUNNING"


def waited(monkeypatch, tmp_path, ends_at: float, controller: bool = True) -> list[float]:
    clock = Clock()
    monkeypatch.setattr(backend_module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(backend_module.time, "sleep", clock.sleep)
    b = CountingBackend(clock, ends_at)
    b.queries_controller = controller
    folder = type("F", (), {"path": tmp_path})()
    assert Run(folder, b).wait(progress=False) == "COMPLETED"  # type: ignore[arg-type]
    return b.asked


def test_a_five_minute_wait_asks_at_most_once_per_10_s_after_the_first_minute(monkeypatch, tmp_path):
    asked = waited(monkeypatch, tmp_path, ends_at=300)
    first_minute = [t for t in asked if t < 60]
    later = [t for t in asked if t >= 60]
    assert len(first_minute) <= 10
    assert all(b - a >= GENTLE_POLL_S for a, b in zip(later, later[1:]))
    assert len(asked) <= 10 + 24 + 1
    assert asked[-1] - 300 < GENTLE_POLL_S  # and the end is still seen within one pause


def test_a_short_job_is_still_seen_quickly(monkeypatch, tmp_path):
    asked = waited(monkeypatch, tmp_path, ends_at=2.5)
    assert asked[-1] <= 7  # 0, 1, 3, 7


def test_a_local_run_is_polled_as_asked(monkeypatch, tmp_path):
    asked = waited(monkeypatch, tmp_path, ends_at=30, controller=False)
    assert len(asked) == 31  # one per second: no controller to spare


@pytest.mark.parametrize("pause,elapsed,expected", [(1, 0, 2), (8, 20, 10), (10, 30, 10), (2, 61, 10), (30, 5, 30)])
def test_next_poll(pause, elapsed, expected):
    assert next_poll(pause, elapsed) == expected
