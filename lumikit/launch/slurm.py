"""The Slurm backend: ``sbatch --parsable`` a rendered script; follow it with squeue, sacct or scontrol.

All Slurm commands run as argv lists. A site may name its cluster's configuration (``[slurm] conf``), which is
then put in ``SLURM_CONF`` for every Slurm command, so the learner exports nothing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import LaunchError
from ..jobs.render import attach_argv, render_sbatch
from ..jobs.spec import JobSpec
from ..site import Site, load_site
from .backend import python_path_env
from .runfolder import RunFolder, base_manifest, now_iso, remove_secrets, write_secrets
from .states import FINAL, is_final, normalise

_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def expand(text: str) -> str:
    """``${NAME:-default}`` and ``$NAME`` from the environment (what the site profile writes)."""
    text = _DEFAULTED.sub(lambda m: os.environ.get(m.group(1)) or m.group(2), text)
    return os.path.expanduser(os.path.expandvars(text))


class SlurmBackend:
    name = "slurm"

    def __init__(self, site: Site | str | None = None) -> None:
        self.site = load_site(site)

    # --- running Slurm's commands -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = python_path_env(dict(os.environ))
        conf = self.site.slurm.get("conf")
        if conf:
            path = expand(str(conf))
            if not Path(path).is_file():
                raise LaunchError(f"site {self.site.name}: Slurm configuration {path} not found; start the local "
                                  "cluster with `make slurm-up`")
            env["SLURM_CONF"] = path
        return env

    def run(self, argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        if shutil.which(argv[0]) is None:
            raise LaunchError(f"`{argv[0]}` not found: this machine has no Slurm client. Use the local backend "
                              "(--backend local), or `make slurm-up` for the local test cluster")
        try:
            return subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LaunchError(f"`{' '.join(argv[:3])} ...` did not answer within {timeout:.0f} s; is slurmctld up?") from None

    # --- the protocol ---------------------------------------------------------------------------------------
    def script(self, spec: JobSpec, folder: RunFolder, secrets_file: Path | None = None) -> str:
        exports = {"LUMIKIT_RUN_DIR": str(folder.path), "LUMIKIT_BACKEND": "slurm"}
        if secrets_file:
            exports["LUMIKIT_SECRETS_FILE"] = str(secrets_file)  # a path; the values stay in that 0600 file
        return render_sbatch(spec, self.site, output=str(folder.path / "slurm-%j.out"),
                             step_options=(f"--output={folder.path}/rank%t.out", f"--error={folder.path}/rank%t.err"),
                             exports=exports, check=False)  # launch() has validated the spec

    def submit(self, spec: JobSpec, folder: RunFolder) -> str:
        secret = spec.secret_names()
        secrets_file = write_secrets(folder, {k: v for k, v in spec.env if k in secret})
        script = self.script(spec, folder, secrets_file) if secrets_file else self.script(spec, folder)
        path = folder.path / "job.sbatch"
        path.write_text(script)
        folder.update(**base_manifest(spec, self.site, self.name, {"sbatch": str(path), "script": script},
                                      self.env()))
        # --no-requeue: a job whose node fails ends NODE_FAIL instead of silently starting again
        proc = self.run(["sbatch", "--parsable", "--no-requeue", str(path)])
        if proc.returncode != 0:
            message = (proc.stderr or proc.stdout).strip()
            folder.update(state="FAILED", submit_error=message, end_time=now_iso())
            remove_secrets(folder)
            raise LaunchError(f"Slurm rejected the job: {message}")
        job_id = proc.stdout.strip().split(";")[0]
        folder.update(job_id=job_id)
        return job_id

    def query(self, job_id: str) -> tuple[str, int | None, dict[str, str]]:
        """(state, exit code, extra) from squeue, then sacct (if accounting), then scontrol."""
        q = self.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"])
        squeue_state = q.stdout.strip().splitlines()[0] if q.returncode == 0 and q.stdout.strip() else None
        if squeue_state and not is_final(squeue_state):
            return normalise(squeue_state), None, {}
        a = self.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o",
                      "State,ExitCode,Start,End,NodeList,ElapsedRaw"])
        if a.returncode == 0 and a.stdout.strip():
            state, code, start, end, nodes, elapsed = (a.stdout.strip().splitlines()[0].split("|") + [""] * 6)[:6]
            if is_final(state) or not squeue_state:
                return normalise(state), _exit(code), {"start_time": start, "end_time": end, "nodes": nodes,
                                                       "elapsed_s": elapsed}
        s = self.run(["scontrol", "show", "job", "-o", job_id])
        if s.returncode == 0 and "JobState=" in s.stdout:
            fields = dict(kv.split("=", 1) for kv in s.stdout.split() if "=" in kv)
            return normalise(fields.get("JobState", "PENDING")), _exit(fields.get("ExitCode", "")), {
                "start_time": fields.get("StartTime", ""), "end_time": fields.get("EndTime", ""),
                "nodes": fields.get("NodeList", "")}
        if squeue_state:
            return normalise(squeue_state), None, {}
        raise LaunchError(f"Slurm knows no job {job_id} any more (squeue, sacct and scontrol are silent)")

    def status(self, folder: RunFolder) -> str:
        m = folder.read()
        if m.get("state") in FINAL or not m.get("job_id"):
            return m.get("state", "PENDING")
        state, code, extra = self.query(str(m["job_id"]))
        changes: dict[str, object] = {"state": state}
        if state != "PENDING" and not m.get("start_time"):
            changes["start_time"] = extra.get("start_time") or now_iso()
        if state in FINAL:
            changes.update(exit_code=code, end_time=extra.get("end_time") or now_iso(), nodes=extra.get("nodes"))
            changes.update(_billing_actual(m, self.site, extra.get("elapsed_s", "")))
            remove_secrets(folder)  # the batch script removes it too; a job cancelled while pending never ran that
        folder.update(**changes)
        return state

    def cancel(self, folder: RunFolder) -> None:
        job_id = folder.read().get("job_id")
        if not job_id:
            raise LaunchError(f"{folder.path.name} has no job id: it was never submitted")
        proc = self.run(["scancel", str(job_id)])
        if proc.returncode != 0:
            raise LaunchError(f"scancel {job_id} failed: {proc.stderr.strip()}")

    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]:
        return attach_argv(folder.read().get("job_id"), command, pty=False)


def _billing_actual(manifest: dict, site: object, elapsed: str) -> dict[str, object]:
    """The bill of the elapsed time sacct reports (``ElapsedRaw``, seconds), beside the manifest's estimate."""
    from ..jobs.billing import estimate

    if not elapsed.strip().isdigit() or not manifest.get("spec"):
        return {}
    bill = estimate(JobSpec.from_dict(manifest["spec"]), site, hours=int(elapsed) / 3600)
    return {} if bill is None else {"elapsed_s": int(elapsed), "billing_actual": bill.to_dict()}


def _exit(code: str) -> int | None:
    """Slurm's ``3:0`` (exit code : signal) -> 3; a signal alone -> 128 + signal."""
    m = re.match(r"^(\d+):(\d+)$", code.strip())
    if not m:
        return None
    status, sig = int(m.group(1)), int(m.group(2))
    return status if status or not sig else 128 + sig
