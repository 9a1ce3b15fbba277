"""lumikit.profiler: switched on by the job builder's environment or --profile; one trace file per rank."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.errors import SpecError
from lumikit.profiler import ProfileSchedule, parse_max_steps, parse_schedule, profile_config, profile_steps, \
    trace_files


def test_schedule_is_read_as_wait_warmup_active_repeat():
    assert parse_schedule("2, 1, 4, 0") == ProfileSchedule(wait=2, warmup=1, active=4, repeat=0)
    assert ProfileSchedule(1, 1, 3, 2).steps_needed == 10


@pytest.mark.parametrize("text", ["1,1,3", "1,1,0,1", "a,b,c,d", "1,-1,3,1"])
def test_bad_schedules_name_the_variable(text):
    with pytest.raises(SpecError, match="LUMIKIT_PROFILE_SCHEDULE"):
        parse_schedule(text)


def test_environment_of_a_profiled_rank():
    config = profile_config(environ={"LUMIKIT_PROFILE": "torch", "LUMIKIT_RUN_DIR": "/runs/42",
                                     "LUMIKIT_PROFILE_SCHEDULE": "0,1,2,1", "LUMIKIT_MAX_STEPS": "6"})
    assert config.enabled and config.out_dir == Path("/runs/42/profile")
    assert config.schedule == ProfileSchedule(0, 1, 2, 1) and config.max_steps == 6


def test_unprofiled_rank_and_explicit_arguments():
    assert not profile_config(environ={"LUMIKIT_PROFILE": "rocprof"}).enabled  # another mode's ranks
    config = profile_config(enabled=True, out_dir="here", environ={"LUMIKIT_PROFILE_DIR": "/elsewhere"})
    assert config.enabled and config.out_dir == Path("here") and config.schedule == ProfileSchedule(1, 1, 3, 1)
    assert profile_config(environ={"LUMIKIT_PROFILE_DIR": "/p"}).out_dir == Path("/p")


def test_max_steps_must_be_positive():
    assert parse_max_steps({}) is None
    with pytest.raises(SpecError, match="LUMIKIT_MAX_STEPS"):
        parse_max_steps({"LUMIKIT_MAX_STEPS": "0"})


def test_disabled_profiler_is_a_no_op(tmp_path):
    with profile_steps(environ={}, out_dir=tmp_path / "p") as prof:
        prof.step()
    assert not prof.enabled and not (tmp_path / "p").exists()


def test_profiled_steps_write_a_chrome_trace_named_by_rank(tmp_path):
    import torch

    model = torch.nn.Linear(8, 2)
    with profile_steps(enabled=True, rank=3, out_dir=tmp_path, schedule="0,1,2,1", environ={}) as prof:
        for _ in range(3):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    files = trace_files(tmp_path)
    assert [f.name.split(".")[0] for f in files] == ["rank3"] and trace_files(tmp_path, rank=0) == []
    trace = json.loads(files[0].read_text())
    steps = sorted(e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#1", "ProfilerStep#2"]
    assert any(e.get("name") == "aten::addmm" for e in trace["traceEvents"])
