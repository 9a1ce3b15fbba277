"""Module 11's claim and rubric for the two kinds a busy 2-core machine cannot show in a real run (fp32 where bf16
belongs, a wrong CPU binding), on run folders written here: generated step metrics whose answer is known by
construction (the fixed run twice as fast, or no faster), never a reading of a real run."""
from __future__ import annotations

import json

import pytest

from lumikit.checks import CheckFailed, m11
from lumikit.measure import measured
from lumikit.workloads.capstone import variant

PRECISION = next(f"{i:06d}" for i in range(1000) if variant(f"{i:06d}") == "d")
BINDING = next(f"{i:06d}" for i in range(1000) if variant(f"{i:06d}") == "e")


#: The first run's profile reading these generated runs stand for (they hold no trace; test_m11 reads real ones).
SHARES = {"data": 0.1, "forward": 0.5, "backward": 0.3, "optimizer": 0.05, "other": 0.05}


@pytest.fixture(autouse=True)
def _own_progress_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(tmp_path / "progress"))
    monkeypatch.setattr(m11, "_phase_shares", lambda run_dir, exercise: dict(SHARES))


def run_folder(folder, case, rate, *, precision="fp32", cpus="all", workers=0, batch=16):
    """A run folder as the capstone writes it: rank 0's result and 12 steps of metrics around ``rate`` (generated:
    the first step cold, then the rate with a 2 % wobble)."""
    folder.mkdir(parents=True)
    (folder / "result.rank0.json").write_text(json.dumps({
        "case": case, "batch_size": batch, "workers": workers, "log_every": 1, "model_size": "tiny",
        "knobs": {"precision": precision}, "cpus": cpus}))
    rows = [{"step": 1, "samples_per_s": rate / 3}] + [
        {"step": i, "samples_per_s": rate * (1 + 0.02 * ((i % 3) - 1))} for i in range(2, 13)]
    (folder / "metrics.rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def claim(before, after, cause, fix):
    return {"cause": cause, "fix": fix, "before": measured("before", m11.rates(before)),
            "after": measured("after", m11.rates(after)), "evidence": max(SHARES, key=SHARES.get)}


@pytest.fixture
def binding(tmp_path):
    """Variant "e": the first run on one core; --cpus all twice as fast; --workers 4 no faster."""
    return (run_folder(tmp_path / "binding" / "before", BINDING, 100.0, cpus="0", workers=2),
            run_folder(tmp_path / "binding" / "cpus", BINDING, 200.0, cpus="all", workers=2),
            run_folder(tmp_path / "binding" / "workers", BINDING, 101.0, cpus="0", workers=4))


@pytest.fixture
def precision(tmp_path):
    """Variant "d": the first run in fp32; bf16 twice as fast; a larger batch no faster."""
    return (run_folder(tmp_path / "precision" / "before", PRECISION, 20.0),
            run_folder(tmp_path / "precision" / "bf16", PRECISION, 40.0, precision="bf16"),
            run_folder(tmp_path / "precision" / "batch", PRECISION, 20.3, batch=32))


def test_the_right_binding_fix_with_measured_improvement_passes(binding) -> None:
    before, fixed, _ = binding
    result = str(m11.check_claim(claim(before, fixed, "e", "--cpus all"), before, fixed))
    assert "the claim holds" in result and "beyond noise" in result
    assert m11.check_claim(claim(before, fixed, "e", {"cpus": "all"}), before, fixed)


def test_bf16_for_an_fp32_run_with_measured_improvement_passes(precision) -> None:
    before, fixed, _ = precision
    assert "the claim holds" in str(m11.check_claim(claim(before, fixed, "c", "--precision bf16"), before, fixed))


def _failure(the_claim, before, after) -> str:
    with pytest.raises(CheckFailed) as failure:
        m11.check_claim(the_claim, before, after)
    return str(failure.value).split(" (Attempt")[0]


def test_guessed_claims_on_the_new_kinds_fail_with_one_message_that_names_no_part(binding, precision) -> None:
    b_before, b_fixed, b_other = binding
    p_before, p_fixed, p_other = precision
    messages = {
        _failure(claim(b_before, b_fixed, "a", "--cpus all"), b_before, b_fixed),  # the fix right, the cause not
        _failure(claim(b_before, b_other, "a", "--workers 4"), b_before, b_other),  # both guessed: (a)'s fix
        _failure(claim(b_before, b_other, "e", "--workers 4"), b_before, b_other),  # the cause right, not the fix
        _failure(claim(p_before, p_fixed, "d", "--precision bf16"), p_before, p_fixed),
        _failure(claim(p_before, p_other, "c", "--batch-size 32"), p_before, p_other),
        _failure(claim(p_before, p_other, "d", "--batch-size 32"), p_before, p_other),
    }
    assert len(messages) == 1 and m11.CLAIM_FAILS in messages.pop()


def test_a_right_fix_that_measured_no_faster_fails_the_same_way(tmp_path) -> None:
    before = run_folder(tmp_path / "runs" / "before", BINDING, 100.0, cpus="0", workers=2)
    busy = run_folder(tmp_path / "runs" / "after", BINDING, 104.0, cpus="all", workers=2)  # other work on the cores
    assert m11.CLAIM_FAILS in _failure(claim(before, busy, "e", "--cpus all"), before, busy)


def test_one_core_more_is_a_binding_fix_and_one_core_is_not(tmp_path) -> None:
    before = run_folder(tmp_path / "runs" / "before", BINDING, 100.0, cpus="0", workers=2)
    two = run_folder(tmp_path / "runs" / "two", BINDING, 190.0, cpus="0-1", workers=2)
    other = run_folder(tmp_path / "runs" / "other", BINDING, 190.0, cpus="1", workers=2)
    assert m11.check_claim(claim(before, two, "e", "--cpus 0-1"), before, two)
    assert m11.CLAIM_FAILS in _failure(claim(before, other, "e", "--cpus 1"), before, other)


def test_the_rubric_knows_the_new_kinds_words_and_their_fixes(binding, precision) -> None:
    b_before, b_fixed, _ = binding
    b = claim(b_before, b_fixed, "e", "--cpus all")
    text = (f"The step metrics showed most of each step waiting for data although two worker processes load it, "
            f"and the log said the run was pinned to core 0, one of the cores the job gave it, so the workers and "
            f"the training shared one core. I changed one option, --cpus all, and nothing else; the workers now "
            f"check samples on other cores while the step computes. Throughput went from {b['before'].median:.1f} "
            f"samples/s (range {b['before'].lo:.1f} to {b['before'].hi:.1f}) to {b['after'].median:.1f} samples/s "
            f"(range {b['after'].lo:.1f} to {b['after'].hi:.1f}).")
    assert "rubric met" in str(m11.check_conclusion(text, b, b_before, b_fixed))
    with pytest.raises(CheckFailed, match="states the fix"):
        m11.check_conclusion(text.replace("--cpus all", "one setting"), b, b_before, b_fixed)
    p_before, p_fixed, _ = precision
    p = claim(p_before, p_fixed, "c", "--precision bf16")
    text = (f"The profiler's operator summary put matrix products (aten::mm and addmm) at most of each step, and "
            f"the run's result said it ran in fp32. I changed one option, --precision bf16, and nothing else: "
            f"autocast runs those products in bfloat16, which this CPU computes faster. Throughput went from "
            f"{p['before'].median:.1f} samples/s (range {p['before'].lo:.1f} to {p['before'].hi:.1f}) to "
            f"{p['after'].median:.1f} samples/s (range {p['after'].lo:.1f} to {p['after'].hi:.1f}), beyond the "
            f"spread of either run.")
    assert "rubric met" in str(m11.check_conclusion(text, p, p_before, p_fixed))
    unnamed = text.replace("matrix products (aten::mm and addmm)", "some operators").replace("in fp32", "as set")
    with pytest.raises(CheckFailed, match="names the cause with evidence from a tool"):
        m11.check_conclusion(unnamed, p, p_before, p_fixed)


def test_declared_wrong_answers_fail_on_the_new_kinds(binding, precision) -> None:
    from .test_declared_wrong import assert_wrong_answers_fail

    for before, fixed, cause, fix in ((*binding[:2], "e", "--cpus all"), (*precision[:2], "c", "--precision bf16")):
        assert assert_wrong_answers_fail(m11.check_claim, claim=claim(before, fixed, cause, fix), before_dir=before,
                                         after_dir=fixed) >= 5


def test_the_choice_list_names_every_cause_and_why_one_is_not_dealt_here(monkeypatch) -> None:
    from lumikit.workloads import capstone

    monkeypatch.setattr(capstone, "deal", lambda site=None: capstone.Deal(("a", "b", "c", "e"), {"d": "no bf16"}))
    lines = m11.choices()
    assert [line[:3] for line in lines] == ["(a)", "(b)", "(c)", "(d)", "(e)"]
    assert lines[2].endswith("[not dealt here: no bf16]") and "not dealt" not in " ".join(lines[:2] + lines[3:])
