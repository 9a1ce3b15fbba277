"""Checks for module 07 (several GPUs on one node): steps per DDP rank, the slower first epoch, DDP and
DataParallel against one device, and how step time follows model size and batch size.

Every expected value is computed from the learner's own runs: the ``result.rank0.json`` summaries the ResNet
workload writes (``mean_step_time_s``, ``global_samples_per_s``, ``parameters``, ...) and its per-step and
per-epoch rows from ``metrics.rank0.jsonl``. Nothing measured on one machine is pasted here.
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping

from .concepts import Choice, Option, Prediction, choice_check, outcome_check, prediction_check
from ..measure import measured, middle, noise_note, outlier_note
from .framework import CheckFailed, Passed, check, expect_close, expect_equal, expect_type, passed, wrong

Summary = Mapping[str, Any]


def _field(exercise: str, summary: Summary, key: str) -> Any:
    """A value of a run summary, with a message that names the run file when it is missing."""
    try:
        return summary[key]
    except (KeyError, TypeError):
        raise CheckFailed(exercise, f"the run summary passed to the check has no {key!r}",
                          hint="pass `run.metrics().result`, the summary in the run's result.rank0.json") from None


def _ratio(a: Summary, b: Summary, key: str) -> float:
    return float(a[key]) / float(b[key])


@check("07.1",
       wrong("the single run's steps per epoch: each rank sees only its share of the data",
             steps_per_rank=lambda a: a.single["steps_per_epoch"], mentions="steps per epoch"),
       wrong("the single run's global batch on every device (the global batch doubles)",
             per_device_batch=lambda a: a.single["global_batch_size"],
             steps_per_rank=lambda a: a.ddp["dataset_size"] // (a.ddp["batch_size"] * a.ddp["world_size"])),
       wrong("steps per epoch as a division that is not rounded down",
             steps_per_rank=lambda a: a.ddp["dataset_size"] / (a.ddp["batch_size"] * a.ddp["world_size"])))
def check_ddp_steps(steps_per_rank: int | None, per_device_batch: int | None, single: Summary,
                    ddp: Summary) -> Passed:
    """Exercise 07.1: steps per epoch of one DDP rank, and the per-device batch that keeps the single run's
    global batch."""
    n, batch, world = (_field("07.1", ddp, k) for k in ("dataset_size", "batch_size", "world_size"))
    expected = n // (batch * world)
    expect_type("07.1", steps_per_rank, int, what="the steps per epoch of one DDP rank",
                hint="a whole number of steps: a last, partial batch is dropped.")
    expect_equal("07.1", steps_per_rank, expected, what="the steps per epoch of one DDP rank",
                 hint="every rank takes its own batch in every step, so one step uses batch x ranks samples.",
                 off_by_one="a rounding slip: the loader keeps only whole steps of batch x ranks samples")
    expect_equal("07.1", steps_per_rank, _field("07.1", ddp, "steps_per_epoch"),
                 what="the steps per epoch the DDP run printed", hint="compare with the first line of its output.")
    same = _field("07.1", single, "global_batch_size") // world
    expect_type("07.1", per_device_batch, int, what="the --batch-size that keeps the single run's global batch",
                hint="a whole number of samples per device.")
    expect_equal("07.1", per_device_batch, same, what="the --batch-size that keeps the single run's global batch",
                 hint="global batch = batch per device x ranks; divide the single run's global batch by the ranks.",
                 off_by_one="a rounding slip in sharing the global batch among the ranks")
    return passed("07.1", f"{n} samples / ({batch} x {world} ranks) = {expected} steps per rank; "
                          f"--batch-size {same} would keep the global batch of the single run")


def _epochs(epochs: Any) -> list[float]:
    return [float(t) for t in epochs["epoch_time_s"]]


@check("07.2",
       wrong("the ratio of the epoch times instead of their difference",
             first_epoch_extra_s=lambda a: _epochs(a.epochs)[0] / _epochs(a.epochs)[1]),
       wrong("the first epoch's whole time", first_epoch_extra_s=lambda a: _epochs(a.epochs)[0]),
       wrong("the first step's whole time instead of its extra",
             first_epoch_extra_s=lambda a: _epochs(a.epochs)[0] - _epochs(a.epochs)[1],
             first_step_extra_s=lambda a: float(list(a.steps["step_time_s"])[0])))
def check_first_epoch(first_epoch_extra_s: float | None, first_step_extra_s: float | None, epochs: Any,
                      steps: Any) -> Passed:
    """Exercise 07.2: how much longer the first epoch took than the second, and how much longer the first step
    took than the median of the other steps of the first epoch."""
    times = list(epochs["epoch_time_s"])
    if len(times) < 2:
        raise CheckFailed("07.2", "the epoch table has fewer than two epochs", hint="run the job with --epochs 2")
    expected_epoch = times[0] - times[1]
    first = [float(t) for t, e in zip(steps["step_time_s"], steps["epoch"]) if e == 0]
    expected_step = first[0] - statistics.median(first[1:])
    expect_close("07.2", first_epoch_extra_s, expected_epoch, rel=0.02, abs=1e-3,
                 what="how much longer the first epoch took than the second (s)",
                 hint="epoch against epoch, in seconds; it may come out negative.")
    expect_close("07.2", first_step_extra_s, expected_step, rel=0.02, abs=1e-3,
                 what="how much longer the first step took than a typical one (s)",
                 hint="the first step against a typical step of the same epoch, in seconds.")
    return passed("07.2", f"first epoch {expected_epoch:+.3f} s against the second; "
                          f"the first step alone {expected_step:+.3f} s against a typical step; "
                          f"{_first_step_note(first)}")


@check("07.3",
       wrong("the step-time ratio instead of the samples/s ratio (each DDP step does twice the work)",
             ddp_speedup=lambda a: _ratio(a.single, a.ddp, "mean_step_time_s"), mentions="samples/s"),
       wrong("the speed-up given as the efficiency",
             ddp_speedup=lambda a: _ratio(a.ddp, a.single, "global_samples_per_s"),
             ddp_efficiency=lambda a: _ratio(a.ddp, a.single, "global_samples_per_s"), mentions="per rank"))
def check_ddp_gain(ddp_speedup: float | None, ddp_efficiency: float | None, single: Summary,
                   ddp: Summary) -> Passed:
    """Exercise 07.3: DDP's throughput against one device, and that gain per rank (1.0 = perfect scaling)."""
    speedup = _field("07.3", ddp, "global_samples_per_s") / _field("07.3", single, "global_samples_per_s")
    efficiency = speedup / _field("07.3", ddp, "world_size")
    expect_close("07.3", ddp_speedup, speedup, rel=0.02, what="DDP samples/s divided by the single run's samples/s",
                 hint="the work done per second by all ranks together, not the step times.")
    expect_close("07.3", ddp_efficiency, efficiency, rel=0.02, what="the speed-up per rank",
                 hint="the gain each rank brings: 1.0 is perfect scaling.")
    return passed("07.3", f"DDP on {ddp['world_size']} ranks: {speedup:.2f}x the samples/s of one device, "
                          f"{efficiency:.0%} of perfect scaling; "
                          f"{_rate_note(ddp, single, 'DDP', 'one device', ON_LUMI['07.3'])}")


@check("07.4",
       wrong("the step-time ratio without the minus 1",
             dp_speedup=lambda a: _ratio(a.dp, a.single, "global_samples_per_s"),
             dp_overhead=lambda a: _ratio(a.dp, a.single, "mean_step_time_s"), mentions="minus 1"),
       wrong("the samples/s per device instead of in all",
             dp_speedup=lambda a: _ratio(a.dp, a.single, "global_samples_per_s") / 2),
       wrong("the overhead in per cent", dp_speedup=lambda a: _ratio(a.dp, a.single, "global_samples_per_s"),
             dp_overhead=lambda a: 100 * (_ratio(a.dp, a.single, "mean_step_time_s") - 1)))
def check_dp_cost(dp_speedup: float | None, dp_overhead: float | None, single: Summary, dp: Summary) -> Passed:
    """Exercise 07.4: DataParallel's throughput against one device, and how much longer its step is."""
    speedup = _field("07.4", dp, "global_samples_per_s") / _field("07.4", single, "global_samples_per_s")
    overhead = _field("07.4", dp, "mean_step_time_s") / _field("07.4", single, "mean_step_time_s") - 1
    expect_close("07.4", dp_speedup, speedup, rel=0.02, what="DP samples/s divided by the single run's samples/s",
                 hint="the work done per second by the whole run, not by one device.")
    expect_close("07.4", dp_overhead, overhead, rel=0.02, abs=0.005,
                 what="the DP step time over the single step time, minus 1",
                 hint="how much longer a DP step is, as a fraction (0.25 means 25 % longer steps).")
    return passed("07.4", f"DataParallel: {speedup:.2f}x the samples/s of one device; each step {overhead:+.0%}; "
                          f"{_rate_note(dp, single, 'DP', 'one device', ON_LUMI['07.4'])}")


@check("07.5",
       wrong("the ratio upside down (base / other)", param_ratio=lambda a: _ratio(a.base, a.other, "parameters")),
       wrong("the parameter difference instead of the ratio",
             param_ratio=lambda a: float(a.other["parameters"] - a.base["parameters"])),
       wrong("the step time assumed to follow the parameter count",
             param_ratio=lambda a: _ratio(a.other, a.base, "parameters"),
             step_time_ratio=lambda a: _ratio(a.other, a.base, "parameters")))
def check_model_size(param_ratio: float | None, step_time_ratio: float | None, base: Summary,
                     other: Summary) -> Passed:
    """Exercise 07.5: the parameter ratio of two model sizes and the ratio of their measured step times."""
    params = _field("07.5", other, "parameters") / _field("07.5", base, "parameters")
    times = _field("07.5", other, "mean_step_time_s") / _field("07.5", base, "mean_step_time_s")
    expect_close("07.5", param_ratio, params, rel=0.01, what="how many times the base model's parameters the other has",
                 hint="the summaries' `parameters` count every weight.")
    expect_close("07.5", step_time_ratio, times, rel=0.02,
                 what="how many times the base model's step time the other takes",
                 hint="typical steps: the first, warm-up step is already left out of the summaries.")
    return passed("07.5", f"{params:.1f}x the parameters, {times:.1f}x the step time; "
                          f"{_step_note(other, base, 'larger model', 'base model', ON_LUMI['07.5'])}")


@check("07.6",
       wrong("the ratio upside down (small / large)",
             step_time_ratio=lambda a: _ratio(a.small, a.large, "mean_step_time_s")),
       wrong("samples/s assumed to double with the batch",
             step_time_ratio=lambda a: _ratio(a.large, a.small, "mean_step_time_s"),
             throughput_ratio=lambda a: _ratio(a.large, a.small, "batch_size")))
def check_batch_size(step_time_ratio: float | None, throughput_ratio: float | None, small: Summary,
                     large: Summary) -> Passed:
    """Exercise 07.6: how the step time and the samples/s change when the batch per device grows."""
    times = _field("07.6", large, "mean_step_time_s") / _field("07.6", small, "mean_step_time_s")
    rate = _field("07.6", large, "global_samples_per_s") / _field("07.6", small, "global_samples_per_s")
    expect_close("07.6", step_time_ratio, times, rel=0.02,
                 what="how many times the small batch's step time the large batch takes",
                 hint="a ratio of typical step times, the larger batch on top.")
    expect_close("07.6", throughput_ratio, rate, rel=0.02,
                 what="how many times the small batch's samples/s the large batch reaches",
                 hint="a ratio of the whole run's throughput, the larger batch on top.")
    factor = _field("07.6", large, "batch_size") / _field("07.6", small, "batch_size")
    return passed("07.6", f"{factor:g}x the batch: {times:.2f}x the step time, {rate:.2f}x the samples/s; "
                          f"{_rate_note(large, small, 'large batch', 'small batch', ON_LUMI['07.6'])}")


# --- Noise as a lesson: the learner's own runs, with their spread ---------------------------------------------------

#: What each comparison should show on LUMI's GCDs (expected from how the methods work, not a measurement here).
ON_LUMI = {
    "07.2": "the first step clearly slower than the rest (kernel selection and memory allocation on the GCD)",
    "07.3": "DDP on 2 GCDs close to twice the samples/s of one GCD",
    "07.4": "DataParallel behind DDP: one Python process drives both GCDs and copies the model every step",
    "07.5": "the step time to grow with the model, though less than the parameter count while the GCD has room",
    "07.6": "more samples/s with the larger batch until the GCD is busy",
}


def _warm_steps(summary: Summary) -> list[float] | None:
    """The warm steps' times a run summary carries (``step_times_s``), or None for a summary without them."""
    values = summary.get("step_times_s") if isinstance(summary, Mapping) else None
    if not isinstance(values, (list, tuple)) or len(values) < 3:
        return None
    return middle([float(v) for v in values])


def _step_note(a: Summary, b: Summary, a_label: str, b_label: str, on_lumi: str) -> str:
    """Step time of ``a`` against ``b``, with the spread of their steps."""
    steps_a, steps_b = _warm_steps(a), _warm_steps(b)
    if steps_a is None or steps_b is None:
        return "no per-step times in the summaries, so the noise cannot be judged (run the workload again)"
    return noise_note(measured(f"{a_label} step", steps_a), measured(f"{b_label} step", steps_b),
                      on_lumi=on_lumi, unit="s")


def _rate_note(a: Summary, b: Summary, a_label: str, b_label: str, on_lumi: str) -> str:
    """Samples/s of ``a`` against ``b``, each step's global batch over its time, with their spread."""
    steps_a, steps_b = _warm_steps(a), _warm_steps(b)
    if steps_a is None or steps_b is None:
        return "no per-step times in the summaries, so the noise cannot be judged (run the workload again)"
    rate_a = [float(a["global_batch_size"]) / t for t in steps_a]
    rate_b = [float(b["global_batch_size"]) / t for t in steps_b]
    return noise_note(measured(f"{a_label} samples/s", rate_a), measured(f"{b_label} samples/s", rate_b),
                      on_lumi=on_lumi)


def _first_step_note(first_epoch: list[float]) -> str:
    """The first step against the spread of the other first-epoch steps."""
    if len(first_epoch) < 4:
        return "too few steps to judge the noise"
    return outlier_note("first step", first_epoch[0], measured("other steps", middle(first_epoch[1:])),
                        on_lumi=ON_LUMI["07.2"], unit="s")

# --- Conceptual questions ----------------------------------------------------------------------------------------

FEWER_STEPS = Choice("07.q1", "(seed question 3) Why does each DDP rank run fewer iterations per epoch than the "
                              "single run?", {
    "a": Option("DDP leaves part of the data set out.", False,
                "the distributed sampler gives each rank its own share; together the ranks cover the whole set."),
    "b": Option("Each rank takes its own batch in every step, so one step uses batch x ranks samples.", True,
                "an epoch then has data set / (batch x ranks) steps per rank (07.1); keep the global batch by "
                "dividing --batch-size by the ranks."),
    "c": Option("DDP uses a larger batch per device.", False,
                "--batch-size is per device and stays what you give (compare `batch_size` in the table)."),
})
check_fewer_steps = choice_check(FEWER_STEPS)

DP_OR_DDP = Prediction("07.q2", "(seed question 5) On two devices, which will reach more samples per second?", {
    "a": "DistributedDataParallel (DDP)",
    "b": "DataParallel (DP)",
    "c": "about the same (within 5 %)",
})
check_dp_or_ddp_prediction = prediction_check(DP_OR_DDP)


def _dp_or_ddp_truth(measured: Mapping[str, Any]) -> str:
    ddp, dp = float(measured["ddp_samples_per_s"]), float(measured["dp_samples_per_s"])
    return "a" if ddp > 1.05 * dp else "b" if dp > 1.05 * ddp else "c"


check_dp_or_ddp_outcome = outcome_check("07.q3", DP_OR_DDP, _dp_or_ddp_truth, {
    "a": "DDP came out ahead in this run. DDP runs one process per device and overlaps the all-reduce of the "
         "gradients with the backward pass; DataParallel drives every device from one Python process and copies the "
         "model, scatters the inputs and gathers the outputs in every step. Off LUMI one run of each on shared CPU "
         "cores is noisy: the lesson's repeated runs say whether such a difference is beyond the noise.",
    "b": "here DataParallel came out ahead: without real devices it runs the one process with the global batch, so "
         "this measures the CPU, not how GPUs scale; on LUMI expect DDP ahead.",
    "c": "here both share the same few CPU cores, so neither can scale; on LUMI expect DDP clearly ahead.",
})


# --- Which two GCDs a small-g job gets, and the link its bus bandwidth is held against (07.7) -----------------------

#: GCD pairs a 2-GCD small-g job may get: both GCDs of one MI250X, or one GCD on each of two packages.
GCD_PAIRS = ((2, 3), (4, 5), (6, 7), (0, 2), (1, 4), (3, 6), (5, 7), (0, 6), (1, 3))


def pair_output() -> str:
    """Exercise 07.7's rccl-tests output: all_reduce_perf on a GCD pair chosen for this learner, GENERATED from a
    model in rccl-tests' format (no real LUMI output is shipped), labelled so on its first line."""
    from ..logs.collbench import synthesize
    from .datasets import pick

    gcds = pick("07.7", GCD_PAIRS)
    efficiency = pick("07.7-efficiency", (0.55, 0.65, 0.75, 0.85))
    return synthesize(gcds, site="lumi", efficiency=efficiency, max_bytes=1 << 28)


def _pair_truth():
    from ..logs.collbench import link_for, parse_collbench

    return link_for(parse_collbench(pair_output(), "07.7"), "lumi")


def _other_link(name: str) -> str:
    return "gcd_between_packages" if name == "gcd_in_package" else "gcd_in_package"


def _avg_fraction() -> float:
    """The wrong share: the output's average bus bandwidth (small sizes included) over the link's peak."""
    from ..logs.collbench import parse_collbench

    return float(parse_collbench(pair_output()).avg_busbw or 0) / float(_pair_truth().peak_gb_s or 1)


def _other_link_fraction() -> float:
    """The wrong share: the peak bus bandwidth held against the other GCD-to-GCD link."""
    truth = _pair_truth()
    return float(truth.measured_busbw or 0) / float(_lumi_links()[_other_link(truth.link or "")]["gb_s"])


@check("07.7",
       wrong("the job's device numbers, not the physical GCDs", pair_gcds=lambda a: [0, 1], mentions="bus"),
       wrong("the other link between two GCDs", pair_link=lambda a: _other_link(_pair_truth().link or "")),
       wrong("the average bus bandwidth over all sizes, not the peak", busbw_fraction=lambda a: _avg_fraction()),
       wrong("the peak held against the other link", busbw_fraction=lambda a: _other_link_fraction()))
def check_gcd_pair(pair_gcds: Any, pair_link: str | None, busbw_fraction: float | None) -> Passed:
    """Exercise 07.7: from an all_reduce_perf output (:func:`pair_output`), the two physical GCDs of the job, the
    link between them (a key of the site's ``[hardware.links]``) and the peak bus bandwidth as a share of it."""
    truth = _pair_truth()
    if pair_gcds is None:
        raise CheckFailed("07.7", "the two GCDs of the job (`pair_gcds`)", unanswered=True,
                          hint="the output's bus ids say which physical GCDs ran.")
    try:
        found = sorted(int(g) for g in pair_gcds)
    except (TypeError, ValueError):
        raise CheckFailed("07.7", "`pair_gcds` should be a list of two GCD numbers", found=pair_gcds,
                          hint="e.g. [2, 3]") from None
    if found != sorted(g for g in truth.gcds if g is not None):
        raise CheckFailed("07.7", "those are not the job's two GCDs", found=found,
                          hint="inside the job the devices are numbered 0 and 1 whatever GCDs Slurm gave; the PCI "
                               "bus id on each rank's line names the physical GCD.")
    links = _lumi_links()
    if pair_link not in links:
        raise CheckFailed("07.7", "`pair_link` should name a link of the site profile", found=pair_link,
                          hint=f"one of: {', '.join(links)}")
    if pair_link != truth.link:
        raise CheckFailed("07.7", f"{pair_link} is not the link between these two GCDs",
                          hint="two GCDs of one MI250X share a package number in the site profile; others talk "
                               "over a link between packages.")
    if busbw_fraction is None:
        raise CheckFailed("07.7", "the peak bus bandwidth as a share of the link (`busbw_fraction`)",
                          unanswered=True,
                          hint="the largest messages' bus bandwidth against what the link can carry (0-1).")
    try:
        value = float(busbw_fraction)
    except (TypeError, ValueError):
        raise CheckFailed("07.7", "`busbw_fraction` should be a number", found=busbw_fraction) from None
    if truth.fraction is None or abs(value - truth.fraction) > 0.02 * truth.fraction:
        raise CheckFailed("07.7", "the share of the link is off", found=value,
                          hint="take the largest out-of-place busbw (the large sizes), not the average the last "
                               "line prints, and divide by the link's peak.")
    return passed("07.7", f"GCDs {found} over {truth.link} ({truth.peak_gb_s:g} GB/s): peak busbw "
                          f"{truth.measured_busbw:g} GB/s, {100 * truth.fraction:.0f} % of the link (a generated "
                          "output: on LUMI, run it to get yours)")


def _lumi_links() -> Mapping[str, Any]:
    from ..site import load_site

    return load_site("lumi").links
