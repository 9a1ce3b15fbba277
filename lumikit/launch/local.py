"""The local backend: a job's ranks as processes on this machine, with the environment Slurm would give them.

A detached supervisor process (:func:`supervise`, in its own session) starts the ranks, enforces the time
limit and writes the final state to the manifest, so a notebook, a terminal and ``lumikit status`` all see it.
"""
from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..errors import LaunchError, SiteError
from ..jobs.render import payload
from ..jobs.spec import JobSpec, parse_time
from ..site import Site, load_site, site_of_record
from .backend import python_path_env
from ..record.recorder import GPU_DIR, STOP_FILE
from .gpu_record import local_argv
from .mask import MaskedOwnOutput, mask_text, secret_values_of, start_pump
from .runfolder import (RunFolder, base_manifest, disk_full_note, now_iso, open_log, remove_secrets, run_umask,
                        write_secrets)
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


# Started with -c rather than -m lumikit.launch.local: runpy warns when a package has imported the module it runs.
_SUPERVISOR = "import sys; from pathlib import Path; from lumikit.launch.local import supervise; " \
              "sys.exit(supervise(Path(sys.argv[1])))"


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
        secret = spec.secret_names()
        path = write_secrets(folder, {k: v for k, v in spec.env if k in secret})
        if path:
            env["LUMIKIT_SECRETS_FILE"] = str(path)  # the values reach the ranks through this 0600 file only
        with open_log(folder.path / "supervisor.log") as log:
            # its own session: the supervisor leads a process group that holds every rank (see end_group)
            proc = subprocess.Popen([sys.executable, "-c", _SUPERVISOR, str(folder.path.resolve())], env=env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, umask=run_umask())  # the ranks' files too
        folder.update(supervisor_pid=proc.pid, supervisor_start=process_start(proc.pid))
        return job_id

    def status(self, folder: RunFolder) -> str:
        m = folder.read()
        state = m.get("state") or "PENDING"
        if state not in FINAL and m.get("supervisor_pid") and not _supervisor_alive(m, folder):
            time.sleep(0.2)  # the supervisor may be writing its last words
            ended = end_group(folder, m)
            m = folder.update(lambda cur: cur.get("state") not in FINAL, state="FAILED", end_time=now_iso(),
                              note="the local supervisor died" + (f"; {ended} leftover process(es) of the job were "
                                                                   "ended" if ended else ""))
            state = m.get("state") or "FAILED"
            remove_secrets(folder)
        return state

    def cancel(self, folder: RunFolder) -> str:
        """SIGTERM to the supervisor (it ends the ranks), only if that PID is still our supervisor; ranks left
        behind by a killed supervisor are found by process group and run folder, and ended. A run that already
        ended raises LaunchError (after ending anything of it still left). Returns what was done."""
        m = folder.read()
        deadline = time.monotonic() + 5
        while not m.get("supervisor_pid") and m.get("state") not in FINAL and time.monotonic() < deadline:
            time.sleep(0.05)  # launched a moment ago: submit() is about to record the supervisor
            m = folder.read()
        if m.get("state") in FINAL:
            ended = end_group(folder, m)  # nothing of ours should be left; if something is, it goes
            left = f"; {ended} leftover process(es) of it were ended" if ended else ""
            raise LaunchError(f"{folder.path.name} already ended ({m['state']}): nothing to cancel{left}")
        if m.get("supervisor_pid") and _supervisor_alive(m, folder):
            os.kill(m["supervisor_pid"], signal.SIGTERM)
            return f"cancel requested: the local supervisor (pid {m['supervisor_pid']}) ends the ranks"
        ended = end_group(folder, m)
        folder.update(lambda cur: cur.get("state") not in FINAL, state="CANCELLED", end_time=now_iso(),
                      note=f"cancelled after the local supervisor was gone ({ended} process(es) ended)")
        remove_secrets(folder)
        return f"cancelled: the supervisor was gone, {ended} process(es) of the run ended"

    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]:
        return list(command)  # the job runs here: a command run now sees what the job sees


def process_start(pid: int) -> str | None:
    """When a process started (clock ticks since boot, from /proc; else ps's lstart): with the PID, its identity."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        pass
    try:
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _supervisor_alive(m: dict, folder: RunFolder) -> bool:
    """Whether the recorded supervisor still runs: its PID alive, started when it was recorded to, run by this
    user, and its command line lumikit's supervisor of this very folder. A manifest is data anyone who could write
    the folder may have changed, so a PID and start time alone never make a process ours to signal."""
    pid = m["supervisor_pid"]
    if not _alive(pid):
        return False
    recorded = m.get("supervisor_start")
    if recorded is not None and process_start(pid) != recorded:
        return False
    return _is_supervisor_of(pid, folder.path)


def _is_supervisor_of(pid: int, run_dir: Path) -> bool:
    """Is ``pid`` this user's lumikit supervisor of ``run_dir`` (its argv: python, ``-c``, the supervisor's code,
    the folder)? From /proc where there is one, else from ``ps``."""
    want = os.fsencode(str(run_dir.resolve()))
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self/cmdline").exists():
        try:
            if proc.stat().st_uid != os.getuid():
                return False
            raw = (proc / "cmdline").read_bytes()
        except OSError:
            return False
        # empty while the process exits (its memory already released): then its start time has said it all
        return not raw or raw.split(b"\0")[1:4] == [b"-c", _SUPERVISOR.encode(), want]
    try:
        out = subprocess.run(["ps", "-o", "user=,args=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    line = out.stdout.strip()
    return ("from lumikit.launch.local import supervise" in line and line.endswith(str(run_dir.resolve()))
            and line.split(None, 1)[0] == getpass.getuser())


def _group_members(sid: int, run_dir: Path) -> list[int]:
    """Processes in the supervisor's session (its ranks, the GPU recorder, the SMI tool the recorder runs in its
    own process group, and their children) that carry this run's LUMIKIT_RUN_DIR (Linux /proc)."""
    marker = b"LUMIKIT_RUN_DIR=" + os.fsencode(str(run_dir.resolve()))
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) != sid:
                continue
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def end_group(folder: RunFolder, m: dict, grace: float = 3.0) -> int:
    """End what is left of a run's processes (SIGTERM, then SIGKILL after ``grace`` seconds); returns how many
    there were."""
    pgid = m.get("supervisor_pid")
    if not pgid:
        return 0
    pids = _group_members(pgid, folder.path)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        if not any(_alive(p) for p in pids):
            break
    return len(pids)


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
        pass
    try:  # a zombie that is not our child (its parent has not reaped it yet) is gone too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _start_rank(argv: list[str], env: dict[str, str], folder: RunFolder, rank: int,
                secrets: list[str] | None = None, pumps: list | None = None) -> subprocess.Popen | int:
    """Start one rank with its logs; a program that cannot start gives the shell's code (127 not found, 126 not
    runnable) and its reason in the rank's stderr, as srun would. With ``secrets``, the rank writes into pipes and
    the supervisor writes its logs with each secret value masked (the threads go into ``pumps``)."""
    out_path, err_path = folder.rank_log(rank, "out"), folder.rank_log(rank, "err")
    if secrets:
        try:
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, cwd=os.getcwd())
        except OSError as exc:
            out_path.write_bytes(b"")
            err_path.write_bytes(f"lumikit: cannot start {argv[0]!r}: {exc.strerror or exc}\n".encode())
            return 127 if isinstance(exc, FileNotFoundError) else 126
        if pumps is not None:
            pumps += [start_pump(proc.stdout, out_path, secrets), start_pump(proc.stderr, err_path, secrets)]
        return proc
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            return subprocess.Popen(argv, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=os.getcwd())
        except OSError as exc:
            err.write(f"lumikit: cannot start {argv[0]!r}: {exc.strerror or exc}\n".encode())
            return 127 if isinstance(exc, FileNotFoundError) else 126


def _start_recorder(folder: RunFolder, m: dict, env: dict[str, str], secrets: list[str] | None = None,
                    pumps: list | None = None) -> subprocess.Popen | None:
    """The run's GPU recorder (one for the run: this machine is its one node), when the launch asked for it; its
    log passes through the secrets' mask when the run has secrets."""
    try:
        site = site_of_record(m.get("site"), folder.path)[0]
    except SiteError as exc:  # the manifest's site changed under the run, or the profile file may be written by others
        site = None
        why = f"lumikit: no GPU record: {exc}\n".encode()
    argv = local_argv(m.get("gpu_record"), site, str(folder.path)) if site is not None else None
    if argv is None:
        if site is None and (m.get("gpu_record") or {}).get("enabled"):
            (folder.path / "gpu").mkdir(exist_ok=True)
            with open_log(folder.path / "gpu" / "recorder.log") as log:
                log.write(why)
        return None
    (folder.path / "gpu").mkdir(exist_ok=True)
    log_path = folder.path / "gpu" / "recorder.log"
    child_env = {**env, "LUMIKIT_RUN_DIR": str(folder.path)}
    if secrets:
        proc = subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        if pumps is not None:
            pumps.append(start_pump(proc.stdout, log_path, secrets, mode="ab"))
        return proc
    with open_log(log_path) as log:
        return subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


#: The least time the job's end gives its GPU recorder (an interval of 0.1 s is shorter than its start-up).
RECORDER_STOP_MIN_S = 1.0
#: How long a recorder that is still starting (no record file yet: Python is importing) is waited for first.
RECORDER_START_S = 10.0


def _stop_recorder(proc: subprocess.Popen | None, run_dir: Path, budget: float) -> bool:
    """Give the GPU recorder ``budget`` seconds to end after the job (after its start-up, when a short job ended
    before it had begun): the stop file (it ends after its next sample: a short job still gets its header and
    first sample), then SIGTERM at half the time (between samples it ends at once). Returns whether it is still
    running then (its SMI tool hung): the caller ends it."""
    if proc is None:
        return False
    try:
        (run_dir / GPU_DIR / STOP_FILE).touch()
    except OSError:
        pass  # a full disk may refuse even an empty file: the signal below still ends it
    starting = time.monotonic() + RECORDER_START_S
    while proc.poll() is None and not any((run_dir / GPU_DIR).glob("*.jsonl")) and time.monotonic() < starting:
        time.sleep(0.05)
    start = time.monotonic()
    for share, sig in ((0.5, signal.SIGTERM), (1.0, None)):
        try:
            proc.wait(timeout=max(0.0, start + share * budget - time.monotonic()))
            return False
        except subprocess.TimeoutExpired:
            if sig is not None:
                proc.send_signal(sig)
    return True


def _end_of_job(folder: RunFolder, recorder: subprocess.Popen | None, interval: float) -> str:
    """The job's ranks have ended: stop its GPU recorder and end whatever of the run is still left in the
    supervisor's session (a hung SMI tool and its children, a rank's background process), all within one record
    interval (at least :data:`RECORDER_STOP_MIN_S`), as Slurm ends a job's processes with it. Returns a note
    when something had to be ended, else ""."""
    budget = max(interval, RECORDER_STOP_MIN_S)
    hung = _stop_recorder(recorder, folder.path, 0.75 * budget)
    left = end_group(folder, {"supervisor_pid": os.getpid()}, grace=0.25 * budget)
    if recorder is not None and recorder.poll() is None:
        recorder.wait()
    if hung:
        return (f"the GPU recorder had not ended {0.75 * budget:g} s after the job (its SMI tool hung?): it, its "
                f"tool and their children ({left} process(es)) were ended, so its record may miss its last sample")
    if left:
        return f"{left} process(es) of the job still running after its ranks ended were ended with it"
    return ""


def supervise(run_dir: Path) -> int:
    """Start every rank, wait for all, apply the time limit, and record the outcome in the manifest."""
    folder = RunFolder(run_dir)
    secrets = secret_values_of(os.environ.get("LUMIKIT_SECRETS_FILE"))  # read before the file goes
    own = MaskedOwnOutput(secrets) if secrets else None  # supervisor.log: tracebacks included
    try:
        return _supervise(folder, secrets)
    except BaseException as exc:  # record why before dying, so status and tail can say it
        import traceback
        traceback.print_exc()
        note = f"the local supervisor failed: {type(exc).__name__}: {exc}"
        folder.update(lambda cur: cur.get("state") not in FINAL, state="FAILED", end_time=now_iso(),
                      note=mask_text(note, secrets) if secrets else note)
        raise
    finally:
        remove_secrets(folder)
        if own is not None:
            own.close()


def _supervise(folder: RunFolder, secrets: list[str] | None = None) -> int:
    run_dir = folder.path
    m = folder.read()
    spec = JobSpec.from_dict(m["spec"])
    argv = m["command"]["rank_argv"]
    limit = parse_time(spec.time) if spec.time else None
    procs: list[subprocess.Popen | int] = []
    stopping = {"why": None}

    def on_term(signum, frame):  # noqa: ARG001 - signal handler signature
        stopping["why"] = "CANCELLED"
    signal.signal(signal.SIGTERM, on_term)

    def poll(p: subprocess.Popen | int) -> int | None:
        return p if isinstance(p, int) else p.poll()

    base = dict(os.environ)
    folder.update(state="RUNNING", start_time=now_iso())
    pumps: list = []  # the threads writing masked logs (only when the run has secrets)
    recorder = _start_recorder(folder, m, base, secrets, pumps)
    for rank in range(spec.total_tasks):
        env = rank_env(spec, rank, m["job_id"], m["master_port"], run_dir, base)
        procs.append(_start_rank(argv, env, folder, rank, secrets, pumps))
    running = [p for p in procs if not isinstance(p, int)]
    first_failed: int | None = None  # the rank that failed first: the others were ended because of it
    start = time.monotonic()
    while any(poll(p) is None for p in procs):
        if limit is not None and time.monotonic() - start > limit:
            stopping["why"] = stopping["why"] or "TIMEOUT"
        if stopping["why"]:
            for p in running:
                if p.poll() is None:
                    p.terminate()
            deadline = time.monotonic() + 5
            while any(p.poll() is None for p in running) and time.monotonic() < deadline:
                time.sleep(0.1)
            for p in running:
                if p.poll() is None:
                    p.kill()
            break
        # a failed rank takes the job down, as srun does (--kill-on-bad-exit is LUMI's default)
        bad = next((r for r, p in enumerate(procs) if poll(p) not in (None, 0)), None)
        if bad is not None:
            first_failed = bad if first_failed is None else first_failed
            time.sleep(1)
            for p in running:
                if p.poll() is None:
                    p.terminate()
        time.sleep(0.1)
    codes = [p if isinstance(p, int) else p.wait() for p in procs]
    notes = [_end_of_job(folder, recorder, float((m.get("gpu_record") or {}).get("interval_s") or 0))]
    for thread in pumps:  # the last masked bytes reach the logs before the state says the job ended
        thread.join(timeout=10)
    codes = [128 - c if c < 0 else c for c in codes]  # killed by signal N -> 128 + N, as the shell says it
    failed = first_failed if first_failed is not None else next((r for r, c in enumerate(codes) if c != 0), None)
    exit_code = codes[failed] if failed is not None else 0
    state = stopping["why"] or ("COMPLETED" if exit_code == 0 else "FAILED")
    # the state is the command's: a disk that filled up cuts the record and the logs short, and the note says so
    notes.append(disk_full_note(folder, state))
    folder.update(state=state, exit_code=exit_code, rank_exit_codes=codes, failed_rank=failed, end_time=now_iso(),
                  **({"note": "; ".join(n for n in notes if n)} if any(notes) else {}))
    return 0


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
