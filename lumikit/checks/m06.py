"""Checks for module 06, reading traces: the top kernel class, the straggler, idle time, overlap, a Perfetto slice.

Every expected value is derived from the tables the learner's own analyzer measured (passed in by the check cell),
so the checks hold for any trace, synthetic or real.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..kernels import CLASSES
from ..trace.analyses import TraceAnalyzer
from .framework import CheckFailed, Passed, expect_answer, expect_close, expect_equal, expect_in, expect_type, passed

IDLE_REASONS = ("host_wait", "kernel_wait", "other")


def _rank_rows(exercise: str, table: pd.DataFrame, rank: int, what: str) -> pd.DataFrame:
    rows = table[table["rank"] == rank]
    if rows.empty:
        raise CheckFailed(exercise, f"the {what} table has no row for rank {rank}",
                          hint="pass the table your analyzer measured, for the rank the exercise asks about.")
    return rows


def check_top_kernel_class(answer: str | None, breakdown: pd.DataFrame, rank: int) -> Passed:
    """Exercise 06.1: the kernel class (compute / communication / memory) with the most GPU time on ``rank``."""
    rows = _rank_rows("06.1", breakdown, rank, "kernel breakdown")
    best = rows.loc[rows["total_us"].idxmax()]
    expect_in("06.1", answer, CLASSES, what="the kernel class",
              hint="the classes are the values of the `kclass` column of `get_kernel_breakdown()`.")
    expect_equal("06.1", answer, str(best["kclass"]), what=f"the class with the most GPU time on rank {rank}",
                 hint=f"keep rank {rank}'s rows of `get_kernel_breakdown()` and take the `kclass` of the largest "
                      f"`total_us`.")
    return passed("06.1", f"{best['kclass']}: {best['fraction']:.0%} of rank {rank}'s kernel time")


def check_straggler(rank: int | None, wait_us: float | None, stragglers: pd.DataFrame) -> Passed:
    """Exercise 06.2: which rank is the straggler, and how long (µs per step) the other ranks wait for it."""
    expect_type("06.2", rank, int, what="the straggler rank",
                hint="a whole number, the rank with the most `straggler_steps` in `get_stragglers()`.")
    worst = stragglers.loc[stragglers["straggler_steps"].idxmax()]
    expected_rank = int(worst["rank"])
    expect_equal("06.2", rank, expected_rank, what="the straggler rank",
                 hint="the straggler arrives last at each all-reduce, so it spends the least time in "
                      "communication kernels (`mean_comm_us`).")
    others = stragglers[stragglers["rank"] != expected_rank]["mean_comm_us"].mean()
    expected_wait = float(others - worst["mean_comm_us"])
    expect_close("06.2", wait_us, expected_wait, rel=0.02, abs=1.0,
                 what="how long the other ranks wait for the straggler per step (µs)",
                 hint="the mean of the other ranks' `mean_comm_us` minus the straggler's `mean_comm_us`.")
    return passed("06.2", f"rank {expected_rank}; the others wait about {expected_wait:.0f} µs per step for it")


def check_idle(idle_fraction: float | None, reason: str | None, analyzer: TraceAnalyzer, rank: int) -> Passed:
    """Exercise 06.3: the idle share of ``rank``'s GPU span, and the idle category that dominates the stream where
    its compute kernels run."""
    row = _rank_rows("06.3", analyzer.get_temporal_breakdown(), rank, "temporal breakdown").iloc[0]
    expected = float(row["idle_fraction"])
    expect_close("06.3", idle_fraction, expected, rel=0.02, abs=0.005,
                 what=f"the idle fraction of rank {rank}'s GPU span (0 to 1)",
                 hint="`idle_fraction` of `get_temporal_breakdown()`; a fraction, not a percentage.")
    gpu = analyzer.gpu(rank)
    compute = gpu[gpu["kclass"] == "compute"]
    if compute.empty:
        raise CheckFailed("06.3", f"rank {rank} has no compute kernels", hint="use a trace with GPU kernels.")
    stream = int(compute.groupby("stream")["dur"].sum().idxmax())
    lane = _rank_rows("06.3", analyzer.get_idle_time_breakdown(), rank, "idle-time breakdown")
    lane = lane[lane["stream"] == stream]
    totals = {k: float(lane[f"{k}_us"].sum()) for k in IDLE_REASONS}
    top = max(totals, key=totals.get)
    expect_in("06.3", reason, IDLE_REASONS, what="the idle category",
              hint="the categories are the column names of `get_idle_time_breakdown()` without `_us`.")
    expect_equal("06.3", reason, top, what=f"the largest idle category on rank {rank}'s compute stream {stream}",
                 hint="compare host_wait_us, kernel_wait_us and other_us on that stream's row.")
    return passed("06.3", f"rank {rank} idles {expected:.0%} of its span, mostly {top.replace('_', ' ')} "
                          f"({totals[top]:.0f} µs on stream {stream})")


def check_overlap(hta_overlap_pct: float | None, overlap: pd.DataFrame, rank: int) -> Passed:
    """Exercise 06.4: HTA's communication/computation overlap of ``rank`` in percent, which must agree with
    lumikit's ``get_comm_comp_overlap`` (a fraction) to within a percentage point."""
    row = _rank_rows("06.4", overlap, rank, "overlap").iloc[0]
    expected = 100 * float(row["overlap"])
    expect_close("06.4", hta_overlap_pct, expected, rel=0.0, abs=1.0,
                 what=f"HTA's comm/comp overlap of rank {rank} (%)",
                 hint="`comp_comm_overlap_pctg` of HTA's `get_comm_comp_overlap()`, already in percent.")
    return passed("06.4", f"{expected:.1f} % of rank {rank}'s communication runs under computation")


def check_perfetto_slice(path: str | Path | None, rank: int, step: int) -> Passed:
    """Exercise 06.5: a gzip slice holding exactly ProfilerStep ``step`` of ``rank``, with its GPU work."""
    expect_answer("06.5", path, "the path of the slice you wrote",
                  hint="`slice_trace` returns a list of the files it wrote; take the first.")
    expect_type("06.5", path, (str, Path), what="the path of the slice", hint="a file path, not a list.")
    file = Path(path)
    if not file.is_file():
        raise CheckFailed("06.5", f"{file} does not exist", hint="run the cell that writes the slice first.")
    if not file.name.endswith(".json.gz"):
        raise CheckFailed("06.5", f"{file.name} is not a gzip trace", expected="a name ending in .json.gz",
                          found=file.name, hint="Perfetto opens .json.gz directly; name the output so.")
    cut = TraceAnalyzer.from_path(file)
    expect_equal("06.5", cut.ranks, [rank], what="the ranks in the slice",
                 hint=f"pass ranks=[{rank}] to slice_trace.")
    expect_equal("06.5", cut.get_profiler_steps(), [step], what="the profiler steps in the slice",
                 hint=f"pass steps=({step}, {step}) to slice_trace.")
    kernels = int((cut.gpu(rank)["step"] == step).sum())
    if kernels == 0:
        raise CheckFailed("06.5", "the slice holds no GPU activity of the step",
                          hint="slice a trace with GPU kernels (the synthetic one), not the CPU-only one.")
    return passed("06.5", f"{file.name}: step {step} of rank {rank} with {kernels} GPU activities")
