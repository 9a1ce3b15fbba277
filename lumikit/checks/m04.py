"""Checks for module 04, watching the GPU: a starved GCD, who reports power, and power against GPU%.

Each learner reads their own generated session (:func:`exercise_session`: the shipped generated
``ddp-8gcd-starved`` session in ``lumikit/data/smi``, calibrated on real LUMI tables, with its packages shuffled,
seeded by the learner); the checks make the same session themselves and derive every expected value from it and
from the site's power thresholds (``[power]`` in ``lumikit/sites/lumi.toml``), never from values in the learner's
notebook.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral

from ..errors import LumikitError
from ..site import load_site
from ..smi.interpret import KINDS, interpret, interpret_window, package_activity
from ..smi.model import Snapshot
from ..smi.sessions import tidy
from .datasets import starved_gcd, starved_session
from .concepts import Choice, Option, Prediction, choice_check, outcome_check, prediction_check
from .framework import (
    plain_items,
    plain_mapping,
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

ACTIVITY = ("idle", "one", "both")
TOPIC = "04"


def exercise_session() -> list[Snapshot]:
    """This learner's generated 8-GCD DDP session with one starved GCD (the same every time for the same learner)."""
    return starved_session(TOPIC)


def _busiest(snapshots: Sequence[Snapshot]) -> int:
    return int(tidy(snapshots).groupby("index")["gpu_busy_pct"].mean().idxmax())


def _starved(snapshots: Sequence[Snapshot]) -> int:
    """The one GCD lumikit's interpretation of the whole session calls starved."""
    starved = [f.devices for f in interpret_window(snapshots) if f.kind == "starved"]
    if len(starved) != 1 or len(starved[0]) != 1:
        raise LumikitError("this session does not show exactly one starved GCD; read checks.exercise_session() "
                           "(made from the generated 'ddp-8gcd-starved' session)")
    return starved[0][0]


def _package_power(snapshots: Sequence[Snapshot]) -> dict[int, float]:
    """Package -> its mean power over the session (the even GCD's reading; the odd one prints N/A)."""
    frame = tidy(snapshots)
    if frame["package"].isna().all():
        raise LumikitError("these snapshots carry no package numbers; load them with lumikit.smi.load_session")
    means = frame.dropna(subset=["power_w"]).groupby("package")["power_w"].mean()
    return {int(pkg): float(w) for pkg, w in means.items()}


def _as_index_list(exercise: str, found: object, what: str, hint: str) -> list[int]:
    """A list/tuple/set of GCD numbers as a sorted list of ints (fails with the exercise's message otherwise)."""
    items = plain_items(found)
    if items is None:
        expect_type(exercise, found, (list, tuple, set), what=what, hint=hint)  # fails, naming the type given
        items = []
    if not all(isinstance(i, Integral) and not isinstance(i, bool) for i in items):
        raise CheckFailed(exercise, f"{what} should hold GCD numbers (whole numbers)", found=found, hint=hint)
    return sorted(int(i) for i in items)


@check("04.1",
       wrong("the busiest GCD", answer=lambda a: _busiest(exercise_session())),
       wrong("the other GCD of the starved one's package", answer=lambda a: starved_gcd(TOPIC) ^ 1),
       wrong("GCD 4, the starved GCD of the shipped session (yours is another)", answer=4),
       wrong("counted from 1", answer=lambda a: starved_gcd(TOPIC) + 1))
def check_starved_gcd(answer: int | None) -> Passed:
    """Exercise 04.1: which GCD of the learner's DDP session is starved (idle while the others work)?"""
    expected = _starved(exercise_session())
    hint = "compare the GCDs over the whole session, not one sample: one stands out, low."
    expect_type("04.1", answer, Integral, what="the index of the starved GCD", hint=hint)
    mistakes = {_busiest(exercise_session()): "the busiest GCD: the starved one is the one that waits",
                expected ^ 1: "the other GCD of the same package: clock and GPU% are per GCD, not per package"
                              + (" (or GCDs counted from 1)" if expected ^ 1 == expected + 1 else ""),
                expected // 2: "the package's number, not the GCD's (two GCDs per package)"}
    if int(answer) != expected and int(answer) in mistakes:  # type: ignore[arg-type]
        raise CheckFailed("04.1", "the index of the starved GCD is not right", expected=expected, found=answer,
                          mistake=mistakes[int(answer)], hint=hint)  # type: ignore[arg-type]
    expect_equal("04.1", int(answer), expected, what="the index of the starved GCD", hint=hint)  # type: ignore[arg-type]
    return passed("04.1", f"GCD {expected} idles at low clock while the other GCDs work")


@check("04.2",
       wrong("every GCD, as if each printed its own power", power_gcds=list(range(8))),
       wrong("N/A counted as 0 W: half the package power",
             package_power_w=lambda a: {p: w / 2 for p, w in _package_power(exercise_session()).items()}),
       wrong("keyed by GCD index instead of package",
             package_power_w=lambda a: {2 * p: w for p, w in _package_power(exercise_session()).items()}),
       wrong("the odd GCDs", power_gcds=[1, 3, 5, 7]))
def check_power_reporting(power_gcds: Sequence[int] | None, package_power_w: Mapping[int, float] | None) -> Passed:
    """Exercise 04.2: which GCDs print a power reading, and each package's mean power over the session."""
    snapshots = exercise_session()
    frame = tidy(snapshots)
    expected_gcds = sorted(int(i) for i in frame.dropna(subset=["power_w"])["index"].unique())
    hint = "power is measured per package, not per GCD: the rows that carry a number."
    got = _as_index_list("04.2", power_gcds, "the GCDs that report power", hint)
    expect_equal("04.2", got, expected_gcds, what="the GCDs that report power", hint=hint)
    expected_power = _package_power(snapshots)
    power_hint = "power is measured per package: one number for each package, from the rows that carry one."
    mapping = plain_mapping(package_power_w)
    if mapping is None:
        expect_type("04.2", package_power_w, Mapping, what="the mean power per package (a dict package -> W)",
                    hint=power_hint)
        mapping = {}
    given = {int(k): w for k, w in mapping.items()}
    expect_equal("04.2", sorted(given), sorted(expected_power), what="the packages in your dict", hint=power_hint)
    for pkg, watts in expected_power.items():
        expect_close("04.2", given[pkg], watts, what=f"the mean power of package {pkg} (W)", rel=0.02,
                     hint=power_hint)
    return passed("04.2", f"GCDs {', '.join(map(str, expected_gcds))} report their package's power "
                          f"({min(expected_power.values()):.0f}-{max(expected_power.values()):.0f} W)")


def _first_lone_sample(snapshots: Sequence[Snapshot], site: str = "lumi") -> int:
    """The first sample in which the starved GCD computes (GPU% at or above the site's ``busy_pct``)."""
    frame = tidy(snapshots)
    gcd = _starved(snapshots)
    rows = frame[(frame["index"] == gcd) & (frame["gpu_busy_pct"] >= load_site(site).power.busy_pct)]
    if rows.empty:
        raise LumikitError(f"GCD {gcd} never computes in this session; use checks.exercise_session()")
    return int(rows["sample"].min())


def _sample_activity(snapshots: Sequence[Snapshot], sample: int, site: str = "lumi") -> dict[int, str]:
    """Package -> ``idle``/``one``/``both`` from its power in one sample (the even GCD's reading)."""
    thresholds = load_site(site).power
    return {int(d.package): package_activity(d.power_w, thresholds)
            for d in snapshots[sample].devices if d.power_w is not None and d.package is not None}


def _mean_activity(snapshots: Sequence[Snapshot], site: str = "lumi") -> dict[int, str]:
    thresholds = load_site(site).power
    return {pkg: package_activity(w, thresholds) for pkg, w in _package_power(snapshots).items()}


def _by_gpu_pct(snapshots: Sequence[Snapshot], sample: int, site: str = "lumi") -> dict[int, str]:
    """What GPU% alone would say: a package counts the GCDs at or above ``busy_pct``."""
    busy_pct = load_site(site).power.busy_pct
    counts: dict[int, int] = {}
    for d in snapshots[sample].devices:
        if d.package is not None:
            counts[int(d.package)] = counts.get(int(d.package), 0) + int((d.gpu_busy_pct or 0) >= busy_pct)
    return {pkg: ("idle", "one", "both")[n] for pkg, n in counts.items()}


@check("04.3",
       wrong("the mean power over the session (it mixes long waits with short bursts)",
             answer=lambda a: _mean_activity(exercise_session())),
       wrong("GPU% read as work: every GCD at 100 % counted as busy",
             answer=lambda a: _by_gpu_pct(exercise_session(), _first_lone_sample(exercise_session()))),
       wrong("300 W read as both GCDs busy (the course's rule for a whole GPU)",
             answer=lambda a: {p: "both" if x == "one" else x
                               for p, x in _sample_activity(exercise_session(),
                                                            _first_lone_sample(exercise_session())).items()}),
       wrong("the next sample, where every GCD computes (sample numbers counted from 1)",
             sample=lambda a: _first_lone_sample(exercise_session()) + 1,
             answer=lambda a: _sample_activity(exercise_session(), _first_lone_sample(exercise_session()) + 1)),
       wrong("GPU% instead of counts", answer=lambda a: {p: 100 for p in range(4)}))
def check_package_activity(sample: int | None, answer: Mapping[int, str] | None, site: str = "lumi") -> Passed:
    """Exercise 04.3: in the first sample where the learner's starved GCD computes, how many GCDs of each package
    work by its power: ``"idle"``, ``"one"`` or ``"both"``?"""
    snapshots = exercise_session()
    first = _first_lone_sample(snapshots, site)
    gcd = _starved(snapshots)  # 04.1's answer: failures name it by its role, never by its number
    sample_hint = ("the first sample in which the starved GCD (04.1's) is busy by the site's threshold (samples "
                   "count from 0, as `tidy` numbers them).")
    expect_type("04.3", sample, Integral, what="the sample number", hint=sample_hint)
    expect_equal("04.3", int(sample), first, what="the sample number", hint=sample_hint)  # type: ignore[arg-type]
    expected = _sample_activity(snapshots, first, site)
    hint = ("read each package's power in that sample against the site's power thresholds, not its GPU%: a "
            "package near idle power computes nothing, whatever GPU% says.")
    expect_type("04.3", answer, Mapping, what="the activity per package (a dict package -> 'idle'/'one'/'both')",
                hint=hint)
    given = {int(k): v for k, v in answer.items()}  # type: ignore[union-attr]
    expect_equal("04.3", sorted(given), sorted(expected), what="the packages in your dict", hint=hint)
    for pkg, activity in expected.items():
        found = given[pkg]
        expect_in("04.3", found, ACTIVITY, what=f"the activity of package {pkg}", hint=hint)
        expect_equal("04.3", found, activity, what=f"the activity of package {pkg}", hint=hint)
    lone = [p for p, a in expected.items() if a == "one"]
    waiting = [p for p, a in expected.items() if a == "idle"]
    note = (f"in sample {first} package {', '.join(map(str, lone))} draws one GCD's worth (GCD {gcd} catches up)"
            if lone else f"in sample {first} no package draws one GCD's worth")
    if waiting:
        note += f"; package {', '.join(map(str, waiting))} near idle power at 100 % GPU%: waiting, not computing"
    return passed("04.3", note)


@check("04.4",
       wrong("trusts GPU%: computing", computing=True, mentions="power"),
       wrong("calls it starved", finding_kind="starved"),
       wrong("'no' as text instead of False", computing="no"))
def check_busy_without_power(finding_kind: str | None, computing: bool | None, snapshot: Snapshot) -> Passed:
    """Exercise 04.4: a GCD at 100 % GPU% whose package draws little power: what does lumikit's interpretation
    call it, and is the GCD computing?"""
    kinds = [f.kind for f in interpret(snapshot)]
    if "busy-without-power" not in kinds:
        raise LumikitError("this snapshot shows no GCD busy without power; pass the snapshot built above")
    hint = "100 % GPU% at near-idle power: is the GCD doing arithmetic? (the tool is in hint(\"04.4\"))"
    expect_in("04.4", finding_kind, KINDS, what="the finding's kind", hint=hint)
    expect_equal("04.4", finding_kind, "busy-without-power", what="the finding's kind", hint=hint)
    expect_answer("04.4", computing, "whether the GCD is computing (True or False)")
    expect_type("04.4", computing, bool, what="whether the GCD is computing",
                hint="answer True or False: does a package near idle power do arithmetic?")
    expect_equal("04.4", computing, False, what="whether the GCD is computing",
                 hint="GPU% counts time a kernel is resident, even one spinning on a wait; power shows work.")
    return passed("04.4", "100 % GPU% at near-idle power is a GPU waiting, not computing")


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_NA = Choice("04.q1", "Why does `rocm-smi` print `N/A` for the power of every odd GCD of an MI250X?", {
    "a": Option("The odd GCDs are idle.", False,
                "they work like the others (their GPU% and clock in 04.1 say so); the N/A is there even when busy."),
    "b": Option("Power is measured per package of two GCDs and shown on the package's first GCD.", True,
                "so a reading of about 300 W is one busy GCD's worth of a two-GCD package, not a full GPU."),
    "c": Option("The job has no permission to read the odd GCDs' sensors.", False,
                "the same job reads their clocks, temperatures and GPU%; only power is missing."),
})
check_why_na = choice_check(WHY_NA)

WAITING_POWER = Prediction("04.q2", "A GCD waits in an all-reduce for a slow rank, and `rocm-smi` shows it at "
                                    "100 % GPU%. What will its package's power be?", {
    "a": "near 500 W, like a package with both GCDs computing",
    "b": "about 300 W, like a package with one GCD computing",
    "c": "near the idle level, about 100 W",
})
check_waiting_prediction = prediction_check(WAITING_POWER)


def _waiting_truth(measured: Mapping[str, object]) -> str:
    activity = package_activity(float(measured["package_power_w"]), load_site("lumi").power)  # type: ignore[arg-type]
    return {"both": "a", "one": "b", "idle": "c"}[activity]


check_waiting_outcome = outcome_check("04.q3", WAITING_POWER, _waiting_truth, {
    "a": "the package works with both GCDs.",
    "b": "one GCD of the package computes.",
    "c": "GPU% counts the time a kernel is resident, and a collective spinning on a wait is resident: power shows "
         "the arithmetic units resting. Read power first, then GPU%.",
})
