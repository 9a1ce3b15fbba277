"""Per-learner data: for many learners the generated data makes a well-posed exercise, the right answer passes and
every known-wrong answer is rejected (so no learner's data lets a wrong answer through)."""
from __future__ import annotations

import pytest

from lumikit.checks import m01, m04, m08, m09
from lumikit.checks.datasets import starved_gcd, starved_session
from lumikit.checks.instructor.probe import try_wrong_answers
from lumikit.site import load_site
from lumikit.smi import tidy
from lumikit.smi.interpret import package_activity

LEARNERS = [f"learner-{n}" for n in range(6)]


def _all_rejected(source: str, namespace: dict) -> None:
    report = try_wrong_answers(source, namespace)
    assert not report.problem and len(report.outcomes) >= 2
    assert [o.outcome for o in report.outcomes] == ["rejected"] * len(report.outcomes), report.outcomes


@pytest.mark.parametrize("learner", LEARNERS)
def test_every_learners_gpu_session_is_well_posed_and_rejects_the_wrong_answers(monkeypatch, learner: str) -> None:
    monkeypatch.setenv("LUMIKIT_SEED", learner)
    frame = tidy(starved_session("04"))
    power = frame.dropna(subset=["power_w"]).groupby("package")["power_w"].mean()
    gcd = starved_gcd("04")
    lone = int(frame[(frame["index"] == gcd) & (frame["gpu_busy_pct"] >= 50)]["sample"].min())
    ns = {"m04": m04, "m09": m09, "m01": m01, "m08": m08,
          "gcd": starved_gcd("04"), "gcds": sorted(int(i) for i in frame.dropna(subset=["power_w"])["index"].unique()),
          "power": {int(p): float(w) for p, w in power.items()},
          "lone": lone, "activity": {int(r.package): package_activity(float(r.power_w), load_site("lumi").power)
                                     for r in frame[frame["sample"] == lone].dropna(subset=["power_w"]).itertuples()},
          "gcd9": starved_gcd("09.3", avoid=starved_gcd("04")),
          "cores": list(load_site("lumi").node.gcd(m01.gcd_to_study()).cores),
          "numa": load_site("lumi").node.gcd(m01.gcd_to_study()).numa,
          "mask": load_site("lumi").node.gcd(m08.task_to_study() % 8).mask_hex}
    # when the starved GCD first computes, its package alone draws one GCD's worth; the others wait near idle
    assert ns["activity"] == {p: "one" if p == gcd // 2 else "idle" for p in range(4)}
    for call in ("m04.check_starved_gcd(gcd)", "m04.check_power_reporting(gcds, power)",
                 "m04.check_package_activity(lone, activity)", "m09.check_starved_gcd(gcd9)",
                 "m01.check_gcd_neighbours(cores, numa)", "m08.check_task_mask(mask)"):
        assert eval(call, ns)  # noqa: S307 (the right answer passes)
        _all_rejected(call, ns)
    assert ns["gcd9"] != ns["gcd"]
