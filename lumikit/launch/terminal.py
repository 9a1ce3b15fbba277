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


#: How long a "no" from :func:`find_cluster` is remembered: a cell's commands each ask again, and a controller that
#: is down takes ~10 s to say so each time.
REFUSAL_TTL_S = 60.0
_refusals: dict[tuple, tuple[float, str]] = {}


def find_cluster(timeout: float = 15, *, sim: Path | None = None) -> tuple[Cluster | None, str]:
    """The Slurm cluster where this user can submit, or None and why not (one sentence naming the fix).

    The one "can I submit here?" test of the workbook: the terminal tasks, ``lumikit verify`` and the test suite's
    Slurm skip all use it. It asks three things: a Slurm configuration and a controller that answers, a GPU partition
    with nodes, and (where Slurm keeps accounts) an account for this user. A "no" is remembered for a minute.
    """
    mode_file = (sim or sim_dir()) / "mode.json"
    try:
        started = mode_file.stat().st_mtime_ns  # a restart of lumi-sim asks again
    except OSError:
        started = None
    key = (str(mode_file), started, os.environ.get("SLURM_CONF"), os.getuid(), load_config().account)
    seen = _refusals.get(key)
    if seen and time.monotonic() - seen[0] < REFUSAL_TTL_S:
        return None, seen[1]
    cluster, why = _probe_cluster(timeout, sim)
    if cluster is None:
        _refusals[key] = (time.monotonic(), why)
    return cluster, why


def _probe_cluster(timeout: float, sim: Path | None) -> tuple[Cluster | None, str]:
    """:func:`find_cluster` without its memory."""
    if shutil.which("sinfo") is None:
        return None, ("no Slurm client on this machine (no `sinfo`): the commands are shown but not run. Run this "
                      "notebook on LUMI, or start the local cluster with `make slurm-up`")
    env = dict(os.environ)
    mode_file = (sim or sim_dir()) / "mode.json"
    name, account, partition, binding, accounting = "", load_config().account, "standard-g", True, None
    if os.path.lexists(mode_file):
        try:
            mode = json.loads(mode_file.read_text())
            env["SLURM_CONF"] = str(mode["slurm_conf"])
            name, account = "lumi-sim", mode.get("default_account") or account
            partition = str(mode.get("default_partition") or "small-g")
            binding = mode.get("profile") != "lumi"
            accounting = bool(mode.get("accounting", True))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return None, f"{mode_file} is unreadable ({exc}); restart lumi-sim with `make slurm-up` (as root)"
    try:
        out = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%c|%G"], env=env, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, (f"Slurm's controller does not answer `sinfo` within {timeout:.0f} s. Fix: on lumi-sim, "
                      f"start it (as root) with `make slurm-up`; on LUMI, try again in a few minutes")
    why = _sinfo_refusal(out, partition, name)
    if why:
        return None, why
    cpus, gres = out.stdout.strip().splitlines()[0].split("|", 1)
    if not name:
        cluster = subprocess.run(["scontrol", "show", "config"], env=env, capture_output=True, text=True,
                                 timeout=timeout).stdout
        name = next((line.split("=", 1)[1].strip() for line in cluster.splitlines()
                     if line.startswith("ClusterName")), "slurm")
    if accounting is not False:
        why = _account_refusal(env, account, name, timeout)
        if why:
            return None, why
    return Cluster(name=name, env=env, account=account, gpu_partition=partition,
                   cpus_per_node=int(cpus.rstrip("+")), gpus_per_node=_gpus(gres), applies_binding=binding), ""


def _sinfo_refusal(out: subprocess.CompletedProcess, partition: str, name: str) -> str:
    """Why ``sinfo -p <partition>`` says this is no place to submit, in words naming the fix ("" when it is)."""
    said = (out.stderr or "").strip()
    if "configuration source" in said or "slurm.conf" in said:
        return ("no Slurm cluster is configured here (no slurm.conf, and lumi-sim is not up). Fix: run on LUMI, "
                "or start the local cluster (as root) with `make slurm-up`")
    if "Unable to contact" in said or "connect failure" in said or "Connection refused" in said:
        where = "lumi-sim" if name == "lumi-sim" else "this cluster"
        return (f"{where}'s controller (slurmctld) does not answer. Fix: on lumi-sim, start it (as root) with "
                f"`make slurm-up`; on LUMI, try again in a few minutes")
    if out.returncode != 0 or not out.stdout.strip():
        first = said.splitlines()[0] if said else "no nodes"
        return f"Slurm lists no nodes in partition {partition} here ({first}); ask `sinfo -s` which partitions exist"
    return ""


def _account_refusal(env: dict[str, str], account: str | None, name: str, timeout: float) -> str:
    """Why Slurm would refuse this user's jobs for want of an account ("" when it would not, or cannot tell)."""
    import pwd  # POSIX only, as Slurm is; Slurm knows the user by uid, not by $USER
    user = pwd.getpwuid(os.getuid()).pw_name
    try:
        out = subprocess.run(["sacctmgr", "-n", "-P", "show", "assoc", "where", f"user={user}", "format=account"],
                             env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if out.returncode != 0:  # no accounting database: Slurm checks no account either
        return ""
    mine = {line.strip() for line in out.stdout.splitlines() if line.strip()}
    fix = (f"on lumi-sim, root adds you with `LUMIKIT_SLURM_USERS=root,{user} make slurm-up` (no restart); on LUMI, "
           f"join a project (its PI invites you) and name it in `LUMIKIT_ACCOUNT=project_...` or in "
           f"~/.config/lumikit/config.toml (`account = \"project_...\"`)")
    if not mine:
        return (f"user {user} has no Slurm account on {name}, so Slurm would refuse the jobs (\"Invalid account\"). "
                f"Fix: {fix}")
    if account and account not in mine:
        return (f"user {user} may not charge account {account} on {name} (yours: {', '.join(sorted(mine))}). "
                f"Fix: name one of yours in `LUMIKIT_ACCOUNT`, or {fix}")
    return ""


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
                print(f"$ {command}\n(not run; not checked here: {why})")
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
    if not str(job_id).strip().isascii() or not str(job_id).strip().isdigit():
        raise LaunchError(f"no job to wait for: {str(job_id)!r} is not a job id (did Slurm refuse the submission? "
                          f"its message says why)")
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
