"""Exercise 06.R1 (generated roofline counters): the solution's way passes, every declared wrong answer fails
without printing the answer, each learner gets their own thin GEMM, and a regrade rebuilds the same table."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.framework import check_info
from lumikit.checks.leaks import leaked
from lumikit.checks.m06 import (check_memory_bound_gemm, roofline_exercise_points, roofline_exercise_tokens)
from lumikit.checks.rebuilt import rebuild
from lumikit.rocprof.roofline import peaks


def _solution(points):
    """What the solution notebook computes: ridge point / intensity per matrix kernel, the largest."""
    peak = {r.name.removesuffix(", peak"): r.value for r in peaks()}
    matrix = points[points["dominant"].str.startswith("mfma")]
    factors = {r.kernel: peak[r.roof] / peak["HBM"] / (r.flops / r.hbm_bytes) for r in matrix.itertuples()}
    best = max(factors, key=factors.get)
    return best, float(factors[best])


def test_the_thin_decode_gemm_is_the_answer_by_its_shape():
    points = roofline_exercise_points()
    kernel, factor = _solution(points)
    assert kernel == "Cijk_gemm_lm_qkv_decode"
    m = roofline_exercise_tokens()
    by_hand = (2 * m * 1152 * 384 + m * 1152) / (2 * (m * 384 + 384 * 1152 + 1152) + 2 * m * 1152)
    assert factor == pytest.approx(191.49 / 1.6 / by_hand, rel=1e-3)
    result = check_memory_bound_gemm(kernel, factor, points)
    assert isinstance(result, Passed) and result.exercise == "06.R1"


def test_a_ridge_point_from_the_measured_ceilings_is_close_enough():
    points = roofline_exercise_points()
    kernel, factor = _solution(points)
    measured = factor * (170438.3 / 1388.7638) / (191490 / 1600)  # 2.5 % higher
    assert isinstance(check_memory_bound_gemm(kernel, measured, points), Passed)


def test_every_declared_wrong_answer_fails_without_giving_the_answer():
    points = roofline_exercise_points()
    kernel, factor = _solution(points)
    args = SimpleNamespace(kernel=kernel, below_ridge=factor, points=points)
    for case in check_info(check_memory_bound_gemm).wrong:
        given = {"kernel": kernel, "below_ridge": factor, **case.values(args)}
        with pytest.raises(CheckFailed) as failure:
            check_memory_bound_gemm(given["kernel"], given["below_ridge"], points)
        message = str(failure.value)
        assert case.mentions in message, case.why
        for name, right in (("kernel", kernel), ("below_ridge", factor)):
            assert not leaked(message, right, [given[name]]), (case.why, name)


def test_no_answer_and_a_table_without_matrix_kernels_say_what_to_give():
    points = roofline_exercise_points()
    with pytest.raises(CheckFailed, match="No answer yet for 06.R1"):
        check_memory_bound_gemm(None, None, points)
    vector_only = points[~points["dominant"].str.startswith("mfma")]
    with pytest.raises(CheckFailed, match="no kernel that runs on the matrix cores"):
        check_memory_bound_gemm("Cijk_gemm_lm_qkv_decode", 4.0, vector_only)


def test_each_learner_gets_their_own_thin_gemm(monkeypatch):
    seen = set()
    for learner in ("ada", "bo", "cy", "di", "ed", "flo"):
        monkeypatch.setenv("LUMIKIT_SEED", learner)
        seen.add(roofline_exercise_tokens())
    assert len(seen) >= 2


def test_a_regrade_rebuilds_the_learners_table_from_the_seed():
    rebuilt = rebuild("06.R1")["points"]
    assert rebuilt.equals(roofline_exercise_points())
