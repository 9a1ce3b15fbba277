"""The live class view on GENERATED class folders whose stuck learners and common mistakes are known by construction:
what it finds, what `lumikit class --once --json` prints, that each record is parsed once per change, and that
hostile folders cost one cell each."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, example
from lumikit.checks.instructor.classview import NO_CHECK_YET, ClassReader, StuckRule, format_text, iso
from lumikit.checks.progress import RECENT_KEPT
from lumikit.cli import main
from lumikit.errors import LumikitError
from lumikit.testing.class_folder import add_hostile, record_json, write_class
from lumikit.text import printable

NOW = 1_790_000_000.0


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory):
    """A generated class of 100 learners x 12 exercises (its focus: exercises 01.6 to 01.8)."""
    return write_class(tmp_path_factory.mktemp("class") / "class", learners=100, exercises=12, now=NOW)


def _expected_mistakes(generated) -> dict[str, Counter]:
    """Per focus exercise, the mistakes of the failures in the last 10 minutes: every learner on it except the ones
    without progress/ (i % 10 == 2) and the idle ones whose failure is 20 minutes old (i % 10 == 1)."""
    found: dict[str, Counter] = {}
    idle = {learner for (learner, _), rule in generated.stuck.items() if rule == "idle"}
    for name in generated.learners:
        if name in generated.empty or name in idle:
            continue
        for path in (generated.root / name / "progress").glob("*.json"):
            record = json.loads(path.read_text())
            if record["status"] == "failed":
                found.setdefault(record["exercise"], Counter())[record["recent"][-1]["mistake"]] += 1
    return found


def test_the_stuck_learners_of_a_generated_class_are_found_with_why(generated) -> None:
    state = ClassReader(generated.root).refresh(NOW)
    found = {(s.learner, s.exercise): s.why for s in state.stuck}
    assert set(found) == set(generated.stuck) and len(found) == 20
    for key, rule in generated.stuck.items():
        assert ("3 failed attempts in the last 10 min" if rule == "failures" else
                "no activity for 20 min after a failed attempt") in found[key]
    assert [r.learner for r in state.learners] == generated.learners  # every learner folder has a row
    assert {r.learner for r in state.learners if r.note == NO_CHECK_YET} == set(generated.empty)


def test_the_commonest_mistake_per_exercise_is_the_one_most_learners_made_last(generated) -> None:
    state = ClassReader(generated.root).refresh(NOW)
    expected = _expected_mistakes(generated)
    assert set(state.mistakes) == set(generated.major) == set(expected)
    for exercise, found in state.mistakes.items():
        assert found[0][0] == generated.major[exercise]
        assert dict(found) == dict(expected[exercise])
        assert found[0][1] > found[1][1]


def test_the_stuck_thresholds_are_parameters(generated) -> None:
    patient = ClassReader(generated.root, StuckRule(failures=4, idle_s=1500)).refresh(NOW)
    assert patient.stuck == []
    later = ClassReader(generated.root).refresh(NOW + 3 * 3600)  # hours later: nobody is stuck "now"
    assert later.stuck == [] and later.mistakes == {}
    with pytest.raises(LumikitError, match="positive times"):
        StuckRule(window_s=0)


def test_class_once_json_lists_the_stuck_learners_and_the_common_mistakes(generated, capsys) -> None:
    assert main(["class", str(generated.root), "--once", "--json", "--now", iso(NOW), "--any-exercise"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {(s["learner"], s["exercise"]) for s in out["stuck"]} == set(generated.stuck)
    assert all(s["why"] for s in out["stuck"])
    assert {e: found[0]["mistake"] for e, found in out["common_mistakes"].items()} == generated.major
    assert len(out["learners"]) == 100 and out["exercises"][:2] == ["01.1", "01.2"]
    first = out["learners"][0]
    on = next(e for learner, e in generated.stuck if learner == "learner000")
    assert first["learner"] == "learner000" and first["exercises"][on]["stuck"].startswith("3 failed")
    assert first["exercises"]["01.1"]["status"] == "passed"


def test_class_once_text_says_who_is_stuck_and_what_to_explain(generated, capsys) -> None:
    assert main(["class", str(generated.root), "--now", iso(NOW), "--any-exercise"]) == 0
    out = capsys.readouterr().out
    assert out.count("STUCK") == 20
    assert "learner002" in out and NO_CHECK_YET in out
    assert f"01.6: {generated.major['01.6']}" in out


def test_each_record_is_parsed_once_per_change(tmp_path: Path) -> None:
    made = write_class(tmp_path / "class", learners=10, exercises=5, now=NOW)
    reader = ClassReader(made.root)
    cold = reader.refresh(NOW)
    assert cold.parsed == cold.records == 9 * 5
    assert reader.refresh(NOW).parsed == 0
    path = made.root / "learner003" / "progress" / "01.3.json"
    path.write_text(record_json("01.3", "learner003", [(NOW - 5, "passed", "")]))
    os.utime(path, ns=(int(NOW * 1e9), int(NOW * 1e9)))  # a new mtime even on a coarse clock
    warm = reader.refresh(NOW)
    assert warm.parsed == 1 and warm.learners[3].cells["01.3"].shown == "passed"
    path.unlink()
    assert "01.3" not in reader.refresh(NOW).learners[3].cells


def test_a_hostile_class_costs_one_cell_per_bad_record(tmp_path: Path, capsys) -> None:
    made = write_class(tmp_path / "class", learners=3, exercises=2, now=NOW)
    hostile = add_hostile(made.root, NOW)
    (made.root / "a-file").write_text("not a learner")
    state = ClassReader(made.root).refresh(NOW)
    rows = {r.learner: r for r in state.learners}
    assert len(rows) == 3 + len(hostile)
    for name, says in hostile.items():
        row = rows[printable(name)]
        shown = row.note or row.cells["01.1"].shown
        assert shown.startswith(says), (name, shown)
    assert any("linked/progress: refused (a link" in p for p in state.problems)
    text = format_text(state)
    assert "\x1b" not in text and "evil\\x1b]0;owned\\x07\\nname" in text
    assert main(["class", str(made.root), "--json", "--now", iso(NOW), "--any-exercise"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "evil\\x1b]0;owned\\x07\\nname" in {r["learner"] for r in out["learners"]}


def test_an_older_record_without_attempt_times_still_shows_and_can_be_stuck(tmp_path: Path) -> None:
    folder = tmp_path / "class" / "bo" / "progress"
    folder.mkdir(parents=True)
    (folder / "03.2.json").write_text(json.dumps({"exercise": "03.2", "status": "failed", "attempts": 4,
                                                  "first_passed": None, "updated": iso(NOW - 60)}))
    [stuck] = ClassReader(tmp_path / "class").refresh(NOW).stuck
    assert stuck.exercise == "03.2" and "no attempt times kept" in stuck.why


def test_a_check_records_its_recent_calls_with_the_kind_of_mistake(tmp_path: Path) -> None:
    for answer in (None, 9, 4, 8):
        try:
            example.check_gcd_count(answer)
        except CheckFailed:
            pass
    record = json.loads((tmp_path / "progress" / "00.1.json").read_text())
    assert [(c["status"], c["mistake"]) for c in record["recent"]] == [
        ("unanswered", ""), ("failed", "the number of GCDs on one LUMI-G node is not right"),
        ("failed", "the number of GCDs on one LUMI-G node is not right"), ("passed", "")]
    for _ in range(RECENT_KEPT + 2):
        with pytest.raises(CheckFailed):
            example.check_gcd_count(4)
    assert len(json.loads((tmp_path / "progress" / "00.1.json").read_text())["recent"]) == RECENT_KEPT


def test_the_widget_marks_every_stuck_cell(generated) -> None:
    pytest.importorskip("ipywidgets")
    from lumikit.widgets.class_view import ClassView

    view = ClassView(generated.root, now=NOW, interval=1)
    assert view.interval == 10  # never faster than every 10 s
    assert view.grid.value.count('class="lumikit-class-cell lumikit-stuck"') == 20
    assert view.stuck.value.count("<li>") == 20 and generated.major["01.6"] in view.mistakes.value
    assert view.refresh().parsed == 0


def test_watch_refreshes_at_most_every_10_s_and_prints_one_json_line_each(generated, monkeypatch, capsys) -> None:
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the second wait ends the watch (no wall-clock wait in a test)
        waits.append(seconds)
        if len(waits) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr("lumikit.checks.instructor.class_cli.time.sleep", sleep)
    assert main(["class", str(generated.root), "--watch", "--interval", "2", "--json", "--now", iso(NOW), "--any-exercise",
                 "--idle", "25"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert waits == [10.0, 10.0] and len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["refresh"]["parsed"] == first["refresh"]["records"] and second["refresh"]["parsed"] == 0
    assert {(s["learner"], s["exercise"]) for s in second["stuck"]} == {
        key for key, rule in generated.stuck.items() if rule == "failures"}  # --idle 25: 20 idle minutes are fine


def test_the_widget_follows_in_a_thread_that_stops_at_once(generated) -> None:
    pytest.importorskip("ipywidgets")
    from lumikit.widgets.class_view import ClassView

    view = ClassView(generated.root, now=NOW)
    view.follow.value = True
    assert view.running
    view.follow.value = False
    assert not view.running


def test_the_class_view_imports_no_unpickler_and_no_check_module() -> None:
    import subprocess
    import sys

    code = ("import sys, lumikit.checks.instructor.classview, lumikit.checks.instructor.class_cli; "
            "print(sorted(m for m in sys.modules if 'pickle' in m or m.startswith(('lumikit.checks.m', "
            "'lumikit.checks.instructor.grading', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_a_learner_folder_that_cannot_be_listed_says_so(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root lists every folder; run as a user to check permissions")
    made = write_class(tmp_path / "class", learners=2, exercises=2, now=NOW)
    (made.root / "learner001").chmod(0)
    try:
        rows = {r.learner: r for r in ClassReader(made.root).refresh(NOW).learners}
    finally:
        (made.root / "learner001").chmod(0o755)
    assert rows["learner001"].note.startswith("unreadable: cannot be listed")
