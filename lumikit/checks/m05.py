"""Checks for module 05 (logging and profiling): a job spec that profiles one rank for chosen steps, and the first
numbers of a profiled run (step phases, the top operator by self time, what the profiler costs).

Expected values come from the site profile, from :mod:`lumikit.profiler`'s schedule rules and from the learner's
own measurements (the trace tables and step times passed in), never from numbers written here.
"""
from __future__ import annotations

import statistics
from typing import Mapping

import pandas as pd

from ..jobs import JobSpec, problems, resolve
from ..profiler import DEFAULT_SCHEDULE, ProfileSchedule, parse_schedule
from ..site import load_site
from ..trace.host_ops import op_summary
from .concepts import Choice, Option, choice_check
from .framework import CheckFailed, Passed, check, expect_close, expect_equal, expect_type, passed, wrong
from .learner import rng_for

#: How many steps exercise 05.1 records, in a 4-rank job.
PROFILED_STEPS = 3


def recorded_steps(schedule: ProfileSchedule, max_steps: int) -> list[int]:
    """The steps (counted from 1, as the metrics file does) that torch.profiler records in a run of ``max_steps``.

    Each cycle skips ``wait`` steps, warms up for ``warmup`` and records ``active``; ``repeat`` 0 cycles until the
    run ends.
    """
    cycle = schedule.wait + schedule.warmup + schedule.active
    cycles = schedule.repeat if schedule.repeat > 0 else max_steps // cycle + 1
    out = []
    for c in range(cycles):
        first = c * cycle + schedule.wait + schedule.warmup + 1
        out.extend(s for s in range(first, first + schedule.active) if s <= max_steps)
    return out


def profile_target() -> tuple[int, list[int]]:
    """Exercise 05.1's rank (1 to 3) and its three (1-based) steps to record (starting at step 4 to 7), for this
    learner."""
    rng = rng_for("05.1")
    rank, first = rng.randrange(1, 4), rng.randrange(4, 8)
    return rank, list(range(first, first + PROFILED_STEPS))


def _schedule(wait: int, warmup: int) -> str:
    return f"{wait},{warmup},{PROFILED_STEPS},1"


def _with_schedule(job: JobSpec, schedule: str) -> JobSpec:
    return job.with_(env={**job.env_dict(), "LUMIKIT_PROFILE_SCHEDULE": schedule})


@check("05.1",
       wrong("no profiler warm-up (like 4,0,3,1 for steps 5-7): the first recorded step carries the profiler's "
             "start-up", job=lambda a: _with_schedule(a.job, _schedule(profile_target()[1][0] - 1, 0)),
             mentions="warm"),
       wrong("no profile_steps: the run goes on after the last recorded step",
             job=lambda a: a.job.with_(profile_steps=None), mentions="does not stop"),
       wrong("every rank profiled", job=lambda a: a.job.with_(profile_ranks=())),
       wrong("records one step early (steps counted from 0)",
             job=lambda a: _with_schedule(a.job, _schedule(profile_target()[1][0] - 3, 1))),
       wrong("too few tasks for the rank", job=lambda a: a.job.with_(ntasks_per_node=profile_target()[0],
                                                                     gpus_per_node=profile_target()[0])),
       wrong("another rank", job=lambda a: a.job.with_(profile_ranks=[profile_target()[0] % 3 + 1])))
def check_rank_profile_spec(job: JobSpec | None) -> Passed:
    """Exercise 05.1: a job spec that profiles only this learner's rank with torch.profiler, recording their three
    steps (:func:`profile_target`), then stops."""
    rank, steps = profile_target()
    what = f"the job spec that profiles rank {rank} for steps {steps[0]}-{steps[-1]}"
    expect_type("05.1", job, JobSpec, what=what,
                hint="a job spec built for the training workload (the tool is in hint(\"05.1\")).")
    site = load_site("lumi")
    found = problems(resolve(job, site), site)
    if found:
        raise CheckFailed("05.1", f"LUMI would reject {what}: {found[0]}",
                          hint="the job must have the rank you profile, and LUMI must accept its shape.")
    expect_equal("05.1", job.profile, "torch", field=True, what="the profiling mode",
                 hint='torch.profiler is the mode "torch"; see `lumikit.jobs.PROFILE_MODES`.')
    expect_equal("05.1", tuple(sorted(set(job.profile_ranks))), (rank,), what="the profiled ranks",
                 hint="only the rank asked about runs with the profiler; the others run as they are.")
    text = job.env_dict().get("LUMIKIT_PROFILE_SCHEDULE")
    try:
        schedule = parse_schedule(text) if text else ProfileSchedule(*DEFAULT_SCHEDULE)
    except Exception as err:  # a SpecError naming the bad schedule
        raise CheckFailed("05.1", f"the schedule cannot be read: {err}",
                          hint="four whole numbers: the steps skipped, warmed up, recorded, and the cycles.") from None
    if schedule.warmup < 1:
        raise CheckFailed("05.1", f"schedule {text} has no warm-up step, so the first recorded step carries the "
                                  "profiler's own start-up cost", hint="give the profiler one warm-up step: "
                                                                      "`wait,1,active,repeat`.")
    if job.profile_steps is None:
        raise CheckFailed("05.1", "the run does not stop after the profiled steps",
                          hint="the job spec also says where the workload stops.")
    expect_equal("05.1", recorded_steps(schedule, job.profile_steps), steps,
                 what=f"the steps recorded with schedule {text or 'default'} and {job.profile_steps} steps",
                 hint="torch skips `wait` steps, warms up for `warmup`, then records `active`, counting from the "
                      "run's first step: count which steps that makes.")
    expect_equal("05.1", job.profile_steps, steps[-1], field=True, what="the step where the run stops",
                 hint="stop right after the last recorded step: nothing after it is profiled.",
                 off_by_one=("a step run after the last recorded one, profiled for nothing",
                             "a stop before the last recorded step, which then is never written"))
    return passed("05.1", f"rank {rank} records steps {steps[0]}-{steps[-1]} with schedule {text}; the other ranks "
                          "run unprofiled")


@check("05.2",
       wrong("percentages instead of shares", backward_share=lambda a: 100 * a.phases["backward_us"].sum()
             / a.phases["dur_us"].sum(), mentions="0-1"),
       wrong("backward's time in µs, not its share", backward_share=lambda a: float(a.phases["backward_us"].sum())),
       wrong("the optimizer's time relative to backward, not to the step",
             backward_share=lambda a: a.phases["backward_us"].sum() / a.phases["dur_us"].sum(),
             optimizer_share=lambda a: a.phases["optimizer_us"].sum() / a.phases["backward_us"].sum()))
def check_step_shares(backward_share: float | None, optimizer_share: float | None,
                      phases: pd.DataFrame) -> Passed:
    """Exercise 05.2: the shares of the recorded steps' time spent in backward and in the optimizer."""
    total = float(phases["dur_us"].sum())
    backward = float(phases["backward_us"].sum()) / total
    optimizer = float(phases["optimizer_us"].sum()) / total
    hint = "a share of the recorded steps' own time, not of the whole run, as a fraction (0-1)."
    expect_close("05.2", backward_share, backward, rel=0.02, abs=0.005,
                 what="the share of step time in backward (0-1)", hint=hint)
    expect_close("05.2", optimizer_share, optimizer, rel=0.02, abs=0.005,
                 what="the share of step time in the optimizer (0-1)", hint=hint)
    return passed("05.2", f"backward {backward:.0%}, optimizer {optimizer:.0%} of the recorded steps")


def _by_self(ops: pd.DataFrame, place: int) -> str:
    return str(op_summary(ops).loc[place, "name"])


@check("05.3",
       wrong("the runner-up by self time", answer=lambda a: _by_self(a.ops, 1)),
       wrong("the profiler's step annotation, first by total time", answer="ProfilerStep#5"),
       wrong("the operator's short name without its namespace", answer=lambda a: _by_self(a.ops, 0).split("::")[-1]))
def check_top_self_op(answer: str | None, ops: pd.DataFrame) -> Passed:
    """Exercise 05.3: the operator with the most self time in the recorded steps."""
    table = op_summary(ops)
    top = str(table.loc[0, "name"])
    expect_type("05.3", answer, str, what="the name of the operator with the most self time",
                hint="an operator name such as 'aten::add'.")
    answer = answer.strip()  # spaces around a right name are no mistake
    if answer != top:
        names = [str(n) for n in table["name"]]
        rows = {n: (float(t), float(own)) for n, t, own in zip(names, table["total_us"], table["self_us"])}
        mistake = ("an operator ranked by total time, which counts the operators it calls" if
                   answer in rows and rows[answer][1] < rows[answer][0] / 2 else
                   "the operator's short name: give it with its namespace, as the profiler names it"
                   if answer not in names and any(n.split("::")[-1] == answer for n in names) else
                   "the profiler's step annotation, which is no operator" if answer.startswith("ProfilerStep") else
                   None)
        raise CheckFailed("05.3", "the operator with the most self time is not right", expected=top, found=answer,
                          mistake=mistake, hint="self time is what an operator spends in itself, not in the "
                                                "operators it calls.")
    return passed("05.3", f"{top}: {table.loc[0, 'self_share']:.0%} of the operators' self time")


def _slowdown(step_times: Mapping[int, float] | pd.Series, schedule: str) -> float:
    times = {int(k): float(v) for k, v in dict(step_times).items()}
    plan = parse_schedule(schedule)
    recorded = [times[s] for s in recorded_steps(plan, max(times)) if s in times]
    unprofiled = [times[s] for s in range(2, plan.wait + 1) if s in times]
    return statistics.median(recorded) / statistics.median(unprofiled)


@check("05.4",
       wrong("the extra fraction instead of the ratio", answer=lambda a: _slowdown(a.step_times, a.schedule) - 1),
       wrong("the difference of the medians in seconds", answer=lambda a: (_slowdown(a.step_times, a.schedule) - 1)
             * statistics.median(list(dict(a.step_times).values())[1:])),
       wrong("a percentage", answer=lambda a: 100 * _slowdown(a.step_times, a.schedule)))
def check_profiler_slowdown(answer: float | None, step_times: Mapping[int, float] | pd.Series,
                            schedule: str) -> Passed:
    """Exercise 05.4: median recorded step time over median unprofiled step time (steps 2 to ``wait``)."""
    times = {int(k): float(v) for k, v in dict(step_times).items()}
    plan = parse_schedule(schedule)
    recorded = [s for s in recorded_steps(plan, max(times)) if s in times]
    unprofiled = [s for s in range(2, plan.wait + 1) if s in times]
    if not recorded or not unprofiled:
        raise CheckFailed("05.4", f"the measured steps {sorted(times)} hold no recorded or no unprofiled steps for "
                                  f"schedule {schedule}", hint="run the setup cells again.")
    expected = (statistics.median(times[s] for s in recorded) / statistics.median(times[s] for s in unprofiled))
    expect_close("05.4", answer, expected, rel=0.03, what="the slowdown of a recorded step",
                 hint="typical steps on both sides, warm ones only (step 1 warms "
                      "up the model).")
    return passed("05.4", f"a recorded step took {expected:.2f}x an unprofiled one here; "
                          f"{_profiler_noise([times[s] for s in recorded], [times[s] for s in unprofiled])}")


def _profiler_noise(recorded: list[float], unprofiled: list[float]) -> str:
    """Recorded against unprofiled steps, with their spread: the profiler's cost, or the machine's noise."""
    from ..measure import measured, noise_note

    return noise_note(measured("recorded step", recorded), measured("unprofiled step", unprofiled), unit="s",
                      on_lumi="recorded steps measurably slower than unprofiled ones: the profiler times every "
                              "operator and kernel")

# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_FEW_STEPS = Choice("05.q1", "Why profile a few steps of one rank, not the whole run on every rank?", {
    "a": Option("torch.profiler can only trace one process.", False,
                "each rank can run its own profiler; the job builder simply gives it to the ranks you list."),
    "b": Option("The profiler slows the steps it records and writes large traces; balanced ranks behave alike.",
                True, "a few steps of one rank show what every rank does, at a fraction of the cost and the trace "
                      "size (05.4 measured the cost)."),
    "c": Option("Profiling every rank would change the model the training computes.", False,
                "it changes the timing, not the numbers computed."),
})
check_why_few_steps = choice_check(WHY_FEW_STEPS)

WHY_WARMUP = Choice("05.q2", "Why does the schedule of 05.1 give the profiler a warm-up step before it records?", {
    "a": Option("The model needs a step to compile its kernels.", False,
                "that is what the waited steps (and step 1) are for; the profiler's warm-up is about the profiler."),
    "b": Option("The profiler's own start-up is costly; a warm-up step keeps that cost out of the recorded steps.",
                True, "torch.profiler starts tracing during warm-up and throws those results away, so the first "
                      "recorded step is a normal one, not one that carries the profiler's start."),
    "c": Option("Without a warm-up step no trace file is written.", False,
                "a schedule without warm-up still writes a trace (05.1's wrong answer 4,0,3,1 does), only a worse "
                "one."),
})
check_why_warmup = choice_check(WHY_WARMUP)


# --- ROCm warm-up: MIOpen's kernel search and the caches out of the home directory --------------------------------

#: The variables that move MIOpen's and Triton's caches (MIOpen: user performance database and compiled kernels).
CACHE_VARIABLES = ("MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR", "TRITON_CACHE_DIR")
#: What each of them keeps, in words: a failure names the cache, never the variable (that is the answer).
CACHE_NAMES = {"MIOPEN_USER_DB_PATH": "MIOpen's user database (its search results)",
               "MIOPEN_CUSTOM_CACHE_DIR": "MIOpen's compiled-kernel cache", "TRITON_CACHE_DIR": "Triton's cache"}


def _cache_problems(env: Mapping[str, str], project: str) -> list[str]:
    """What is wrong with a cache environment: variables missing, or a cache left in the 20 GB home."""
    out = [f"{CACHE_NAMES[v]} is not moved" for v in CACHE_VARIABLES if not str(env.get(v, "")).strip()]
    for v in CACHE_VARIABLES:
        value = str(env.get(v, ""))
        if value and not any(value == f"/{fs}/{project}" or value.startswith(f"/{fs}/{project}/")
                             for fs in ("scratch", "flash", "project")):
            out.append(f"{v}={value} is not under /scratch/{project}, /flash/{project} or /project/{project}")
    return out


@check("05.W1",
       wrong("the caches in the home directory (the 20 GB quota fills, and every node shares it)",
             env=lambda a: {v: f"$HOME/.cache/{v.lower()}" for v in CACHE_VARIABLES}, mentions="HOME"),
       wrong("MIOpen only: Triton still compiles into ~/.triton", env=lambda a: {
           "MIOPEN_USER_DB_PATH": f"/scratch/{a.project}/miopen", "MIOPEN_CUSTOM_CACHE_DIR": f"/scratch/{a.project}/miopen"},
           mentions="Triton's cache"),
       wrong("only MIOPEN_FIND_MODE set: a faster search, but the results still land in the home directory",
             env={"MIOPEN_FIND_MODE": "FAST"}, mentions="user database"),
       wrong("the caches in the project folder's name without the file system (a relative path)",
             env=lambda a: {v: f"{a.project}/caches" for v in CACHE_VARIABLES}, mentions="not under"),
       wrong("another project's scratch", env=lambda a: {v: f"/scratch/{a.project}0/caches" for v in CACHE_VARIABLES},
             mentions="not under"))
def check_cache_env(env: Mapping[str, str] | None, project: str) -> Passed:
    """Exercise 05.W1: MIOpen's database and kernel cache and Triton's cache, all in the project's scratch."""
    expect_type("05.W1", env, dict, what="a dict of environment variables",
                hint="{'VARIABLE': '/scratch/<project>/...', ...}, one entry per cache.")
    bad = _cache_problems(env, project)  # type: ignore[arg-type]
    if bad:
        raise CheckFailed("05.W1", "; ".join(bad), hint=f"each cache has its own variable (MIOpen's and Triton's "
                          f"documentation name them); point every one to a folder under /scratch/{project} (the "
                          "home directory holds 20 GB, and each node writes there)")
    return passed("05.W1", "MIOpen's search results and compiled kernels, and Triton's, survive in the project's "
                           "scratch: the next job starts warm")


def warmup_steps() -> list[float]:
    """Generated step times (s) of a convolutional model's first steps on one GCD, the first one carrying MIOpen's
    kernel search; different per learner."""
    rng = rng_for("05.W2")
    steady = rng.uniform(0.08, 0.2)
    search = rng.uniform(8.0, 40.0)
    return [round(steady + search, 3)] + [round(steady * rng.uniform(0.97, 1.03), 4) for _ in range(9)]


@check("05.W2",
       wrong("the first step's whole time, not what it cost beyond a steady step",
             answer=lambda a: a.steps[0]),
       wrong("the mean over all steps minus the steady median (the search spread over ten steps)",
             answer=lambda a: statistics.mean(a.steps) - statistics.median(a.steps[1:])),
       wrong("in milliseconds", answer=lambda a: 1000 * (a.steps[0] - statistics.median(a.steps[1:]))))
def check_warmup_cost(answer: float | None, steps: list[float]) -> Passed:
    """Exercise 05.W2: how many seconds the first step cost beyond a steady one (the kernel search)."""
    expected = steps[0] - statistics.median(steps[1:])
    # to a tenth of a second: the search takes tens of seconds, and a step time printed to 0.1 s is an answer
    expect_close("05.W2", answer, expected, rel=0.001, abs=0.06, what="the first step's extra time in seconds",
                 hint="what the first step cost beyond a typical steady step, in seconds.")
    return passed("05.W2", f"{expected:.1f} s of kernel search: MIOPEN_FIND_MODE=FAST shortens it, a kept "
                           "MIOPEN_USER_DB_PATH skips it in the next job")


# --- Precision on MI250X: MFU for the precision the run used -------------------------------------------------------

#: The precisions a generated 05.P1 run may use, as the site profile's peak table names them: their peaks differ
#: (bf16 and fp16 share one on an MI250X, so only one of them is dealt: a run in either reads the same peak).
P1_PRECISIONS = ("bf16", "fp32_matrix")


def precision_run() -> dict:
    """A generated run on one GCD (bf16 autocast, or fp32 on the matrix units): model FLOPs per step and the step
    time; different per learner, so that the precision must be read, not assumed."""
    rng = rng_for("05.P1")
    precision = rng.choice(P1_PRECISIONS)
    step_s = round(rng.uniform(0.5, 3.0), 3)
    flops = round(rng.uniform(0.15, 0.5) * _peak(precision) * step_s / 1e12, 1) * 1e12  # tenths of TFLOPs per step
    return {"precision": precision, "flops_per_step": flops, "step_s": step_s}


def _other_precision(run: dict) -> str:
    return next(p for p in P1_PRECISIONS if p != run["precision"])


def _peak(precision: str) -> float:
    return float(load_site("lumi").hardware["gcd_peak_tflops"][precision]) * 1e12


@check("05.P1",
       wrong("against another precision's peak (bf16 against fp32 looks four times better)",
             mfu=lambda a: a.run["flops_per_step"] / a.run["step_s"] / _peak(_other_precision(a.run))),
       wrong("against a whole MI250X (two GCDs): PyTorch's device is one GCD",
             mfu=lambda a: a.run["flops_per_step"] / a.run["step_s"] / (2 * _peak(a.run["precision"]))),
       wrong("a percentage",
             mfu=lambda a: 100 * a.run["flops_per_step"] / a.run["step_s"] / _peak(a.run["precision"])))
def check_mfu_for_precision(mfu: float | None, run: dict) -> Passed:
    """Exercise 05.P1: MFU (0-1) of the run against one GCD's peak for the precision it used."""
    expected = run["flops_per_step"] / run["step_s"] / _peak(run["precision"])
    expect_close("05.P1", mfu, expected, rel=0.01, what="the model FLOPs utilisation (0-1)",
                 hint="the arithmetic a step does per second, against one GCD's peak at the precision the run "
                      "used (0-1).")
    return passed("05.P1", f"MFU {expected:.1%} of {_peak(run['precision']) / 1e12:.1f} TFLOPS "
                           f"({run['precision']}, one GCD)")


# --- The allocator and a memory snapshot ---------------------------------------------------------------------------

@check("05.M1",
       wrong("the reserved segments' total, not the peak of live allocations",
             peak_bytes=lambda a: sum(s["total_size"] for s in _snapshot(a.path)["segments"])),
       wrong("in MiB", peak_bytes=lambda a: _snapshot_peak(a.path) / 2**20),
       wrong("what is still allocated at the end", peak_bytes=lambda a: sum(
           b["size"] for s in _snapshot(a.path)["segments"] for b in s["blocks"] if b["state"] == "active_allocated")))
def check_snapshot_peak(peak_bytes: int | None, path: str) -> Passed:
    """Exercise 05.M1: the peak of live allocated bytes in a memory snapshot."""
    expected = _snapshot_peak(path)
    expect_close("05.M1", peak_bytes, expected, rel=0.001, what="the peak of allocated bytes",
                 hint="the peak is a moment in the allocation history, not what the segments hold at the end.")
    return passed("05.M1", f"peak {expected / 2**20:.0f} MiB live; reserved memory above it is the allocator's "
                           "cache (PYTORCH_HIP_ALLOC_CONF=expandable_segments:True lets it grow segments in place)")


def _snapshot_peak(path: str) -> int:
    from ..trace.memory import load_memory

    return int(load_memory(path).peak()["bytes"])


def _snapshot(path: str) -> dict:
    """The snapshot's plain values, read as ``load_memory`` reads them (never with ``pickle.load``)."""
    from ..trace.memory import read_snapshot

    return read_snapshot(path)
