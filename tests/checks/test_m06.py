"""Module 06 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None.

The answers are measured on a small synthetic trace (3 ranks, rank 1 with a slow data loader), as the solution
notebook does.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m06 import (check_hta_idle, check_idle, check_perfetto_slice, check_straggler,
                                check_top_kernel_class)
from lumikit.trace import TraceAnalyzer, slice_trace
from lumikit.trace.synth import SynthSpec, write_synthetic

STRAGGLER = 1


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("m06") / "traces"
    write_synthetic(folder, SynthSpec(ranks=3, steps=3, layers=4, straggler=STRAGGLER))
    return folder


@pytest.fixture(scope="module")
def analyzer(trace_dir: Path) -> TraceAnalyzer:
    return TraceAnalyzer.from_path(trace_dir)


def test_top_kernel_class_is_read_from_the_breakdown(analyzer):
    breakdown = analyzer.get_kernel_breakdown()
    # the straggler waits least in its all-reduce, so compute dominates there
    result = check_top_kernel_class("compute", breakdown, rank=STRAGGLER)
    assert isinstance(result, Passed) and result.exercise == "06.1"
    assert "compute" in str(result)


@pytest.mark.parametrize("answer, words", [
    ("memory", "the class with the most GPU time on rank 1"),
    ("gemm", "not one of the possible answers"),
    (None, "No answer yet for 06.1"),
])
def test_top_kernel_class_fails_on_wrong_answers(analyzer, answer, words):
    with pytest.raises(CheckFailed, match="06.1") as err:
        check_top_kernel_class(answer, analyzer.get_kernel_breakdown(), rank=STRAGGLER)
    assert words in str(err.value)


def test_straggler_passes_with_the_rank_and_the_others_extra_communication_time(analyzer):
    table = analyzer.get_stragglers()
    comm = table.set_index("rank")["mean_comm_us"]
    wait = float((comm[0] + comm[2]) / 2 - comm[STRAGGLER])
    assert wait > 0
    result = check_straggler(STRAGGLER, wait, table)
    assert result.exercise == "06.2" and f"rank {STRAGGLER}" in str(result)
    assert check_straggler(np.int64(STRAGGLER), np.float64(wait), table)  # as idxmax gives it


@pytest.mark.parametrize("rank, wait, words", [
    (0, 0.0, "the straggler rank is not right"),
    (STRAGGLER, 1.0, "how long the other ranks wait"),
    ("1", 0.0, "wrong type"),
    (None, 0.0, "No answer yet for 06.2"),
    (STRAGGLER, None, "No answer yet for 06.2"),
])
def test_straggler_fails_on_wrong_answers(analyzer, rank, wait, words):
    with pytest.raises(CheckFailed, match="06.2") as err:
        check_straggler(rank, wait, analyzer.get_stragglers())
    assert words in str(err.value)


def test_idle_passes_with_the_idle_fraction_and_host_wait_on_the_straggler(analyzer):
    temporal = analyzer.get_temporal_breakdown().set_index("rank")
    fraction = float(temporal.loc[STRAGGLER, "idle_fraction"])
    assert fraction > temporal.loc[0, "idle_fraction"]  # the slow data loader leaves the straggler's GPU idle
    result = check_idle(fraction, "host_wait", analyzer, rank=STRAGGLER)
    assert result.exercise == "06.3" and "host wait" in str(result)


@pytest.mark.parametrize("fraction_scale, reason, words", [
    (100.0, "host_wait", "a fraction, not a percentage"),   # a percentage instead of a fraction
    (1.0, "other", "the largest idle category"),
    (1.0, "cpu", "not one of the possible answers"),
    (None, "host_wait", "No answer yet for 06.3"),
    (1.0, None, "No answer yet for 06.3"),
])
def test_idle_fails_on_wrong_answers(analyzer, fraction_scale, reason, words):
    temporal = analyzer.get_temporal_breakdown().set_index("rank")
    fraction = None if fraction_scale is None else fraction_scale * float(temporal.loc[STRAGGLER, "idle_fraction"])
    with pytest.raises(CheckFailed, match="06.3") as err:
        check_idle(fraction, reason, analyzer, rank=STRAGGLER)
    assert words in str(err.value)


def test_hta_idle_is_htas_own_number_not_lumikits(trace_dir: Path, analyzer):
    pytest.importorskip("hta")
    from lumikit.trace.hta_bridge import trace_analysis

    table = trace_analysis(trace_dir).get_temporal_breakdown(visualize=False)
    hta = float(table.loc[table["rank"] == STRAGGLER, "idle_time_pctg"].iloc[0])
    ours = 100 * float(analyzer.get_temporal_breakdown().set_index("rank").loc[STRAGGLER, "idle_fraction"])
    assert abs(hta - ours) > 0.5  # HTA leaves out the last step, so the two differ
    assert check_hta_idle(hta, trace_dir, rank=STRAGGLER).exercise == "06.4"
    with pytest.raises(CheckFailed, match="06.4: HTA's idle share of rank 1") as err:
        check_hta_idle(ours, trace_dir, rank=STRAGGLER)
    assert "lumikit's number over every step, not HTA's" in str(err.value)
    with pytest.raises(CheckFailed, match="No answer yet for 06.4"):
        check_hta_idle(None, trace_dir, rank=STRAGGLER)


def test_each_learner_gets_their_own_trace_numbers_not_a_permutation(monkeypatch):
    from lumikit.checks.m06 import exercise_trace_spec

    specs = []
    for learner in ("ada", "bob", "cy", "dan", "eve"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        specs.append(exercise_trace_spec())
    assert all(1 <= s.straggler <= 3 for s in specs)
    assert len({(s.layers, s.straggler_delay_us) for s in specs}) == len(specs)  # step and wait times differ


def test_perfetto_slice_passes_for_one_step_of_one_rank(analyzer, tmp_path: Path):
    written = slice_trace(None, tmp_path / "r1.pt.trace.json.gz", steps=(11, 11), ranks=[STRAGGLER],
                          trace=analyzer.trace)
    result = check_perfetto_slice(written[0], rank=STRAGGLER, step=11)
    assert result.exercise == "06.5" and "step 11 of rank 1" in str(result)


def test_perfetto_slice_fails_on_the_wrong_steps_rank_or_file(analyzer, tmp_path: Path):
    two_steps = slice_trace(None, tmp_path / "two.pt.trace.json.gz", steps=(10, 11), ranks=[STRAGGLER],
                            trace=analyzer.trace)[0]
    with pytest.raises(CheckFailed, match="06.5") as err:
        check_perfetto_slice(two_steps, rank=STRAGGLER, step=11)
    assert "the profiler steps in the slice" in str(err.value)
    with pytest.raises(CheckFailed, match="06.5") as err:
        check_perfetto_slice(two_steps, rank=0, step=11)
    assert "the ranks in the slice" in str(err.value)
    with pytest.raises(CheckFailed, match="06.5") as err:
        check_perfetto_slice(tmp_path / "missing.json.gz", rank=STRAGGLER, step=11)
    assert "does not exist" in str(err.value)
    with pytest.raises(CheckFailed, match="06.5") as err:
        check_perfetto_slice(None, rank=STRAGGLER, step=11)
    assert "No answer yet for 06.5" in str(err.value)
