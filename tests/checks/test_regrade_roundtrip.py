"""The regradable claim, proven on real records: run solution notebooks as a learner (recording on), then regrade
every record from its JSON alone, as the instructor would, and require each regradable pass to pass again."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lumikit.checks.instructor.grading import check_functions, regradable, rerun
from lumikit.checks.instructor.notebook import run_notebook
from lumikit.checks.progress import read_results

REPO = Path(__file__).resolve().parents[2]
#: Solution notebooks that run in seconds anywhere (no training runs); the terminal tasks among them need Slurm
#: to pass rather than to be "not checked".
FAST = ("01_node_and_slurm", "02_containers_and_envs", "08_several_nodes", "10_jax_on_lumi")


@pytest.mark.notebooks
def test_every_regradable_record_of_a_solution_run_is_regraded_from_its_json(tmp_path) -> None:
    progress = tmp_path / "progress"
    env = {"LUMIKIT_PROGRESS_DIR": str(progress), "LUMIKIT_SEED": "roundtrip-ada", "LUMIKIT_PROGRESS": "on",
           "LUMIKIT_RUNS_DIR": str(tmp_path / "runs"),  # the notebooks' run folders: never the clone's runs/
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    for stem in FAST:
        run_notebook(REPO / "solutions" / f"{stem}.py", env=env)
    functions = check_functions()
    results = read_results(progress)
    assert len(results) >= 25, [r.exercise for r in results]
    verdicts = {}
    for result in results:
        func = functions[result.exercise]
        if not regradable(func) or result.status != "passed":
            continue
        assert result.from_solutions and result.passed_exact, result.exercise  # marked as a solutions run
        verdicts[result.exercise] = rerun(func, result.passed_answers, result.passed_evidence, "roundtrip-ada")
    assert verdicts and all(v == "passed" for v in verdicts.values()), verdicts
    assert len(verdicts) >= 20
