"""Slurm's own commands, typed by the learner, run from a notebook cell as in a terminal.

The exercises of modules 01, 03, 04 and 08 have the learner type ``sbatch``, ``squeue``, ``sacct``, ``scancel``,
``salloc`` and ``srun`` themselves. :func:`find_cluster` says which Slurm cluster this kernel reaches (LUMI's own,
or the local ``lumi-sim`` cluster when it is up) and :func:`sh` runs one command line there, printing it and its
output as a terminal would. Where no cluster is reachable (a laptop), :func:`sh` runs nothing and returns a result
whose ``skipped`` says why, so the exercise cells still run and their checks grade what can be graded.

The command line is the learner's own text (as in a terminal or a ``!`` line), so it runs under ``bash -c``; lumikit's
own Slurm calls (:mod:`lumikit.launch.slurm`) use argv lists.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import load_config
from ..errors import LaunchError
from .states import is_final

#: Where lumi-sim (scripts/slurm-sim) keeps its configuration and mode.json.
SIM_DIR_DEFAULT = "/tmp/lumikit-slurm-sim"


@dataclass(frozen=True)
class Cluster:
    """A Slurm cluster this kernel can reach, and the shape of one GPU node there."""

    name: str  # "lumi-sim", or the cluster name Slurm reports (e.g. "lumi")
    env: dict[str, str] = field(repr=False)  # the environment for Slurm commands (SLURM_CONF for lumi-sim)
    account: str | None  # the project to charge: lumi-sim's course account, or the user's configured one
    gpu_partition: str
    cpus_per_node: int
    gpus_per_node: int
    #: Whether a task's --cpu-bind mask is applied. lumi-sim's default (LUMI-shaped) nodes claim 128 CPUs this
    #: machine lacks, so they accept LUMI's masks without applying them; its `real` profile applies them.
    applies_binding: bool = True

    @property
    def tasks_per_node(self) -> int:
        """How many one-core, one-GPU tasks fit on one node (8 on LUMI and lumi-sim's LUMI-shaped nodes; 2 on
        lumi-sim's `real` profile on a 2-core machine)."""
        return max(1, min(self.cpus_per_node, self.gpus_per_node))


@dataclass(frozen=True)
class ShellResult:
    """One command line and what it printed; ``skipped`` says why it did not run (no Slurm here)."""

    command: str
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    skipped: str | None = None
    #: False when it ran on a cluster that accepts --cpu-bind masks without applying them (see Cluster)
    binding_applied: bool = True

    @property
    def ran(self) -> bool:
        return self.skipped is None

    def __str__(self) -> str:
        return self.stdout


def sim_dir() -> Path:
    """lumi-sim's folder (``$LUMIKIT_SLURM_SIM_DIR`` or /tmp/lumikit-slurm-sim)."""
    return Path(os.environ.get("LUMIKIT_SLURM_SIM_DIR") or SIM_DIR_DEFAULT)


def find_cluster(timeout: float = 15) -> tuple[Cluster | None, str]:
    """The Slurm cluster this kernel reaches, or None and why not (one sentence a learner can act on)."""
    if shutil.which("sinfo") is None:
        return None, ("no Slurm client on this machine (no `sinfo`): the commands are shown but not run. Run this "
                      "notebook on LUMI, or start the local cluster with `make slurm-up`")
    env = dict(os.environ)
    mode_file = sim_dir() / "mode.json"
    name, account, partition, binding = "", load_config().account, "standard-g", True
    if mode_file.is_file():
        try:
            mode = json.loads(mode_file.read_text())
            env["SLURM_CONF"] = str(mode["slurm_conf"])
            name, account = "lumi-sim", mode.get("default_account") or account
            partition = str(mode.get("default_partition") or "small-g")
            binding = mode.get("profile") != "lumi"
        except (OSError, ValueError, KeyError) as exc:
            return None, f"{mode_file} is unreadable ({exc}); restart lumi-sim with `make slurm-up`"
    try:
        out = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%c|%G"], env=env, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"Slurm does not answer `sinfo` within {timeout:.0f} s; is slurmctld up?"
    if out.returncode != 0 or not out.stdout.strip():
        return None, f"`sinfo -p {partition}` fails here ({(out.stderr or out.stdout).strip() or 'no nodes'})"
    cpus, gres = out.stdout.strip().splitlines()[0].split("|", 1)
    if not name:
        cluster = subprocess.run(["scontrol", "show", "config"], env=env, capture_output=True, text=True,
                                 timeout=timeout).stdout
        name = next((line.split("=", 1)[1].strip() for line in cluster.splitlines()
                     if line.startswith("ClusterName")), "slurm")
    return Cluster(name=name, env=env, account=account, gpu_partition=partition,
                   cpus_per_node=int(cpus.rstrip("+")), gpus_per_node=_gpus(gres), applies_binding=binding), ""


def _gpus(gres: str) -> int:
    """``gpu:mi250:8(S:0)`` -> 8; 0 when the node lists no GPUs."""
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            return int(parts[-1])
    return 0


def sh(command: str, cluster: Cluster | None = None, *, timeout: float = 120, quiet: bool = False,
       cwd: str | os.PathLike[str] | None = None) -> ShellResult:
    """Run one command line as in a terminal on ``cluster`` (found when not given); print ``$ command`` and output.

    Returns a skipped result, printing why, when no cluster is reachable; never raises for a command that fails
    (its exit status and stderr are in the result, as a terminal shows them).
    """
    if cluster is None:
        cluster, why = find_cluster()
        if cluster is None:
            if not quiet:
                print(f"$ {command}\n(not run: {why})")
            return ShellResult(command, None, skipped=why)
    try:
        proc = subprocess.run(["bash", "-c", command], env=cluster.env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        err += f"\n(stopped after {timeout:.0f} s: the command was still waiting)"
        result = ShellResult(command, 124, out, err, binding_applied=cluster.applies_binding)
    else:
        result = ShellResult(command, proc.returncode, proc.stdout, proc.stderr,
                             binding_applied=cluster.applies_binding)
    if not quiet:
        print(f"$ {command}")
        if result.stdout:
            print(result.stdout, end="" if result.stdout.endswith("\n") else "\n")
        if result.stderr:
            print(result.stderr, end="" if result.stderr.endswith("\n") else "\n")
    return result


def sacct_rows(job_id: str | int, cluster: Cluster, fields: tuple[str, ...] = (
        "JobID", "JobName", "State", "ExitCode", "Account", "Partition", "NNodes", "NTasks", "Start", "End",
        "SubmitLine")) -> list[dict[str, str]]:
    """The job's accounting records (the allocation, then its steps) as dicts, from ``sacct -P``."""
    proc = subprocess.run(["sacct", "-n", "-P", "-j", str(job_id), "-o", ",".join(fields)], env=cluster.env,
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise LaunchError(f"`sacct -j {job_id}` failed: {(proc.stderr or proc.stdout).strip()}")
    rows = []
    for line in proc.stdout.splitlines():
        values = line.split("|", len(fields) - 1)
        if len(values) == len(fields):
            rows.append(dict(zip(fields, values)))
    return rows


def wait_for_job(job_id: str | int, cluster: Cluster, *, timeout: float = 120, poll: float = 1.0) -> str:
    """Poll ``sacct`` until the job (its allocation record) reaches a final state; returns that state."""
    deadline = time.monotonic() + timeout
    state = "UNKNOWN"
    while time.monotonic() < deadline:
        rows = [r for r in sacct_rows(job_id, cluster, ("JobID", "State")) if r["JobID"] == str(job_id)]
        if rows:
            state = rows[0]["State"].split()[0]
            if is_final(state):
                return state
        time.sleep(poll)
    raise LaunchError(f"job {job_id} is still {state} after {timeout:.0f} s; look at `squeue -j {job_id}`, "
                      f"or stop it with `scancel {job_id}`")
