"""Grading runs no learner code and finishes: no regrade reaches pickle, torch.load or eval, or opens a file in a
learner's folder other than their progress records, and one hostile record is one "unreadable" cell, never the end
of the class's CSV."""
from __future__ import annotations

import base64
import builtins
import csv
import io
import json
import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lumikit.checks import m01, m04
from lumikit.checks.datasets import starved_gcd
from lumikit.checks.framework import check_info
from lumikit.checks.instructor.grading import check_functions, regrade
from lumikit.checks.learner import seed_digest
from lumikit.checks.progress import Result
from lumikit.cli import main

from .test_grades import _learner_folder


class _Payload:
    """Unpickling this makes a folder named ``marker``: proof that a pickle ran code (harmless otherwise)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


class _Watch:
    """Every ``open`` under a folder, and every call of an unpickler, torch.load or eval, while grading runs."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.opened: list[str] = []
        self.forbidden_calls: list[str] = []
        self.active = False

    def hook(self, event: str, args: tuple) -> None:
        if not self.active or event != "open" or not args or isinstance(args[0], int):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if path.startswith(self.root + os.sep):
            self.opened.append(path)


_WATCHES: list[_Watch] = []


def _audit(event: str, args: tuple) -> None:
    for watch in _WATCHES:
        watch.hook(event, args)


sys.addaudithook(_audit)  # audit hooks stay for the process; this one only looks while a test's watch is active


@pytest.fixture
def watch(monkeypatch, tmp_path) -> Iterator[_Watch]:
    """Watch the class folder, with pickle.load(s) and torch.load made to fail loudly and be counted, and eval too
    where lumikit calls it (the standard library's own eval, in namedtuple, is how Python builds classes)."""
    import lumikit

    seen = _Watch(tmp_path / "class")
    package = str(Path(lumikit.__file__).parent)
    real_eval = builtins.eval

    def refuse(name: str):
        def call(*args, **kwargs):
            seen.forbidden_calls.append(name)
            raise AssertionError(f"the grading called {name}")
        return call

    def guarded_eval(*args, **kwargs):
        if sys._getframe(1).f_code.co_filename.startswith(package):
            return refuse("eval")()
        return real_eval(*args, **kwargs)

    for name in ("load", "loads"):
        monkeypatch.setattr(pickle, name, refuse(f"pickle.{name}"))
    monkeypatch.setattr(builtins, "eval", guarded_eval)
    try:
        import torch

        monkeypatch.setattr(torch, "load", refuse("torch.load"))
    except ImportError:
        pass
    _WATCHES.append(seen)
    yield seen
    _WATCHES.remove(seen)


_learner = _learner_folder  # a right 04.1 and 01.q1 recorded as the learner (their name is their seed)


def _record(folder: Path, exercise: str, answers: dict, evidence: dict) -> Path:
    """A hand-written passing record of ``exercise`` for the learner whose folder it is (named as its seed)."""
    base = json.loads((folder / "01.q1.json").read_text())
    base.update(exercise=exercise, answers=answers, evidence=evidence, passed_answers=answers,
                passed_evidence=evidence, passed_exact=True, answers_exact=True, evidence_exact=True)
    path = folder / f"{exercise}.json"
    path.write_text(json.dumps(base))
    return path


def _nested(depth: int) -> dict:
    value: dict = {"x": 1}
    for _ in range(depth):
        value = {"x": value}
    return value


def _grade(class_dir: Path, out: Path, watch: _Watch) -> dict[str, dict[str, str]]:
    watch.active = True
    try:
        assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(out)]) == 0
    finally:
        watch.active = False
    return {r["learner"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}


def test_a_class_with_a_pickle_payload_a_bracket_bomb_and_a_deep_record_grades_every_learner(
        monkeypatch, tmp_path, capsys, watch) -> None:
    class_dir = tmp_path / "class"
    marker = tmp_path / "payload-ran"
    honest = _learner(monkeypatch, class_dir, "ada")
    # mallory: 05.M1 names a pickle in her folder, and also keeps it as a recorded file
    mallory = _learner(monkeypatch, class_dir, "mallory")
    payload = pickle.dumps({"segments": [], "device_traces": [[_Payload(marker)]]})
    (mallory / "snapshot.pickle").write_bytes(payload)
    _record(mallory, "05.M1", {"peak_bytes": 1}, {"path": str(mallory / "snapshot.pickle")})
    kept = {"__path__": "snapshot.pickle", "name": "snapshot.pickle", "base64": base64.b64encode(payload).decode()}
    _record(mallory, "05.S1", {"raw_trace": kept, "steps_run": 6}, {})
    # brackets: 200 KB of nested brackets where a record should be
    brackets = _learner(monkeypatch, class_dir, "brackets")
    (brackets / "05.2.json").write_text("[" * 200_000)
    # deep: a valid record whose evidence is nested 900 deep
    deep = _learner(monkeypatch, class_dir, "deep")
    _record(deep, "05.3", {"answer": "aten::mm"}, {"ops": _nested(900)})

    rows = _grade(class_dir, tmp_path / "g.csv", watch)
    capsys.readouterr()
    assert set(rows) == {"ada", "mallory", "brackets", "deep"}
    assert not marker.exists(), "the pickle payload ran"
    assert watch.forbidden_calls == []
    assert rows["ada"]["04.1"] == "verified" and rows["ada"]["01.q1"] == "verified"
    assert rows["mallory"]["05.M1"] == "self-reported" and "never opens" in rows["mallory"]["not verified"]
    assert rows["mallory"]["05.S1"] != "verified" and rows["mallory"]["04.1"] == "verified"
    for name, exercise in (("brackets", "05.2"), ("deep", "05.3")):
        assert rows[name][exercise] == "unreadable", name
        assert f"{exercise}: unreadable: JSON nested more than" in rows[name]["not verified"], rows[name]
        assert rows[name]["04.1"] == "verified" and rows[name]["unreadable"] == "1"
    # the grading opened nothing in the learners' folders but their progress records
    others = [p for p in watch.opened if not (Path(p).parent.name == "progress" and
                                              (p.endswith(".json") or Path(p).name == "seed"))]
    assert others == []
    assert any(p.endswith("05.M1.json") for p in watch.opened)  # the records themselves were read


def test_progress_dir_on_a_hostile_folder_lists_the_bad_records_and_does_not_crash(monkeypatch, tmp_path,
                                                                                   capsys) -> None:
    folder = _learner(monkeypatch, tmp_path / "class", "ada")
    (folder / "05.2.json").write_text("[" * 200_000)
    _record(folder, "05.3", {"answer": "aten::mm"}, {"ops": _nested(900)})
    assert main(["progress", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "unreadable records, counted as not yet: 05.2 (JSON nested more than" in out
    assert "05.3 (JSON nested more than" in out and "2 of " in out


def _every_argument_is_a_learner_pickle(func, folder: Path, payload: bytes) -> tuple[dict, dict]:
    """Answers and evidence for ``func`` where every argument is the payload: half as a path into the learner's
    folder, half as a file the record kept."""
    import inspect

    path = folder / "snapshot.pickle"
    kept = {"__path__": str(path), "name": "snapshot.pickle", "base64": base64.b64encode(payload).decode()}
    names = list(inspect.signature(func).parameters)
    info = check_info(func)
    values = {n: (str(path) if i % 2 == 0 else kept) for i, n in enumerate(names)}
    answers = {n: v for n, v in values.items() if n in info.answer_names}
    return answers, {n: v for n, v in values.items() if n not in answers}


@pytest.mark.parametrize("swap", [False, True])
def test_no_check_reachable_from_the_regrade_opens_a_learner_path_or_unpickles(monkeypatch, tmp_path, watch,
                                                                              swap) -> None:
    """Every registered check, regraded from a record whose every argument is a pickle in the learner's folder
    (as a path or as a kept file), opens nothing there and runs no unpickler, torch.load or eval."""
    folder = tmp_path / "class" / "ada" / "progress"
    folder.mkdir(parents=True)
    marker = tmp_path / "payload-ran"
    payload = pickle.dumps({"segments": [], "device_traces": [[_Payload(marker)]]})
    (folder / "snapshot.pickle").write_bytes(payload)
    functions = check_functions()
    assert len(functions) >= 80
    tried: list[tuple[str, str]] = []
    watch.active = True
    try:
        for exercise, func in sorted(functions.items()):
            answers, evidence = _every_argument_is_a_learner_pickle(func, folder, payload)
            if swap:
                answers = {n: (evidence.get(n) or v) for n, v in answers.items()}
            result = Result("ada", exercise, "passed", 1, "2026-01-01T00:00:00+00:00", "", "", answers,
                            seed_digest("ada"), True, evidence, True, answers, evidence, False, "", True)
            before = len(watch.opened)
            grade = regrade(result, "ada", functions, ["ada"], [tmp_path / "class"])
            tried += [(exercise, p) for p in watch.opened[before:]]
            assert grade.cell != "verified", (exercise, grade)
    finally:
        watch.active = False
    assert not marker.exists(), "a pickle payload ran"
    assert watch.forbidden_calls == []
    assert watch.opened == [], [(e, p) for e, p in tried]


def test_the_fence_stops_a_check_that_unpickles_a_kept_file_or_reads_a_learner_path(tmp_path) -> None:
    """Even called directly (past the grading's own refusals), a check judged again unpickles no class and opens no
    file in the class folder."""
    from lumikit.checks.instructor.grading import judge
    from lumikit.checks.m05 import check_snapshot_peak
    from lumikit.checks.instructor.regrade_guard import fenced

    marker = tmp_path / "payload-ran"
    payload = pickle.dumps({"segments": [], "device_traces": [[_Payload(marker)]]})
    kept = {"__path__": "snapshot.pickle", "name": "snapshot.pickle", "base64": base64.b64encode(payload).decode()}
    verdict = judge(check_snapshot_peak, {"peak_bytes": 1}, {"path": kept}, "ada").verdict
    assert verdict == "not regraded" and not marker.exists()
    learner_file = tmp_path / "class" / "ada" / "notes.txt"
    learner_file.parent.mkdir(parents=True)
    learner_file.write_text("mine")
    with fenced(tmp_path / "evidence", [tmp_path / "class"]) as fence, pytest.raises(PermissionError):
        learner_file.read_text()
    assert fence.refused == [str(learner_file)]
    assert learner_file.read_text() == "mine"  # outside the fence, nothing changes


def _plain_snapshot() -> dict:
    """A snapshot in PyTorch's documented layout whose peak is known by construction: 300 + 200 MiB live, then
    300 freed and 120 allocated, so the peak is 500 MiB and 320 MiB stay allocated at the end."""
    frames = [{"filename": "train.py", "line": 12, "name": "forward"}]
    mib = 1 << 20
    return {"device_traces": [[
        {"action": "alloc", "addr": 0x1000, "size": 300 * mib, "stream": 0, "frames": frames},
        {"action": "alloc", "addr": 0x9000, "size": 200 * mib, "stream": 0, "frames": frames},
        {"action": "free_completed", "addr": 0x1000, "size": 300 * mib, "stream": 0, "frames": frames},
        {"action": "alloc", "addr": 0x20000, "size": 120 * mib, "stream": 0, "frames": frames}]],
        "segments": [{"device": 0, "total_size": 1 << 30, "blocks": [
            {"size": 200 * mib, "state": "active_allocated"}, {"size": 120 * mib, "state": "active_allocated"}]}]}


def test_the_learners_snapshot_reader_builds_plain_values_only(tmp_path, capsys) -> None:
    """`trace memory` and 05.M1 read a snapshot with lumikit.safe_pickle: a plain one gives its known peak, one
    naming a function is refused by name and never runs."""
    from lumikit.checks import m05
    from lumikit.checks.framework import CheckFailed
    from lumikit.errors import TraceError
    from lumikit.trace.memory import load_memory

    plain = tmp_path / "snapshot.pickle"
    plain.write_bytes(pickle.dumps(_plain_snapshot()))
    assert load_memory(plain).peak()["bytes"] == 500 << 20
    assert m05.check_snapshot_peak(500 << 20, str(plain))
    for wrong_answer in (1 << 30, 500, 320 << 20):  # segments' total, MiB, what is left at the end
        with pytest.raises(CheckFailed):
            m05.check_snapshot_peak(wrong_answer, str(plain))
    marker = tmp_path / "payload-ran"
    hostile = tmp_path / "hostile.pickle"
    hostile.write_bytes(pickle.dumps({"segments": [], "device_traces": [[_Payload(marker)]]}))
    with pytest.raises(TraceError, match="hostile.pickle.*refused"):
        load_memory(hostile)
    assert main(["trace", "memory", str(hostile)]) != 0
    assert "refused" in capsys.readouterr().err and not marker.exists()


def test_open_answers_of_a_notebook_of_nested_brackets_leave_the_export_going(monkeypatch, tmp_path, capsys) -> None:
    folder = _learner(monkeypatch, tmp_path / "class", "ada")
    _learner(monkeypatch, tmp_path / "class", "bob")
    (folder.parent / "exercises").mkdir()
    (folder.parent / "exercises" / "05_logging_and_profiling.ipynb").write_text("[" * 200_000)
    assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"),
                 "--open-answers", str(tmp_path / "open.md")]) == 0
    assert (tmp_path / "open.md").exists() and "ada," in (tmp_path / "g.csv").read_text()


def test_lumikit_itself_is_read_even_where_the_class_folder_holds_it(tmp_path) -> None:
    """An instructor's clone inside the project folder: lumikit's own files stay readable inside the fence."""
    import lumikit
    from lumikit.checks.instructor.regrade_guard import fenced

    package = Path(lumikit.__file__).parent
    with fenced(tmp_path / "evidence", [package.parent]) as fence:
        assert (package / "__init__.py").read_text()
        with pytest.raises(PermissionError):
            (package.parent / "README.md").read_text()
    assert fence.refused == [str((package.parent / "README.md").resolve())]


def test_a_record_cannot_make_the_grader_import_a_module() -> None:
    import sys

    from lumikit.checks.evidence import Unencodable, decode

    name = "lumikit.trace.hta_bridge"  # a real lumikit module, not loaded by any check
    sys.modules.pop(name, None)
    with pytest.raises(Unencodable, match="not one of lumikit's dataclasses"):
        decode({"__dataclass__": f"{name}:Anything", "fields": {}}, None)
    assert name not in sys.modules
