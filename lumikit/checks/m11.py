"""Checks for module 11 (the capstone): a symptom and a budget; the learner finds a planted input bottleneck with
the GPU view, the profiler and the trace analysis, fixes it, and states a claim that the check judges (which rank,
which phase, which fix, the step times before and after with their spread), then writes the conclusion, which is
saved to the progress folder (``11.A.md``).

The checks read the outcome: the replayed session, the run folders (their ``result.rank*.json``, metrics and
profiler traces). The slow rank is computed from the case number the run recorded
(:func:`lumikit.workloads.capstone.slow_rank`), never taken from the learner's namespace.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..measure import Measured
from ..smi import load_session, tidy
from ..trace import TraceAnalyzer
from ..trace.host_ops import PHASES, host_ops, step_phases
from ..workloads.capstone import slow_rank
from .concepts import letter
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
#: How long a capstone cell waits for its run to end (the run's state is polled; seconds): generous for a loaded
#: machine, below verify's cell limit.
WAIT_S = 200


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
    hypothesis = letter("11.1", hypothesis, dict.fromkeys("abc"), "your hypothesis (a letter)")
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


def _phase_growth(run_dir: object, exercise: str, what: str) -> dict[str, float]:
    """Per phase (data aside), how much larger its share is on the fast ranks than on the slow one."""
    path, results = _results(run_dir, exercise, what)
    first = results[min(results)]
    slow = slow_rank(int(first["case"]), int(first["world_size"]))
    shares = _phases(path, exercise)
    fast = [r for r in shares if r != slow] or [slow]
    return {p: statistics.mean(shares[r][p] for r in fast) - shares[slow][p] for p in PHASES if p != "data"}


def _least_grown(run_dir: object) -> str:
    """The phase whose share grows least on the fast rank (for the wrong answers)."""
    growth = _phase_growth(run_dir, "11.3", "the profiled run's folder")
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
                 hint="the phase that grows on the fast rank(s): compare each phase's share there and on the "
                      "slow rank.")
    return passed("11.3", f"the fast rank(s) spend {growth[expected]:.0%} more of each step in {expected}: "
                          f"waiting for the slow rank at a collective")


def step_times(run_dir: object, rank: int = 0) -> list[float]:
    """A run's warm step times (s) on ``rank``, from its ``metrics.rank<R>.jsonl``: without the first two steps (the
    cold one, and the one in which DataLoader workers fill their queue) and the last (it writes the profiler's
    trace)."""
    path = Path(getattr(run_dir, "path", run_dir))  # type: ignore[arg-type]
    times = []
    try:
        text = (path / f"metrics.rank{rank}.jsonl").read_text(encoding="utf-8")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("step_time_s"), (int, float)) and "epoch_time_s" not in row:
            times.append(float(row["step_time_s"]))
    return times[2:-1] if len(times) >= 6 else times[1:]


def _beyond_noise(before: list[float], after: list[float]) -> tuple[bool, str]:
    """Whether the after steps are faster beyond the noise, and the sentence saying so: the mean warm step (what the
    run's throughput follows) is at least :data:`MIN_SPEEDUP` shorter, and lies below the middle half of the before
    steps. Means, not medians: with DataLoader workers the steps often alternate short (a batch was ready) and long
    (it was not), and a median then lands on either."""
    b = statistics.quantiles(before, n=4)
    mean_b, mean_a = statistics.fmean(before), statistics.fmean(after)
    ratio = mean_b / mean_a
    text = (f"mean warm step {mean_b * 1000:.0f} ms (middle half {b[0] * 1000:.0f}-{b[2] * 1000:.0f}) before, "
            f"{mean_a * 1000:.0f} ms (shortest {min(after) * 1000:.0f}, longest {max(after) * 1000:.0f}) after: "
            f"{ratio:.1f}x")
    return mean_a < b[0] and ratio >= MIN_SPEEDUP, text


#: What a claim (exercise 11.4) holds: the slow rank, the phase the other ranks wait in, the fix, and the warm step
#: times before and after it as ``lumikit.measure.Measured`` (one value per warm step: a median and its spread).
CLAIM_KEYS = ("rank", "phase", "fix", "before", "after")


def _claim(exercise: str, claim: object) -> Mapping[str, Any]:
    expect_answer(exercise, claim, "your claim (a dict with " + ", ".join(CLAIM_KEYS) + ")",
                  hint="state what you found and measured; the check judges the claim against the runs.")
    expect_type(exercise, claim, Mapping, what="your claim", hint="a dict with the keys " + ", ".join(CLAIM_KEYS))
    missing = [k for k in CLAIM_KEYS if claim.get(k) is None]  # type: ignore[union-attr]
    if missing:
        raise CheckFailed(exercise, f"your claim does not say {', '.join(missing)}",
                          hint="a claim names the rank, the phase, the fix, and the step times before and after.")
    return claim  # type: ignore[return-value]


def _measured_claim(exercise: str, value: object, run_dir: object, which: str) -> Measured:
    """A claimed measurement: repeated step times with a spread, whose median agrees with the run's own steps."""
    if not isinstance(value, Measured):
        raise CheckFailed(exercise, f"the {which} step time is not a measurement with its spread", found=value,
                          mistake="a single number: one number cannot say whether a difference is beyond the noise",
                          hint="keep every warm step's time: `lumikit.measure.measured(label, values)`.")
    if len(value.values) < 3:
        raise CheckFailed(exercise, f"the {which} step time holds {len(value.values)} value(s): no spread to judge "
                                    "the noise by", hint="keep every warm step's time, not their mean.")
    steps = step_times(run_dir)
    if not steps:
        raise CheckFailed(exercise, f"the {which} run has no step times", hint="wait until the run has ended.")
    if not math.isclose(value.median, statistics.median(steps), rel_tol=0.20):
        raise CheckFailed(exercise, f"the {which} step times are not that run's", found=value.describe(unit="s"),
                          mistake=_step_unit_mistake(value.median, statistics.median(steps)),
                          hint="measure the run the claim is about: its warm steps, in seconds.")
    return value


def _step_unit_mistake(found: float, right: float) -> str | None:
    if found and math.isclose(found, right * 1000, rel_tol=0.1):
        return "milliseconds where seconds are asked"
    return None


def _workers_in(fix: object) -> int | None:
    """The worker count a claimed fix names (``"--workers 2"``, ``{"workers": 2}``), or None."""
    if isinstance(fix, Mapping):
        value = fix.get("workers", fix.get("--workers"))
        return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else None
    match = re.search(r"--?workers[=\s]+(\d+)|(\d+)\s+(?:dataloader\s+)?workers", str(fix), flags=re.IGNORECASE)
    return int(match.group(1) or match.group(2)) if match else None


@check("11.4",
       wrong("the first run given as the fixed one", after_dir=lambda a: a.before_dir, mentions="same way"),
       wrong("the fast rank claimed", claim=lambda a: {**a.claim, "rank": _other_rank(a.before_dir)}, mentions="rank"),
       wrong("a single number instead of the measured spread",
             claim=lambda a: {**a.claim, "after": a.claim["after"].median}, mentions="single number"),
       wrong("a fix that the run did not apply", claim=lambda a: {**a.claim, "fix": "--batch-size 8"},
             mentions="fix"),
       wrong("the phase where the slow rank spends its time", claim=lambda a: {**a.claim, "phase": "data"},
             mentions="phase"))
def check_claim(claim: Mapping[str, Any] | None, before_dir: object, after_dir: object) -> Passed:
    """Exercise 11.4: the learner's claim (the slow rank, the phase the others wait in, the fix, the step times
    before and after with their spread), judged against the two runs: the fixed run keeps the case and its slow
    input, applies the claimed fix, and is faster beyond the noise by at least :data:`MIN_SPEEDUP`."""
    claim = _claim("11.4", claim)
    _, before = _results(before_dir, "11.4", "the first run's folder")
    _, after = _results(after_dir, "11.4", "the fixed run's folder")
    b, a = before[min(before)], after[min(after)]
    slow = slow_rank(int(b["case"]), int(b["world_size"]))
    if claim["rank"] != slow:
        raise CheckFailed("11.4", "the claimed rank is not the one that holds the others back", found=claim["rank"],
                          hint="the rank whose own steps go to loading; the others only wait for it.")
    if claim["phase"] != _waiting_phase(before_dir):
        raise CheckFailed("11.4", "the claimed phase is not where the other ranks lose the time", found=claim["phase"],
                          hint="the phase that grows on the fast rank(s), not the slow rank's own.")
    for key in ("case", "input_ms", "world_size"):
        if a[key] != b[key]:
            raise CheckFailed("11.4", f"the fixed run changed `{key}` ({b[key]} -> {a[key]})",
                              hint="the slow storage is not yours to change: change how the rank loads its data.")
    if int(a["workers"]) <= int(b["workers"]) and a.get("batch_size") == b.get("batch_size"):
        raise CheckFailed("11.4", "the fixed run loads its data the same way as the first",
                          hint="the storage stays slow; what could the slow rank do while a step computes?")
    if _workers_in(claim["fix"]) != int(a["workers"]):
        raise CheckFailed("11.4", "the claimed fix is not what the fixed run did", found=claim["fix"],
                          hint="name the option you changed and its value, as the run was launched.")
    _measured_claim("11.4", claim["before"], before_dir, "before")
    _measured_claim("11.4", claim["after"], after_dir, "after")
    real, sentence = _beyond_noise(step_times(before_dir), step_times(after_dir))
    if not real:
        raise CheckFailed("11.4", f"the fix is not beyond the noise: {sentence}",
                          hint="a fix that covers the delay makes every rank's step shorter, well beyond the spread.")
    return passed("11.4", f"rank {slow} loads slowly, the others wait in {claim['phase']}; {claim['fix']}: "
                          f"{sentence}, beyond the noise (the slow input unchanged)")


def _waiting_phase(before_dir: object) -> str:
    """The phase in which the fast ranks absorb the slow rank's delay (what 11.3 asks)."""
    growth = _phase_growth(before_dir, "11.4", "the first run's folder")
    return max(growth, key=growth.get)


#: The file, in the learner's progress folder, that holds their written conclusion of the capstone.
CONCLUSION_FILE = "11.A.md"
#: Fewer words than this cannot hold the evidence and the reasoning the conclusion asks for.
MIN_CONCLUSION_WORDS = 60


def conclusion_path() -> Path | None:
    """Where the written conclusion is saved: ``<progress folder>/11.A.md`` (None when recording is off)."""
    from .progress import progress_dir

    folder = progress_dir()
    return None if folder is None else Path(folder) / CONCLUSION_FILE


@check("11.A",
       wrong("an empty conclusion", conclusion="", mentions="words"),
       wrong("a conclusion without the evidence", mentions="numbers",
             conclusion=lambda a: " ".join(["The run was slow because one rank was slow, and now it is fixed."] * 6)),
       wrong("one word repeated to reach the length, then the rank and three numbers", mentions="repeats",
             conclusion=lambda a: "x " * 80 + f"rank {_slow(a.before_dir)} 1 2 3"),
       wrong("one sentence repeated to reach the length", mentions="repeats",
             conclusion=lambda a: f"Rank {_slow(a.before_dir)} was slow: 1.5 s, 30 % and 2.0 x. " * 8))
def check_conclusion(conclusion: str | None, before_dir: object) -> Passed:
    """Exercise 11.A: the written conclusion, with its evidence (the slow rank and numbers); it is saved to the
    learner's progress folder (:func:`conclusion_path`) so that the class export can link it."""
    expect_type("11.A", conclusion, str, what="your conclusion", hint="write it as a string (triple quotes).")
    words = re.findall(r"[\w.%+-]+", conclusion)
    if len(words) < MIN_CONCLUSION_WORDS:
        raise CheckFailed("11.A", f"your conclusion has {len(words)} words; it needs room for the evidence and the "
                                  "reasoning", hint="what each view showed, why the fix works, what changed.")
    _, results = _results(before_dir, "11.A", "the first run's folder")
    first = results[min(results)]
    slow = slow_rank(int(first["case"]), int(first["world_size"]))
    numbers = re.findall(r"\d+(?:\.\d+)?", conclusion)
    if len(numbers) < 3 or not re.search(rf"\brank\s*{slow}\b", conclusion, flags=re.IGNORECASE):
        raise CheckFailed("11.A", "your conclusion does not give its evidence: the slow rank (\"rank N\") and the "
                                  "numbers you measured", hint="quote your own numbers: shares, step times, the speed-up.")
    if len({w.lower() for w in words}) < 0.25 * len(words):
        raise CheckFailed("11.A", "your conclusion repeats itself: the length must come from evidence and reasoning",
                          hint="what each view showed, why the fix works, what changed.")
    saved = _save_conclusion(conclusion)
    return passed("11.A", f"{len(words)} words" + (f", saved to {saved}" if saved else " (recording is off: not saved)"))


def _slow(before_dir: object) -> int:
    """The slow rank of the first run (for the declared wrong answers of 11.A)."""
    _, results = _results(before_dir, "11.A", "the first run's folder")
    first = results[min(results)]
    return slow_rank(int(first["case"]), int(first["world_size"]))


def _save_conclusion(text: str) -> Path | None:
    """Write the conclusion to the progress folder (atomically); a folder that cannot be written never fails it."""
    from ..files import write_atomic
    from .framework import _PROBING

    path = conclusion_path()
    if path is None or _PROBING.get():
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(path, text.rstrip() + "\n")
    except OSError:
        return None
