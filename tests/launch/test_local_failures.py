"""The local backend when things go wrong: failed starts, killed supervisors, reused PIDs, damaged manifests,
concurrent manifest writers; and the three secrets that must reach the job and nothing else."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch import RunFolder, launch

PY = sys.executable
SECRETS = {"HF_TOKEN": "hf_l0cal_s3cret_one", "WANDB_API_KEY": "wandb-l0cal-s3cret-two",
           "COURSE_PASS_PHRASE": "l0cal-s3cret-three"}


def run_local(tmp_path, command, **options):
    return launch(spec(command, **options), site="laptop", backend="local", runs_dir=tmp_path / "runs")


def wait_for(predicate, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def all_command_lines() -> str:
    """What ps shows: every process's argv."""
    return subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True, check=True).stdout


def folder_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_three_secrets_reach_the_job_and_no_file_argv_or_log(tmp_path, monkeypatch):
    monkeypatch.setenv("LUMIKIT_SECRETS_DIR", str(tmp_path / "secrets"))
    code = ("import hashlib, os, time; print(*[hashlib.sha256(os.environ[k].encode()).hexdigest() for k in "
            f"{sorted(SECRETS)!r}], flush=True); time.sleep(3)")
    run = run_local(tmp_path, [PY, "-c", code], env=SECRETS, secrets=["COURSE_PASS_PHRASE"])
    wait_for(lambda: run.stdout().strip())
    seen = all_command_lines()
    files = list((tmp_path / "secrets").iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert run.wait(timeout=60, progress=False) == "COMPLETED", run.tail()
    assert run.stdout().split() == [hashlib.sha256(SECRETS[k].encode()).hexdigest() for k in sorted(SECRETS)]
    everything = folder_bytes(run.path)
    for value in SECRETS.values():
        assert value.encode() not in everything and value not in seen
    assert not list((tmp_path / "secrets").iterdir())  # the private file goes when the job ends
    assert json.loads((run.path / "manifest.json").read_text())["spec"]["env"][0] == ["HF_TOKEN", "<redacted>"]


def test_a_program_that_cannot_start_says_why_everywhere(tmp_path, capsys):
    assert main(["run", "--site", "laptop", "--runs-dir", str(tmp_path), "--wait", "--", "pythn", "-c", "1"]) == 1
    out, err = capsys.readouterr()
    path = out.splitlines()[0]
    assert out.rstrip().endswith("FAILED")
    assert "exit code 127" in err and "cannot start 'pythn'" in err
    assert main(["status", path]) == 0
    assert "FAILED" in (status := capsys.readouterr().out) and "exit code 127" in status
    assert main(["tail", path]) == 0
    assert "==> rank0.err <==" in (tail := capsys.readouterr().out) and "No such file or directory" in tail


def test_run_wait_streams_rank_0_and_names_the_failing_rank(tmp_path, capsys):
    code = ("import os, sys; r = int(os.environ['RANK']); print('hello from', r, flush=True); "
            "print('rank', r, 'gives up', file=sys.stderr) if r == 1 else None; sys.exit(3 if r == 1 else 0)")
    assert main(["run", "--site", "laptop", "--runs-dir", str(tmp_path), "--wait", "-n", "2", "--",
                 PY, "-c", code]) == 1
    out, err = capsys.readouterr()
    assert "hello from 0" in out and "hello from 1" not in out
    assert "exit code 3 (rank 1)" in err and "rank 1 gives up" in err


def test_a_killed_supervisor_takes_its_ranks_with_it(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"])
    wait_for(lambda: run.stdout().strip())
    rank_pid = int(run.stdout())
    os.kill(run.manifest["supervisor_pid"], signal.SIGKILL)
    wait_for(lambda: run.status() == "FAILED")
    wait_for(lambda: not alive(rank_pid), timeout=10)
    assert "supervisor died" in run.manifest["note"]


def test_cancel_after_a_killed_supervisor_ends_the_ranks(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"])
    wait_for(lambda: run.stdout().strip())
    rank_pid = int(run.stdout())
    os.kill(run.manifest["supervisor_pid"], signal.SIGKILL)
    time.sleep(0.3)
    run.cancel()
    wait_for(lambda: not alive(rank_pid), timeout=10)
    assert run.status() in ("CANCELLED", "FAILED")


def test_cancel_never_signals_a_pid_that_is_no_longer_the_supervisor(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "pass"])
    assert run.wait(timeout=60, progress=False) == "COMPLETED"
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        run.folder.update(supervisor_pid=stranger.pid)  # as if the PID had been reused
        with pytest.raises(LaunchError, match="already ended .COMPLETED.: nothing to cancel"):
            run.cancel()
        run.folder.update(state="RUNNING")  # even a run that looks alive: the start time is not the recorded one
        run.cancel()
        time.sleep(0.3)
        assert stranger.poll() is None, "cancel killed an unrelated process"
    finally:
        stranger.kill()
        stranger.wait()


DAMAGED = [b"", b"{", b"[]", b"null", b"\xff\xfe\x00", b'{"supervisor_pid": "abc", "backend": "local"}',
           b'{"backend": 5}', b'{"site": "no-such-site", "backend": "local"}', b'{"state": 3}', b'{"job_id": []}',
           b'{"spec": "x", "backend": "local", "site": "laptop"}', b'{"exit_code": "zero"}']


@pytest.mark.parametrize("content", DAMAGED)
@pytest.mark.parametrize("command", ["status", "tail", "cancel"])
def test_a_damaged_manifest_is_one_clear_line(content, command, tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(content)
    assert main([command, str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lumikit: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("pid", [-1, 0, 1])
def test_a_pid_that_would_signal_a_whole_group_is_damage(pid, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"backend": "local", "site": "laptop", "supervisor_pid": pid}))
    with pytest.raises(LaunchError, match="supervisor_pid"):
        RunFolder(tmp_path).read()


def test_cancel_without_a_recorded_start_checks_the_command_line(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "pass"])
    assert run.wait(timeout=60, progress=False) == "COMPLETED"
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        run.folder.update(supervisor_pid=stranger.pid, supervisor_start=None, state="RUNNING")
        run.cancel()
        time.sleep(0.3)
        assert stranger.poll() is None, "cancel killed an unrelated process"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_supervisor_without_a_recorded_start_is_known_by_its_command_line(tmp_path):
    run = run_local(tmp_path, [PY, "-c", "import time; print('up', flush=True); time.sleep(60)"])
    wait_for(lambda: run.stdout().strip())
    run.folder.update(supervisor_start=None)  # a manifest from before start times were recorded
    assert run.status() == "RUNNING"
    run.cancel()
    assert run.wait(timeout=30, progress=False) == "CANCELLED"


def test_concurrent_manifest_updates_lose_nothing(tmp_path):
    folder = RunFolder.create("race", tmp_path)
    folder.update(state="PENDING")

    def writer(n: int) -> None:
        for i in range(40):
            folder.update(**{f"w{n}_{i}": i})
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([k for k in folder.read() if k.startswith("w")]) == 160


@pytest.mark.parametrize("backend", ["dry-run", "local"])
def test_a_launch_validates_once(backend, tmp_path, monkeypatch):
    validation = sys.modules["lumikit.jobs.validate"]  # the package's `validate` name is the function
    calls = []
    real = validation.problems
    monkeypatch.setattr(validation, "problems", lambda s, site: calls.append(s) or real(s, site))
    run = launch(spec([PY, "-c", "pass"], ntasks_per_node=2), site="laptop", backend=backend,
                 runs_dir=tmp_path / "runs")
    assert run.wait(timeout=60, progress=False) == "COMPLETED"
    assert len(calls) == 1
