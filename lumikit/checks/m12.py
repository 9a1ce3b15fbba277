"""Checks for module 12 (making the step faster): which rung of the learner's own ladder helped most and whether
beyond the noise, the MFU of a rung against one GCD's peak for the precision it ran in, and what a KV cache and a
larger batch do to decode tokens/s.

Every expected value is computed from the learner's own measurements passed in (their ladder run's folder, their
generation rounds), judged with :func:`lumikit.measure.compare` against their own spread; the peaks come from the
LUMI site profile. No number is written here.

A check that reads a ladder takes the run folder of a completed ``lumikit ladder`` job (:func:`ladder_of`), never a
dict of numbers: a ladder typed in, copied from another run or from the reference ladders lumikit ships is refused,
and the pass line says where and when the ladder ran (its manifest and its ``ladder.json``), never "this machine".
"""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import LumikitError
from ..ladder.rungs import PEAK_FOR_PRECISION
from ..measure import Comparison, compare, measured
from ..model_estimate import gcd_peak_flops
from .concepts import Prediction, outcome_check, prediction_check
from .framework import CheckFailed, Passed, check, expect_close, expect_type, passed, wrong

#: The precisions' peaks the MFU exercise is judged against: one LUMI GCD (site profile lumi).
SITE = "lumi"


#: How far (s) the ladder.json's own time may lie outside its run's start and end (clock steps, file writes).
_RUN_SLACK_S = 120.0


def ladder_of(ladder_run: Any, exercise: str) -> tuple[dict[str, Any], str]:
    """The ladder a completed ``lumikit ladder`` run wrote, and where and when it ran (for the pass line).

    ``ladder_run`` is the run (what ``launch(ladder_job(...))`` returned) or its folder. Refused, naming the kind of
    mistake: a dict of numbers (typed in or copied: nothing to check them against), a reference ladder lumikit ships,
    a folder that is no run or no ladder run, a run that did not complete, a ladder.json written outside its run."""
    from ..ladder.table import read_ladder
    from ..launch.runfolder import RunFolder

    hint = "pass the ladder run itself (`ladder_run`), after it completed."
    if ladder_run is None:
        raise CheckFailed(exercise, "the ladder run (`ladder_run`)", unanswered=True, hint=hint)
    if isinstance(ladder_run, Mapping):
        raise CheckFailed(exercise, "the ladder is a dict of numbers, not a run", found=type(ladder_run).__name__,
                          mistake="numbers typed in or copied: only a run's own folder says they were measured",
                          hint=hint)
    path = Path(getattr(ladder_run, "path", ladder_run)) if isinstance(ladder_run, (str, os.PathLike)) or \
        hasattr(ladder_run, "path") else None
    if path is None:
        raise CheckFailed(exercise, "the ladder run should be a run or its folder", found=type(ladder_run).__name__,
                          hint=hint)
    shipped = Path(__file__).resolve().parents[1] / "data"
    if shipped in path.resolve().parents or path.resolve() == shipped:
        raise CheckFailed(exercise, "that ladder is a reference lumikit ships, not a run of yours",
                          mistake="a reference ladder measured elsewhere (another machine, another day)", hint=hint)
    try:
        manifest = RunFolder.open(path).read()
        ladder = read_ladder(path)
    except LumikitError as err:
        raise CheckFailed(exercise, f"the ladder run cannot be read: {err}", hint=hint) from None
    command = " ".join(map(str, (manifest.get("spec") or {}).get("command") or []))
    if "lumikit.ladder" not in command:
        raise CheckFailed(exercise, "that run folder is not a ladder run", hint=hint)
    if manifest.get("state") != "COMPLETED":
        raise CheckFailed(exercise, f"the ladder run has not completed (state {manifest.get('state')})",
                          hint="wait for it to end; a failed run has no ladder to judge.")
    start, end = (_epoch(manifest.get(k)) for k in ("start_time", "end_time"))
    written = ladder.get("time")
    if start is None or end is None or not isinstance(written, (int, float)) \
            or not start - _RUN_SLACK_S <= written <= end + _RUN_SLACK_S:
        raise CheckFailed(exercise, "the ladder.json in that folder was not written by its run",
                          mistake="a ladder copied into a run folder: its time is not the run's", hint=hint)
    where = f"measured on {ladder.get('measured_on') or ladder.get('device') or 'an unnamed device'}"
    host = ladder.get("host")
    return dict(ladder), f"{where}{f' ({host})' if host else ''}, run {path.name} ended {manifest.get('end_time')}"


def _epoch(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except (TypeError, ValueError):
        return None


def rung_rates(ladder: Mapping[str, Any], exercise: str = "12.1") -> dict[str, list[float]]:
    """Rung -> its timed repeats (samples/s), in the ladder's order, from a ``ladder.json``'s contents."""
    rows = ladder.get("rungs") if isinstance(ladder, Mapping) else None
    if not isinstance(rows, list) or not rows:
        raise CheckFailed(exercise, "the ladder has no rungs", hint="pass the dict `read_ladder(run.path)` returns.")
    return {str(r["rung"]): [float(v) for v in (r["samples_per_s"].get("values") or [r["samples_per_s"]["median"]])]
            for r in rows}


def steps_up(ladder: Mapping[str, Any]) -> dict[str, Comparison]:
    """Each rung after the first against the rung above it (samples/s, the learner's repeats)."""
    rates = rung_rates(ladder)
    names = list(rates)
    return {b: compare(measured(b, rates[b]), measured(a, rates[a])) for a, b in zip(names, names[1:])}


def _helped_most(ladder: Mapping[str, Any]) -> str:
    steps = steps_up(ladder)
    return max(steps, key=lambda name: steps[name].ratio)


def _helped_least(ladder: Mapping[str, Any]) -> str:
    steps = steps_up(ladder)
    return min(steps, key=lambda name: steps[name].ratio)


# --- Is bf16 faster here? Predict, then read the ladder ------------------------------------------------------------

BF16_HERE = Prediction("12.q1", "On this machine (the tiny language model, a CPU here), the bf16 rung against the "
                                "fp32 rung, in samples/s over the ladder's timed repeats, will be:", {
    "a": "faster beyond the noise (ranges apart, medians more than 20 % apart)",
    "b": "within the noise",
    "c": "slower beyond the noise (ranges apart, medians more than 20 % apart)",
})
check_bf16_prediction = prediction_check(BF16_HERE)


def _outcome(comparison: Comparison) -> str:
    """The option a comparison of two measured series picks: (a) faster, (b) within noise, (c) slower."""
    if comparison.within_noise:
        return "b"
    return "a" if comparison.ratio > 1 else "c"


def _bf16_truth(ladder_run: Any) -> str:
    """What lumikit.measure says of the bf16 rung's repeats against the fp32 rung's, in the learner's ladder run."""
    rates = rung_rates(ladder_of(ladder_run, "12.q2")[0], "12.q2")
    return _outcome(compare(measured("bf16", rates["bf16"]), measured("fp32", rates["fp32"])))


check_bf16_outcome = outcome_check("12.q2", BF16_HERE, _bf16_truth, {
    "a": "this CPU ran the bf16 matrix products faster than fp32 ones (CPUs with bf16 instructions do), and the "
         "tiny model's step is mostly matrix products. On an MI250X GCD the bf16 matrix peak is 4x the fp32 one "
         "(191.5 against 47.9 TFLOPS): expect a large gain there too.",
    "b": "the tiny model's step is short and this machine is shared: the casts autocast adds and the noise hide "
         "what bf16 saves. On an MI250X GCD the bf16 matrix peak is 4x the fp32 one (191.5 against 47.9 TFLOPS): "
         "there, expect bf16 to help.",
    "c": "without fast bf16 instructions a CPU converts to fp32 and back around every product, which costs more "
         "than it saves. On an MI250X GCD the bf16 matrix peak is 4x the fp32 one (191.5 against 47.9 TFLOPS): "
         "there, expect the opposite.",
})


# --- Which rung helped most, and was it beyond the noise? ----------------------------------------------------------

@check("12.1",
       wrong("the first rung: it has no rung above it to gain over", helped_most=lambda a: list(
           rung_rates(_l(a)))[0], beyond_noise=lambda a: steps_up(_l(a))[_helped_most(_l(a))].within_noise
           is False),
       wrong("the rung that helped least", helped_most=lambda a: _helped_least(_l(a)),
             beyond_noise=lambda a: steps_up(_l(a))[_helped_most(_l(a))].within_noise is False),
       wrong("the right rung, but the noise verdict turned round", helped_most=lambda a: _helped_most(_l(a)),
             beyond_noise=lambda a: steps_up(_l(a))[_helped_most(_l(a))].within_noise),
       wrong("a rung that is not in the ladder", helped_most="turbo", beyond_noise=True))
def check_helped_most(helped_most: str | None, beyond_noise: bool | None, ladder_run: Any) -> Passed:
    """Exercise 12.1: the rung whose step over the rung above it gained most, and whether that gain is beyond the
    noise of the learner's own repeats (the ladder read from the learner's ladder run)."""
    ladder, where = ladder_of(ladder_run, "12.1")
    expect_type("12.1", helped_most, str, what="the rung's name", hint="a rung name of your ladder, as a string.")
    helped_most = helped_most.strip()  # spaces around a right name are no mistake
    steps = steps_up(ladder)
    if helped_most not in rung_rates(ladder):
        raise CheckFailed("12.1", "that is not a rung of your ladder", found=helped_most,
                          hint="the names are in ladder['rungs'][i]['rung'].")
    if helped_most not in steps:
        raise CheckFailed("12.1", "the first rung has no rung above it, so it gained over nothing",
                          hint="the ladder is cumulative: a rung's gain is over the rung above it.")
    best = _helped_most(ladder)
    if helped_most != best:
        raise CheckFailed("12.1", "another rung gained more over the rung above it", found=helped_most,
                          hint="the ladder is cumulative: compare each rung with the one above it, not with the "
                               "first.")
    expect_type("12.1", beyond_noise, bool, what="whether the gain is beyond the noise",
                hint="a bool from compare(...).within_noise (beyond is its opposite).")
    comparison = steps[best]
    if beyond_noise != (not comparison.within_noise):
        raise CheckFailed("12.1", "the noise verdict does not follow from your repeats",
                          hint="compare(measured(rung, values), measured(rung above, values)).within_noise; the "
                               "ranges and the 20 % rule decide, not the medians alone.")
    return passed("12.1", comparison.sentence(unit="samples/s", fmt="{:.1f}", higher="faster", lower="slower")
                  + f" Your ladder, {where}; on LUMI run the same ladder on a GCD.")


# --- MFU for the precision that ran --------------------------------------------------------------------------------

def _l(arguments: Any) -> dict[str, Any]:
    """The ladder of a check's bound arguments (its ``ladder_run``), for the known-wrong answers."""
    return ladder_of(arguments.ladder_run, "12.x")[0]


def _row(ladder: Mapping[str, Any], rung: str) -> Mapping[str, Any]:
    for row in ladder["rungs"]:
        if row["rung"] == rung:
            return row
    raise CheckFailed("12.2", f"your ladder has no {rung} rung", hint="run the ladder with that rung in --rungs.")


def _achieved(ladder: Mapping[str, Any], rung: str) -> float:
    """Model FLOP/s of the rung: FLOPs per step x steps per second (median samples/s over the batch size)."""
    return float(ladder["step_flops"]) * _row(ladder, rung)["samples_per_s"]["median"] / float(ladder["batch_size"])


def _mfu(ladder: Mapping[str, Any], rung: str, precision: str | None = None) -> float:
    precision = precision or str(_row(ladder, rung)["precision"])
    return _achieved(ladder, rung) / gcd_peak_flops(PEAK_FOR_PRECISION[precision], SITE)


@check("12.2",
       wrong("against another precision's peak than the rung ran in (fp32 for bf16 looks four times better)",
             mfu=lambda a: _mfu(_l(a), a.rung, "bf16" if _row(_l(a), a.rung)["precision"] == "fp32" else "fp32")),
       wrong("against a whole MI250X (two GCDs): PyTorch's device is one GCD",
             mfu=lambda a: _mfu(_l(a), a.rung) / 2),
       wrong("a percentage", mfu=lambda a: 100 * _mfu(_l(a), a.rung)),
       wrong("samples/s as if they were steps/s (the batch size left out)",
             mfu=lambda a: _mfu(_l(a), a.rung) * float(_l(a)["batch_size"])))
def check_rung_mfu(mfu: float | None, ladder_run: Any, rung: str = "bf16") -> Passed:
    """Exercise 12.2: the rung's MFU (0-1) against one LUMI GCD's peak for the precision it ran in (the ladder read
    from the learner's ladder run)."""
    ladder, where = ladder_of(ladder_run, "12.2")
    row = _row(ladder, rung)
    expected = _mfu(ladder, rung)
    expect_close("12.2", mfu, expected, rel=0.01, what="the model FLOPs utilisation (0-1)",
                 hint="the arithmetic a step does per second, against one GCD's peak at the precision the rung "
                      "ran in (0-1).")
    peak = PEAK_FOR_PRECISION[str(row["precision"])]
    return passed("12.2", f"{_achieved(ladder, rung) / 1e9:.3g} GFLOP/s ({where}) against "
                          f"{gcd_peak_flops(peak, SITE) / 1e12:.1f} TFLOPS ({peak}, one LUMI GCD): a CPU uses a tiny "
                          "share of a GCD's peak; on LUMI the same ladder measures the real MFU")


# --- Decode: the KV cache and the batch ----------------------------------------------------------------------------

def _decode(rounds: Sequence[Mapping[str, Any]], batch: int, kv_cache: bool) -> list[float]:
    """Decode tokens/s of one batch size, with or without the cache, over the learner's rounds of
    ``generate.measure`` (each round a list of row dicts)."""
    values = [float(r["decode_tokens_per_s"]) for rows in rounds for r in rows
              if int(r["batch"]) == batch and bool(r["kv_cache"]) == kv_cache]
    if not values:
        raise CheckFailed("12.3", f"no decode rows for batch {batch}", hint="measure that batch size in every round.")
    return values


def _batches(rounds: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    sizes = sorted({int(r["batch"]) for rows in rounds for r in rows})
    return sizes[0], sizes[-1]


def _median(values: Sequence[float]) -> float:
    return measured("values", values).median


def _cache_gain(rounds: Sequence[Any], batch: int) -> float:
    return _median(_decode(rounds, batch, True)) / _median(_decode(rounds, batch, False))


@check("12.3",
       wrong("the ratio upside down (without the cache over with it)",
             ratio=lambda a: 1 / _cache_gain(a.rounds, _batches(a.rounds)[1])),
       wrong("the difference in tokens/s instead of the ratio", ratio=lambda a: _median(
           _decode(a.rounds, _batches(a.rounds)[1], True)) - _median(_decode(a.rounds, _batches(a.rounds)[1], False))),
       wrong("a percentage", ratio=lambda a: 100 * _cache_gain(a.rounds, _batches(a.rounds)[1])))
def check_cache_gain(ratio: float | None, rounds: Sequence[Any]) -> Passed:
    """Exercise 12.3: at the largest batch, how many times the decode tokens/s with the KV cache is the decode
    tokens/s without it (medians over the rounds)."""
    large = _batches(rounds)[1]
    expected = _cache_gain(rounds, large)
    expect_close("12.3", ratio, expected, rel=0.01, what="the decode speed-up of the cache",
                 hint="how many times faster decoding is with the cache, over every round, at the batch asked.")
    return passed("12.3", f"{expected:.1f}x at batch {large}: without a cache every decode step runs the whole "
                          "sequence again; with one it runs one position and reads the cached keys and values")


MORE_BATCH = Prediction("12.q3", "With the KV cache, going from the smallest to the largest batch, decode tokens/s "
                                 "(over the whole batch, medians of the rounds) will:", {
    "a": "rise beyond the noise (ranges apart, medians more than 20 % apart)",
    "b": "stay within the noise",
    "c": "fall beyond the noise (ranges apart, medians more than 20 % apart)",
})
check_batch_prediction = prediction_check(MORE_BATCH)


def _batch_truth(rounds: Sequence[Any]) -> str:
    """What lumikit.measure says of decode tokens/s (cache on) at the largest batch against the smallest."""
    small, large = _batches(rounds)
    return _outcome(compare(measured(f"batch {large}", _decode(rounds, large, True)),
                            measured(f"batch {small}", _decode(rounds, small, True))))


check_batch_outcome = outcome_check("12.q4", MORE_BATCH, _batch_truth, {
    "a": "a decode step reads every weight once whatever the batch, and does little arithmetic per byte read: "
         "more rows per read is more tokens for the same traffic. Decode is bound by memory traffic, and batching "
         "(vLLM's continuous batching) is what raises its tokens/s, on a GCD as here.",
    "b": "at these sizes the tiny model's weights fit in the CPU's caches and the machine is noisy; on a GCD, where "
         "a decode step reads the weights from memory, expect a larger batch to raise decode tokens/s.",
    "c": "the cache grows with the batch, and on this machine other work got in the way; on a GCD, where a decode "
         "step reads the weights from memory, expect a larger batch to raise decode tokens/s.",
})
