"""Inputs the exercise fixes (the job 01.3 hands out, 04.4's snapshot, 06.5's rank and step, 08.3's log) are judged
as the exercise's own: an honest pass on them is "verified", never "own data", and two honest learners are not
flagged as copies for passing the same given input."""
from __future__ import annotations

import ast
import csv
import io
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lumikit.checks import m01, m04, m06, m08
from lumikit.checks import progress as progress_module
from lumikit.checks.instructor.rebuilt import FIXED, MIOPEN_LOG, Built
from lumikit.cli import main
from lumikit.jobs import problems, spec
from lumikit.site import load_site
from lumikit.smi import DeviceReading, Snapshot

from .test_progress import _clock_at

REPO = Path(__file__).resolve().parents[2]


def _as(monkeypatch, class_dir: Path, name: str) -> Path:
    folder = class_dir / name / "workbook" / "progress"
    folder.mkdir(parents=True)
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", name)
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    return folder


def _solve_as_the_notebook_does(tmp_path: Path) -> None:
    """01.3, 04.4, 06.5 and 08.3 answered right, on the inputs each exercise gives."""
    from lumikit.trace import TraceAnalyzer, slice_trace
    from lumikit.trace.synth import write_synthetic

    site = load_site("lumi")
    rejected = FIXED["01.3"]["rejected"].build()
    m01.check_rejected_job(problems(rejected, site)[0].field, rejected.with_(cpus_per_task=site.node.cpus_per_gcd),
                           rejected)
    m04.check_busy_without_power("busy-without-power", False, FIXED["04.4"]["snapshot"].build())
    write_synthetic(tmp_path / "traces", m06.exercise_trace_spec())
    analyzer = TraceAnalyzer.from_path(tmp_path / "traces")
    straggler = analyzer.get_straggler()
    written = slice_trace(None, tmp_path / "slices" / f"rank{straggler}-step11.pt.trace.json.gz", steps=(11, 11),
                          ranks=[straggler], trace=analyzer.trace)
    m06.check_perfetto_slice(written[0], rank=straggler, step=11)
    recipe = next(name for name, values in site.env.items() if "MIOPEN_USER_DB_PATH" in values)
    m08.check_miopen_fix(recipe, MIOPEN_LOG)


def test_honest_passes_on_the_exercises_inputs_are_verified_and_not_copies(monkeypatch, tmp_path, capsys) -> None:
    class_dir = tmp_path / "class"
    for minute, name in enumerate(("ada", "bo")):  # each in their own minute (same-second passes are a flag)
        monkeypatch.setattr(progress_module, "datetime", _clock_at(datetime(2026, 11, 26, 10, minute,
                                                                            tzinfo=timezone.utc)))
        _as(monkeypatch, class_dir, name)
        _solve_as_the_notebook_does(tmp_path / name)
    assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(tmp_path / "g.csv")]) == 0
    capsys.readouterr()
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}
    for name in ("ada", "bo"):
        assert [rows[name][e] for e in ("01.3", "04.4", "06.5", "08.3")] == ["verified"] * 4, rows[name]
        assert "copy?" not in rows[name]["not verified"]


def test_a_pass_on_another_input_than_the_exercises_is_own_data(monkeypatch, tmp_path, capsys) -> None:
    _as(monkeypatch, tmp_path / "class", "eve")
    site = load_site("lumi")
    other = FIXED["01.3"]["rejected"].build().with_(command=("python", "mine.py"), time="2:00:00")
    m01.check_rejected_job(problems(other, site)[0].field, other.with_(cpus_per_task=site.node.cpus_per_gcd), other)
    assert main(["progress", "--class", str(tmp_path / "class"), "--grade", "--csv", str(tmp_path / "g.csv")]) == 0
    capsys.readouterr()
    row = next(csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text())))
    assert row["01.3"] == "own data" and "01.3: own data (rejected)" in row["not verified"]


def _assigned(source: str, name: str) -> ast.expr:
    """The expression assigned to ``name`` at the top level of a solution file."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    raise AssertionError(f"no `{name} = ...` in the solution")


def _value(expr: ast.expr, names: dict) -> object:
    return eval(compile(ast.Expression(expr), "<solution>", "eval"), names)  # noqa: S307 - the repository's own file


@pytest.mark.parametrize("exercise,argument,stem,variable", [
    ("01.3", "rejected", "01_node_and_slurm", "rejected"),
    ("04.4", "snapshot", "04_watching_the_gpu", "waiting"),
])
def test_the_declared_inputs_are_the_ones_the_solutions_hand_out(exercise, argument, stem, variable) -> None:
    source = (REPO / "solutions" / f"{stem}.py").read_text()
    handed_out = _value(_assigned(source, variable), {"spec": spec, "Snapshot": Snapshot,
                                                      "DeviceReading": DeviceReading})
    declared = FIXED[exercise][argument]
    assert (declared.build() if isinstance(declared, Built) else declared) == handed_out


def test_08_3s_log_and_06_5s_step_are_the_solutions() -> None:
    source = (REPO / "solutions" / "08_several_nodes.py").read_text()
    writes = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "write_text" and isinstance(n.func.value, ast.Name) and n.func.value.id == "miopen_log"]
    assert [ast.literal_eval(w.args[0]) for w in writes] == [MIOPEN_LOG]
    source = (REPO / "solutions" / "06_reading_traces.py").read_text()
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "check_perfetto_slice"]
    keywords = {k.arg: ast.unparse(k.value) for k in calls[0].keywords}
    assert keywords == {"rank": "analyzer.get_straggler()", "step": str(FIXED["06.5"]["step"])}
