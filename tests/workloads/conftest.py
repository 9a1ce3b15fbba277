"""Helpers for the workload tests: start N ranks of a workload as subprocesses, with the environment a launcher
(torchrun, or srun's SLURM_* variables) would give, on a free local port."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Mapping, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE",
               "LUMIKIT_PROFILE", "LUMIKIT_PROFILE_DIR", "LUMIKIT_PROFILE_SCHEDULE", "LUMIKIT_MAX_STEPS",
               "LUMIKIT_PROFILE_MEMORY",
               "LUMIKIT_RUN_DIR", "LUMIKIT_CIFAR100", "OMP_NUM_THREADS")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_env(rank: int, world: int, port: int, style: str = "torchrun") -> dict[str, str]:
    """The variables a launcher sets for one rank: torchrun's names, or Slurm's (srun) names."""
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    if style == "torchrun":
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
    else:
        env.update(SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank), SLURM_NTASKS=str(world),
                   SLURM_NTASKS_PER_NODE=str(world))
    return env


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any launcher or lumikit variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env.update(extra or {})
    return env


def run_ranks(module: str, args: Sequence[str], world: int, *, style: str = "torchrun",
              env: Mapping[str, str] | None = None, per_rank_env: Mapping[int, Mapping[str, str]] | None = None,
              timeout: float = 120) -> list[subprocess.CompletedProcess]:
    """Run ``python -m module args`` as ``world`` ranks at once and wait for all of them."""
    port = free_port()
    procs = []
    for rank in range(world):
        full = clean_env(env)
        full.update(rank_env(rank, world, port, style))
        full.update((per_rank_env or {}).get(rank, {}))
        procs.append(subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, env=full, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    results = []
    for rank, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def final_loss(stdout: str) -> str:
    """The value on the ``FINAL loss=...`` line of a rank's output."""
    found = re.findall(r"^FINAL loss=(\S+)$", stdout, flags=re.M)
    assert len(found) == 1, f"expected one FINAL line in:\n{stdout}"
    return found[0]


@pytest.fixture(autouse=True)
def no_launcher_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs must not pick up a launcher or profiler setting from the shell that runs pytest."""
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def launcher() -> SimpleNamespace:
    """The helpers above, for test modules (which cannot import conftest under --import-mode=importlib)."""
    return SimpleNamespace(run_ranks=run_ranks, final_loss=final_loss, free_port=free_port, clean_env=clean_env)
