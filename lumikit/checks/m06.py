"""Checks for module 06, reading traces: the top kernel class, the straggler, idle time, HTA's view, a Perfetto
slice.

Each learner's trace is generated from their own :func:`exercise_trace_spec` (straggler, its delay and the model
size vary, so the numbers differ between learners, not only their order). Every expected value is derived from the
tables the check cell measures on that trace, or (06.4) from HTA run by the check itself, so the checks hold for any
trace, synthetic or real.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..kernels import CLASSES
from ..trace.analyses import TraceAnalyzer
from ..trace.synth import SynthSpec
from .datasets import trace_spec
from .concepts import Choice, Option, choice_check
from .framework import (CheckFailed, Passed, check, expect_answer, expect_close, expect_equal, expect_in, expect_type,
                        passed, wrong)

IDLE_REASONS = ("host_wait", "kernel_wait", "other")


def _rank_rows(exercise: str, table: pd.DataFrame, rank: int, what: str) -> pd.DataFrame:
    rows = table[table["rank"] == rank]
    if rows.empty:
        raise CheckFailed(exercise, f"the {what} table has no row for rank {rank}",
                          hint="pass the table your analyzer measured, for the rank the exercise asks about.")
    return rows


def exercise_trace_spec() -> SynthSpec:
    """This learner's 4-rank trace to generate (``write_synthetic(folder, exercise_trace_spec())``)."""
    return trace_spec("06")


def _ranked_classes(breakdown: pd.DataFrame, rank: int) -> list[str]:
    rows = breakdown[breakdown["rank"] == rank].sort_values("total_us", ascending=False)
    return [str(c) for c in rows["kclass"]]


@check("06.1",
       wrong("the runner-up class", answer=lambda a: _ranked_classes(a.breakdown, a.rank)[1]),
       wrong("the library's name instead of a class", answer="nccl", mentions="one of"),
       wrong("the top kernel's name instead of its class", answer="Cijk_Alik_Bljk"))
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


def _straggler(stragglers: pd.DataFrame) -> int:
    return int(stragglers.loc[stragglers["straggler_steps"].idxmax(), "rank"])


def _wait(stragglers: pd.DataFrame) -> float:
    worst = _straggler(stragglers)
    mine = float(stragglers.loc[stragglers["rank"] == worst, "mean_comm_us"].iloc[0])
    return float(stragglers[stragglers["rank"] != worst]["mean_comm_us"].mean() - mine)


@check("06.2",
       wrong("the rank that spends the most time in communication (a rank that waits)",
             rank=lambda a: int(a.stragglers.loc[a.stragglers["mean_comm_us"].idxmax(), "rank"])),
       wrong("the wait in milliseconds", rank=lambda a: _straggler(a.stragglers),
             wait_us=lambda a: _wait(a.stragglers) / 1000, mentions="µs"),
       wrong("the straggler's own communication time as the wait", rank=lambda a: _straggler(a.stragglers),
             wait_us=lambda a: float(a.stragglers.loc[a.stragglers["rank"] == _straggler(a.stragglers),
                                                      "mean_comm_us"].iloc[0])),
       wrong("rank 0, the rank people look at first", rank=0))
def check_straggler(rank: int | None, wait_us: float | None, stragglers: pd.DataFrame) -> Passed:
    """Exercise 06.2: which rank is the straggler, and how long (µs per step) the other ranks wait for it."""
    expect_type("06.2", rank, int, what="the straggler rank",
                hint="a whole number: one rank of the trace.")
    worst = stragglers.loc[stragglers["straggler_steps"].idxmax()]
    expected_rank = int(worst["rank"])
    waits_most = int(stragglers.loc[stragglers["mean_comm_us"].idxmax(), "rank"])
    if int(rank) != expected_rank and int(rank) == waits_most:
        raise CheckFailed("06.2", "the straggler rank is not right", expected=expected_rank, found=rank,
                          mistake="the rank that waits longest at the all-reduces: it waits for the straggler",
                          hint="who arrives last at each all-reduce?")
    expect_equal("06.2", rank, expected_rank, what="the straggler rank",
                 hint="the straggler arrives last at each all-reduce: which rank then waits there least?")
    others = stragglers[stragglers["rank"] != expected_rank]["mean_comm_us"].mean()
    expected_wait = float(others - worst["mean_comm_us"])
    expect_close("06.2", wait_us, expected_wait, rel=0.02, abs=1.0,
                 what="how long the other ranks wait for the straggler per step (µs)",
                 hint="the mean of the other ranks' `mean_comm_us` minus the straggler's `mean_comm_us`.")
    return passed("06.2", f"rank {expected_rank}; the others wait about {expected_wait:.0f} µs per step for it")


def _idle_totals(analyzer: TraceAnalyzer, rank: int) -> dict[str, float]:
    gpu = analyzer.gpu(rank)
    stream = int(gpu[gpu["kclass"] == "compute"].groupby("stream")["dur"].sum().idxmax())
    lane = analyzer.get_idle_time_breakdown()
    lane = lane[(lane["rank"] == rank) & (lane["stream"] == stream)]
    return {k: float(lane[f"{k}_us"].sum()) for k in IDLE_REASONS}


def _idle_fraction(analyzer: TraceAnalyzer, rank: int) -> float:
    table = analyzer.get_temporal_breakdown()
    return float(table.loc[table["rank"] == rank, "idle_fraction"].iloc[0])


@check("06.3",
       wrong("a percentage instead of a fraction", idle_fraction=lambda a: 100 * _idle_fraction(a.analyzer, a.rank),
             mentions="0 to 1"),
       wrong("the smallest idle category", idle_fraction=lambda a: _idle_fraction(a.analyzer, a.rank),
             reason=lambda a: min(_idle_totals(a.analyzer, a.rank), key=_idle_totals(a.analyzer, a.rank).get)),
       wrong("rank 0's idle share instead of the straggler's",
             idle_fraction=lambda a: _idle_fraction(a.analyzer, 0)),
       wrong("a category that is not one of the table's", reason="data_loader"))
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


@lru_cache(maxsize=4)
def _hta_idle_pct(trace_dir: str, rank: int) -> float:
    """HTA's idle share (percent) of ``rank``'s GPU time, from HTA itself run on ``trace_dir``."""
    from ..trace.hta_bridge import trace_analysis

    table = trace_analysis(Path(trace_dir)).get_temporal_breakdown(visualize=False)
    rows = table[table["rank"] == rank]
    if rows.empty:
        raise CheckFailed("06.4", f"HTA found no rank {rank} in {trace_dir}", hint="pass the trace folder.")
    return float(rows["idle_time_pctg"].iloc[0])


def _lumikit_idle_pct(trace_dir: str | Path, rank: int, include_last_step: bool = True) -> float:
    """lumikit's idle share (percent), by default over every step, the last one included (HTA leaves it out)."""
    return 100 * _idle_fraction(TraceAnalyzer.from_path(Path(trace_dir), include_last_step=include_last_step), rank)


@check("06.4",
       wrong("lumikit's number over every step (include_last_step=True) instead of HTA's",
             hta_idle_pct=lambda a: _lumikit_idle_pct(a.trace_dir, a.rank), mentions="HTA"),
       wrong("a fraction instead of a percentage",
             hta_idle_pct=lambda a: _hta_idle_pct(str(a.trace_dir), a.rank) / 100),
       wrong("HTA's idle share of rank 0 instead of the straggler's",
             hta_idle_pct=lambda a: _hta_idle_pct(str(a.trace_dir), 0)))
def check_hta_idle(hta_idle_pct: float | None, trace_dir: str | Path, rank: int) -> Passed:
    """Exercise 06.4: HTA's idle share (in percent) of ``rank``'s GPU time, from HTA's own temporal breakdown (HTA
    leaves out the last step, so lumikit's number for all steps is not the answer)."""
    expected = _hta_idle_pct(str(trace_dir), rank)
    ours = _lumikit_idle_pct(trace_dir, rank)
    if (isinstance(hta_idle_pct, (int, float)) and not isinstance(hta_idle_pct, bool)
            and abs(float(hta_idle_pct) - expected) > 0.05
            and any(abs(float(hta_idle_pct) - x) <= 0.05 for x in (ours, _lumikit_idle_pct(trace_dir, rank, False)))):
        raise CheckFailed("06.4", f"HTA's idle share of rank {rank}'s GPU time (%) is off", expected=expected,
                          found=hta_idle_pct, mistake="lumikit's number over every step, not HTA's",
                          hint="HTA counts the span without the last step: ask HTA itself.")
    value = expect_close("06.4", hta_idle_pct, expected, rel=0.0, abs=0.05,
                         what=f"HTA's idle share of rank {rank}'s GPU time (%)",
                         hint="HTA's own number, in percent: HTA counts the span without the last step, so "
                              "lumikit's number over every step is not it.")
    return passed("06.4", f"HTA: {value:.2f} % idle on rank {rank} (lumikit, counting every step: {ours:.2f} %)")


@check("06.5",
       wrong("the list slice_trace returns, not one path", path=lambda a: [a.path]),
       wrong("a file that was never written", path=lambda a: str(a.path).replace(".json.gz", "-missing.json.gz"),
             mentions="does not exist"),
       wrong("the whole trace folder", path=lambda a: str(Path(a.path).parent)))
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
                 hint="a slice for one rank holds that rank only.")
    expect_equal("06.5", cut.get_profiler_steps(), [step], what="the profiler steps in the slice",
                 hint="a slice of one step holds that step only (its first and last step are the same).")
    kernels = int((cut.gpu(rank)["step"] == step).sum())
    if kernels == 0:
        raise CheckFailed("06.5", "the slice holds no GPU activity of the step",
                          hint="slice a trace with GPU kernels (the synthetic one), not the CPU-only one.")
    return passed("06.5", f"{file.name}: step {step} of rank {rank} with {kernels} GPU activities")


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_NOT_STEP_TIME = Choice("06.q1", "Why can the step time not tell you which rank is the straggler?", {
    "a": Option("The trace has no step times.", False,
                "it has: the ProfilerStep annotations give every rank's steps (`mean_step_us` in 06.2)."),
    "b": Option("Every rank waits at the all-reduce for the slowest, so all ranks end each step together.", True,
                "the straggler is the rank that arrives last and so waits least in communication; the others' "
                "extra communication time is what they lose to it."),
    "c": Option("The straggler's steps are shorter than the others'.", False,
                "they are just as long: the collectives make every rank's step end at the same time."),
})
check_why_not_step_time = choice_check(WHY_NOT_STEP_TIME)


# --- Hardware counters: GPU% 100 only says a kernel was resident ---------------------------------------------------

def counter_exercise_csv() -> str:
    """A generated ``rocprofv3 --pmc GRBM_GUI_ACTIVE SQ_WAVES`` counter CSV (documented columns): kernels that each
    kept the GCD busy for their whole run, some with far fewer waves than compute units; different per learner."""
    from ..checks.learner import rng_for

    rng = rng_for("06.C1")
    header = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id",'
              '"Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count",'
              '"SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')
    kernels = [("layer_norm_small", rng.choice([16, 32, 64])), ("gemm_big", rng.choice([8192, 16384, 65536])),
               ("reduce_tail", rng.choice([1, 2, 4])), ("elementwise_wide", rng.choice([2048, 4096])),
               # either side of 1 wave per CU (110 CUs), so that another threshold gives another list
               ("softmax_narrow", rng.choice([96, 104])), ("conv_mid", rng.choice([140, 180]))]
    rows, t = [header], 1_000_000
    for i, (name, waves) in enumerate(kernels, start=1):
        dur = rng.randrange(20_000, 200_000)
        for counter, value in (("GRBM_GUI_ACTIVE", round(dur * 1.7)), ("SQ_WAVES", waves)):
            rows.append(f'{i},{i},"Agent 1",1,4242,4242,{waves * 64},{i},"{name}",64,0,0,32,0,32,"{counter}",'
                        f'{value},{t},{t + dur}')
        t += dur + 1000
    return "\n".join(rows) + "\n"


def _waves(text: str) -> dict[str, float]:
    from ..rocprof.counters import parse_counter_csv, waves_per_cu

    w = waves_per_cu(parse_counter_csv(text))
    return dict(zip(w["kernel"], w["waves_per_cu"]))


@check("06.C1",
       wrong("every kernel kept the GPU busy (GRBM_GUI_ACTIVE): busy is not used",
             starved=lambda a: sorted(_waves(a.csv_text))),
       wrong("waves per GCD instead of per compute unit: only the kernels below 1 wave",
             starved=lambda a: sorted(k for k, w in _waves(a.csv_text).items() if w * 110 < 1) or ["none"]),
       wrong("the biggest kernel", starved=lambda a: [max(_waves(a.csv_text), key=_waves(a.csv_text).get)]),
       wrong("a threshold of 2 waves per CU", starved=lambda a: sorted(k for k, w in _waves(a.csv_text).items() if w < 2)),
       wrong("a threshold of half a wave per CU",
             starved=lambda a: sorted(k for k, w in _waves(a.csv_text).items() if w < 0.5)))
def check_starved_kernels(starved: list[str] | None, csv_text: str) -> Passed:
    """Exercise 06.C1: the kernels with fewer waves than the GCD has compute units (below 1 wave per CU)."""
    expected = sorted(k for k, w in _waves(csv_text).items() if w < 1)
    expect_type("06.C1", starved, list, what="a list of kernel names")
    expect_equal("06.C1", sorted(starved), expected, what="the kernels with less than one wave per compute unit",
                 hint="compare each kernel's waves with the compute units of one GCD (the site profile counts "
                      "them); the threshold is one wave for every unit.")
    return passed("06.C1", f"{', '.join(expected)}: GPU% read 100 while most of the 110 compute units had nothing "
                           "to run")
