"""The checks of the lessons added for issue 22 (ROCm warm-up and caches, MFU for the run's precision, the memory
snapshot's peak, hardware counters): the right answer passes and every declared wrong answer fails."""
from __future__ import annotations

import pickle
import statistics

import pytest

from lumikit.checks import CheckFailed, m05, m06
from lumikit.rocprof.counters import parse_counter_csv, waves_per_cu
from lumikit.site import load_site
from lumikit.trace.memory import load_memory

from .test_declared_wrong import assert_wrong_answers_fail


def test_caches_out_of_home():
    right = {v: f"/scratch/project_465000000/caches/{v.lower()}" for v in m05.CACHE_VARIABLES}
    assert assert_wrong_answers_fail(m05.check_cache_env, env=right, project="project_465000000") == 5


def test_warmup_cost():
    steps = m05.warmup_steps()
    assert steps[0] > 10 * statistics.median(steps[1:])  # the search dominates the first step
    assert assert_wrong_answers_fail(m05.check_warmup_cost, answer=steps[0] - statistics.median(steps[1:]),
                                     steps=steps) == 3


@pytest.mark.parametrize("learner", ["ada", "bob", "cy", "dee", "eve", "fay"])
def test_mfu_for_the_precision_used(learner, monkeypatch):
    monkeypatch.setenv("LUMIKIT_SEED", learner)
    run = m05.precision_run()
    peak = load_site("lumi").hardware["gcd_peak_tflops"][run["precision"]] * 1e12
    mfu = run["flops_per_step"] / run["step_s"] / peak
    assert 0.1 < mfu < 0.6
    assert assert_wrong_answers_fail(m05.check_mfu_for_precision, mfu=mfu, run=run) == 3
    assumed = run["flops_per_step"] / run["step_s"] / (load_site("lumi").hardware["gcd_peak_tflops"]["bf16"] * 1e12)
    if run["precision"] != "bf16":  # issue 40: the precision is read, not assumed
        with pytest.raises(CheckFailed):
            m05.check_mfu_for_precision(assumed, run)


def test_both_precisions_are_dealt(monkeypatch):
    seen = set()
    for i in range(30):
        monkeypatch.setenv("LUMIKIT_SEED", f"learner-{i}")
        seen.add(m05.precision_run()["precision"])
    assert seen == set(m05.P1_PRECISIONS)


def test_snapshot_peak(tmp_path):
    from tests.trace.test_memory import snapshot

    path = snapshot(tmp_path / "snap.pickle")
    peak = load_memory(path).peak()["bytes"]
    assert peak > sum(s["allocated_size"] for s in pickle.loads(path.read_bytes())["segments"]) - 1
    assert assert_wrong_answers_fail(m05.check_snapshot_peak, peak_bytes=peak, path=str(path)) == 3


def test_starved_kernels():
    text = m06.counter_exercise_csv()
    w = waves_per_cu(parse_counter_csv(text))
    starved = sorted(w.loc[w["waves_per_cu"] < 1, "kernel"])
    assert "reduce_tail" in starved and "gemm_big" not in starved
    # kernels just either side of one wave per CU: another threshold (2, or half a wave) gives another list
    assert "softmax_narrow" in starved and "conv_mid" not in starved
    assert assert_wrong_answers_fail(m06.check_starved_kernels, starved=starved, csv_text=text) == 5


def test_starved_kernels_in_a_tuple_set_or_series_pass():  # issue 40: right answers refused
    import numpy as np
    import pandas as pd

    text = m06.counter_exercise_csv()
    w = waves_per_cu(parse_counter_csv(text))
    starved = list(w.loc[w["waves_per_cu"] < 1, "kernel"])
    for form in (tuple(starved), set(starved), pd.Series(starved), np.array(starved)):
        assert m06.check_starved_kernels(form, text)
    with pytest.raises(CheckFailed, match="a string, where a list"):
        m06.check_starved_kernels(", ".join(starved), text)
