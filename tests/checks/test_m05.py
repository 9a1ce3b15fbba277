"""Module 05's checks: each passes on a right answer and fails, naming its exercise, on a wrong one and on None."""
from __future__ import annotations

import pandas as pd
import pytest

from lumikit.checks import CheckFailed
from lumikit.checks import m05
from lumikit.jobs import spec
from lumikit.profiler import ProfileSchedule
from lumikit.trace.host_ops import host_ops, step_phases


def _rank3_job(**changes):
    options = dict(partition="small-g", ntasks_per_node=4, gpus_per_node=4, cpus_per_task=7, mem_per_gpu="60G",
                   time="0:15:00", profile="torch", profile_ranks=[3], profile_steps=7,
                   env={"LUMIKIT_PROFILE_SCHEDULE": "3,1,3,1"})
    options.update(changes)
    return spec(["python", "-m", "lumikit.workloads.lm"], **options)


def _x(name, cat, ts, dur, tid=1):
    return {"name": name, "cat": cat, "pid": 1, "tid": tid, "ts": float(ts), "dur": float(dur)}


def _events() -> pd.DataFrame:
    """Two recorded steps of a hand-made host trace: forward ops, backward functions, the optimizer."""
    rows = []
    for n, t0 in ((4, 0), (5, 1000)):
        rows += [
            _x(f"ProfilerStep#{n}", "user_annotation", t0, 1000),
            _x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", t0 + 10, 40),
            _x("aten::linear", "cpu_op", t0 + 100, 200),           # forward: linear calls addmm
            _x("aten::addmm", "cpu_op", t0 + 120, 150),
            _x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", t0 + 400, 300),
            _x("aten::mm", "cpu_op", t0 + 410, 280),
            _x("Optimizer.step#AdamW.step", "user_annotation", t0 + 750, 200),
            _x("aten::sqrt", "cpu_op", t0 + 760, 100),
        ]
    frame = pd.DataFrame(rows)
    frame["name"] = frame["name"].astype("category")
    frame["cat"] = frame["cat"].astype("category")
    return frame


def test_recorded_steps_follow_torch_schedule_counted_from_one() -> None:
    assert m05.recorded_steps(ProfileSchedule(3, 1, 3, 1), 7) == [5, 6, 7]
    assert m05.recorded_steps(ProfileSchedule(1, 1, 3, 1), 20) == [3, 4, 5]
    assert m05.recorded_steps(ProfileSchedule(1, 0, 2, 0), 7) == [2, 3, 5, 6]  # repeat 0: until the run ends
    assert m05.recorded_steps(ProfileSchedule(3, 1, 3, 1), 6) == [5, 6]  # cut short by the end of the run


@pytest.fixture
def rank3_steps5to7(monkeypatch):
    """This learner's target of 05.1: rank 3, steps 5-7."""
    monkeypatch.setattr(m05, "profile_target", lambda: (3, [5, 6, 7]))


def test_each_learner_profiles_their_own_rank_and_steps(monkeypatch) -> None:
    targets = set()
    for learner in ("ada", "bob", "cy", "dan", "eve", "fay"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        rank, steps = m05.profile_target()
        assert 1 <= rank <= 3 and 4 <= steps[0] <= 7 and steps == list(range(steps[0], steps[0] + 3))
        targets.add((rank, steps[0]))
    assert len(targets) > 2


def test_rank_profile_spec_passes_for_rank_3_and_steps_5_to_7(rank3_steps5to7) -> None:
    assert "rank 3 records steps 5-7" in str(m05.check_rank_profile_spec(_rank3_job()))
    # Waiting 4 steps without a warm-up records the same steps, but the first carries the profiler's start-up.
    with pytest.raises(CheckFailed, match="05.1: schedule 4,0,3,1 has no warm-up step"):
        m05.check_rank_profile_spec(_rank3_job(env={"LUMIKIT_PROFILE_SCHEDULE": "4,0,3,1"}))


@pytest.mark.parametrize("changes, words", [
    ({"profile_ranks": [0]}, "the profiled ranks"),
    ({"profile": "rocprof"}, "the profiling mode"),
    ({"env": {}}, "the steps recorded"),                       # the default schedule records steps 3-5
    ({"profile_steps": 10}, "where the run stops"),
    ({"profile_steps": None}, "does not stop"),
    ({"ntasks_per_node": 2, "gpus_per_node": 2}, "LUMI would reject"),  # no rank 3 in 2 tasks
])
def test_rank_profile_spec_fails_naming_what_is_wrong(rank3_steps5to7, changes, words) -> None:
    with pytest.raises(CheckFailed, match="05.1") as caught:
        m05.check_rank_profile_spec(_rank3_job(**changes))
    assert words in str(caught.value)


def test_rank_profile_spec_fails_on_none() -> None:
    with pytest.raises(CheckFailed, match="No answer yet for 05.1"):
        m05.check_rank_profile_spec(None)


def test_host_ops_nest_and_self_time_on_a_hand_made_trace() -> None:
    ops = host_ops(_events())
    linear = ops[ops["name"] == "aten::linear"].iloc[0]
    assert (linear["depth"], linear["self_us"], linear["step"]) == (1, 50.0, 4)
    phases = step_phases(ops).set_index("step")
    assert phases.loc[4].to_dict() == {"dur_us": 1000.0, "data_us": 40.0, "forward_us": 200.0,
                                       "backward_us": 300.0, "optimizer_us": 200.0, "other_us": 260.0}


def test_step_shares_pass_on_the_measured_shares_and_fail_otherwise() -> None:
    phases = step_phases(host_ops(_events()))
    assert "backward 30%, optimizer 20%" in str(m05.check_step_shares(0.3, 0.2, phases))
    with pytest.raises(CheckFailed, match="Exercise 05.2: the share of step time in backward"):
        m05.check_step_shares(0.5, 0.2, phases)
    with pytest.raises(CheckFailed, match="Exercise 05.2: the share of step time in the optimizer"):
        m05.check_step_shares(0.3, 30, phases)  # a percentage, not a share
    with pytest.raises(CheckFailed, match="No answer yet for 05.2"):
        m05.check_step_shares(None, None, phases)


def test_top_self_op_is_the_largest_self_time_not_total_time() -> None:
    ops = host_ops(_events())
    assert m05.check_top_self_op("aten::mm", ops)
    with pytest.raises(CheckFailed, match="Exercise 05.3") as caught:
        m05.check_top_self_op("aten::linear", ops)  # largest total time among forward ops, small self time
    assert "'aten::mm'" not in str(caught.value)
    assert "an operator ranked by total time" in str(caught.value)
    with pytest.raises(CheckFailed, match="No answer yet for 05.3"):
        m05.check_top_self_op(None, ops)


def test_profiler_slowdown_compares_medians_of_recorded_and_unprofiled_steps() -> None:
    times = pd.Series({1: 2.0, 2: 0.10, 3: 0.12, 4: 0.10, 5: 0.11, 6: 0.10, 7: 0.5,
                       8: 0.20, 9: 0.22, 10: 0.20, 11: 0.21})
    assert "2.05x" in str(m05.check_profiler_slowdown(0.205 / 0.10, times, "6,1,4,1"))
    with pytest.raises(CheckFailed, match="Exercise 05.4"):
        m05.check_profiler_slowdown(times.loc[8:].mean() / times.loc[1:6].mean(), times, "6,1,4,1")  # means, step 1
    with pytest.raises(CheckFailed, match="No answer yet for 05.4"):
        m05.check_profiler_slowdown(None, times, "6,1,4,1")


def test_top_self_op_with_spaces_around_it_passes() -> None:  # issue 40: a right answer refused
    assert m05.check_top_self_op("  aten::mm \n", host_ops(_events()))
