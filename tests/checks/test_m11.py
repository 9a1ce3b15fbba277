"""The capstone's checks against real runs of the capstone workload (2 local DDP ranks, profiled): the slow rank
and phases come from the traces, the fix from the results. The two runs take 10-50 s on 2 busy cores; they are the
capstone itself, so nothing cheaper would test what the checks read."""
from __future__ import annotations

import json
import shutil

import pytest

from lumikit.checks import CheckFailed
from lumikit.checks import m11
from lumikit.jobs import workload_spec
from lumikit.launch import launch
from lumikit.measure import measured
from lumikit.workloads.capstone import case_for, slow_rank


def _run(tmp_path_factory, case: int, workers: int):
    job = workload_spec("capstone", "--model-size", "tiny", "--no-progress", "--steps", "12", "--mode", "ddp",
                        "--case", str(case), *(["--workers", str(workers)] if workers else []),
                        name=f"capstone-w{workers}", gcds=2,
                        ntasks_per_node=2, profile="torch", profile_steps=12,
                        env={"LUMIKIT_PROFILE_SCHEDULE": "6,1,4,1"})
    run = launch(job, backend="local", runs_dir=tmp_path_factory.mktemp("runs"))
    assert run.wait(timeout=300, progress=False) == "COMPLETED", run.tail()
    return run.path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _run(tmp_path_factory, 3, 0), _run(tmp_path_factory, 3, 2)


def test_cases_vary_with_the_user_and_pick_a_rank() -> None:
    assert {case_for(f"learner{i}") for i in range(10)} != {case_for("learner0")}
    assert {slow_rank(c, 2) for c in range(4)} == {0, 1}


def test_starved_gcd_is_read_from_the_session() -> None:
    gcd = m11.starved_gcd()
    assert m11.check_starved_gcd(gcd, "b")
    with pytest.raises(CheckFailed, match="starved GCD"):
        m11.check_starved_gcd((gcd + 1) % 8, "b")
    with pytest.raises(CheckFailed, match="broken GPU"):
        m11.check_starved_gcd(gcd, "a")


def test_slow_rank_and_its_data_share_come_from_the_traces(runs) -> None:
    before, _ = runs
    slow = slow_rank(3, 2)
    shares = m11._phases(before, "11.2")
    assert shares[slow]["data"] > 0.3 > shares[1 - slow]["data"]
    assert m11.check_slow_rank(before, slow, shares[slow]["data"])
    with pytest.raises(CheckFailed, match="waits for its data"):
        m11.check_slow_rank(before, 1 - slow, shares[slow]["data"])
    with pytest.raises(CheckFailed, match="data share is off"):
        m11.check_slow_rank(before, slow, shares[slow]["data"] + 0.2)


def test_waiting_phase_is_where_the_fast_rank_grows(runs) -> None:
    before, _ = runs
    shares = m11._phases(before, "11.3")
    slow = slow_rank(3, 2)
    expected = max(("forward", "backward", "optimizer", "other"),
                   key=lambda p: shares[1 - slow][p] - shares[slow][p])
    assert m11.check_waiting_phase(before, expected)
    with pytest.raises(CheckFailed):
        m11.check_waiting_phase(before, "optimizer" if expected != "optimizer" else "other")
    with pytest.raises(CheckFailed, match="possible answers"):
        m11.check_waiting_phase(before, "data")


def _claim(before, after, slow, phase, fix="--workers 2"):
    return {"rank": slow, "phase": phase, "fix": fix, "before": measured("before", m11.step_times(before)),
            "after": measured("after", m11.step_times(after))}


def test_the_claim_is_judged_against_the_runs(runs, tmp_path) -> None:
    before, after = runs
    slow = slow_rank(3, 2)
    phase = m11._waiting_phase(before)
    claim = _claim(before, after, slow, phase)
    assert "the slow input unchanged" in str(m11.check_claim(claim, before, after))
    with pytest.raises(CheckFailed, match="same way"):
        m11.check_claim(_claim(before, before, slow, phase), before, before)
    with pytest.raises(CheckFailed, match="claimed rank"):
        m11.check_claim({**claim, "rank": 1 - slow}, before, after)
    with pytest.raises(CheckFailed, match="single number"):
        m11.check_claim({**claim, "after": claim["after"].median}, before, after)
    with pytest.raises(CheckFailed, match="no spread"):
        m11.check_claim({**claim, "after": measured("after", [0.1, 0.1])}, before, after)
    with pytest.raises(CheckFailed, match="milliseconds where seconds"):
        m11.check_claim({**claim, "after": measured("after", [1000 * t for t in claim["after"].values])}, before,
                        after)
    with pytest.raises(CheckFailed, match="claimed fix is not what the fixed run did"):
        m11.check_claim({**claim, "fix": "--workers 4"}, before, after)
    with pytest.raises(CheckFailed, match="does not say fix"):
        m11.check_claim({**claim, "fix": None}, before, after)
    changed = shutil.copytree(after, tmp_path / "changed")
    for path in changed.glob("result.rank*.json"):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "input_ms": 0.0}))
    with pytest.raises(CheckFailed, match="changed `input_ms`"):
        m11.check_claim(claim, before, changed)


def test_the_capstone_hints_do_not_state_the_fix() -> None:
    from lumikit.checks.hints import all_hints

    for exercise in ("11.1", "11.2", "11.3", "11.4", "11.A"):
        text = " ".join(all_hints()[exercise].values()).lower()
        assert "worker" not in text and "--workers" not in text, exercise


def test_the_conclusion_needs_its_evidence_and_is_saved_to_the_progress_folder(runs, tmp_path, monkeypatch) -> None:
    before, _ = runs
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path / "progress"))
    slow = slow_rank(3, 2)
    text = (f"On rank {slow} the data phase took 62 % of each step, so the other rank waited in forward. " * 4
            + "With the fix the step went from 410 ms to 180 ms, a 2.3x speed-up.")
    result = m11.check_conclusion(text, before)
    assert str(tmp_path / "progress" / "11.A.md") in str(result)
    assert (tmp_path / "progress" / "11.A.md").read_text().startswith(f"On rank {slow}")
    with pytest.raises(CheckFailed, match="needs room"):
        m11.check_conclusion("It was slow. Fixed.", before)
    with pytest.raises(CheckFailed, match="evidence"):
        m11.check_conclusion(text.replace(f"rank {slow}", f"rank {1 - slow}"), before)


def test_declared_wrong_answers_fail_on_real_runs(runs) -> None:
    from .test_declared_wrong import assert_wrong_answers_fail

    before, after = runs
    shares = m11._phases(before, "11.2")
    slow = slow_rank(3, 2)
    phase = max(("forward", "backward", "optimizer", "other"), key=lambda p: shares[1 - slow][p] - shares[slow][p])
    total = assert_wrong_answers_fail(m11.check_starved_gcd, gcd=m11.starved_gcd(), hypothesis="b")
    total += assert_wrong_answers_fail(m11.check_slow_rank, before_dir=before, slow_rank_found=slow,
                                       data_share=shares[slow]["data"])
    total += assert_wrong_answers_fail(m11.check_waiting_phase, before_dir=before, waiting_phase=phase)
    total += assert_wrong_answers_fail(m11.check_claim, claim=_claim(before, after, slow, phase), before_dir=before,
                                       after_dir=after)
    total += assert_wrong_answers_fail(m11.check_conclusion, conclusion=(
        f"On rank {slow} the data phase took 62 % of each step, so the other rank waited in forward; with the fix "
        "the step went from 410 ms to 180 ms, a 2.3x speed-up, because the loader now keeps up. " * 2),
                                       before_dir=before)
    assert total >= 14
