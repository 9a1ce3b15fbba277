"""Every generated session stays within the envelopes of the real LUMI snapshots (lumikit.smi.calibration)."""
from __future__ import annotations

import pytest

from lumikit.smi import calibration, synth
from lumikit.smi.calibration import envelopes, package_state
from lumikit.smi.interpret import interpret_window
from lumikit.smi.sessions import load_session, read_session


def test_envelopes_come_from_the_real_snapshots() -> None:
    env = envelopes()
    assert env["idle"].power_w[0] < 82 and 93 <= env["idle"].power_w[1] < 110      # real 82-93 W
    assert env["one-compute"].power_w[0] < 324 < env["one-compute"].power_w[1]       # real 324 W
    assert env["waiting"].power_w[0] < 111 and 132 < env["waiting"].power_w[1] < 150  # real 111-132 W at 100 %
    assert env["both-compute"].power_w[1] == 560.0                                   # the real PwrCap
    assert env["idle"].idle_sclk_mhz[0] < 800 < env["idle"].idle_sclk_mhz[1]


@pytest.mark.parametrize("name", sorted(synth.PLANS))
def test_generated_session_stays_within_the_real_envelopes(name: str) -> None:
    env = envelopes()
    plan = synth.PLANS[name]()
    snaps = load_session(name)
    assert len(plan) == len(snaps)
    checked = set()
    for step, snap in zip(plan, snaps):
        for pkg in range(0, len(step.states), 2):
            states = step.states[pkg:pkg + 2]
            e = env[package_state(states)]
            even, odd = snap.device(pkg), snap.device(pkg + 1)
            where = f"{name} t={step.t:g} package {pkg // 2} {states}"
            assert odd.power_w is None, f"{where}: the odd GCD must print no power (N/A)"
            assert e.contains_power(even.power_w), f"{where}: {even.power_w} W outside {e.power_w} ({e.sources})"
            checked.add(e.state)
            for d, s in zip((even, odd), states):
                if s == "idle":
                    assert d.gpu_busy_pct == 0 and e.idle_sclk_mhz[0] <= d.sclk_mhz <= e.idle_sclk_mhz[1], where
                else:
                    assert d.gpu_busy_pct >= calibration.BUSY_PCT, where
                    assert e.busy_sclk_mhz[0] <= d.sclk_mhz <= e.busy_sclk_mhz[1], where
    assert "idle" in checked


def test_starved_session_shows_the_others_waiting_not_computing() -> None:
    plan = synth.ddp_8gcd_starved_plan()
    snaps = load_session("ddp-8gcd-starved")
    waiting_power = [snap.device(p).power_w for step, snap in zip(plan, snaps)
                     if step.t >= 10 and snap.device(4).gpu_busy_pct == 0 for p in (0, 2, 6)]
    assert len(waiting_power) > 20
    mean = sum(waiting_power) / len(waiting_power)
    assert mean < 200, f"waiting packages draw {mean:.0f} W on average while GCD 4 idles"
    kinds = {f.kind for f in interpret_window(snaps)}
    assert {"starved", "busy-without-power"} <= kinds


def test_generated_sessions_say_so() -> None:
    for name in synth.PLANS:
        header = read_session(name).header
        assert header.kind == "generated" and "synth" in header.source
        assert header.description.startswith("generated") and not header.command
