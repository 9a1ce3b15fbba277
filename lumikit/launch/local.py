"""The local backend: a job's ranks as processes on this machine, with the environment Slurm would give them.

A detached supervisor process (``python -m lumikit.launch.local RUN_DIR``) starts the ranks, enforces the time
limit and writes the final state to the manifest, so a notebook, a terminal and ``lumikit status`` all see it.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..jobs.render import payload
from ..jobs.spec import JobSpec, parse_time
from ..site import Site, load_site
from .backend import python_path_env
from .runfolder import RunFolder, base_manifest, now_iso
from .states import FINAL


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(spec: JobSpec, rank: int, job_id: str, port: int, run_dir: Path, base: dict[str, str]) -> dict[str, str]:
    """What Slurm (and our rank script) would put in a rank's environment, for a job on this machine."""
    per_node = spec.ntasks_per_node
    env = dict(base)
    env.update({
        "SLURM_JOB_ID": job_id, "SLURM_JOBID": job_id, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank % per_node),
        "SLURM_NODEID": str(rank // per_node), "SLURM_NTASKS": str(spec.total_tasks), "SLURM_NPROCS": str(spec.total_tasks),
        "SLURM_NNODES": str(spec.nodes), "SLURM_JOB_NUM_NODES": str(spec.nodes),
        "SLURM_NTASKS_PER_NODE": str(per_node), "SLURM_NODELIST": "localhost", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_JOB_NAME": spec.name, "SLURM_CPUS_PER_TASK": str(spec.cpus_per_task or 1),
        "SLURM_JOB_ACCOUNT": spec.account or "", "SLURM_GPUS_PER_NODE": str(spec.gpus_per_node or 0),
        "RANK": str(rank), "LOCAL_RANK": str(rank % per_node), "WORLD_SIZE": str(spec.total_tasks),
        "LOCAL_WORLD_SIZE": str(per_node), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "LUMIKIT_RUN_DIR": str(run_dir), "LUMIKIT_BACKEND": "local",
    })
    return env


class LocalBackend:
    """Runs the job spec's ranks here (no container, no GPU binding); same spec, same rank script."""

    name = "local"

    def __init__(self, site: Site | str | None = None) -> None:
        self.site = load_site(site)

    def rank_argv(self, spec: JobSpec) -> list[str]:
        argv, _ = payload(spec.with_(container=None), self.site)
        return argv

    def submit(self, spec: JobSpec, folder: RunFolder) -> str:
        job_id = str(int(time.time() * 1000) % 10**9)
        env = python_path_env(dict(os.environ))
        argv = self.rank_argv(spec)
        manifest = base_manifest(spec, self.site, self.name, {"rank_argv": argv, "ranks": spec.total_tasks}, env)
        folder.update(**{**manifest, "job_id": job_id, "master_port": free_port()})
        log = open(folder.path / "supervisor.log", "ab")
        proc = subprocess.Popen([sys.executable, "-m", "lumikit.launch.local", str(folder.path)], env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        folder.update(supervisor_pid=proc.pid)
        return job_id

    def status(self, folder: RunFolder) -> str:
        m = folder.read()
        state = m.get("state", "PENDING")
        if state not in FINAL and m.get("supervisor_pid") and not _alive(m["supervisor_pid"]):
            time.sleep(0.2)  # the supervisor may be writing its last words
            m = folder.read()
            state = m.get("state", "PENDING")
            if state not in FINAL:
                state = "FAILED"
                folder.update(state=state, end_time=now_iso(), note="the local supervisor died")
        return state

    def cancel(self, folder: RunFolder) -> None:
        pid = folder.read().get("supervisor_pid")
        if pid and _alive(pid):
            os.kill(pid, signal.SIGTERM)

    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]:
        return list(command)  # the job runs here: a command run now sees what the job sees


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def supervise(run_dir: Path) -> int:
    """Start every rank, wait for all, apply the time limit, and record the outcome in the manifest."""
    folder = RunFolder(run_dir)
    m = folder.read()
    spec = JobSpec.from_dict(m["spec"])
    argv = m["command"]["rank_argv"]
    limit = parse_time(spec.time) if spec.time else None
    procs: list[subprocess.Popen] = []
    stopping = {"why": None}

    def on_term(signum, frame):  # noqa: ARG001 - signal handler signature
        stopping["why"] = "CANCELLED"
    signal.signal(signal.SIGTERM, on_term)

    base = dict(os.environ)
    folder.update(state="RUNNING", start_time=now_iso())
    for rank in range(spec.total_tasks):
        env = rank_env(spec, rank, m["job_id"], m["master_port"], run_dir, base)
        with open(folder.rank_log(rank, "out"), "wb") as out, open(folder.rank_log(rank, "err"), "wb") as err:
            procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                          cwd=os.getcwd()))
    start = time.monotonic()
    while any(p.poll() is None for p in procs):
        if limit is not None and time.monotonic() - start > limit:
            stopping["why"] = stopping["why"] or "TIMEOUT"
        if stopping["why"]:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            deadline = time.monotonic() + 5
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                time.sleep(0.1)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        # a failed rank takes the job down, as srun does (--kill-on-bad-exit is LUMI's default)
        if any(p.poll() not in (None, 0) for p in procs):
            time.sleep(1)
            for p in procs:
                if p.poll() is None:
                    p.terminate()
        time.sleep(0.1)
    codes = [p.wait() for p in procs]
    exit_code = next((c for c in codes if c != 0), 0)
    if exit_code < 0:
        exit_code = 128 - exit_code
    state = stopping["why"] or ("COMPLETED" if exit_code == 0 else "FAILED")
    folder.update(state=state, exit_code=exit_code, rank_exit_codes=codes, end_time=now_iso())
    return 0


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
