"""Checks for module 11 (the capstone): each learner's run is slow in its own way (the case token from their seed
picks a variant, :mod:`lumikit.workloads.capstone`); the learner measures it, reads its profile, fixes it and states
one claim that the check judges whole, then writes a conclusion judged by a rubric and saved to the progress folder.

The checks read the outcome: the run folders (``result.rank0.json``, ``metrics.rank0.jsonl``, the profiler
traces). What a variant is comes from the case the run recorded, never from the learner's namespace. The claim
(11.3) fails with one message whatever part of it is wrong, except for mistakes of form (a single number for a
measurement, numbers that are not the run's, a fix that is not what the run did), which give nothing away.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..measure import Comparison, Measured, compare, measured, middle
from ..trace import TraceAnalyzer
from ..trace.host_ops import PHASES, host_ops, step_phases
from ..workloads.capstone_case import variant
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

#: How long a capstone cell waits for its run to end (the run's state is polled; seconds): generous for a loaded
#: machine, below verify's cell limit.
WAIT_S = 200
#: Runs of the learner's case a capstone may take (the first one included), counted from the case's run folders:
#: a claim made after more fails (trying each fix option in turn finds a fix, not the cause).
RUN_BUDGET = 4
#: The least speed-up (after over before, medians of the middle half of the warm steps) a fix must bring.
MIN_SPEEDUP = 1.3

#: The causes a claim may name (exercise 11.3). Where a cause's fix could not be judged on the learner's own
#: measurement, it is not dealt (:func:`choices` says why), but it stays listed, so the list gives nothing away.
CAUSES: dict[str, str] = {
    "a": "the input: samples are read one after another inside the training process",
    "b": "a host readback in the loop: values copied to the host in every step stall it",
    "c": "fp32 where bf16 belongs: matrix products run at a fraction of their bf16 rate",
    "d": "a batch too small to fill the device: fixed costs per step dominate",
    "e": "a wrong CPU binding: the process and the processes it starts share fewer cores than the job has",
}


def _more_cores(value: object) -> bool:
    """Whether a ``--cpus`` value gives the run two cores or more (``all``: the job's, two or more where dealt)."""
    from ..errors import SpecError
    from ..workloads.capstone import parse_cpus

    try:
        return str(value) == "all" or len(parse_cpus(str(value), set(range(1 << 16)))) >= 2
    except SpecError:
        return False


#: Per variant of the workload: the cause (a key of :data:`CAUSES`), and what a run must do to remove it (the
#: result field, and a test of its value).
_TRUTH: dict[str, tuple[str, str, Any]] = {
    "a": ("a", "workers", lambda v: int(v) >= 1),
    "b": ("b", "log_every", lambda v: int(v) == 0 or int(v) >= 10),
    "c": ("d", "batch_size", lambda v: int(v) >= 8),
    "d": ("c", "precision", lambda v: str(v) in ("bf16", "fp16")),
    "e": ("e", "cpus", _more_cores),
}
#: The options a fix may change, and the result field each one sets.
FIX_OPTIONS = {"--workers": "workers", "--batch-size": "batch_size", "--log-every": "log_every",
               "--precision": "precision", "--model-size": "model_size", "--cpus": "cpus"}


def choices(site: object = None) -> list[str]:
    """The choice list as the learner reads it: every cause of :data:`CAUSES`, and for each one not dealt where
    the runs go (:func:`lumikit.workloads.capstone.deal`), why not."""
    from ..workloads.capstone import deal

    not_here = {_TRUTH[v][0]: why for v, why in deal(site).not_here.items()}
    return [f"({key}) {cause}" + (f" [not dealt here: {not_here[key]}]" if key in not_here else "")
            for key, cause in CAUSES.items()]
#: The one message of a claim that does not hold (no part of it is named: naming it would let a guess converge).
CLAIM_FAILS = ("the claim does not hold together with your runs and their measurements: go back to your first "
               "run's profile and step metrics")


# --- the run folders -----------------------------------------------------------------------------------------------

def _result(run_dir: object, exercise: str, what: str) -> tuple[Path, dict[str, Any]]:
    """The run folder (a path or a launched run) and rank 0's result, which must be the capstone's."""
    expect_answer(exercise, run_dir, what, hint="store the launched run (or its folder, `run.path`).")
    path = Path(getattr(run_dir, "path", run_dir))  # type: ignore[arg-type]
    file = path / "result.rank0.json"
    if not file.is_file():
        raise CheckFailed(exercise, f"{path} holds no result.rank0.json",
                          hint="wait until the run has ended; store `run.path`.")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise CheckFailed(exercise, f"{file} is not readable JSON", hint="run it again.") from None
    if not isinstance(data, dict) or "case" not in data:
        raise CheckFailed(exercise, f"{path} is not a run of the capstone workload",
                          hint="launch `capstone_job(...)` (workload \"capstone\").")
    return path, data


def _knobs(result: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a fix may change, as the run's result gives them."""
    knobs = result.get("knobs") if isinstance(result.get("knobs"), Mapping) else {}
    return {"workers": result.get("workers"), "batch_size": result.get("batch_size"),
            "log_every": result.get("log_every"), "model_size": result.get("model_size"),
            "precision": knobs.get("precision", "fp32"), "cpus": result.get("cpus", "all")}


def rates(run_dir: object) -> list[float]:
    """A run's warm samples per second on rank 0, one per step, from its ``metrics.rank0.jsonl``: without the first
    two steps (the cold one, and the one in which DataLoader workers fill their queue) and the last (it writes the
    profiler's trace)."""
    return warm(all_rates(run_dir))


def warm(values: list[float]) -> list[float]:
    """The warm steps of a run's per-step values: without the first two and the last (see :func:`rates`)."""
    return values[2:-1] if len(values) >= 6 else values[1:]


def all_rates(run_dir: object) -> list[float]:
    """Every step's samples per second on rank 0, the cold and the last ones included (to name that mistake)."""
    path = Path(getattr(run_dir, "path", run_dir))  # type: ignore[arg-type]
    try:
        text = (path / "metrics.rank0.jsonl").read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("samples_per_s"), (int, float)):
            out.append(float(row["samples_per_s"]))
    return out


def judged(before: list[float], after: list[float]) -> Comparison:
    """After against before: the middle half of each run's warm steps (a busy machine's outliers dropped), beyond
    the noise when those ranges do not overlap and the medians differ by at least :data:`MIN_SPEEDUP`."""
    return compare(measured("after", middle(after, 0.5)), measured("before", middle(before, 0.5)),
                   min_effect=MIN_SPEEDUP - 1)


def _phase_shares(run_dir: Path, exercise: str) -> dict[str, float]:
    """Rank 0's share (0-1) of the recorded steps' time in each phase."""
    try:
        analyzer = TraceAnalyzer.from_path(run_dir / "profile")
        table = step_phases(host_ops(analyzer.trace[min(analyzer.ranks)].events))
    except Exception as err:  # noqa: BLE001 - any unreadable trace is the learner's missing profile
        raise CheckFailed(exercise, f"the run has no readable profiler trace ({type(err).__name__})",
                          hint="launch it with `capstone_job(...)`, which profiles it.") from None
    total = float(table["dur_us"].sum()) or 1.0
    return {p: float(table[f"{p}_us"].sum()) / total for p in PHASES}


def runs_of_case(run_dir: object) -> int:
    """How many finished runs of the same case lie next to ``run_dir`` (the learner's runs folder), counted from
    ``run_dir``'s own start on: the runs of this investigation (a case investigated again later, or a notebook run
    again, starts its count anew with its first run)."""
    path, result = _result(run_dir, "11.3", "the first run's folder")
    since = _started(path)
    count = 0
    for folder in path.parent.iterdir():
        file = folder / "result.rank0.json"
        try:
            if file.is_file() and file.stat().st_size < 5_000_000 and _started(folder) >= since:
                count += json.loads(file.read_text(encoding="utf-8")).get("case") == result["case"]
        except (OSError, ValueError, AttributeError):
            continue
    return count


def _started(folder: Path) -> float:
    """When a run started: its manifest's ``start_time`` (else its submit time, else the folder's own time)."""
    from datetime import datetime

    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8")) \
            if (folder / "manifest.json").stat().st_size < 1_000_000 else {}
        for key in ("start_time", "submit_time"):
            if manifest.get(key):
                return datetime.fromisoformat(str(manifest[key])).timestamp()
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    try:
        return folder.stat().st_mtime
    except OSError:
        return 0.0


# --- 11.1: the symptom, measured -----------------------------------------------------------------------------------

def _as_step_times(run_dir: object) -> Measured:
    """The first run's warm step times in seconds (a wrong answer: not samples per second)."""
    path = Path(getattr(run_dir, "path", run_dir))  # type: ignore[arg-type]
    _, result = _result(path, "11.1", "the first run's folder")
    return measured("before", [int(result["batch_size"]) / r for r in rates(path)])


def _measurement(exercise: str, value: object, run_dir: object, which: str) -> Measured:
    """A claimed measurement: one value per warm step (with a spread), whose median is the run's own."""
    if not isinstance(value, Measured):
        raise CheckFailed(exercise, f"the {which} throughput is not a measurement with its spread", found=value,
                          mistake="a single number: one number cannot say whether a difference is beyond the noise",
                          hint="keep every warm step's value together, so that the spread says what is noise.")
    if len(value.values) < 3:
        raise CheckFailed(exercise, f"the {which} throughput holds {len(value.values)} value(s): no spread to judge "
                                    "the noise by", hint="keep every warm step's value, not their mean.")
    own = rates(run_dir)
    if not own:
        raise CheckFailed(exercise, f"the {which} run has no step metrics", hint="wait until the run has ended.")
    right = statistics.median(own)
    if not math.isclose(value.median, right, rel_tol=0.2):
        seconds = _result(run_dir, exercise, f"the {which} run's folder")[1]["batch_size"] / right
        mistake = ("step times in seconds where samples per second are asked"
                   if math.isclose(value.median, seconds, rel_tol=0.2) else None)
        raise CheckFailed(exercise, f"the {which} numbers are not that run's warm samples per second",
                          found=value.describe(unit="samples/s"), mistake=mistake,
                          hint="the run's own warm steps, in samples per second, one value per step.")
    mine, theirs = sorted(float(v) for v in value.values), sorted(own)
    if len(mine) != len(theirs) or any(not math.isclose(a, b, rel_tol=1e-6) for a, b in zip(mine, theirs)):
        every = all_rates(run_dir)
        cold = [v for v in every if v not in own]
        kept = any(any(math.isclose(v, c, rel_tol=1e-9) for c in cold) for v in mine)
        raise CheckFailed(exercise, f"the {which} numbers are not that run's warm steps, one value each",
                          found=value.describe(unit="samples/s"),
                          mistake="the cold first steps or the last step kept in: they measure start-up and the "
                                  "trace's writing, not the run" if kept else None,
                          hint="every warm step of that run, each once; the question says which steps are warm.")
    return value


@check("11.1",
       wrong("one number instead of the measured spread", before_rate=lambda a: a.before_rate.median,
             mentions="single number"),
       wrong("step times in seconds", before_rate=lambda a: _as_step_times(a.before_dir), mentions="seconds"),
       wrong("every step, the cold ones and the last included",
             before_rate=lambda a: measured("before", all_rates(a.before_dir)), mentions="cold first steps"))
def check_first_run(before_dir: object, before_rate: Measured | None) -> Passed:
    """Exercise 11.1: the first run's warm throughput (samples/s per step), with its spread."""
    _result(before_dir, "11.1", "the first run's folder")
    expect_answer("11.1", before_rate, "the first run's throughput (a measurement)",
                  hint="one value per warm step, kept together as a measurement (the tool is in hint(\"11.1\")).")
    value = _measurement("11.1", before_rate, before_dir, "first run's")
    return passed("11.1", f"{value.describe(unit='samples/s')}: the number your fix must beat")


# --- 11.2: where the time goes ---------------------------------------------------------------------------------------

def _second_phase(run_dir: object) -> str:
    """The phase with the second largest share (a wrong answer)."""
    shares = _phase_shares(Path(getattr(run_dir, "path", run_dir)), "11.2")  # type: ignore[arg-type]
    return sorted(shares, key=shares.get)[-2]


@check("11.2",
       wrong("the phase with the second largest share", largest_phase=lambda a: _second_phase(a.before_dir)),
       wrong("a share in percent", largest_share=lambda a: a.largest_share * 100, mentions="percent"),
       wrong("a phase the tool does not have", largest_phase="compute", mentions="possible answers"))
def check_largest_phase(before_dir: object, largest_phase: str | None, largest_share: float | None) -> Passed:
    """Exercise 11.2: from the first run's profile, the phase of the step that takes the largest share, and it."""
    path, _ = _result(before_dir, "11.2", "the first run's folder")
    shares = _phase_shares(path, "11.2")
    expected = max(shares, key=shares.get)
    expect_in("11.2", largest_phase, PHASES, what="the phase")
    expect_equal("11.2", largest_phase, expected, what="the phase with the largest share",
                 hint="a phase's share of the recorded steps' own time, over all of them, not one step.")
    expect_close("11.2", largest_share, shares[expected], what="its share", abs=0.05,
                 hint="a fraction (0-1) of the recorded steps' time.")
    return passed("11.2", f"{expected}: {shares[expected]:.0%} of the recorded steps. A phase is where the time "
                          f"goes, not yet why: read the operators inside it.")


# --- 11.3: the claim -------------------------------------------------------------------------------------------------

#: What a claim (exercise 11.3) holds: the cause (a key of :data:`CAUSES`), the fix (the options changed, as
#: launched), and the throughput before and after as ``lumikit.measure.Measured`` (one value per warm step).
CLAIM_KEYS = ("cause", "fix", "before", "after")


def _claim(claim: object) -> Mapping[str, Any]:
    expect_answer("11.3", claim, "your claim (a dict with " + ", ".join(CLAIM_KEYS) + ")",
                  hint="state what you found and measured; the check judges the claim against the runs.")
    expect_type("11.3", claim, Mapping, what="your claim", hint="a dict with the keys " + ", ".join(CLAIM_KEYS))
    missing = [k for k in CLAIM_KEYS if claim.get(k) is None]  # type: ignore[union-attr]
    if missing:
        raise CheckFailed("11.3", f"your claim does not say {', '.join(missing)}",
                          hint="a claim names the cause, the fix, and the throughput before and after.")
    return claim  # type: ignore[return-value]


def parse_fix(fix: object) -> dict[str, str]:
    """The options a claimed fix names: ``"--workers 2"`` or ``{"--workers": 2}`` -> ``{"workers": "2"}``."""
    if isinstance(fix, Mapping):
        pairs = [(str(k) if str(k).startswith("--") else "--" + str(k).replace("_", "-"), str(v))
                 for k, v in fix.items()]
    else:
        words = shlex.split(str(fix).replace("=", " "))
        pairs = [(w, words[i + 1] if i + 1 < len(words) else "") for i, w in enumerate(words) if w.startswith("--")]
    return {FIX_OPTIONS[o]: v for o, v in pairs if o in FIX_OPTIONS}


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the fixed run changed, with their new values."""
    b, a = _knobs(before), _knobs(after)
    return {k: a[k] for k in b if str(a[k]) != str(b[k])}


def _holds(claim: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any],
           before_dir: object, after_dir: object) -> tuple[bool, str]:
    """Whether the claim's cause is the variant's, its fix removes it, and the fixed run is faster beyond the noise;
    and the comparison's sentence."""
    cause, setting, removes = _TRUTH[variant(str(before["case"]))]
    comparison = judged(rates(before_dir), rates(after_dir))
    changed = _changed(before, after)
    fixed = setting in changed and removes(changed[setting])
    good = str(claim["cause"]).strip().strip("()").lower() == cause and fixed and \
        not comparison.within_noise and comparison.ratio > 1
    return good, comparison.sentence(unit="samples/s", higher="faster", lower="slower")


@check("11.3",
       wrong("the first run given as the fixed one", after_dir=lambda a: a.before_dir, mentions="one option"),
       wrong("another cause, the rest right", claim=lambda a: {**a.claim, "cause": _other_cause(a.before_dir)},
             mentions="does not hold together"),
       wrong("a single number instead of the measured spread",
             claim=lambda a: {**a.claim, "after": a.claim["after"].median}, mentions="single number"),
       wrong("a fix that the run did not apply", claim=lambda a: {**a.claim, "fix": "--model-size small"},
             mentions="what your fixed run changed"),
       wrong("no profile reading: a fix found by sweeping the options",
             claim=lambda a: {k: v for k, v in a.claim.items() if k != "evidence"}, mentions="profile reading"),
       wrong("before and after swapped", claim=lambda a: {**a.claim, "before": a.claim["after"],
                                                          "after": a.claim["before"]}, mentions="not that run's"))
def check_claim(claim: Mapping[str, Any] | None, before_dir: object, after_dir: object) -> Passed:
    """Exercise 11.3: the learner's claim (the cause, the fix, the throughput before and after with its spread),
    judged whole against the two runs: the fixed run is of the same case and changed one option, the claim says
    what it changed and quotes the runs' own numbers, and then cause, fix and improvement beyond the noise must all
    hold; if any of those does not, one message says so without naming which."""
    claim = _claim(claim)
    _, before = _result(before_dir, "11.3", "the first run's folder")
    _, after = _result(after_dir, "11.3", "the fixed run's folder")
    if str(after["case"]) != str(before["case"]):
        raise CheckFailed("11.3", "the fixed run is of another case than the first", found=after["case"],
                          hint="launch both with `capstone_job`, which passes your case.")
    used = runs_of_case(before_dir)
    if used > RUN_BUDGET:
        raise CheckFailed("11.3", f"{used} runs of your case, over the budget of {RUN_BUDGET}",
                          mistake="a sweep of the fix options: trying each in turn finds a fix, not the cause",
                          hint="the budget is part of the task: read the first run's profile before changing "
                               "anything.")
    changed = _changed(before, after)
    if len(changed) != 1:
        raise CheckFailed("11.3", f"the fixed run changed {len(changed)} options ({', '.join(changed) or 'none'}); "
                                  "a fix is one option changed", hint="change one option, so the measurement "
                                                                      "says what that one did.")
    letter("11.3", claim["cause"], CAUSES, "the claimed cause (a letter of `CAUSES`)")
    if parse_fix(claim["fix"]) != {k: str(v) for k, v in changed.items()}:
        raise CheckFailed("11.3", "the claimed fix is not what your fixed run changed", found=claim["fix"],
                          hint="name the option and its value as you launched it, e.g. \"--option value\".")
    _measurement("11.3", claim["before"], before_dir, "before")
    _measurement("11.3", claim["after"], after_dir, "after")
    good, sentence = _holds(claim, before, after, before_dir, after_dir)
    if not good:
        raise CheckFailed("11.3", CLAIM_FAILS, hint="which operators fill the largest phase, and what makes them "
                                                    "run there?")
    _expect_evidence(claim, before_dir)  # a claim that holds, found without the profile, still fails
    return passed("11.3", f"the claim holds: {sentence} ({used} of your {RUN_BUDGET} runs)")


def _expect_evidence(claim: Mapping[str, Any], before_dir: object) -> None:
    """A claim holds only with the measurement made before the fix: the first run's profile reading (the phase with
    the largest share of its recorded steps), read from that run's own trace."""
    shares = _phase_shares(Path(getattr(before_dir, "path", before_dir)), "11.3")  # type: ignore[arg-type]
    evidence = claim.get("evidence")
    if evidence is None or str(evidence).strip().lower() != max(shares, key=shares.get):
        raise CheckFailed("11.3", "the claim does not carry the first run's profile reading",
                          found=evidence, mistake="a fix found by trying options: without the profile read before "
                                                  "the fix, the claim names no measured cause",
                          hint="the phase of the first run's profile with the largest share, as you measured it.")


def _other_cause(before_dir: object) -> str:
    """A cause that is not the run's (for the declared wrong answers)."""
    _, result = _result(before_dir, "11.3", "the first run's folder")
    right = _TRUTH[variant(str(result["case"]))][0]
    return next(c for c in CAUSES if c != right)


# --- 11.A: the written conclusion, judged by a rubric ----------------------------------------------------------------

#: The file, in the learner's progress folder, that holds their written conclusion of the capstone and its rubric.
CONCLUSION_FILE = "11.A.md"
#: Fewer words than this cannot hold the evidence and the reasoning the conclusion asks for.
MIN_CONCLUSION_WORDS = 60
#: Words that name a tool of the course (the evidence must come from one).
TOOL_WORDS = ("profile", "profiler", "trace", "step_phases", "phase", "critical path", "idle", "report card",
              "metrics", "data_time", "operator", "host_ops", "op_summary")
#: Per cause (a key of :data:`CAUSES`): words one of which names it.
CAUSE_WORDS = {
    "a": ("load", "loader", "loading", "input", "read", "reading", "dataloader"),
    "b": ("readback", "read back", "copy", "copies", "copied", "host", "sync", "synchron", "tolist", "item"),
    "c": ("fp32", "float32", "matrix", "matmul", "aten::mm", "addmm"),  # not the fix's words (--precision bf16)
    "d": ("batch", "fixed cost", "overhead", "per step", "per-step", "fill"),
    "e": ("core", "binding", "bind", "affinity", "pinned"),  # not the fix's words (--cpus)
}
#: The rubric, criterion by criterion, in the order the instructor reads it.
RUBRIC = ("names the cause with evidence from a tool", "states the fix", "gives before and after with spread",
          "reasons in its own words (no padding)")


def rubric(conclusion: str, before: Mapping[str, Any], after: Mapping[str, Any],
           before_rate: Measured, after_rate: Measured) -> dict[str, bool]:
    """Each criterion of :data:`RUBRIC` met or not, judged on the text and the two runs."""
    text = conclusion.lower()
    cause = _TRUTH[variant(str(before["case"]))][0]
    words = re.findall(r"[\w.%+-]+", text)
    sentences = [s.strip() for s in re.split(r"[.!?]\s+", text) if s.strip()]
    changed = _changed(before, after)
    option = next(iter(changed), "")
    fix_words = {option, option.replace("_", " "), "--" + option.replace("_", "-")} - {""}
    numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)]

    def quoted(value: float) -> bool:
        return any(math.isclose(n, value, rel_tol=0.06, abs_tol=0.051) for n in numbers)

    return {
        RUBRIC[0]: any(w in text for w in TOOL_WORDS) and cause_named(text, cause, fix_words),
        RUBRIC[1]: any(w in text for w in fix_words) and _states(str(changed.get(option, "")), text, quoted),
        RUBRIC[2]: all(quoted(v) for v in (before_rate.median, after_rate.median))
        and (any(quoted(v) for v in (before_rate.lo, before_rate.hi)) or "±" in text)
        and bool(re.search(r"range|spread|±|between|from \S+ to|-\s*\d", text)),
        RUBRIC[3]: len(words) >= MIN_CONCLUSION_WORDS and len(set(words)) >= 0.4 * len(words)
        and len(set(sentences)) == len(sentences),
    }


def cause_hits(text: str, fix_words: set[str] = frozenset()) -> dict[str, int]:
    """Per cause, how often its words (:data:`CAUSE_WORDS`, each as the start of a word) occur in a conclusion (lower
    case), the fix's own words left out (``--batch-size 16`` says what was changed, not why the run was slow)."""
    for word in sorted(fix_words | {w.replace("-", " ") for w in fix_words}, key=len, reverse=True):
        text = text.replace(word.lower(), " ")
    return {c: sum(len(re.findall(rf"(?<![\w-]){re.escape(w)}", text)) for w in words)
            for c, words in CAUSE_WORDS.items()}


def cause_named(text: str, cause: str, fix_words: set[str] = frozenset()) -> bool:
    """Whether a conclusion names ``cause`` as the cause: its words occur more often than any other cause's, and it
    is no survey (an essay that touches four causes or more names none)."""
    hits = cause_hits(text, fix_words)
    return hits[cause] > 0 and all(n < hits[cause] for c, n in hits.items() if c != cause) \
        and sum(1 for n in hits.values() if n) <= 3


def _states(value: str, text: str, quoted: Any) -> bool:
    """Whether ``text`` (lower case) gives the fix's new value: a number quoted, or the word (``bf16``, ``all``)."""
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return quoted(float(value))
    return bool(value) and re.search(rf"(?<![\w-]){re.escape(value.lower())}(?![\w-])", text) is not None


def conclusion_path() -> Path | None:
    """Where the written conclusion is saved: ``<progress folder>/11.A.md`` (None when recording is off)."""
    from .progress import progress_dir

    folder = progress_dir()
    return None if folder is None else Path(folder) / CONCLUSION_FILE


def _filler(a: Any) -> str:
    """Filler around the right numbers: every criterion's words, no reasoning (a declared wrong answer)."""
    return ("trace phase batch loader host copy fix " * 12
            + f"{a.claim['before'].median} {a.claim['after'].median} {a.claim['before'].lo} range")


#: What each cause's conclusion says it saw, and the fix it names (for the three wrong conclusions of 11.A).
_WRITTEN = {
    "a": ("the profile's data phase was the largest: the loader read each sample one after another inside the "
          "training process", "--workers 2"),
    "b": ("the trace showed the host waiting in every step: a readback copied values to the host and synchronised "
          "the loop", "--log-every 0"),
    "c": ("the operators of the forward phase were fp32 matrix products (aten::mm, addmm) at a fraction of their "
          "bf16 rate", "--precision bf16"),
    "d": ("the phases were even but each step carried a small batch, so the fixed cost per step dominated",
          "--batch-size 16"),
    "e": ("the metrics showed the data phase starved of cores: the binding gave the process and its workers one "
          "core", "--cpus all"),
}


def _written(a: Any, saw: str, fix: str) -> str:
    """A conclusion of the right form and length: what it ``saw``, the ``fix``, the claim's numbers with spread."""
    b, f = a.claim["before"], a.claim["after"]
    return (f"Reading the profiler's output, {saw}. I changed one option, {fix}, and launched the run again with "
            f"nothing else changed, so the measurement says what that option did. The throughput went from "
            f"{b.median:.1f} samples/s (range {b.lo:.1f} to {b.hi:.1f}) to {f.median:.1f} samples/s (range "
            f"{f.lo:.1f} to {f.hi:.1f}), well beyond the spread of either run, since the ranges do not overlap. "
            f"On LUMI I would check the device side of the trace as well before calling it done.")


def _wrong_cause(a: Any) -> str:
    """The right fix and numbers, but another cause said to be seen (a declared wrong answer)."""
    _, result = _result(a.before_dir, "11.A", "the first run's folder")
    right = _TRUTH[variant(str(result["case"]))][0]
    other = next(c for c in CAUSES if c != right)
    return _written(a, _WRITTEN[other][0], str(a.claim["fix"]))


def _other_case(a: Any) -> str:
    """Another case's conclusion, its cause and its fix, with this run's numbers (a declared wrong answer)."""
    _, result = _result(a.before_dir, "11.A", "the first run's folder")
    right = _TRUTH[variant(str(result["case"]))][0]
    other = next(c for c in CAUSES if c != right)
    return _written(a, *_WRITTEN[other])


def _generic_essay(a: Any) -> str:
    """An essay that surveys every cause and names none (a declared wrong answer)."""
    saw = ("a slow run can come from the input loader, from host copies and readbacks, from fp32 matrix "
           "products, from a small batch with fixed costs per step, or from a CPU binding with too few cores")
    return _written(a, saw, str(a.claim["fix"]))


@check("11.A",
       wrong("an empty conclusion", conclusion="", mentions="words"),
       wrong("a wrong cause, with the right fix and numbers", conclusion=_wrong_cause, mentions="names the cause"),
       wrong("another case's conclusion, its cause and fix", conclusion=_other_case, mentions="rubric"),
       wrong("a generic essay that surveys every cause", conclusion=_generic_essay, mentions="names the cause"),
       wrong("a conclusion without the evidence", mentions="rubric",
             conclusion=lambda a: " ".join(["The run was slow and now it is fixed, which is good news for all. "
                                            "We changed something and it became faster than before."] * 4)),
       wrong("one word repeated to reach the length, then the numbers", mentions="rubric",
             conclusion=lambda a: "x " * 80 + f"{a.claim['before'].median} {a.claim['after'].median}"),
       wrong("the right words and numbers as filler", mentions="rubric", conclusion=_filler),
       wrong("one sentence repeated to reach the length", mentions="rubric",
             conclusion=lambda a: (f"The trace showed the cause and the fix took it from "
                                   f"{a.claim['before'].median} to {a.claim['after'].median} samples/s. ") * 8))
def check_conclusion(conclusion: str | None, claim: Mapping[str, Any] | None, before_dir: object,
                     after_dir: object) -> Passed:
    """Exercise 11.A: the written conclusion, judged by :data:`RUBRIC` against the claim's runs; it is saved with
    its rubric to the learner's progress folder (:func:`conclusion_path`), where the instructor reads it."""
    expect_type("11.A", conclusion, str, what="your conclusion", hint="write it as a string (triple quotes).")
    words = re.findall(r"[\w.%+-]+", conclusion)
    if len(words) < MIN_CONCLUSION_WORDS:
        raise CheckFailed("11.A", f"your conclusion has {len(words)} words; it needs room for the evidence and the "
                                  "reasoning", hint="what the tools showed, why the fix works, what changed.")
    claim = _claim(claim)
    _, before = _result(before_dir, "11.A", "the first run's folder")
    _, after = _result(after_dir, "11.A", "the fixed run's folder")
    before_rate = _measurement("11.A", claim["before"], before_dir, "before")
    after_rate = _measurement("11.A", claim["after"], after_dir, "after")
    marks = rubric(conclusion, before, after, before_rate, after_rate)
    missing = [c for c, ok in marks.items() if not ok]
    if missing:
        raise CheckFailed("11.A", f"the rubric is not met yet: your conclusion {'; '.join(missing)}: not yet",
                          hint="the cause and the tool reading that shows it, the fix, the numbers before and after "
                               "with their spread, in your own sentences.")
    saved = _save_conclusion(conclusion, marks)
    return passed("11.A", f"rubric met ({', '.join(RUBRIC)}); {len(words)} words"
                          + (f", saved to {saved}" if saved else " (recording is off: not saved)"))


def _save_conclusion(text: str, marks: Mapping[str, bool]) -> Path | None:
    """Write the conclusion and its rubric to the progress folder (atomically); a folder that cannot be written
    never fails it."""
    from ..files import write_atomic
    from .framework import _PROBING

    path = conclusion_path()
    if path is None or _PROBING.get():
        return None
    table = "\n".join(f"- [{'x' if ok else ' '}] {criterion}" for criterion, ok in marks.items())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_atomic(path, f"{text.rstrip()}\n\n**Rubric (lumikit):**\n\n{table}\n")
    except OSError:
        return None
