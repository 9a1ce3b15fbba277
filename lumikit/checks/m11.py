"""Checks for module 11 (the capstone): find a planted input bottleneck with the GPU view, the profiler and the
trace analysis, fix it, and report before/after numbers.

The checks read the outcome: the replayed session, the run folders (their ``result.rank*.json``, metrics and
profiler traces). The slow rank is computed from the case number the run recorded
(:func:`lumikit.workloads.capstone.slow_rank`), never taken from the learner's namespace.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from ..smi import load_session, tidy
from ..trace import TraceAnalyzer
from ..trace.host_ops import PHASES, host_ops, step_phases
from ..workloads.capstone import slow_rank
from .framework import (
    CheckFailed,
    Passed,
    check,
    expect_answer,
    expect_close,
    expect_equal,
    expect_in,
    expect_type,
    passed,
    wrong,
)

#: The session the GPU-view step reads.
SESSION = "ddp-8gcd-starved"
#: The least speed-up a fix must bring (the planted delay costs about half of each step).
MIN_SPEEDUP = 1.3


def starved_gcd(session: str = SESSION) -> int:
    """The GCD with the lowest median clock in the session: the one waiting for input."""
    table = tidy(load_session(session))
    return int(table.groupby("index")["sclk_mhz"].median().idxmin())


@check("11.1",
       wrong("the GCD next to the starved one", gcd=lambda a: (starved_gcd() + 1) % 8, mentions="starved GCD"),
       wrong("a broken GPU", hypothesis="a", mentions="broken"),
       wrong("a model too small", hypothesis="c"))
def check_starved_gcd(gcd: int | None, hypothesis: str | None) -> Passed:
    """Exercise 11.1: which GCD of the session idles while the others work, and what that suggests."""
    expected = starved_gcd()
    expect_type("11.1", gcd, int, what="the starved GCD's index")
    expect_equal("11.1", gcd, expected, what="the starved GCD",
                 hint="compare each GCD's median clock and power over the session, not one sample.")
    expect_in("11.1", hypothesis, ["a", "b", "c"], what="your hypothesis (a letter)")
    if hypothesis != "b":
        why = {"a": "a broken GPU would not run the other ranks' collectives in step with them; the GCD is "
                    "healthy and waiting",
               "c": "a too-small model would leave every GCD idle, not one"}[hypothesis]
        raise CheckFailed("11.1", f"({hypothesis}) does not fit: {why}",
                          hint="one GCD idles while seven work: its rank gets its batches late.")
    return passed("11.1", f"GCD {expected} waits: its rank's input is late")


def _results(run_dir: object, exercise: str, what: str) -> tuple[Path, dict[int, dict]]:
    """The run folder (given as a path or a launched run) and its per-rank results."""
    expect_answer(exercise, run_dir, what, hint="store the launched run (or its folder, `run.path`).")
    path = Path(getattr(run_dir, "path", run_dir))  # type: ignore[arg-type]
    files = sorted(path.glob("result.rank*.json")) if path.is_dir() else []
    if not files:
        raise CheckFailed(exercise, f"{path} holds no result.rank*.json", hint="wait until the run has ended; "
                                                                           "store `run.path`.")
    results = {}
    for file in files:
        data = json.loads(file.read_text())
        results[int(data["rank"])] = data
    if "case" not in results[min(results)]:
        raise CheckFailed(exercise, f"{path} is not a run of the capstone workload",
                          hint="run `workload_spec(\"capstone\", ...)`.")
    return path, results


def _phases(run_dir: Path, exercise: str) -> dict[int, dict[str, float]]:
    """Per rank: the share (0-1) of the recorded steps' time spent in each phase."""
    try:
        analyzer = TraceAnalyzer.from_path(run_dir / "profile")
    except Exception as err:  # noqa: BLE001 - any unreadable trace is the learner's missing profile
        raise CheckFailed(exercise, f"the run has no readable profiler traces ({err})",
                          hint="run it with profile=\"torch\".") from None
    shares = {}
    for rank in analyzer.ranks:
        table = step_phases(host_ops(analyzer.trace[rank].events))
        total = float(table["dur_us"].sum())
        shares[rank] = {p: float(table[f"{p}_us"].sum()) / total for p in PHASES}
    return shares


def _other_rank(run_dir: object) -> int:
    """A rank that is not the case's slow rank (for the wrong answers)."""
    _, results = _results(run_dir, "11.2", "the profiled run's folder")
    first = results[min(results)]
    return (slow_rank(int(first["case"]), int(first["world_size"])) + 1) % int(first["world_size"])


def _least_grown(run_dir: object) -> str:
    """The phase whose share grows least on the fast rank (for the wrong answers)."""
    path, results = _results(run_dir, "11.3", "the profiled run's folder")
    first = results[min(results)]
    slow = slow_rank(int(first["case"]), int(first["world_size"]))
    shares = _phases(path, "11.3")
    fast = [r for r in shares if r != slow] or [slow]
    growth = {p: statistics.mean(shares[r][p] for r in fast) - shares[slow][p] for p in PHASES if p != "data"}
    return min(growth, key=growth.get)


@check("11.2",
       wrong("the fast rank", slow_rank_found=lambda a: _other_rank(a.before_dir), mentions="waits for its data"),
       wrong("the share of the fast rank", data_share=lambda a: _phases(Path(getattr(a.before_dir, "path",
             a.before_dir)), "11.2")[_other_rank(a.before_dir)]["data"], mentions="data share"))
def check_slow_rank(before_dir: str | Path | None, slow_rank_found: int | None,
                    data_share: float | None) -> Passed:
    """Exercise 11.2: from the profiled run, the rank whose steps go to loading data, and that share."""
    path, results = _results(before_dir, "11.2", "the profiled run's folder")
    first = results[min(results)]
    expected = slow_rank(int(first["case"]), int(first["world_size"]))
    shares = _phases(path, "11.2")
    expect_type("11.2", slow_rank_found, int, what="the slow rank")
    expect_equal("11.2", slow_rank_found, expected, what="the rank that waits for its data",
                 hint="step times are equal on every rank (DDP keeps them in step); compare the data phase.")
    expect_close("11.2", data_share, shares[expected]["data"], what=f"rank {expected}'s data share", abs=0.05,
                 hint="data time over step time, summed over the recorded steps (`step_phases`).")
    return passed("11.2", f"rank {expected} spends {shares[expected]['data']:.0%} of its steps loading data")


@check("11.3",
       wrong("the phase that grows least", waiting_phase=lambda a: _least_grown(a.before_dir)),
       wrong("data, the slow rank's phase", waiting_phase="data", mentions="possible answers"))
def check_waiting_phase(before_dir: str | Path | None, waiting_phase: str | None) -> Passed:
    """Exercise 11.3: in which phase the fast ranks absorb the slow rank's delay."""
    path, results = _results(before_dir, "11.3", "the profiled run's folder")
    first = results[min(results)]
    slow = slow_rank(int(first["case"]), int(first["world_size"]))
    shares = _phases(path, "11.3")
    fast = [r for r in shares if r != slow]
    if not fast:
        raise CheckFailed("11.3", "the run has a single rank: nobody waits", hint="run 2 ranks (DDP).")
    growth = {p: statistics.mean(shares[r][p] for r in fast) - shares[slow][p] for p in PHASES if p != "data"}
    expected = max(growth, key=growth.get)
    expect_in("11.3", waiting_phase, [p for p in PHASES if p != "data"], what="the phase")
    expect_equal("11.3", waiting_phase, expected, what="the phase where the fast ranks wait",
                 hint="compare each phase's share on the fast and the slow rank; DDP's collectives sit in "
                      "forward (buffers) and backward (gradients).")
    return passed("11.3", f"the fast rank(s) spend {growth[expected]:.0%} more of each step in {expected}: "
                          f"waiting for the slow rank at a collective")


@check("11.4",
       wrong("the first run given as the fix", after_dir=lambda a: a.before_dir, mentions="same way"),
       wrong("a speed-up rounded up", speedup=lambda a: float(a.speedup) * 1.5 if a.speedup else 9.0,
             mentions="speed-up"))
def check_fix(before_dir: object, after_dir: object, speedup: float | None) -> Passed:
    """Exercise 11.4: a fixed run (same case, same slow input) and its speed-up over the first run."""
    _, before = _results(before_dir, "11.4", "the first run's folder")
    _, after = _results(after_dir, "11.4", "the fixed run's folder")
    b, a = before[min(before)], after[min(after)]
    for key in ("case", "input_ms", "world_size"):
        if a[key] != b[key]:
            raise CheckFailed("11.4", f"the fixed run changed `{key}` ({b[key]} -> {a[key]})",
                              hint="the slow storage is not yours to change: fix how the rank loads its data.")
    if int(a["workers"]) <= int(b["workers"]):
        raise CheckFailed("11.4", "the fixed run loads its data the same way", found=f"--workers {a['workers']}",
                          hint="let worker processes load the next batches while the step computes.")
    before_s = statistics.median(r["mean_step_time_s"] for r in before.values())
    after_s = statistics.median(r["mean_step_time_s"] for r in after.values())
    measured = before_s / after_s
    expect_close("11.4", speedup, measured, what="the speed-up (first step time / fixed step time)", rel=0.05)
    if measured < MIN_SPEEDUP:
        raise CheckFailed("11.4", f"the fix gives only {measured:.2f}x", expected=f"at least {MIN_SPEEDUP}x",
                          hint="use enough workers to cover the delay (each loads a whole batch).")
    return passed("11.4", f"{before_s * 1000:.0f} ms -> {after_s * 1000:.0f} ms per step ({measured:.1f}x) with "
                          f"--workers {a['workers']}, the slow input unchanged")
