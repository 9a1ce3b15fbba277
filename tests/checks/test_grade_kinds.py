""""Verified" means the instructor rebuilt it: invented evidence for data generated from the seed is caught, the
learner's own measurements are "own data" (consistent, not verified), pasted terminal output is "not checked"."""
from __future__ import annotations

import csv
import io
import statistics

from lumikit.checks import m05, m09
from lumikit.checks.instructor.class_records import CELLS
from lumikit.checks.seeds import check_jax_job
from lumikit.cli import main
from lumikit.jobs import spec


def _as(monkeypatch, class_dir, name):
    folder = class_dir / name / "workbook" / "progress"
    folder.mkdir(parents=True)
    monkeypatch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
    monkeypatch.setenv("LUMIKIT_LEARNER", name)
    monkeypatch.delenv("LUMIKIT_SEED", raising=False)
    return folder


def _grade(class_dir, tmp_path, capsys, *extra):
    assert main(["progress", "--class", str(class_dir), "--grade", "--csv", str(tmp_path / "g.csv"), *extra]) == 0
    capsys.readouterr()
    return {r["learner"]: r for r in csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text()))}


def _jax_job():
    return spec(["python", "-c", "import jax; print(jax.devices())"], partition="small-g", gpus_per_node=2,
                time="0:05:00", container="jax", env={"PYTHONNOUSERSITE": "1"})


def test_invented_evidence_is_never_verified_and_own_data_and_pasted_output_say_so(monkeypatch, tmp_path,
                                                                                    capsys) -> None:
    class_dir = tmp_path / "class"
    _as(monkeypatch, class_dir, "ada")  # honest: the generated data as the notebook gives it
    steps = m05.warmup_steps()
    m05.check_warmup_cost(steps[0] - statistics.median(steps[1:]), steps)
    m09.check_archive_speedup(0.5 / 0.01, 0.5, 0.01)  # her own measured read times
    check_jax_job(_jax_job(), 2, "")  # did not run here: nothing pasted
    _as(monkeypatch, class_dir, "eve")  # ran nothing: invented steps, read times and a pasted device list
    invented = [20.0] + [0.1] * 9
    m05.check_warmup_cost(19.9, invented)
    m09.check_archive_speedup(3.0, 3.0, 1.0)
    check_jax_job(_jax_job(), 2, "[RocmDevice(id=0), RocmDevice(id=1)]")

    rows = _grade(class_dir, tmp_path, capsys)
    assert rows["ada"]["05.W2"] == "verified"
    assert rows["eve"]["05.W2"] == "disagrees"
    assert "05.W2: the recorded pass fails the instructor's check on the data rebuilt from the learner's seed" \
        in rows["eve"]["not verified"]
    for name in ("ada", "eve"):
        assert rows[name]["09.1"] == "own data"
        assert "09.1: own data (small_files_s, one_file_s)" in rows[name]["not verified"]
    assert rows["ada"]["10.S1"] == "verified"  # nothing pasted: the job spec is judged on its own
    assert rows["eve"]["10.S1"] == "not checked"
    assert "pasted terminal output (jax_output)" in rows["eve"]["not verified"]
    assert (rows["ada"]["verified"], rows["ada"]["own data"]) == ("2", "1")
    assert (rows["eve"]["verified"], rows["eve"]["own data"], rows["eve"]["not checked"]) == ("0", "1", "1")
    assert "own data" in CELLS


def test_the_best_cell_of_each_exercise_is_counted(capsys) -> None:
    """What a claimed pass can get at best, per exercise: the count the closing note gives."""
    from collections import Counter
    from pathlib import Path

    from lumikit.checks.instructor.grading import best_cell, check_functions
    from lumikit.checks.learner import workbook_root
    from lumikit.checks.progress import workbook_exercises

    functions = check_functions()
    exercises = workbook_exercises(workbook_root(Path(__file__).resolve().parents[2]))
    best = {e: best_cell(e, functions[e]) for e in exercises}
    print(Counter(best.values()), sorted(e for e, c in best.items() if c == "own data"))
    assert {best[e] for e in ("05.W2", "05.P1", "06.1", "06.2", "06.C1", "08.2", "04.1", "01.q1")} == {"verified"}
    assert {best[e] for e in ("09.1", "03.1", "07.3", "11.A")} == {"own data"}
    assert {best[e] for e in ("01.T2", "08.T1", "10.S1")} == {"not checked"}
    assert best["05.M1"] == "self-reported"


def test_a_named_run_folder_is_hashed_at_check_time_and_a_change_is_not_verified(monkeypatch, tmp_path,
                                                                                 capsys) -> None:
    """11.A's check reads the capstone's run folder: the record keeps its hash, the grade compares it (reading the
    files as bytes, never handing the folder to a check); an edit after the pass, or a folder elsewhere, is named."""
    import json

    from lumikit.checks.progress import record

    class_dir = tmp_path / "class"
    text = "Rank 2 waited for data: 40% of its step, 4 workers fixed it, 1.7x faster, 3 views agree."
    for name in ("ada", "bob", "eve"):
        folder = _as(monkeypatch, class_dir, name)
        run = (class_dir / name if name != "eve" else tmp_path / "elsewhere") / "runs" / "before"
        run.mkdir(parents=True)
        (run / "result.rank0.json").write_text(json.dumps({"rank": 0, "step_s": 0.5}))
        record("11.A", {"conclusion": text + name}, passed=True, unanswered=False, message="ok",
               evidence={"before_dir": run, "after_dir": run})
        kept = json.loads((folder / "11.A.json").read_text())["passed_run_folders"]["before_dir"]
        assert kept["files"] == 1 and len(kept["sha256"]) == 64
    (class_dir / "bob" / "runs" / "before" / "result.rank0.json").write_text('{"rank": 0, "step_s": 0.1}')
    rows = _grade(class_dir, tmp_path, capsys)
    assert rows["ada"]["11.A"] == "own data" and "unchanged since the check passed" in rows["ada"]["not verified"]
    assert rows["bob"]["11.A"] == "self-reported"
    assert "before_dir: the run folder changed since the check passed" in rows["bob"]["not verified"]
    assert "the run folder lies outside the learner's folder" in rows["eve"]["not verified"]


def test_the_traces_of_06_are_rebuilt_from_the_seed_and_an_invented_table_fails_on_them(monkeypatch, tmp_path,
                                                                                       capsys) -> None:
    """06.1's kernel breakdown comes from traces generated from the learner's seed: the instructor writes them again
    (in a private folder, inside the fence) and judges the answer on them, whatever table the record holds."""
    from lumikit.checks import m06
    from lumikit.checks.instructor.rebuilt import _exercise_analyzer

    class_dir = tmp_path / "class"
    _as(monkeypatch, class_dir, "ada")
    table = _exercise_analyzer().get_kernel_breakdown()
    mine = table[table["rank"] == 0].sort_values("total_us", ascending=False)
    top, runner_up = str(mine["kclass"].iloc[0]), str(mine["kclass"].iloc[1])
    m06.check_top_kernel_class(top, table, rank=0)
    _as(monkeypatch, class_dir, "eve")  # her own table, where the runner-up class is made the largest
    invented = table.copy()
    invented.loc[(invented["rank"] == 0) & (invented["kclass"] == runner_up), "total_us"] = 10 * mine["total_us"].max()
    m06.check_top_kernel_class(runner_up, invented, rank=0)
    rows = _grade(class_dir, tmp_path, capsys)
    assert rows["ada"]["06.1"] == "verified"
    assert rows["eve"]["06.1"] == "disagrees" and "rebuilt from the learner's seed" in rows["eve"]["not verified"]
