"""Checks for module 04, watching the GPU: a starved GCD, who reports power, and power against GPU%.

Expected values are computed from the snapshots the exercise passes in (the generated sessions in
``lumikit/data/smi``) and from the site's power thresholds (``[power]`` in ``lumikit/sites/lumi.toml``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral

from ..errors import LumikitError
from ..site import load_site
from ..smi.interpret import KINDS, interpret, interpret_window, package_activity
from ..smi.model import Snapshot
from ..smi.sessions import tidy
from .framework import (
    CheckFailed,
    Passed,
    expect_answer,
    expect_close,
    expect_equal,
    expect_in,
    expect_type,
    passed,
)

ACTIVITY = ("idle", "one", "both")


def _package_power(snapshots: Sequence[Snapshot]) -> dict[int, float]:
    """Package -> its mean power over the session (the even GCD's reading; the odd one prints N/A)."""
    frame = tidy(snapshots)
    if frame["package"].isna().all():
        raise LumikitError("these snapshots carry no package numbers; load them with lumikit.smi.load_session")
    means = frame.dropna(subset=["power_w"]).groupby("package")["power_w"].mean()
    return {int(pkg): float(w) for pkg, w in means.items()}


def _as_index_list(exercise: str, found: object, what: str, hint: str) -> list[int]:
    """A list/tuple/set of GCD numbers as a sorted list of ints (fails with the exercise's message otherwise)."""
    expect_type(exercise, found, (list, tuple, set), what=what, hint=hint)
    items = list(found)  # type: ignore[call-overload]
    if not all(isinstance(i, Integral) and not isinstance(i, bool) for i in items):
        raise CheckFailed(exercise, f"{what} should hold GCD numbers (whole numbers)", found=found, hint=hint)
    return sorted(int(i) for i in items)


def check_starved_gcd(answer: int | None, snapshots: Sequence[Snapshot]) -> Passed:
    """Exercise 04.1: which GCD of the generated DDP session is starved (idle while the others work)?"""
    starved = [f.devices for f in interpret_window(snapshots) if f.kind == "starved"]
    if len(starved) != 1 or len(starved[0]) != 1:
        raise LumikitError("this session does not show exactly one starved GCD; pass the 'ddp-8gcd-starved' session")
    expected = starved[0][0]
    hint = "average `gpu_busy_pct` (or `sclk_mhz`) per GCD over the session: one stands out, low."
    expect_type("04.1", answer, Integral, what="the index of the starved GCD", hint=hint)
    expect_equal("04.1", int(answer), expected, what="the index of the starved GCD", hint=hint)  # type: ignore[arg-type]
    return passed("04.1", f"GCD {expected} idles at low clock while the other GCDs work")


def check_power_reporting(power_gcds: Sequence[int] | None, package_power_w: Mapping[int, float] | None,
                          snapshots: Sequence[Snapshot]) -> Passed:
    """Exercise 04.2: which GCDs print a power reading, and each package's mean power over the session."""
    frame = tidy(snapshots)
    expected_gcds = sorted(int(i) for i in frame.dropna(subset=["power_w"])["index"].unique())
    hint = "keep the rows where `power_w` is not missing (`dropna`) and list their `index` values."
    got = _as_index_list("04.2", power_gcds, "the GCDs that report power", hint)
    expect_equal("04.2", got, expected_gcds, what="the GCDs that report power", hint=hint)
    expected_power = _package_power(snapshots)
    power_hint = "group the rows that have a power reading by `package` and average `power_w`."
    expect_type("04.2", package_power_w, Mapping, what="the mean power per package (a dict package -> W)",
                hint=power_hint)
    expect_equal("04.2", sorted(int(k) for k in package_power_w), sorted(expected_power),  # type: ignore[union-attr]
                 what="the packages in your dict", hint=power_hint)
    for pkg, watts in expected_power.items():
        expect_close("04.2", package_power_w[pkg], watts, what=f"the mean power of package {pkg} (W)",  # type: ignore[index]
                     rel=0.02, hint=power_hint)
    return passed("04.2", f"GCDs {', '.join(map(str, expected_gcds))} report their package's power "
                          f"({min(expected_power.values()):.0f}-{max(expected_power.values()):.0f} W)")


def check_package_activity(answer: Mapping[int, str] | None, snapshots: Sequence[Snapshot],
                           site: str = "lumi") -> Passed:
    """Exercise 04.3: from each package's mean power and the site's thresholds, how many of its GCDs work:
    ``"idle"``, ``"one"`` or ``"both"``?"""
    thresholds = load_site(site).power
    expected = {pkg: package_activity(w, thresholds) for pkg, w in _package_power(snapshots).items()}
    hint = ("compare each package's mean power with `load_site('lumi').power`: about one_gcd_busy_w for one busy "
            "GCD, both_gcds_busy_w for two; `lumikit.smi.interpret.package_activity` does the comparison.")
    expect_type("04.3", answer, Mapping, what="the activity per package (a dict package -> 'idle'/'one'/'both')",
                hint=hint)
    expect_equal("04.3", sorted(int(k) for k in answer), sorted(expected), what="the packages in your dict",  # type: ignore[union-attr]
                 hint=hint)
    for pkg, activity in expected.items():
        found = answer[pkg]  # type: ignore[index]
        expect_in("04.3", found, ACTIVITY, what=f"the activity of package {pkg}", hint=hint)
        expect_equal("04.3", found, activity, what=f"the activity of package {pkg}", hint=hint)
    halves = [p for p, a in expected.items() if a == "one"]
    note = (f"package {', '.join(map(str, halves))} averages one GCD's worth of power" if halves
            else "no package averages one GCD's worth")
    return passed("04.3", note)


def check_busy_without_power(finding_kind: str | None, computing: bool | None, snapshot: Snapshot) -> Passed:
    """Exercise 04.4: a GCD at 100 % GPU% whose package draws little power: what does lumikit's interpretation
    call it, and is the GCD computing?"""
    kinds = [f.kind for f in interpret(snapshot)]
    if "busy-without-power" not in kinds:
        raise LumikitError("this snapshot shows no GCD busy without power; pass the snapshot built above")
    hint = "run `lumikit.smi.interpret(snapshot)` and read the `kind` of the finding."
    expect_in("04.4", finding_kind, KINDS, what="the finding's kind", hint=hint)
    expect_equal("04.4", finding_kind, "busy-without-power", what="the finding's kind", hint=hint)
    expect_answer("04.4", computing, "whether the GCD is computing (True or False)")
    expect_type("04.4", computing, bool, what="whether the GCD is computing",
                hint="answer True or False: does a package near idle power do arithmetic?")
    expect_equal("04.4", computing, False, what="whether the GCD is computing",
                 hint="GPU% counts time a kernel is resident, even one spinning on a wait; power shows work.")
    return passed("04.4", "100 % GPU% at near-idle power is a GPU waiting, not computing")
