"""The local backend runs a job spec's ranks here with Slurm's environment, and reports like Slurm would."""
from __future__ import annotations

import json
import sys
import threading

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch import RunFolder, launch, open_run
from lumikit.launch.runfolder import redact
from lumikit.launch.states import normalise

PY = sys.executable


def run_local(tmp_path, command, **options):
    return launch(spec(command, **options), site="laptop", backend="local", runs_dir=tmp_path)


def test_two_ranks_get_the_environment_slurm_would_give(tmp_path):
    code = ("import os; print(*[os.environ[k] for k in ('SLURM_PROCID','SLURM_LOCALID','SLURM_NTASKS','RANK',"
            "'LOCAL_RANK','WORLD_SIZE','MASTER_ADDR')], os.environ['MASTER_PORT'].isdigit())")
    run = run_local(tmp_path, [PY, "-c", code], ntasks_per_node=2)
    assert run.wait(timeout=60, progress=False) == "COMPLETED"
    assert run.stdout(0).split() == ["0", "0", "2", "0", "0", "2", "127.0.0.1", "True"]
    assert run.stdout(1).split() == ["1", "1", "2", "1", "1", "2", "127.0.0.1", "True"]
    m = run.manifest
    assert m["state"] == "COMPLETED" and m["exit_code"] == 0 and m["start_time"] and m["end_time"]
    assert m["spec"]["ntasks_per_node"] == 2 and m["backend"] == "local" and m["site"] == "laptop"


def test_two_nodes_are_simulated_as_node_ids(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import os; print(os.environ['SLURM_NODEID'], os.environ['LOCAL_RANK'])"],
                    nodes=2, ntasks_per_node=2)
    run.wait(timeout=60, progress=False)
    assert [run.stdout(r).split() for r in range(4)] == [["0", "0"], ["0", "1"], ["1", "0"], ["1", "1"]]


def test_exit_3_is_failed_with_the_code_and_the_log_tail(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"])
    with pytest.raises(LaunchError) as err:
        run.result(timeout=60, progress=False)
    assert "FAILED (exit code 3)" in str(err.value) and "boom" in str(err.value)
    assert run.manifest["exit_code"] == 3


def test_cancel_gives_cancelled(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import time; print('started', flush=True); time.sleep(60)"])
    for _ in range(100):
        if "started" in run.stdout():
            break
        threading.Event().wait(0.1)
    run.cancel()
    assert run.wait(timeout=30, progress=False) == "CANCELLED"


def test_time_limit_gives_timeout(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import time; time.sleep(60)"], time="0:02")
    assert run.wait(timeout=30, progress=False) == "TIMEOUT"


def test_wait_gives_up_after_its_timeout_without_killing_the_job(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import time; time.sleep(30)"])
    with pytest.raises(LaunchError, match="still RUNNING|still PENDING"):
        run.wait(timeout=1, poll=0.2, progress=False)
    assert run.status() == "RUNNING"
    run.cancel()
    assert run.wait(timeout=30, progress=False) == "CANCELLED"


def test_run_folders_are_never_reused_even_concurrently(tmp_path):
    folders: list[RunFolder] = []
    threads = [threading.Thread(target=lambda: folders.append(RunFolder.create("same", tmp_path))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({f.path for f in folders}) == 20


def test_manifest_redacts_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abc")
    monkeypatch.setenv("MY_API_KEY", "k")
    run = run_local(tmp_path, [PY, "-c", "pass"])
    run.wait(timeout=60, progress=False)
    env = json.loads((run.path / "manifest.json").read_text())["environment"]
    assert env["HF_TOKEN"] == "<redacted>" and env["MY_API_KEY"] == "<redacted>"
    assert redact({"PATH": "/bin"}) == {"PATH": "/bin"}


def test_a_run_reopens_from_its_folder(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "print(42)"])
    run.wait(timeout=60, progress=False)
    again = open_run(run.path)
    assert again.status() == "COMPLETED" and again.stdout().strip() == "42"
    with pytest.raises(LaunchError, match="not a run folder"):
        open_run(tmp_path)


def test_dry_run_records_and_runs_nothing(tmp_path):
    run = launch(spec(["python", "train.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8),
                 site="lumi", backend="dry-run", runs_dir=tmp_path)
    assert run.status() == "COMPLETED"
    assert (run.path / "job.sbatch").read_text().startswith("#!/bin/bash")
    assert "srun" in run.manifest["command"]["srun"]


def test_invalid_specs_never_reach_a_backend(tmp_path):
    with pytest.raises(Exception, match="8 GCDs"):
        run_local(tmp_path, ["true"], gpus_per_node=9)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("slurm, ours", [("CANCELLED by 0", "CANCELLED"), ("COMPLETING", "RUNNING"),
                                          ("OUT_OF_MEMORY", "OUT_OF_MEMORY"), ("BOOT_FAIL", "NODE_FAIL"),
                                          ("TIMEOUT", "TIMEOUT")])
def test_slurm_state_spellings(slurm, ours):
    assert normalise(slurm) == ours


def test_a_fifo_in_place_of_a_rank_log_is_refused_at_once_not_read(tmp_path):
    import os

    from lumikit.errors import LumikitError

    run = run_local(tmp_path, [PY, "-c", "print(42)"])
    run.wait(timeout=60, progress=False)
    log = run.folder.rank_log(0, "out")
    log.unlink()
    os.mkfifo(log)
    with pytest.raises(LumikitError, match="not a regular file"):
        open_run(run.path).stdout()


def test_of_a_huge_log_only_its_end_is_read(tmp_path, monkeypatch):
    from lumikit.launch import backend

    run = run_local(tmp_path, [PY, "-c", "print('x' * 5000); print('the last line')"])
    run.wait(timeout=60, progress=False)
    monkeypatch.setattr(backend, "LOG_READ_LIMIT", 100)
    out = open_run(run.path).stdout()
    assert out.startswith("[... the first ") and out.rstrip().endswith("the last line")
