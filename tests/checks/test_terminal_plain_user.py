"""The terminal tasks of modules 03, 04 and 08, run as a plain user on a shared machine, in the three states of the
local cluster: (a) down, (b) up without the user's account, (c) up with it. In (a) and (b) every task says "not
checked here", names the reason and the fix, waits on no job and shows no traceback; in (c) it runs.

The tasks' own solution cells are run as the plain user ``lumitest`` (created when missing), with the system's
Python when the test's own interpreter is not readable by that user (only the standard library is needed). State (a)
is a copy of lumi-sim's configuration whose controller port nobody listens on; lumi-sim itself is never touched.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PLAIN_USER = "lumitest"  # no Slurm account
USER_WITH_ACCOUNT = "lumitest2"  # given one on lumi-sim for state (c), removed afterwards
TERMINAL_MODULES = ("03_first_training_job", "04_watching_the_gpu", "08_several_nodes")

RUNNER = r'''
import json, sys
cells = json.load(open(sys.argv[1]))
space = {}
exec("import re\nfrom pathlib import Path\n", space)
for kind, source in cells:
    if kind == "check":
        print("CHECK:", str(eval(source.strip().splitlines()[-1], space)), flush=True)
    else:
        exec(source, space)
'''


def _user(name: str) -> None:
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-m", name], check=True, capture_output=True)


def _python_for(user: str) -> str:
    """An interpreter the user can run that imports lumikit's terminal tasks (the venv's may live under /root)."""
    for candidate in (sys.executable, shutil.which("python3", path="/usr/bin:/usr/local/bin") or ""):
        probe = subprocess.run(["runuser", "-u", user, "--", "env", f"PYTHONPATH={REPO}", candidate, "-c",
                                "import lumikit.checks.terminal"], capture_output=True, cwd="/tmp")
        if candidate and probe.returncode == 0:
            return candidate
    pytest.skip(f"no Python here that user {user} may run and that imports lumikit")


def terminal_cells(module: str) -> list[tuple[str, str]]:
    """(kind, source) of a solution's cells from the one that finds the cluster to its last terminal check."""
    text = (REPO / "solutions" / f"{module}.py").read_text()
    cells = re.split(r"^# %%(.*)$", text, flags=re.M)[1:]
    pairs = [(head, body) for head, body in zip(cells[::2], cells[1::2]) if "[markdown]" not in head]
    start = next(i for i, (_, body) in enumerate(pairs) if "find_cluster()" in body)
    end = max(i for i, (_, body) in enumerate(pairs) if "terminal_checks.check_" in body)
    picked = []
    for head, body in pairs[start:end + 1]:
        body = body.replace("import lumikit.checks.seeds as seed_checks\n", "")  # pandas: not a terminal task's
        picked.append(("check" if '"check"' in head else "code", body))
    return picked


def run_as(user: str, module: str, tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run one module's terminal cells as ``user`` in a folder of theirs; (the process, its seconds)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{user}-{module}-", dir=tmp_path))
    (work / "cells.json").write_text(json.dumps(terminal_cells(module)))
    (work / "runner.py").write_text(RUNNER)
    shutil.chown(work, user)
    for folder in (tmp_path, work):
        os.chmod(folder, 0o755)
    python = _python_for(user)
    started = time.monotonic()
    proc = subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}",
                           f"PYTHONPATH={REPO}", "LUMIKIT_PROGRESS=off", f"HOME=/home/{user}", f"USER={user}", *[f"{k}={v}" for k, v in env.items()], python, "runner.py",
                           "cells.json"], cwd=work, capture_output=True, text=True, timeout=600)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def plain_tmp() -> Iterator[Path]:
    """A folder the plain user can reach: not below pytest's own, which pytest keeps at mode 0700 for root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a plain user and run the tasks as that user")
    _user(PLAIN_USER)
    path = Path(tempfile.mkdtemp(prefix="lumikit-plain-user-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _down_sim(slurm_cluster, tmp: Path) -> Path:
    """A lumi-sim folder whose configuration points at a controller port nobody listens on (state a)."""
    sim = tmp / "sim-down"
    sim.mkdir(parents=True)
    conf = re.sub(r"^SlurmctldPort=\d+", "SlurmctldPort=6999", slurm_cluster.conf.read_text(), flags=re.M)
    (sim / "slurm.conf").write_text(conf)
    (sim / "mode.json").write_text(json.dumps({**slurm_cluster.mode, "slurm_conf": str(sim / "slurm.conf")}))
    for folder in (sim, sim.parent):
        os.chmod(folder, 0o755)
    return sim


def _assert_not_checked_with_a_fix(proc: subprocess.CompletedProcess, seconds: float, module: str,
                                   reason: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    checks = [line for line in proc.stdout.splitlines() if line.startswith("CHECK:")]
    assert checks and all("not checked here" in line for line in checks), out[-3000:]
    assert re.search(reason, out) and "Fix:" in out, out[-3000:]
    reasons = [line for line in out.splitlines() if "not checked here" in line]
    assert "sinfo: fatal" not in out and not any("standard-g" in line for line in reasons), out[-3000:]
    assert seconds < 120, f"{module} took {seconds:.0f} s: something waited on a job that does not exist"


@pytest.mark.slurm
@pytest.mark.parametrize("module", TERMINAL_MODULES)
def test_without_an_account_each_task_says_not_checked_and_how_to_get_one(slurm_cluster, plain_tmp, module):
    if not slurm_cluster.accounting:
        pytest.skip("this lumi-sim keeps no accounts, so a user without one is not refused")
    proc, seconds = run_as(PLAIN_USER, module, plain_tmp, {"LUMIKIT_SLURM_SIM_DIR": str(slurm_cluster.sim_dir)})
    _assert_not_checked_with_a_fix(proc, seconds, module, rf"user {PLAIN_USER} has no Slurm account")
    assert "LUMIKIT_SLURM_USERS=root," in proc.stdout


@pytest.mark.slurm
@pytest.mark.parametrize("module", TERMINAL_MODULES)
def test_with_the_controller_down_each_task_says_not_checked_and_how_to_start_it(slurm_cluster, plain_tmp, module):
    sim = _down_sim(slurm_cluster, plain_tmp / module)
    proc, seconds = run_as(PLAIN_USER, module, plain_tmp, {"LUMIKIT_SLURM_SIM_DIR": str(sim)})
    _assert_not_checked_with_a_fix(proc, seconds, module, r"controller \(slurmctld\) does not answer")
    assert "make slurm-up" in proc.stdout


@pytest.mark.slurm
def test_with_no_slurm_configuration_the_message_names_none(plain_tmp, tmp_path):
    proc, seconds = run_as(PLAIN_USER, "04_watching_the_gpu", plain_tmp / "none",
                           {"LUMIKIT_SLURM_SIM_DIR": str(plain_tmp / "no-sim-here")})
    _assert_not_checked_with_a_fix(proc, seconds, "04", r"no Slurm cluster is configured here")


@pytest.fixture(scope="module")
def user_with_account(slurm_cluster, plain_tmp):
    """A plain user with an account on lumi-sim (added for this test with sacctmgr, removed after: no restart)."""
    if not slurm_cluster.accounting:
        pytest.skip("this lumi-sim keeps no accounts")
    _user(USER_WITH_ACCOUNT)
    add = subprocess.run(["sacctmgr", "-i", "-Q", "add", "user", USER_WITH_ACCOUNT, f"Account={slurm_cluster.account}",
                          f"DefaultAccount={slurm_cluster.account}", f"Cluster={slurm_cluster.mode['cluster']}"],
                         env=slurm_cluster.env, capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    try:
        yield USER_WITH_ACCOUNT
    finally:
        subprocess.run(["sacctmgr", "-i", "-Q", "delete", "user", USER_WITH_ACCOUNT], env=slurm_cluster.env,
                       capture_output=True, timeout=60)


@pytest.mark.slurm
def test_with_an_account_the_plain_users_allocation_task_runs_and_passes(slurm_cluster, plain_tmp, user_with_account):
    proc, _ = run_as(user_with_account, "04_watching_the_gpu", plain_tmp,
                     {"LUMIKIT_SLURM_SIM_DIR": str(slurm_cluster.sim_dir)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert "CHECK: ✓" in proc.stdout or "passed" in proc.stdout.split("CHECK:")[-1], out[-3000:]
