"""Checks for module 03, a first training job: step times from the metrics, resuming, time limits.

Expected values come from the learner's own runs (the step times and step numbers in ``metrics.rank0.jsonl``)
and from the log doctor, never from numbers written here.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from numbers import Integral, Real

from ..errors import LumikitError
from ..jobs.spec import parse_time
from ..launch.states import STATES
from ..logs.doctor import diagnose_text
from .concepts import Choice, Option, choice_check
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


def _warm(step_times: Sequence[float]) -> list[float]:
    """The step times without the first (warm-up) step."""
    times = [float(t) for t in step_times]
    if len(times) < 3:
        raise LumikitError(f"need at least 3 measured steps to judge a warm step time, got {len(times)}; "
                           "run the job with more --steps")
    return times[1:]


def _close_to_any(exercise: str, found: object, candidates: Sequence[float], *, what: str, rel: float,
                  hint: str) -> float:
    """Pass when ``found`` is within ``rel`` of one of the candidates (e.g. a median and a mean); returns it."""
    target = candidates[0]
    if isinstance(found, Real) and not isinstance(found, bool):
        target = min(candidates, key=lambda c: abs(c - float(found)))
    return expect_close(exercise, found, target, what=what, rel=rel, hint=hint)


@check("03.1",
       wrong("the warm step time in milliseconds", warm_step_s=lambda a: 1000 * statistics.median(a.step_times[1:]),
             mentions="warm step time"),
       wrong("the first step's whole time as its overhead", first_step_overhead_s=lambda a: a.step_times[0],
             warm_step_s=lambda a: statistics.median(a.step_times[1:]), mentions="overhead"),
       wrong("the mean of every step, the cold first step in it",
             warm_step_s=lambda a: statistics.fmean(a.step_times),
             first_step_overhead_s=lambda a: a.step_times[0] - statistics.fmean(a.step_times), mentions="cold"))
def check_warm_step_time(warm_step_s: float | None, first_step_overhead_s: float | None,
                         step_times: Sequence[float]) -> Passed:
    """Exercise 03.1: the step time once warm (median or mean of the steps after the first) and how much longer
    the first step took than that. The mean of every step, the cold first step in it, is the mistake it teaches:
    refused whenever the answer lies nearer to it than to the warm steps' median or mean."""
    warm = _warm(step_times)
    candidates = [statistics.median(warm), statistics.fmean(warm)]
    hint = "the first step is not like the others: leave it out before you average."
    expect_answer("03.1", warm_step_s, "the warm step time (s)", hint=hint)
    if isinstance(warm_step_s, Real) and not isinstance(warm_step_s, bool):
        cold = statistics.fmean(float(t) for t in step_times)
        if abs(float(warm_step_s) - cold) < min(abs(float(warm_step_s) - c) for c in candidates):
            raise CheckFailed("03.1", "the warm step time is not right", expected=candidates[0], found=warm_step_s,
                              mistake="the mean of every step, the cold first step in it", hint=hint)
    value = _close_to_any("03.1", warm_step_s, candidates, what="the warm step time (s)", rel=0.03, hint=hint)
    first = float(step_times[0])
    expect_close("03.1", first_step_overhead_s, first - value, what="the first step's overhead (s)", rel=0.03,
                 abs=1e-4, hint="how much longer than a warm step did the first step take? (It may come out "
                                "negative if step 1 was not the slowest.)")
    return passed("03.1", f"warm steps take {value * 1000:.1f} ms; step 1 took {first * 1000:.1f} ms "
                          f"({(first - value) * 1000:+.1f} ms)")


@check("03.2",
       wrong("step 1, as if the job started afresh", continued_at=1, mentions="afresh"),
       wrong("the checkpoint's own step, already trained", continued_at=lambda a: max(a.first_run_steps)),
       wrong("the last step number instead of the count of steps trained",
             steps_trained=lambda a: max(a.resumed_run_steps), mentions="number of steps"))
def check_resume(continued_at: int | None, steps_trained: int | None, first_run_steps: Sequence[int],
                 resumed_run_steps: Sequence[int]) -> Passed:
    """Exercise 03.2: the first step number the resumed job trained, and how many steps it trained itself."""
    saved = max(int(s) for s in first_run_steps)
    new = [int(s) for s in resumed_run_steps]
    hint = "the resumed job's metrics start where the checkpoint ended: look at its first `step`."
    expect_type("03.2", continued_at, Integral, what="the first step of the resumed job", hint=hint)
    if continued_at == 1:
        raise CheckFailed("03.2", "step 1 would mean the job started afresh, but it resumed", expected=min(new),
                          found=continued_at, hint=hint)
    expect_equal("03.2", continued_at, min(new), what="the first step of the resumed job", hint=hint,
                 off_by_one=("a step past the first one the resumed job trained",
                             "the checkpoint's own step, which the resumed job does not train again"))
    expect_type("03.2", steps_trained, Integral, what="the number of steps the resumed job trained",
                hint="count the rows of its metrics (or subtract the checkpoint's step from the last step).")
    expect_equal("03.2", steps_trained, len(new), what="the number of steps the resumed job trained",
                 hint="count the rows of its metrics (or subtract the checkpoint's step from the last step).",
                 off_by_one=("a fencepost: the checkpoint's step counted as trained again",
                             "a fencepost: one end of the resumed steps left out"))
    return passed("03.2", f"the checkpoint held step {saved}; the resumed job trained steps {min(new)}-{max(new)}")


@check("03.3",
       wrong("forgets the 60 s reserve", answer=lambda a: math.floor(
           parse_time(a.time_limit) / statistics.median(a.step_times[1:]))),
       wrong("divides by the step time in milliseconds", answer=lambda a: math.floor(
           (parse_time(a.time_limit) - a.reserve_s) / (1000 * statistics.median(a.step_times[1:])))),
       wrong("not rounded down to whole steps", answer=lambda a: (parse_time(a.time_limit) - a.reserve_s)
             / statistics.median(a.step_times[1:]), mentions="whole"),
       wrong("rounded up: the last step would not fit", answer=lambda a: math.ceil(
           (parse_time(a.time_limit) - a.reserve_s) / statistics.median(a.step_times[1:])), mentions="rounded up"))
def check_steps_in_limit(answer: int | None, step_times: Sequence[float], time_limit: str = "0:15:00",
                         reserve_s: float = 60.0) -> Passed:
    """Exercise 03.3: how many whole warm steps fit into a job's ``--time`` less a reserve for start-up and the
    final checkpoint. Rounded down: a count rounded up (or to the nearest) holds a step that does not fit."""
    warm = _warm(step_times)
    budget = parse_time(time_limit) - reserve_s
    exact = [budget / statistics.median(warm), budget / statistics.fmean(warm)]
    candidates = [math.floor(x) for x in exact]
    hint = (f"how many seconds does {time_limit} leave once the reserve is kept, and how many whole warm steps "
            "fit in them?")
    expect_type("03.3", answer, Integral, what="the number of whole steps", hint=hint)
    if int(answer) not in candidates and any(int(answer) == math.ceil(x) for x in exact):  # type: ignore[arg-type]
        raise CheckFailed("03.3", "the number of steps is not right", expected=candidates[0], found=answer,
                          mistake="rounded up: the last of those steps would not finish before the limit", hint=hint)
    if int(answer) > max(candidates):  # type: ignore[arg-type]
        raise CheckFailed("03.3", "that many steps do not fit", expected=candidates[0], found=answer,
                          mistake=_too_many(int(answer), exact, budget, parse_time(time_limit)), hint=hint)  # type: ignore[arg-type]
    _close_to_any("03.3", answer, candidates, what="the number of steps", rel=0.02, hint=hint)
    return passed("03.3", f"about {candidates[0]:,} steps fit in {budget:g} s")


def _too_many(answer: int, exact: Sequence[float], budget_s: float, limit_s: float) -> str | None:
    """The kind of mistake a count above the right one shows: the reserve left out."""
    if any(abs(answer - math.floor(x * limit_s / budget_s)) <= 1 for x in exact):
        return "the whole --time divided by the step time: the reserve for start-up and the checkpoint is left out"
    return None


@check("03.4",
       wrong("CANCELLED, as the log line says", final_state="CANCELLED", mentions="time limit"),
       wrong("FAILED", final_state="FAILED"),
       wrong("the doctor's signature for a cancelled job", signature="job-cancelled"),
       wrong("a state Slurm does not have", final_state="TIME_LIMIT"))
def check_time_limit(signature: str | None, final_state: str | None, log_text: str) -> Passed:
    """Exercise 03.4: the log doctor's signature for a job Slurm stopped at its time limit, and the state
    ``sacct`` then reports."""
    found = diagnose_text(log_text)
    expected = max(found, key=lambda d: d.line_no).signature if found else None  # what the last line shows
    hint = "run `lumikit.logs.diagnose_text` on the log and read the `signature` of what it finds."
    expect_type("03.4", signature, str, what="the log doctor's signature id", hint=hint)
    expect_equal("03.4", signature, expected, what="the log doctor's signature id", hint=hint)
    state_hint = "Slurm's job states are listed in `lumikit.launch.STATES`; one of them means the --time ran out."
    expect_in("03.4", final_state, STATES, what="the job state", hint=state_hint)
    expect_equal("03.4", final_state, "TIMEOUT", what="the state of a job stopped at its time limit",
                 hint=state_hint)
    return passed("03.4", "a job stopped at --time ends TIMEOUT; its log's last line says DUE TO TIME LIMIT")


# --- Conceptual questions ----------------------------------------------------------------------------------------

AT_THE_LIMIT = Choice("03.q1", "A training job reaches its `--time` limit. What happens?", {
    "a": Option("Slurm lets the current training step finish, then stops the job.", False,
                "Slurm knows nothing of training steps; only your script can stop cleanly (`--max-time`)."),
    "b": Option("Slurm signals the job, kills it after a short grace time, and `sacct` shows TIMEOUT.", True,
                "whatever was not in a checkpoint is lost, which is why 03.3 keeps a reserve below `--time` and "
                "the job resumes from its checkpoint."),
    "c": Option("Slurm puts the job back in the queue to continue later.", False,
                "a time limit ends the job; a new job (with `--resume`) has to continue it."),
})
check_at_the_limit = choice_check(AT_THE_LIMIT)
