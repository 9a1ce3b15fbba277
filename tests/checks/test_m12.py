"""Module 12's checks judge the learner's own ladder and generation rounds against their own spread: each passes on
the answer known by construction and fails, naming the exercise, on the typical wrong ones and on None."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import lumikit.checks.m12 as m12
from lumikit.checks import CheckFailed

BF16_PEAK = 191.49e12  # lumikit/sites/lumi.toml, one GCD


def _rung(name: str, precision: str, values: list[float]) -> dict:
    ordered = sorted(values)
    return {"rung": name, "precision": precision,
            "samples_per_s": {"median": ordered[len(ordered) // 2], "min": ordered[0], "max": ordered[-1],
                              "values": values}}


def _ladder() -> dict:
    """fp32 -> bf16: 3x, ranges far apart (beyond noise); bf16 -> fused: about the same (within noise)."""
    return {"step_flops": 8e12, "batch_size": 8, "rungs": [
        _rung("fp32", "fp32", [10.0, 10.5, 9.5]), _rung("bf16", "bf16", [30.0, 31.0, 29.0]),
        _rung("fused", "bf16", [31.0, 30.0, 32.0])]}


def _run_folder(root: Path, ladder: dict | None = None, *, state: str = "COMPLETED", written: float | None = None,
                command: str = "lumikit.ladder.run") -> Path:
    """A ladder run's folder as lumikit's launcher leaves it: its manifest (a completed ladder job, its start and end
    times) and the ladder.json the run wrote in that time."""
    folder = root / f"20261128-150000-ladder-{abs(hash((state, written, command))) % 10**6:06d}"
    folder.mkdir(parents=True)
    now = time.time()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))  # noqa: E731
    (folder / "manifest.json").write_text(json.dumps({
        "state": state, "start_time": iso(now - 60), "end_time": iso(now), "backend": "local",
        "spec": {"command": ["python", "-m", command, "--rungs", "fp32,bf16,fused"], "name": "ladder"}}))
    data = {**(ladder or _ladder()), "measured_on": "this CPU (test)", "host": "test-host",
            "time": now - 30 if written is None else written}
    (folder / "ladder.json").write_text(json.dumps(data))
    return folder


@pytest.fixture
def run(tmp_path) -> Path:
    return _run_folder(tmp_path / "runs")


def _rounds(cache_8: float = 400.0, none_8: float = 100.0, cache_1: float = 80.0) -> list[list[dict]]:
    """Three rounds of generate.measure rows (as dicts), each rate scaled by 0.95, 1, 1.05 over the rounds."""
    def row(batch: int, kv_cache: bool, decode: float) -> dict:
        return {"batch": batch, "kv_cache": kv_cache, "decode_tokens_per_s": decode, "prefill_tokens_per_s": 1000.0}
    return [[row(1, True, cache_1 * f), row(1, False, 50.0 * f), row(8, True, cache_8 * f), row(8, False, none_8 * f)]
            for f in (0.95, 1.0, 1.05)]


def test_the_rung_that_gained_most_over_the_one_above_and_its_noise_verdict_pass(run):
    result = m12.check_helped_most("bf16", True, run)
    assert result.exercise == "12.1" and "measured on this CPU (test) (test-host)" in str(result)
    assert "this machine" not in str(result)


@pytest.mark.parametrize("rung, beyond", [("fused", True), ("fp32", True), ("bf16", False), ("turbo", True),
                                          (None, True), ("bf16", None)])
def test_another_rung_the_first_rung_or_a_turned_noise_verdict_fail(rung, beyond, run):
    with pytest.raises(CheckFailed, match="12.1") as failure:
        m12.check_helped_most(rung, beyond, run)
    assert "True" not in str(failure.value).replace(f"gave {beyond!r}", "")


def test_a_gain_inside_the_spread_is_within_noise(tmp_path):
    ladder = _ladder()
    ladder["rungs"][1] = _rung("bf16", "bf16", [8.0, 13.0, 20.0])  # 1.3x, but overlaps fp32's 9.5-10.5
    ladder["rungs"][2] = _rung("fused", "bf16", [12.0, 14.0, 19.0])  # 1.08x over bf16
    assert m12.steps_up(ladder)["bf16"].within_noise
    assert m12.check_helped_most("bf16", False, _run_folder(tmp_path, ladder))


def test_mfu_is_against_the_peak_of_the_precision_that_ran(run):
    expected = 8e12 * (30.0 / 8) / BF16_PEAK  # FLOPs/step x steps/s / one GCD's bf16 peak
    assert m12.check_rung_mfu(expected, run)
    for wrong in (expected * 4, expected / 2, 100 * expected, expected * 8):  # fp32 peak, 2 GCDs, %, steps as samples
        with pytest.raises(CheckFailed, match="12.2"):
            m12.check_rung_mfu(wrong, run)


def test_cache_gain_is_decode_with_over_without_at_the_largest_batch():
    assert m12.check_cache_gain(4.0, _rounds())
    for wrong in (0.25, 400.0, 300.0, None):
        with pytest.raises(CheckFailed, match="12.3"):
            m12.check_cache_gain(wrong, _rounds())


@pytest.mark.parametrize("rounds, shown", [(_rounds(), "a"), (_rounds(cache_8=82.0), "b"),
                                           (_rounds(cache_8=20.0), "c")])
def test_the_batch_outcome_is_what_the_rounds_show_beyond_their_spread(rounds, shown):
    assert m12.check_batch_outcome(shown, "a", measured=rounds)
    for other in {"a", "b", "c"} - {shown}:
        with pytest.raises(CheckFailed, match="does not show"):
            m12.check_batch_outcome(other, "a", measured=rounds)


def test_the_bf16_outcome_reads_the_ladders_repeats(run):
    assert m12.check_bf16_outcome("a", "c", measured=run)
    with pytest.raises(CheckFailed, match="does not show"):
        m12.check_bf16_outcome("b", "c", measured=run)


def test_predictions_take_any_offered_letter_only():
    assert m12.check_bf16_prediction("c") and m12.check_batch_prediction("(b)")
    with pytest.raises(CheckFailed, match="one of the letters"):
        m12.check_batch_prediction("z")


def test_a_ladder_without_rungs_is_refused_naming_the_exercise(tmp_path):
    with pytest.raises(CheckFailed, match="12.1: the ladder run cannot be read.*no rungs"):
        m12.check_helped_most("bf16", True, _run_folder(tmp_path, {"rungs": []}))


def test_module_12s_measured_answers_grade_as_the_learners_own_data_and_predictions_as_verified():
    """The ladder and the generation rounds are the learner's own measurements: consistent, never "verified"."""
    from lumikit.checks.instructor.grading import best_cell, check_functions

    functions = check_functions()
    best = {e: best_cell(e, functions[e]) for e in ("12.1", "12.2", "12.3", "12.q2", "12.q4", "12.q1")}
    assert {best[e] for e in ("12.1", "12.2", "12.3", "12.q2", "12.q4")} == {"own data"}, best
    assert best["12.q1"] == "verified", best


def test_a_rung_name_with_spaces_around_it_passes(run) -> None:  # issue 40: a right answer refused
    assert m12.check_helped_most(" bf16 ", True, run)


# --- Issue 40: module 12 needs a ladder run ------------------------------------------------------------------------

REFERENCE = Path(m12.__file__).resolve().parents[1] / "data" / "reference" / "h100-benchmarks"


@pytest.mark.parametrize("call", [lambda l: m12.check_helped_most("bf16", True, l),
                                  lambda l: m12.check_rung_mfu(8e12 * (30.0 / 8) / BF16_PEAK, l),
                                  lambda l: m12.check_bf16_outcome("a", "c", measured=l)])
def test_invented_numbers_a_shipped_reference_or_a_copied_ladder_are_refused(call, tmp_path):
    with pytest.raises(CheckFailed, match="dict of numbers, not a run.*typed in or copied"):
        call(_ladder())  # the numbers typed in: no run behind them
    with pytest.raises(CheckFailed, match="reference lumikit ships"):
        call(REFERENCE)
    with pytest.raises(CheckFailed, match="not written by its run.*copied"):
        call(_run_folder(tmp_path / "a", written=1795713572.07))  # the H100 ladder's own time, in a run of today
    with pytest.raises(CheckFailed, match="has not completed"):
        call(_run_folder(tmp_path / "b", state="FAILED"))
    with pytest.raises(CheckFailed, match="not a ladder run"):
        call(_run_folder(tmp_path / "c", command="lumikit.workloads.lm"))
    with pytest.raises(CheckFailed, match="cannot be read"):
        call(tmp_path)  # a folder with no manifest: not a run


def test_module_12_passed_on_invented_numbers_is_never_verified_nor_own_data(monkeypatch, tmp_path, capsys):
    """A learner who ran no ladder: the invented dict is refused by the checks; a ladder.json written by hand into a
    folder dressed as a run passes the check, but its record cannot be regraded: self-reported, not verified."""
    import csv
    import io

    from lumikit.cli import main

    folder = tmp_path / "class" / "eve" / "workbook" / "progress"
    folder.mkdir(parents=True)
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", "eve")
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    with pytest.raises(CheckFailed):
        m12.check_helped_most("bf16", True, _ladder())
    dressed = _run_folder(tmp_path / "class" / "eve" / "workbook" / "runs")
    assert m12.check_helped_most("bf16", True, dressed)
    assert m12.check_rung_mfu(8e12 * (30.0 / 8) / BF16_PEAK, dressed)
    assert main(["progress", "--class", str(tmp_path / "class"), "--grade", "--csv", str(tmp_path / "g.csv")]) == 0
    capsys.readouterr()
    row = next(csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text())))
    for exercise in ("12.1", "12.2"):
        assert row[exercise] == "self-reported", (exercise, row[exercise])  # never verified nor own data
        assert f"{exercise}: an answer or input was not recorded exactly" in row["not verified"]
