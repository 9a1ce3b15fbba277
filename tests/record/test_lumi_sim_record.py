"""The issue's acceptance run on lumi-sim: a 2-node GPU job leaves a generated record per node and a report card."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.record import read_record

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[2]
COMMAND = ["run", "--site", "lumi-sim", "--partition", "small-g", "--nodes", "2", "--gpus-per-node", "2",
           "--ntasks-per-node", "2", "--wait", "--", "python3", "-c", "import time; time.sleep(12)"]


def lumikit(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LUMIKIT_RUNS_DIR": str(cwd / "runs")}  # not the clone's runs/
    return subprocess.run([sys.executable, "-m", "lumikit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_two_node_gpu_job_records_both_nodes_and_reports_them(slurm_cluster, tmp_path: Path):
    done = lumikit(COMMAND, tmp_path)
    assert done.returncode == 0, done.stderr
    run = Path(done.stdout.splitlines()[0])
    assert run.parent == tmp_path / "runs" and done.stdout.splitlines()[-1] == "COMPLETED"
    record = read_record(run)
    assert sorted(record) == list(slurm_cluster.nodes)
    for node, sess in record.items():
        assert sess.header.kind == "generated" and len(sess.frames) >= 4, (node, len(sess.frames))
        assert "fake_rocm_smi" in sess.header.source and sess.notes == []
        assert len(sess.snapshots()[-1].devices) == 2  # the job's two GCDs on that node
    text = lumikit(["report", str(run)], tmp_path)
    assert text.returncode == 0, text.stderr
    lines = [line.split() for line in text.stdout.splitlines() if line.startswith("nid")]
    assert sorted((r[0], r[1]) for r in lines) == [(n, g) for n in slurm_cluster.nodes for g in ("0", "1")]
    assert "GPU-hours: billed" in text.stdout and "GENERATED readings" in text.stdout
    card = json.loads(lumikit(["report", str(run), "--json"], tmp_path).stdout)
    assert card["billing"]["billed_gpu_hours"] > 0 and len(card["gcds"]) == 4
    assert all(g["samples"] >= 4 and g["kind"] == "generated" for g in card["gcds"])


def test_a_cancelled_job_keeps_its_record_readable(slurm_cluster, tmp_path: Path):
    from lumikit.jobs.spec import spec
    from lumikit.launch import launch

    run = launch(spec(["sleep", "120"], partition="small-g", gpus_per_node=1, time="0:03:00", name="cut-short"),
                 site="lumi-sim", runs_dir=tmp_path, gpu_record_interval=0.5)
    try:
        for _ in range(240):  # until the recorder has written a few samples
            files = list((run.path / "gpu").glob("*.jsonl"))
            if files and files[0].read_text().count("\n") >= 4:
                break
            import time
            time.sleep(0.5)
    finally:
        run.cancel()
    assert run.wait(timeout=120, progress=False) == "CANCELLED"
    (node, sess), = read_record(run).items()
    assert node in slurm_cluster.nodes and len(sess.frames) >= 3 and len(sess.notes) <= 1
    assert all(len(s.devices) == 1 for s in sess.snapshots())


def test_a_failed_step_keeps_its_exit_code_and_its_record(slurm_cluster, tmp_path: Path):
    from lumikit.jobs.spec import spec
    from lumikit.launch import launch

    run = launch(spec(["python3", "-c", "import sys, time; time.sleep(4); sys.exit(3)"], partition="small-g",
                      gpus_per_node=1, time="0:03:00", name="fails"), site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=300, progress=False) == "FAILED"
    assert run.manifest["exit_code"] == 3
    (sess,) = read_record(run).values()
    assert len(sess.frames) >= 2 and sess.notes == []
    said = "".join(p.read_text() for p in run.path.glob("slurm-*.out"))
    assert "Exited with exit code 3" in said and "Killed" not in said  # the recorder ended cleanly
