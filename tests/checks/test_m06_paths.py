"""Module 06, why the GPU waited and what would make the step faster: the generated traces hold the answers they
were built with (measured by `lumikit trace idle` and `critical-path --what-if`), and the checks pass on those
answers and reject the declared wrong ones without printing the answer."""
from __future__ import annotations

import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.framework import check_info
from lumikit.checks.instructor.leaks import leaked
from lumikit.checks.m06 import (WHAT_IF_CANDIDATES, check_top_idle_cause, check_what_if, idle_exercise_events,
                                idle_exercise_gaps, what_if_exercise_events, what_if_exercise_plan)
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.critical_path import analyzer_critical_path, what_if_table
from lumikit.trace.idle import idle_causes_table
from lumikit.trace.synth import write_events

SEEDS = ["test-learner", "ana", "bo", "chen", "dana", "eli"]


def totals(seed: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for cause, us in idle_exercise_gaps(seed):
        out[cause] = out.get(cause, 0.0) + us
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_the_idle_trace_has_the_causes_it_was_built_with(tmp_path, seed):
    analyzer = TraceAnalyzer.from_path(write_events(tmp_path / "idle.json", idle_exercise_events(seed)))
    table = idle_causes_table(analyzer)
    # and the 20 µs from the step's start to the first kernel (the host launches it after 5 µs of nothing traced)
    assert dict(zip(table["cause"], table["idle_us"])) == {**totals(seed), "starved: nothing traced": 20.0}
    gaps = idle_exercise_gaps(seed)
    counts = {c: sum(1 for g, _ in gaps if g == c) for c, _ in gaps}
    best = max(totals(seed), key=totals(seed).get)
    # built so that counting gaps, or reading the longest gap, names another cause than the most time
    assert max(counts, key=counts.get) != best and max(gaps, key=lambda g: g[1])[0] != best


@pytest.mark.parametrize("seed", SEEDS)
def test_the_what_if_trace_gains_what_it_was_built_to(tmp_path, seed):
    plan = what_if_exercise_plan(seed)
    analyzer = TraceAnalyzer.from_path(write_events(tmp_path / "what-if.json", what_if_exercise_events(seed)))
    result = analyzer_critical_path(analyzer, analyzer.ranks[0], what_if=[f"{n}=2" for n in WHAT_IF_CANDIDATES])
    assert result["path_us"] == plan["path_us"]
    table = what_if_table(result)
    measured = dict(zip(table["pattern"], table["path_us"] - table["path_us_after"]))
    assert measured == pytest.approx(plan["gains_us"], abs=1e-6)
    assert measured["ncclDevKernel_AllReduce"] == 0  # the longest kernel runs beside the path
    assert measured["gemm_kernel"] < plan["g1"] / 2  # capped: the all-reduce's branch becomes the path
    best = table.loc[table["speedup_pct"].idxmax()]
    assert (best["pattern"], best["speedup_pct"]) == (plan["answer"], pytest.approx(plan["gain_pct"], abs=1e-3))


def test_both_answers_occur_among_learners():
    assert {what_if_exercise_plan(f"learner-{i}")["answer"] for i in range(20)} == {"gemm_kernel", "optimizer_step"}


def test_the_right_answers_pass():
    best = max(totals("test-learner"), key=totals("test-learner").get)
    assert isinstance(check_top_idle_cause(best, totals("test-learner")[best]), Passed)
    plan = what_if_exercise_plan()
    assert isinstance(check_what_if(plan["answer"], round(plan["gain_pct"], 2)), Passed)


def right_answers(check, seed: str) -> dict:
    """The solution's answers to a check, for the learner ``seed``."""
    if check is check_top_idle_cause:
        t = totals(seed)
        return {"top_cause": max(t, key=t.get), "top_cause_us": max(t.values())}
    plan = what_if_exercise_plan(seed)
    return {"best_op": plan["answer"], "gain_pct": plan["gain_pct"]}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("check", [check_top_idle_cause, check_what_if], ids=["06.P1", "06.P2"])
def test_every_declared_wrong_answer_fails_without_giving_the_answer(monkeypatch, seed, check):
    monkeypatch.setenv("LUMIKIT_SEED", seed)
    answers = right_answers(check, seed)
    info = check_info(check)
    assert len(info.wrong) >= 2
    for case in info.wrong:
        given = {**answers, **case.values(None)}
        with pytest.raises(CheckFailed) as failure:
            check(**given)
        message = str(failure.value)
        if case.mentions:
            assert case.mentions in message, (case.why, message)
        for name, value in answers.items():
            if given[name] != value:
                assert not leaked(message, value, given=[given[name]]), (case.why, message)
    assert isinstance(check(**answers), Passed)


def test_unanswered_and_unknown_answers_fail_with_the_checks_words():
    with pytest.raises(CheckFailed, match="No answer yet for 06.P1"):
        check_top_idle_cause(None, None)
    with pytest.raises(CheckFailed, match="06.P2: the kernel or CPU op to make 2x faster is not one of"):
        check_what_if("Cijk_gemm", 10.0)
