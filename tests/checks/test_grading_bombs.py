"""Grading that no record can bomb or flood: evidence is rebuilt only within declared kinds and sizes (checked
before anything is allocated), and the grader imports nothing from the folder it is started in."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.checks.evidence import ARRAY_BYTES, Unencodable, decode, encode

from .test_grades import _learner_folder

REPO = Path(__file__).resolve().parents[2]
#: The grader's peak memory these records must stay under (the issue's bound).
PEAK_MB = 300


def _bomb(folder: Path, exercise: str, elements: int) -> Path:
    """A claimed pass of ``exercise`` whose ``step_times`` evidence asks numpy for ``elements`` texts of ten
    million characters each (40 MB apiece once allocated)."""
    base = json.loads((folder / "01.q1.json").read_text())
    evidence = {"step_times": {"__array__": ["x"] * elements, "dtype": "U10000000"}}
    answers = {"warm_step_s": 0.1, "first_step_overhead_s": 0.2}
    base.update(exercise=exercise, answers=answers, evidence={}, passed_answers=answers,
                passed_evidence=evidence, passed_exact=True, answers_exact=True, evidence_exact=True, recent=[])
    path = folder / f"{exercise}.json"
    path.write_text(json.dumps(base, separators=(",", ":")))
    return path


def _grade_in_a_child(class_dir: Path, out: Path, cwd: Path | None = None) -> tuple[int, float, str]:
    """Run ``python -m lumikit progress --class DIR --grade`` in a fresh interpreter: (status, its peak memory in
    MB, stderr). The peak is the interpreter's own high-water mark (``VmHWM``, where Linux has it): ``ru_maxrss``
    would also count the test process the child was spawned from, whose peak Linux carries across ``exec``."""
    code = ("import resource, runpy, sys\n"
            "sys.argv = ['lumikit', 'progress', '--class', sys.argv[1], '--grade', '--csv', sys.argv[2]]\n"
            "try:\n    runpy.run_module('lumikit', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as done:\n    status = done.code\n"
            "try:\n    peak = next(int(line.split()[1]) for line in open('/proc/self/status') "
            "if line.startswith('VmHWM:'))\n"
            "except (OSError, StopIteration):\n    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "print('PEAK', peak, status, file=sys.stderr)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LUMIKIT_SEED", None)
    done = subprocess.run([sys.executable, "-c", code, str(class_dir), str(out)], capture_output=True, text=True,
                          env=env, cwd=cwd or REPO, timeout=600)
    line = [x for x in done.stderr.splitlines() if x.startswith("PEAK ")]
    assert line, done.stderr[-2000:]
    _, kb, status = line[-1].split()
    return int(status), int(kb) / 1024, done.stderr


def test_a_966_byte_and_a_1_9_kb_record_asking_for_gigabytes_grade_in_little_memory(monkeypatch, tmp_path) -> None:
    class_dir = tmp_path / "class"
    small = _bomb(_learner_folder(monkeypatch, class_dir, "ada"), "03.1", 55)  # 55 x 40 MB = 2.2 GB
    large = _bomb(_learner_folder(monkeypatch, class_dir, "bo"), "03.1", 200)  # 200 x 40 MB = 7.45 GiB
    assert small.stat().st_size < 1000 and large.stat().st_size < 2000, (small.stat(), large.stat())
    status, peak_mb, err = _grade_in_a_child(class_dir, tmp_path / "g.csv")
    assert status == 0, err[-2000:]
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}
    for name in ("ada", "bo"):
        assert rows[name]["04.1"] == "verified"  # the learner's other work is graded
        assert rows[name]["03.1"] == "self-reported" and "could not be read back" in rows[name]["not verified"]
    assert peak_mb < PEAK_MB, f"the grader peaked at {peak_mb:.0f} MB"


@pytest.mark.parametrize("dtype", ["U10000000", "(1000000000,)f8", "object", "V8", "S100", "O", "float64,int8",
                                   "U2000000000", "M8[" + "s" * 40 + "]"])
def test_an_array_of_a_kind_not_declared_is_refused_before_numpy_sees_it(dtype) -> None:
    with pytest.raises(Unencodable, match="not a kind"):
        decode({"__array__": ["1"], "dtype": dtype})


def test_sizes_are_counted_from_the_record_before_allocation() -> None:
    with pytest.raises(Unencodable, match="more than 100,000 elements"):
        decode({"__array__": [[0] * 1000] * 101, "dtype": "float64"})  # a small JSON text of many references
    with pytest.raises(Unencodable, match="bytes"):
        decode({"__array__": ["x"] * 5000, "dtype": "U1000"})  # 5,000 x 4 kB = 20 MB > the byte cap
    assert 5000 * 4000 > ARRAY_BYTES
    with pytest.raises(Unencodable, match="cells"):
        decode({"__frame__": {"index": list(range(1000)), "columns": list(range(1000)), "data": []}})


def test_the_arrays_and_tables_lumikit_records_come_back_unchanged() -> None:
    import numpy as np
    import pandas as pd

    for value in (np.arange(5), np.array([1.5, 2.0]), np.array(["ab", "c"]), np.array([True, False]),
                  np.zeros((3, 4), dtype="float32"), np.array(["2026-01-01"], dtype="datetime64[ns]")):
        back = decode(encode(value))
        assert back.dtype == value.dtype and (back == value).all()
    frame = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    assert decode(encode(frame)).equals(frame)


def _planted(class_dir: Path, marker: Path) -> None:
    """Folders named like the libraries the grader imports, each writing ``marker`` when imported."""
    for name in ("pandas", "numpy", "torch", "jupytext", "nbformat", "msgspec", "matplotlib"):
        (class_dir / name).mkdir()
        (class_dir / name / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + ' ran\\n')\n")


def test_grading_and_the_class_view_started_inside_the_class_folder_run_no_planted_code(monkeypatch,
                                                                                        tmp_path) -> None:
    class_dir = tmp_path / "class"
    _learner_folder(monkeypatch, class_dir, "ada")
    marker = tmp_path / "planted-code-ran"
    _planted(class_dir, marker)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LUMIKIT_SEED", None)
    for argv in (["progress", "--class", ".", "--grade", "--references", str(REPO), "--csv", str(tmp_path / "g.csv")],
                 ["class", ".", "--once"]):
        done = subprocess.run([sys.executable, "-m", "lumikit", *argv], cwd=class_dir, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert not marker.exists(), f"{argv[0]}: {marker.read_text()}"
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}
    assert rows["ada"]["04.1"] == "verified"  # the grading did import pandas and run the checks: the real ones


def test_a_notebook_kernel_in_the_class_folder_grades_without_importing_from_it(monkeypatch, tmp_path) -> None:
    """A Jupyter kernel has '' (its folder) on sys.path: the grader's and the class view's imports skip it, and
    the notebook's own cells keep importing from their folder afterwards."""
    import importlib

    from lumikit.importpath import no_cwd_imports

    (tmp_path / "hE1_planted_lib.py").write_text("VALUE = 'from the current folder'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    with no_cwd_imports():
        assert "" not in sys.path
        with pytest.raises(ImportError):
            importlib.import_module("hE1_planted_lib")
    assert sys.path[0] == ""
    assert importlib.import_module("hE1_planted_lib").VALUE == "from the current folder"
    sys.modules.pop("hE1_planted_lib", None)


def test_grades_and_open_answers_are_private_whatever_the_umask_unless_shared(monkeypatch, tmp_path, capsys) -> None:
    import stat

    from lumikit.cli import main

    _learner_folder(monkeypatch, tmp_path / "class", "ada")
    old = os.umask(0o002)
    try:
        for extra, mode in (([], 0o600), (["--share-group"], 0o640)):
            out = tmp_path / ("shared" if extra else "private")
            assert main(["progress", "--class", str(tmp_path / "class"), "--csv", str(out.with_suffix(".csv")),
                         "--open-answers", str(out.with_suffix(".md")), *extra]) == 0
            for path in (out.with_suffix(".csv"), out.with_suffix(".md")):
                assert stat.S_IMODE(path.stat().st_mode) == mode, path
    finally:
        os.umask(old)
    capsys.readouterr()
