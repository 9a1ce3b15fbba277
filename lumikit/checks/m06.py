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
                        passed, plain_items, wrong)

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
              hint="one of the kernel classes the analyzer names, spelled as it spells them.")
    expect_equal("06.1", answer, str(best["kclass"]), what=f"the class with the most GPU time on rank {rank}",
                 hint=f"GPU time per class, on rank {rank} only: another rank's kernels, or counts instead of "
                      f"time, change the winner.")
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
                 hint="the others wait at each all-reduce for the one that arrives last; the difference "
                      "between their waits and the straggler's is the answer (`hint(\"06.2\")` for the tool).")
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
                 hint="the share of the rank's GPU span with no kernel running; a fraction, not a percentage.")
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
              hint="one of the three idle categories the question names, spelled as there.")
    expect_equal("06.3", reason, top, what=f"the largest idle category on rank {rank}'s compute stream {stream}",
                 hint="the rank's compute stream only: the idle time of its other streams tells another story.")
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
                  hint="the file the slicing wrote (one path, not the folder).")
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
    items = plain_items(starved)
    if items is None:
        expect_type("06.C1", starved, list, what="a list of kernel names")  # fails, naming the type given
        items = []
    expect_equal("06.C1", sorted(str(i) for i in items), expected,
                 what="the kernels with less than one wave per compute unit",
                 hint="compare each kernel's waves with the compute units of one GCD (the site profile counts "
                      "them); the threshold is one wave for every unit.")
    return passed("06.C1", f"{', '.join(expected)}: GPU% read 100 while most of the 110 compute units had nothing "
                           "to run")


# --- Why the GPU waited, and what would make the step faster (generated traces with known answers) ----------------

#: The causes of the generated idle-causes trace (:func:`idle_exercise_events`), as ``lumikit trace idle`` names them.
IDLE_EXERCISE_CAUSES = ("sync drain: hipDeviceSynchronize", "starved: data loading", "starved: aten::nonzero",
                        "starved: launch overhead")
_HOST, _GPU = {"pid": 100, "tid": 1}, {"pid": 0, "tid": 0}


def idle_exercise_gaps(seed: str | None = None) -> tuple[tuple[str, float], ...]:
    """The GPU idle gaps of this learner's (or ``seed``'s) generated trace, in time order, as (cause, µs): the
    construction the check judges by. One cause holds the most time in two mid-sized gaps; another has the most
    gaps (three short ones) and a third the single longest gap, so counting gaps or reading the longest one names
    the wrong cause."""
    from .learner import learner_seed

    return _idle_gaps(learner_seed() if seed is None else seed)


@lru_cache(maxsize=8)
def _idle_gaps(seed: str) -> tuple[tuple[str, float], ...]:
    from .learner import rng_for

    rng = rng_for("06.P1", seed)
    most_time, most_gaps, longest, other = rng.sample(IDLE_EXERCISE_CAUSES, 4)
    gaps = [(most_time, float(rng.randrange(150, 195, 5))) for _ in range(2)]  # 300-380 µs together
    gaps += [(most_gaps, float(rng.randrange(55, 85, 5))) for _ in range(3)]  # at most 240 µs together
    gaps += [(longest, float(rng.randrange(250, 295, 5))), (other, float(rng.randrange(40, 105, 5)))]
    rng.shuffle(gaps)
    return tuple(gaps)


def idle_exercise_events(seed: str | None = None) -> list[dict]:
    """A generated one-step ROCm trace (Kineto events; ProfilerStep#2 is the dropped last step) whose GPU idle gaps
    have the causes and lengths of :func:`idle_exercise_gaps`: kernels on stream 0, and in each gap what the host
    did (waited in ``hipDeviceSynchronize``, loaded data, ran ``aten::nonzero``, or sat in a long launch call).
    The 20 µs from the step's start to the first kernel are idle too ("starved: nothing traced", far from the
    answer)."""
    from ..trace.synth import event
    from .learner import rng_for

    rng = rng_for("06.P1.kernels", seed)
    events: list[dict] = [event("hipLaunchKernel", "cuda_runtime", 5, 5, correlation=1, **_HOST)]
    t = 20.0  # the first kernel's start
    for corr, (cause, length) in enumerate(idle_exercise_gaps(seed), start=1):
        dur = float(rng.randrange(40, 130, 10))
        events.append(event(f"kernel_{corr}", "kernel", t, dur, correlation=corr, stream=0, device=0, **_GPU))
        gap, nxt = t + dur, t + dur + length  # the gap, and the start of the kernel that ends it
        launch = (gap + 2, length - 5) if cause.endswith("launch overhead") else (nxt - 8, 5)
        events.append(event("hipLaunchKernel", "cuda_runtime", *launch, correlation=corr + 1, **_HOST))
        if cause.startswith("sync drain"):  # the host waits for the GPU to drain, then prepares the next step
            events.append(event("hipDeviceSynchronize", "cuda_runtime", gap - 20, 23, correlation=1000 + corr,
                                **_HOST))
            events.append(event("aten::copy_", "cpu_op", gap + 5, length - 15, **_HOST))
        elif cause.endswith("data loading"):
            events.append(event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation",
                                gap - 5, length - 5, **_HOST))
        elif cause.endswith("aten::nonzero"):
            events.append(event("aten::nonzero", "cpu_op", gap + 2, length - 12, **_HOST))
        t = nxt
    n = len(idle_exercise_gaps(seed)) + 1
    events.append(event(f"kernel_{n}", "kernel", t, 50.0, correlation=n, stream=0, device=0, **_GPU))
    end = t + 70
    events += [event("ProfilerStep#1", "user_annotation", 0, end, **_HOST),
               event("ProfilerStep#2", "user_annotation", end, 50, **_HOST)]
    return sorted(events, key=lambda e: e["ts"])


def _idle_exercise_totals(seed: str | None = None) -> dict[str, float]:
    totals: dict[str, float] = {}
    for cause, us in idle_exercise_gaps(seed):
        totals[cause] = totals.get(cause, 0.0) + us
    return totals


def _idle_pick(rule: str) -> str:
    """The cause a rule picks on this learner's trace: ``time`` (the answer), ``gaps`` (most gaps) or ``longest``
    (the longest single gap)."""
    gaps = idle_exercise_gaps()
    if rule == "time":
        totals = _idle_exercise_totals()
        return max(totals, key=totals.get)
    if rule == "gaps":
        counts = {c: sum(1 for g, _ in gaps if g == c) for c, _ in gaps}
        return max(counts, key=counts.get)
    return max(gaps, key=lambda g: g[1])[0]


@check("06.P1",
       wrong("the cause with the most gaps, not the most time", top_cause=lambda a: _idle_pick("gaps"),
             top_cause_us=lambda a: _idle_exercise_totals()[_idle_pick("gaps")], mentions="gaps"),
       wrong("the cause of the single longest gap", top_cause=lambda a: _idle_pick("longest"),
             top_cause_us=lambda a: max(us for _, us in idle_exercise_gaps()), mentions="longest"),
       wrong("the kind of cause, not the cause", top_cause=lambda a: _idle_pick("time").split(":")[0],
             mentions="kind"),
       wrong("the right cause with only its longest gap",
             top_cause_us=lambda a: max(us for c, us in idle_exercise_gaps() if c == _idle_pick("time")),
             mentions="every gap"))
def check_top_idle_cause(top_cause: str | None, top_cause_us: float | None) -> Passed:
    """Exercise 06.P1: the idle cause with the most GPU idle time in this learner's generated trace
    (:func:`idle_exercise_events`), as ``lumikit trace idle`` names it, and its idle time in µs."""
    expect_answer("06.P1", top_cause, "the cause with the most idle time (a `cause` as the table writes it)",
                  hint="a whole cause such as the table's `cause` column writes it.")
    totals = _idle_exercise_totals()
    answer = _idle_pick("time")
    if top_cause in ("sync drain", "starved", "queued"):
        raise CheckFailed("06.P1", "the cause is not right", expected=answer, found=top_cause,
                          mistake="a kind of cause (the part before the colon), not the cause itself",
                          hint="give the whole `cause`, kind and detail.")
    expect_in("06.P1", top_cause, list(totals) + ["queued", "starved: nothing traced"],
              what="the cause", hint="copy a value of the `cause` column of the idle-causes table.")
    if top_cause != answer:
        if top_cause == _idle_pick("gaps"):
            mistake = "the cause with the most gaps: many short gaps can add up to less time than a few long ones"
        elif top_cause == _idle_pick("longest"):
            mistake = "the cause of the longest single gap: add up every gap of each cause"
        else:
            mistake = None
        raise CheckFailed("06.P1", "the cause with the most idle time is not right", expected=answer,
                          found=top_cause, mistake=mistake, hint="compare the causes by their summed idle time.")
    expected_us = totals[answer]
    longest_own = max(us for c, us in idle_exercise_gaps() if c == answer)
    if isinstance(top_cause_us, (int, float)) and abs(float(top_cause_us) - longest_own) < 0.5 \
            and abs(longest_own - expected_us) >= 0.5:
        raise CheckFailed("06.P1", "the idle time of that cause (µs) is off", expected=expected_us,
                          found=top_cause_us, mistake="only one gap of the cause: add every gap it holds",
                          hint="the cause's total over the window.")
    expect_close("06.P1", top_cause_us, expected_us, rel=0.01, abs=1.0, what="the idle time of that cause (µs)",
                 hint="the cause's total idle time over the window, in µs.")
    share = expected_us / sum(totals.values())
    return passed("06.P1", f"{answer}: {expected_us:.0f} µs, {share:.0%} of the generated trace's GPU idle time")


#: The kernels and CPU op of the generated what-if trace (:func:`what_if_exercise_events`), the names to try.
WHAT_IF_CANDIDATES = ("gemm_kernel", "attention_kernel", "ncclDevKernel_AllReduce", "optimizer_step")


def what_if_exercise_plan(seed: str | None = None) -> dict:
    """The construction of this learner's what-if trace, and its known answer.

    Stream 0 runs ``gemm_kernel`` (g1 µs) then ``attention_kernel`` (g2); stream 1 runs the all-reduce (c µs,
    the longest kernel) beside them; the host waits in ``hipDeviceSynchronize`` and then runs ``optimizer_step``
    (h µs of CPU). The path is 38 + g1 + g2 + h µs (5 µs of ``aten::mm`` before its launch, 10 µs launch
    overhead, and 23 µs of the step that no op covers: 10 before ``aten::mm``, 3 between the sync and
    ``optimizer_step``, 10 after it); the branch through the all-reduce is ``slack`` µs shorter. Made 2x faster,
    the all-reduce gains 0, a stream-0 kernel half its time but at most the slack (``gemm_kernel`` always hits it:
    then the other branch is the path), and ``optimizer_step`` half its time. ``gains_us`` holds each; ``answer``
    the best, 20 µs clear of the next."""
    from .learner import learner_seed

    return dict(_what_if_plan(learner_seed() if seed is None else seed))


@lru_cache(maxsize=8)
def _what_if_plan(seed: str) -> dict:
    from .learner import rng_for

    rng = rng_for("06.P2", seed)
    answer = rng.choice(("gemm_kernel", "optimizer_step"))
    while True:  # until the best gain is clear by 20 µs and the naive gain (half of gemm_kernel) is wrong
        g1, g2 = rng.randrange(420, 610, 10), rng.randrange(200, 310, 10)
        c = g1 + rng.randrange(10, 65, 5)
        # the two branches in step time (host time between ops counts): stream 0's kernels start at 25 µs, the
        # all-reduce at 70 µs
        slack = (25 + g1 + g2) - (70 + c)
        margin = rng.randrange(30, 85, 5)
        h = 2 * (slack + margin) if answer == "optimizer_step" else 2 * (slack - margin)
        # a stream-0 kernel gains half its time, at most the slack; the all-reduce (off the path) nothing
        gains = {"gemm_kernel": float(min(g1 / 2, slack)), "attention_kernel": float(min(g2 / 2, slack)),
                 "ncclDevKernel_AllReduce": 0.0, "optimizer_step": h / 2}
        ranked = sorted(gains.values(), reverse=True)
        if h >= 40 and slack + 30 <= g1 / 2 and max(gains, key=gains.get) == answer and ranked[0] - ranked[1] >= 20:
            break
    path = 38.0 + g1 + g2 + h  # with the step's 23 µs of untraced host time (see the docstring)
    return {"g1": g1, "g2": g2, "c": c, "h": h, "slack": slack, "path_us": path, "gains_us": gains,
            "answer": answer, "gain_pct": 100 * gains[answer] / path}


def what_if_exercise_events(seed: str | None = None) -> list[dict]:
    """This learner's generated one-step ROCm trace for the what-if exercise (see :func:`what_if_exercise_plan`)."""
    from ..trace.synth import event

    p = what_if_exercise_plan(seed)
    g1, g2, c, h = p["g1"], p["g2"], p["c"], p["h"]
    sync_end = 27.0 + g1 + g2  # the host returns 2 µs after the last kernel
    ops = (("aten::mm", 10, 1, "gemm_kernel", 0, 25, g1), ("aten::_scaled_dot_product_flash", 32, 2,
           "attention_kernel", 0, 25 + g1, g2), ("c10d::allreduce_", 54, 3, "ncclDevKernel_AllReduce", 1, 70, c))
    events = []
    for op, ts, corr, kernel, stream, k_ts, k_dur in ops:
        events.append(event(op, "cpu_op", ts, 20, **{"External id": corr}, **_HOST))
        events.append(event("hipLaunchKernel", "cuda_runtime", ts + 5, 5, correlation=corr,
                            **{"External id": corr}, **_HOST))
        events.append(event(kernel, "kernel", k_ts, k_dur, pid=0, tid=stream, stream=stream, device=0,
                            correlation=corr, **{"External id": corr}))
    end = sync_end + 3 + h + 10
    events += [event("hipDeviceSynchronize", "cuda_runtime", 80, sync_end - 80, correlation=4, **_HOST),
               event("optimizer_step", "cpu_op", sync_end + 3, h, **{"External id": 5}, **_HOST),
               event("ProfilerStep#1", "user_annotation", 0, end, **_HOST),
               event("ProfilerStep#2", "user_annotation", end, 50, **_HOST)]
    return sorted(events, key=lambda e: e["ts"])


def _naive_gain_pct() -> float:
    """The gain if the path kept its shape: half of gemm_kernel's time (the mistake 06.P2 names)."""
    p = what_if_exercise_plan()
    return 100 * (p["g1"] / 2) / p["path_us"]


@check("06.P2",
       wrong("the longest kernel, which runs beside the path",
             best_op="ncclDevKernel_AllReduce", gain_pct=lambda a: 100 * what_if_exercise_plan()["c"] / 2
             / what_if_exercise_plan()["path_us"], mentions="beside the path"),
       wrong("the on-path kernel with the most time, and half its time as the gain", best_op="gemm_kernel",
             gain_pct=lambda a: _naive_gain_pct()),
       wrong("the gain as a fraction, not a percentage", gain_pct=lambda a: what_if_exercise_plan()["gain_pct"] / 100,
             mentions="percentage"),
       wrong("the path's length after the change instead of the gain",
             gain_pct=lambda a: what_if_exercise_plan()["path_us"] * (1 - what_if_exercise_plan()["gain_pct"] / 100)))
def check_what_if(best_op: str | None, gain_pct: float | None) -> Passed:
    """Exercise 06.P2: which of :data:`WHAT_IF_CANDIDATES`, made 2x faster, shortens this learner's generated step
    (:func:`what_if_exercise_events`) the most, and the gain in percent of the critical path."""
    plan = what_if_exercise_plan()
    expect_in("06.P2", best_op, WHAT_IF_CANDIDATES, what="the kernel or CPU op to make 2x faster",
              hint="one of `checks.WHAT_IF_CANDIDATES`, as written there.")
    if best_op != plan["answer"]:
        if best_op == "ncclDevKernel_AllReduce":
            mistake = "the longest kernel: it runs beside the path, so making it faster saves nothing"
        elif best_op == "gemm_kernel":
            mistake = ("half of that kernel's time as the gain: once it shrinks, the branch through the other "
                       "stream becomes the path")
        else:
            mistake = None
        raise CheckFailed("06.P2", "the kernel or op with the biggest gain is not right", expected=plan["answer"],
                          found=best_op, mistake=mistake,
                          hint="measure every candidate with a what-if, then compare the measured gains.")
    naive = _naive_gain_pct()
    if (best_op == "gemm_kernel" and isinstance(gain_pct, (int, float))
            and abs(float(gain_pct) - naive) < 0.25 <= abs(naive - plan["gain_pct"])):
        raise CheckFailed("06.P2", "the gain (% of the path) is off", expected=plan["gain_pct"], found=gain_pct,
                          mistake="half the kernel's time: once it shrinks, the branch through the other stream "
                                  "becomes the path",
                          hint="measure it: the what-if runs the longest path again.")
    value = expect_close("06.P2", gain_pct, plan["gain_pct"], rel=0.0, abs=0.25,
                         what="the gain in percent of the critical path",
                         hint="the gain measured on the path, in percent of its length before the change.")
    return passed("06.P2", f"{best_op} 2x faster: the step's path {value:.1f} % shorter (generated trace)")


# --- A roofline for MI250X: which matrix kernel is memory-bound, and by how much (generated counters) ------------

def roofline_exercise_tokens(seed: str | None = None) -> int:
    """The decode tokens of this learner's (or ``seed``'s) QKV projection in the generated roofline counters: the
    thin GEMM whose intensity the exercise asks about."""
    from .datasets import pick

    return int(pick("06.R1", (8, 16, 24, 40, 48), seed))


def write_roofline_exercise(folder: str | Path) -> Path:
    """Write this learner's generated roofline run (``pass_1/`` ... ``pass_3/`` counter CSVs of the course's kernels,
    :func:`lumikit.rocprof.course_counters.write_course_counters`) into ``folder``; returns it."""
    from ..rocprof.course_counters import write_course_counters

    return write_course_counters(folder, roofline_exercise_tokens())


def roofline_exercise_points() -> pd.DataFrame:
    """This learner's roofline table (one row per kernel), read from a freshly written generated run: what the
    exercise's cell computes, and what a regrade rebuilds."""
    import tempfile

    from ..rocprof.roofline import read_roofline

    folder = Path(tempfile.mkdtemp(prefix="lumikit-roofline-06-"))
    return read_roofline(write_roofline_exercise(folder / "generated-roofline")).table()


def _peak_of(name: str) -> float:
    from ..rocprof.roofline import peaks

    return next(r.value for r in peaks() if r.name == f"{name}, peak")


def _below_ridge(points: pd.DataFrame, *, nbytes: str = "hbm_bytes", roof: str | None = None) -> dict[str, float]:
    """Ridge point / arithmetic intensity of every matrix (MFMA) kernel of ``points``: how many times its FLOPs per
    byte fall short of the intensity at which its roof's peak is reached (the published peaks)."""
    rows = points[points["dominant"].astype(str).str.startswith("mfma") & (points["flops"] > 0)]
    out = {}
    for _, r in rows.iterrows():
        ridge = _peak_of(roof or str(r["roof"])) / _peak_of("HBM")
        out[str(r["kernel"])] = ridge / (float(r["flops"]) / float(r[nbytes]))
    return out


def _most_time_matrix_kernel(points: pd.DataFrame) -> str:
    rows = points[points["dominant"].astype(str).str.startswith("mfma")]
    return str(rows.loc[rows["duration_ns"].idxmax(), "kernel"])


def _furthest(points: pd.DataFrame) -> str:
    below = _below_ridge(points)
    return max(below, key=below.get)


@check("06.R1",
       wrong("the ratio upside down: intensity over ridge point", kernel=lambda a: _furthest(a.points),
             below_ridge=lambda a: 1 / _below_ridge(a.points)[_furthest(a.points)], mentions="upside down"),
       wrong("L2 bytes instead of HBM bytes in the intensity", kernel=lambda a: _furthest(a.points),
             below_ridge=lambda a: _below_ridge(a.points, nbytes="l2_bytes")[_furthest(a.points)], mentions="L2"),
       wrong("the FP32 vector peak's ridge point instead of the BF16 matrix peak's",
             kernel=lambda a: _furthest(a.points),
             below_ridge=lambda a: _below_ridge(a.points, roof="FP32 vector")[_furthest(a.points)],
             mentions="vector"),
       wrong("the matrix kernel with the most time", kernel=lambda a: _most_time_matrix_kernel(a.points),
             mentions="time"),
       wrong("the kernel furthest below the ridge overall, which does not run on the matrix cores",
             kernel=lambda a: str(a.points.loc[a.points["arithmetic_intensity"].idxmin(), "kernel"]),
             mentions="matrix cores"))
def check_memory_bound_gemm(kernel: str | None, below_ridge: float | None, points: pd.DataFrame) -> Passed:
    """Exercise 06.R1: the matrix (MFMA) kernel of the generated roofline table ``points`` whose intensity (FLOPs
    per HBM byte) falls furthest below the ridge point of its roof (peak FLOP/s over peak HBM bandwidth, the
    published peaks), and by what factor (ridge point / intensity, above 1)."""
    import math

    below = _below_ridge(points)
    expect_answer("06.R1", kernel, "the matrix kernel furthest below its ridge point (a `kernel` of the table)")
    if not below:
        raise CheckFailed("06.R1", "this table has no kernel that runs on the matrix cores",
                          hint="pass the table of the generated run the exercise wrote (`rl.table()`).")
    if kernel not in below:
        known = set(points["kernel"].astype(str))
        raise CheckFailed("06.R1", "that is not a kernel of the table that runs on the matrix cores", found=kernel,
                          mistake="a kernel whose FLOPs are vector instructions: its ridge point is another roof's"
                          if kernel in known else None,
                          hint="keep the rows whose `dominant` starts with `mfma`, then compare their intensities "
                               "with the ridge point.")
    answer = max(below, key=below.get)
    if kernel != answer:
        raise CheckFailed("06.R1", "that matrix kernel is not the one furthest below its ridge point", found=kernel,
                          mistake="the kernel with the most time: time says nothing about FLOPs per byte"
                          if kernel == _most_time_matrix_kernel(points) else None,
                          hint="compare each matrix kernel's `arithmetic_intensity` with the ridge point.")
    expected = below[answer]
    expect_type("06.R1", below_ridge, float, what="the factor (ridge point / intensity)")
    value = float(below_ridge)  # type: ignore[arg-type]
    near = {"l2": _below_ridge(points, nbytes="l2_bytes")[answer],
            "vector": _below_ridge(points, roof="FP32 vector")[answer]}
    if math.isclose(value, near["l2"], rel_tol=0.01) and not math.isclose(value, expected, rel_tol=0.03):
        raise CheckFailed("06.R1", "the factor is off", expected=expected, found=value,
                          mistake="the intensity from the L2 bytes: the roofline's x is FLOPs per HBM byte",
                          hint="the roofline's x counts the bytes that moved to and from HBM.")
    if math.isclose(value, near["vector"], rel_tol=0.01) and not math.isclose(value, expected, rel_tol=0.03):
        raise CheckFailed("06.R1", "the factor is off", expected=expected, found=value,
                          mistake="the ridge point of the FP32 vector peak: a matrix kernel's roof is the matrix "
                                  "peak of its precision",
                          hint="each kernel is judged against the roof of its own instructions and precision.")
    expect_close("06.R1", value, expected, rel=0.03, what="the factor (ridge point / intensity)",
                 hint="a kernel's distance below its ridge point, in FLOPs per HBM byte, against its own roof.")
    ai = float(points.loc[points["kernel"] == answer, "arithmetic_intensity"].iloc[0])
    return passed("06.R1", f"{answer}: {ai:.1f} FLOPs per HBM byte, {expected:.1f}x below the ridge point "
                           f"(generated counters): more tokens per call would move it right")
