"""Helpers for the lumi-sim cluster tests, as fixtures: Slurm commands bound to one cluster, and a private
second cluster. (Test modules cannot import this file under --import-mode=importlib; they get it by fixture.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "slurm-sim"
PRIVATE_PORT_BASE = 7917  # far from the shared cluster's ports (6817..6840)
FAULTY_PORT_BASE = 8117  # the fault tests' own cluster (tests/slurm_sim/test_faults.py)
T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.3) -> T:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@dataclass(frozen=True)
class Slurm:
    """The raw Slurm commands, pointed at one cluster by its slurm.conf."""

    conf: Path

    def __call__(self, *argv: str, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run one command; never raises on a non-zero exit."""
        return subprocess.run(list(argv), env={**os.environ, "SLURM_CONF": str(self.conf)}, capture_output=True,
                              text=True, timeout=timeout, cwd=cwd)

    def node_states(self) -> dict[str, str]:
        """Node name -> sinfo's long state (idle, mixed, down, ...)."""
        out = self("sinfo", "-h", "-N", "-p", "small-g", "-o", "%N %T")
        assert out.returncode == 0, out.stderr
        return dict(line.split() for line in out.stdout.splitlines())

    def wait_idle(self, timeout: float = 60) -> dict[str, str]:
        """Wait until every node is idle (jobs of earlier tests may still be ending) and return the states."""
        def idle() -> dict[str, str] | None:
            states = self.node_states()
            return states if set(states.values()) == {"idle"} else None
        return wait_for(idle, timeout, f"every node of {self.conf} to be idle")

    def job_field(self, job_id: str, name: str) -> str | None:
        """One ``Name=value`` field of ``scontrol show job``."""
        for item in self("scontrol", "-o", "show", "job", job_id).stdout.split():
            key, _, value = item.partition("=")
            if key == name:
                return value
        return None

    def wait_job_done(self, job_id: str, timeout: float = 60) -> str:
        """Wait until a job has ended and return its final state (COMPLETED, FAILED, NODE_FAIL, ...)."""
        def final() -> str | None:
            state = self.job_field(job_id, "JobState")
            return state if state not in (None, "PENDING", "RUNNING", "COMPLETING", "CONFIGURING") else None
        return wait_for(final, timeout, f"job {job_id} to end")

    def sbatch(self, *args: str, cwd: Path | None = None) -> str:
        """Submit with ``sbatch --parsable`` and return the job id (fails the test on a rejection)."""
        out = self("sbatch", "--parsable", *args, cwd=cwd)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip().split(";")[0]


@dataclass(frozen=True)
class SimScripts:
    """The cluster scripts, bound to one cluster folder, port base and knobs."""

    sim_dir: Path
    port_base: int
    knobs: dict[str, str]

    @property
    def slurm(self) -> Slurm:
        return Slurm(self.sim_dir / "etc" / "slurm.conf")

    @property
    def mode(self) -> dict:
        return json.loads((self.sim_dir / "mode.json").read_text())

    def run(self, script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.knobs, "LUMIKIT_SLURM_SIM_DIR": str(self.sim_dir),
               "LUMIKIT_SLURM_PORT_BASE": str(self.port_base)}
        return subprocess.run(["bash", str(SCRIPTS / script), *args], env=env, capture_output=True, text=True,
                              timeout=timeout)

    def pids(self) -> dict[str, str]:
        """PID file name -> contents, for every daemon's PID file."""
        return {p.name: p.read_text().strip() for p in sorted((self.sim_dir / "state").rglob("*.pid"))}


@pytest.fixture(scope="session")
def scripts_dir() -> Path:
    return SCRIPTS


@pytest.fixture(scope="session")
def sl(slurm_cluster) -> Slurm:
    """Slurm commands against the shared, running lumi-sim cluster."""
    return Slurm(slurm_cluster.conf)


@pytest.fixture(scope="session")
def poll() -> Callable[..., object]:
    """``poll(predicate, timeout, what)``: wait until the predicate holds (see ``wait_for``)."""
    return wait_for


@contextmanager
def private_cluster(port_base: int, knobs: dict[str, str]) -> Iterator[SimScripts]:
    """A private lumi-sim (own folder and ports) with the given knobs, up for the block, then stopped and purged.

    It needs what the shared cluster needs (the packages, root), so it runs where ``slurm_cluster`` does.
    """
    # Not below pytest's 0700 temporary folders: munged wants every folder above its socket searchable.
    sim_dir = Path(tempfile.mkdtemp(prefix="lumikit-slurm-sim-test-"))
    sim_dir.chmod(0o755)
    sim = SimScripts(sim_dir=sim_dir, port_base=port_base, knobs={**knobs, "LUMIKIT_SLURM_INSTALL": "0"})
    up = sim.run("up.sh")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield sim
    finally:
        down = sim.run("down.sh", "--purge")
        assert down.returncode == 0, down.stdout + down.stderr
        shutil.rmtree(sim_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def lumi_shaped_cluster(slurm_admin) -> Iterator[SimScripts]:
    """A second, private cluster in LUMI-shaped mode without accounting (own folder and ports), stopped after."""
    with private_cluster(PRIVATE_PORT_BASE, {"LUMIKIT_SLURM_PROFILE": "lumi", "LUMIKIT_SLURM_ACCOUNTING": "0"}) as sim:
        yield sim


@pytest.fixture(scope="module")
def faulty_cluster(slurm_admin, monkeypatch_module) -> Iterator[SimScripts]:
    """A private cluster with accounting (its daemons are killed by the fault tests), and lumikit's site
    ``lumi-sim`` pointed at it for the module (LUMIKIT_SLURM_SIM_DIR)."""
    with private_cluster(FAULTY_PORT_BASE, {"LUMIKIT_SLURM_PROFILE": "lumi", "LUMIKIT_SLURM_ACCOUNTING": "1"}) as sim:
        monkeypatch_module.setenv("LUMIKIT_SLURM_SIM_DIR", str(sim.sim_dir))
        yield sim


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    """A MonkeyPatch whose changes last for one test module."""
    with pytest.MonkeyPatch.context() as mp:
        yield mp
