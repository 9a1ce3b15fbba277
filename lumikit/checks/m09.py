"""Checks for module 09 (data and I/O): the speed-up of one file over many small ones, how many DataLoader
workers are enough, and the starved GCD of a generated rocm-smi session.

The expected values are computed from the measurements the solution notebook passes in (read times, step times)
and from the generated session through :func:`lumikit.smi.interpret_window`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..smi import Snapshot, interpret_window
from .framework import CheckFailed, Passed, expect_close, expect_equal, expect_in, expect_type, passed


def check_archive_speedup(answer: float | None, small_files_s: float, one_file_s: float) -> Passed:
    """Exercise 09.1: how many times faster reading one file was than reading the same data as many small files."""
    if small_files_s <= 0 or one_file_s <= 0:
        raise CheckFailed("09.1", "the measured read times must be positive",
                          found=(small_files_s, one_file_s), hint="pass the two times measured by the setup cell.")
    expected = small_files_s / one_file_s
    expect_type("09.1", answer, (int, float), what="the speed-up", hint="a number, e.g. `a / b`.")
    expect_close("09.1", answer, expected, rel=0.02, what="the speed-up (small-files time / one-file time)",
                 hint="divide the time for the small files by the time for the one file (a number above 1 when "
                      "one file is faster).")
    return passed("09.1", f"one file read {expected:.1f} times faster than {small_files_s:.4f} s of small files")


def enough_workers(step_times: Mapping[int, float], tolerance: float = 0.10) -> int:
    """The fewest DataLoader workers whose mean step time is within ``tolerance`` (a fraction) of the best."""
    if not step_times:
        raise CheckFailed("09.2", "no step times were measured", hint="run the setup cell that measures them.")
    best = min(step_times.values())
    return min(w for w, t in step_times.items() if t <= best * (1 + tolerance))


def check_enough_workers(answer: int | None, step_times: Mapping[int, float], tolerance: float = 0.10) -> Passed:
    """Exercise 09.2: the fewest workers after which the step time stops improving (within ``tolerance``)."""
    expected = enough_workers(step_times, tolerance)
    expect_type("09.2", answer, int, what="the number of workers", hint="a whole number, one of the keys measured.")
    expect_in("09.2", answer, sorted(step_times), what="the number of workers",
              hint="answer with one of the worker counts that were measured.")
    best = min(step_times.values())
    expect_equal("09.2", answer, expected, what="the fewest workers within "
                 f"{tolerance:.0%} of the best step time ({best:.4f} s)",
                 hint="find the best (smallest) mean step time, then the smallest worker count whose time is at "
                      f"most {1 + tolerance:g} times that.")
    return passed("09.2", f"{expected} worker(s): {step_times[expected]:.4f} s per step, best {best:.4f} s")


def check_starved_gcd(answer: int | None, snapshots: Sequence[Snapshot]) -> Passed:
    """Exercise 09.3: the GCD that waits for data in a generated session (the one found starved most of the time)."""
    starved = [f for f in interpret_window(snapshots) if f.kind == "starved"]
    if not starved:
        raise CheckFailed("09.3", "no GCD is starved in the session given to the check",
                          hint="pass the snapshots of the generated session 'ddp-8gcd-starved'.")
    devices = starved[0].devices
    expect_type("09.3", answer, int, what="the starved GCD's index", hint="a GCD index, 0-7.")
    indices = sorted({d.index for s in snapshots for d in s.devices})
    expect_in("09.3", answer, indices, what="the GCD index", hint=f"the session has GCDs {indices}.")
    if answer not in devices:
        raise CheckFailed("09.3", "that GCD is not the starved one", expected=devices[0], found=answer,
                          hint="look for the GCD whose busy % and clock stay low while the others work "
                               "(group `tidy(snapshots)` by 'index').")
    return passed("09.3", starved[0].message)
