"""Checks for module 09 (data and I/O): the speed-up of one file over many small ones, how many DataLoader
workers are enough, and the starved GCD of a generated rocm-smi session.

The expected values are computed from the measurements the solution notebook passes in (read times, step times)
and, for 09.3, from the learner's own generated session (:func:`exercise_session`, another one than module 04's)
through :func:`lumikit.smi.interpret_window`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..measure import compare, measured
from ..smi import Snapshot, interpret_window, tidy
from .datasets import starved_gcd, starved_session
from .concepts import Choice, Option, Prediction, choice_check, outcome_check, prediction_check
from .framework import CheckFailed, Passed, check, expect_close, expect_equal, expect_in, expect_type, passed, wrong


def exercise_session() -> list[Snapshot]:
    """This learner's generated session for 09.3: its starved GCD differs from the one in their module 04 session."""
    return starved_session("09.3", avoid=starved_gcd("04"))


@check("09.1",
       wrong("the ratio upside down (one file / small files)", answer=lambda a: a.one_file_s / a.small_files_s),
       wrong("the time saved in seconds instead of the ratio", answer=lambda a: a.small_files_s - a.one_file_s),
       wrong("a percentage", answer=lambda a: 100 * a.small_files_s / a.one_file_s))


def check_archive_speedup(answer: float | None, small_files_s: float, one_file_s: float) -> Passed:
    """Exercise 09.1: how many times faster reading one file was than reading the same data as many small files."""
    if small_files_s <= 0 or one_file_s <= 0:
        raise CheckFailed("09.1", "the measured read times must be positive",
                          found=(small_files_s, one_file_s), hint="pass the two times measured by the setup cell.")
    expected = small_files_s / one_file_s
    expect_type("09.1", answer, (int, float), what="the speed-up", hint="a number (how many times faster).")
    expect_close("09.1", answer, expected, rel=0.02, what="the speed-up of reading one file",
                 hint="how many times faster: a number above 1 when one file is faster.")
    return passed("09.1", f"one file read {expected:.1f} times faster than {small_files_s:.4f} s of small files")


def enough_workers(step_times: Mapping[int, float], tolerance: float = 0.10) -> int:
    """The fewest DataLoader workers whose mean step time is within ``tolerance`` (a fraction) of the best."""
    if not step_times:
        raise CheckFailed("09.2", "no step times were measured", hint="run the setup cell that measures them.")
    best = min(step_times.values())
    return min(w for w, t in step_times.items() if t <= best * (1 + tolerance))


def _another_count(step_times: Mapping[int, float], tolerance: float) -> int:
    expected = enough_workers(step_times, tolerance)
    return next(w for w in sorted(step_times, reverse=True) if w != expected)


@check("09.2",
       wrong("another measured worker count than the fewest within 10 % of the best",
             answer=lambda a: _another_count(a.step_times, a.tolerance)),
       wrong("the 7 cores of a GCD, which were not measured here", answer=7, mentions="measured"),
       wrong("the best step time instead of the worker count", answer=lambda a: min(a.step_times.values())))
def check_enough_workers(answer: int | None, step_times: Mapping[int, float], tolerance: float = 0.10) -> Passed:
    """Exercise 09.2: the fewest workers after which the step time stops improving (within ``tolerance``)."""
    expected = enough_workers(step_times, tolerance)
    expect_type("09.2", answer, int, what="the number of workers", hint="a whole number, one of the keys measured.")
    expect_in("09.2", answer, sorted(step_times), what="the number of workers",
              hint="answer with one of the worker counts that were measured.")
    best = min(step_times.values())
    expect_equal("09.2", answer, expected, what="the fewest workers within "
                 f"{tolerance:.0%} of the best step time ({best:.4f} s)",
                 hint="enough is where more workers stop paying off: the fewest whose step time is within the "
                      "tolerance of the best.",
                 off_by_one="the neighbouring worker count: compare each step time with the tolerance, not by eye")
    return passed("09.2", f"{expected} worker(s): {step_times[expected]:.4f} s per step, best {best:.4f} s")


@check("09.3",
       wrong("the starved GCD of the module 04 session, not this one", answer=lambda a: starved_gcd("04")),
       wrong("the busiest GCD",
             answer=lambda a: int(tidy(exercise_session()).groupby("index")["gpu_busy_pct"].mean().idxmax())),
       wrong("counted from 1", answer=lambda a: starved_gcd("09.3", avoid=starved_gcd("04")) + 1))
def check_starved_gcd(answer: int | None) -> Passed:
    """Exercise 09.3: the GCD that waits for data in the learner's session (the one found starved most of the time)."""
    snapshots = exercise_session()
    starved = [f for f in interpret_window(snapshots) if f.kind == "starved"]
    if not starved:
        raise CheckFailed("09.3", "no GCD is starved in the session", hint="report this to the course's instructor.")
    devices = starved[0].devices
    expect_type("09.3", answer, int, what="the starved GCD's index", hint="a GCD index, 0-7.")
    indices = sorted({d.index for s in snapshots for d in s.devices})
    expect_in("09.3", answer, indices, what="the GCD index", hint=f"the session has GCDs {indices}.")
    if answer not in devices:
        raise CheckFailed("09.3", "that GCD is not the starved one", expected=devices[0], found=answer,
                          hint="look for the GCD whose busy % and clock stay low while the others work, over "
                               "the whole session.")
    return passed("09.3", starved[0].message)


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_SMALL_FILES = Choice("09.q1", "Why is a data set of many small files slow on LUMI's Lustre file systems?", {
    "a": Option("Lustre compresses small files.", False, "it does not; the cost is per file, not per byte."),
    "b": Option("Every open() asks the metadata server, a service shared by every user; for small files that "
                "per-file cost dominates.", True,
                "one large file (or a tar unpacked to `/tmp`, in memory) pays it once; 09.1 measured the per-file "
                "cost even on a local disk."),
    "c": Option("Small files are kept on tape.", False, "LUMI's Lustre file systems keep every file on disk or "
                                                         "flash."),
})
check_why_small_files = choice_check(WHY_SMALL_FILES)

MORE_WORKERS = Prediction("09.q2", "Here (tiny model, tiny in-memory images, a few CPU cores), going from 0 to 2 "
                                   "DataLoader workers, the mean step time over three interleaved rounds will:", {
    "a": "drop beyond the noise (ranges apart, medians more than 20 % apart)",
    "b": "stay within the noise",
    "c": "rise beyond the noise (ranges apart, medians more than 20 % apart)",
})
check_more_workers_prediction = prediction_check(MORE_WORKERS)


def _rounds(value: object) -> list[float]:
    """One worker count's step times: a list of rounds, or one number (a single run)."""
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]  # type: ignore[arg-type]


def _more_workers_truth(step_times: Mapping[int, object]) -> str:
    """What lumikit.measure says of 2 workers against 0 (keys may be ints or, read back from JSON, strings)."""
    by_count = {int(k): v for k, v in step_times.items()}
    comparison = compare(measured("2 workers", _rounds(by_count[2])), measured("0 workers", _rounds(by_count[0])))
    if comparison.within_noise:
        return "b"
    return "a" if comparison.ratio < 1 else "c"


check_more_workers_outcome = outcome_check("09.q3", MORE_WORKERS, _more_workers_truth, {
    "a": "the workers prepared batches while the model trained: data loading held the steps back here.",
    "b": "the tiny images need almost no preparation, so there was little for workers to hide, and what is left "
         "drowns in the noise of a shared machine; on LUMI, with images decoded from files and 7 cores per GCD, "
         "workers are expected to matter.",
    "c": "starting worker processes and passing batches between processes cost more than the little work they "
         "took over, on cores shared with the training.",
})
