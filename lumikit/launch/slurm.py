"""The Slurm backend: ``sbatch --parsable`` a rendered script; follow it with squeue, sacct or scontrol.

All Slurm commands run as argv lists. A site may name its cluster's configuration (``[slurm] conf``), which is
then put in ``SLURM_CONF`` for every Slurm command, so the learner exports nothing.

A notebook on LUMI runs inside a Slurm job (Open OnDemand starts JupyterLab with sbatch), and an ``salloc`` shell
is one too: their ``SLURM_*``/``SBATCH_*``/``SRUN_*`` variables describe *that* job. Handed to a new sbatch they
would shape the new job (``srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually
exclusive``, an inherited ``SLURM_CPU_BIND``), so every Slurm command here runs with :func:`submission_env`.
"""
from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import LaunchError, SlurmUnreachable, SpecError
from ..jobs.render import attach_argv, render_sbatch
from ..jobs.spec import JobSpec, parse_time
from ..site import Site, expand, load_site  # expand: ${VAR:-default} in site settings
from .backend import python_path_env
from .gpu_record import with_record
from ..files import write_atomic
from .runfolder import (RunFolder, base_manifest, disk_full_note, file_mode, now_iso, remove_secrets, run_umask,
                        write_secrets)
from .states import FINAL, normalise

#: Prefixes of the variables an enclosing job or allocation leaves behind (input and output variables of
#: sbatch, srun and salloc, and the PMIx wire-up of its steps).
INHERITED_PREFIXES = ("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "PMIX_")
#: Kept even so: where the cluster's configuration is (not a property of the enclosing job).
KEPT = frozenset({"SLURM_CONF"})

def submission_env(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without the variables an enclosing Slurm job left (:data:`INHERITED_PREFIXES`), except
    ``SLURM_CONF`` and the names in ``keep`` (what the learner set on purpose, e.g. through the spec's env)."""
    kept = KEPT | set(keep)
    return {k: v for k, v in env.items() if k in kept or not k.startswith(INHERITED_PREFIXES)}


def enclosing_job(env: Mapping[str, str] | None = None) -> str | None:
    """The id of the Slurm job this process runs in (an Open OnDemand session, an salloc shell), or None."""
    e = os.environ if env is None else env
    return e.get("SLURM_JOB_ID") or e.get("SLURM_JOBID") or None


def rejection_hint(message: str, site: str) -> str:
    """What to do about an sbatch refusal whose fix is not in Slurm's own words (empty when there is none)."""
    if "Invalid account" not in message:
        return ""
    if site == "lumi-sim":
        user = getpass.getuser()
        return (f"\n  lumi-sim gives an account only to the users named when it started; as root, "
                f"`LUMIKIT_SLURM_USERS=root,{user} make slurm-up` adds {user} (no restart)")
    return ("\n  --account must name a project you belong to (on LUMI, `lumi-workspaces` lists yours), and the "
            "partition must be open to it")


#: Bash for a batch script whose run has secrets: the step's tasks print through srun (``--label``: "N: line"), and
#: each line is written to rank<N>.out or .err with every secret value as ***, before it reaches disk. srun joins a
#: task's writes into whole lines, so a value printed in two writes is masked too. The values come from the launch's
#: private file (or the submitter's environment), never from this text; lines srun prints itself go to the job's
#: own output, masked too.
MASK_FUNCTIONS = r'''lumikit_mask() {  # $1: out or err
  ( [ -z "${LUMIKIT_SECRETS_FILE:-}" ] || . "$LUMIKIT_SECRETS_FILE"
    exec awk -v kind="$1" -v dir="$LUMIKIT_RUN_DIR" -v names="$LUMIKIT_SECRET_NAMES" '
      BEGIN { n = split(names, name, " "); for (i = 1; i <= n; i++) val[i] = ENVIRON[name[i]] }
      { line = $0; file = "/dev/stdout"
        if (match(line, /^ *[0-9]+: /)) {
          rank = substr(line, 1, RLENGTH - 2); gsub(/ /, "", rank)
          line = substr(line, RLENGTH + 1); file = dir "/rank" rank "." kind }
        for (i = 1; i <= n; i++) if (length(val[i]) >= 3)
          while ((p = index(line, val[i])) > 0) line = substr(line, 1, p - 1) "***" substr(line, p + length(val[i]))
        print line > file; fflush(file) }' )
}
lumikit_masked_step() {  # runs "$@" (srun --label ...) with its tasks' output masked into the rank logs
  local fifo status=0 err_pid
  fifo=$(mktemp -u "${TMPDIR:-/tmp}/lumikit-err.XXXXXX") && mkfifo -m 600 "$fifo"
  lumikit_mask err < "$fifo" & err_pid=$!
  "$@" 2> "$fifo" | lumikit_mask out || status=$?
  wait "$err_pid" || true
  rm -f "$fifo"
  return "$status"
}'''


def masked_step(script: str, secret_names: Iterable[str]) -> str:
    """A rendered batch script (its last line the job's srun step, with ``--label``) whose step's output goes
    through :data:`MASK_FUNCTIONS`."""
    at = script.rindex("\nsrun --label ")  # the step may span lines (a command with newlines in it)
    head, step = script[:at], script[at + 1:].rstrip("\n")
    names = " ".join(n for n in secret_names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n))
    return "\n".join([head, f"export LUMIKIT_SECRET_NAMES={shlex.quote(names)}", MASK_FUNCTIONS,
                      f"lumikit_masked_step {step}"]) + "\n"


class SlurmBackend:
    name = "slurm"
    #: Each status is a query to the cluster's controller: :meth:`Run.wait` backs off (see ``next_poll``).
    queries_controller = True

    def __init__(self, site: Site | str | None = None) -> None:
        self.site = load_site(site)

    # --- running Slurm's commands -------------------------------------------------------------------------
    def env(self, keep: Iterable[str] = ()) -> dict[str, str]:
        """The environment for Slurm's commands: this one without an enclosing job's variables (see
        :func:`submission_env`), this Python first on PATH, and the site's ``SLURM_CONF``."""
        env = python_path_env(submission_env(os.environ, keep))
        conf = self.site.slurm.get("conf")
        if conf:
            path = expand(str(conf))
            if not Path(path).is_file():
                raise LaunchError(f"site {self.site.name}: Slurm configuration {path} not found; start the local "
                                  "cluster with `make slurm-up`")
            env["SLURM_CONF"] = path
        return env

    def run(self, argv: list[str], timeout: float = 30, umask: int = -1) -> subprocess.CompletedProcess:
        if shutil.which(argv[0]) is None:
            raise LaunchError(f"`{argv[0]}` not found: this machine has no Slurm client. Use the local backend "
                              "(--backend local), or `make slurm-up` for the local test cluster")
        try:
            return subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout, umask=umask)
        except subprocess.TimeoutExpired:
            raise SlurmUnreachable(f"Slurm is not answering: `{' '.join(argv[:3])} ...` gave no answer within "
                                   f"{timeout:.0f} s") from None

    # --- the protocol ---------------------------------------------------------------------------------------
    def script(self, spec: JobSpec, folder: RunFolder, secrets_file: Path | None = None) -> str:
        exports = {"LUMIKIT_RUN_DIR": str(folder.path), "LUMIKIT_BACKEND": "slurm"}
        if secrets_file:
            exports["LUMIKIT_SECRETS_FILE"] = str(secrets_file)  # a path; the values stay in that 0600 file
        secret = spec.secret_names()
        logs = ("--label",) if secret else (f"--output={folder.path}/rank%t.out", f"--error={folder.path}/rank%t.err")
        script = render_sbatch(spec, self.site, output=str(folder.path / "slurm-%j.out"), step_options=logs,
                               exports=exports, check=False)  # launch() has validated the spec
        if secret:
            script = masked_step(script, secret)
        return with_record(script, folder.read().get("gpu_record"), self.site, str(folder.path), spec)

    def submit(self, spec: JobSpec, folder: RunFolder) -> str:
        secret = spec.secret_names()
        secrets_file = write_secrets(folder, {k: v for k, v in spec.env if k in secret})
        script = self.script(spec, folder, secrets_file) if secrets_file else self.script(spec, folder)
        path = write_atomic(folder.path / "job.sbatch", script, mode=file_mode())
        folder.update(**base_manifest(spec, self.site, self.name, {"sbatch": str(path), "script": script},
                                      self.env()))
        # --no-requeue: a job whose node fails ends NODE_FAIL instead of silently starting again
        # sbatch hands its umask to the job (SLURM_UMASK): the logs and the GPU record get the folder's mode
        proc = self.run(["sbatch", "--parsable", "--no-requeue", str(path)], umask=run_umask())
        if proc.returncode != 0:
            message = (proc.stderr or proc.stdout).strip()
            folder.update(state="FAILED", submit_error=message, end_time=now_iso())
            remove_secrets(folder)
            raise LaunchError(f"Slurm rejected the job: {message}{rejection_hint(message, self.site.name)}")
        job_id = proc.stdout.strip().split(";")[0]
        # what makes the job this run's: status() and cancel() trust a job of this id, name, user and submit time
        folder.update(job_id=job_id, job_name=spec.name, submitted_epoch=round(time.time(), 3),
                      job_user=getpass.getuser())
        return job_id

    def query(self, job_id: str) -> tuple[str, int | None, dict[str, str]]:
        """(state, exit code, extra) from ``scontrol --local show job`` (one controller RPC: squeue costs three),
        then from sacct (the accounting database) once the controller has forgotten the job.

        A job lost with its node (NODE_FAIL) has no exit code (Slurm's ``0:0`` there is not the program's) and
        carries Slurm's reason. A controller or database that does not answer raises :class:`SlurmUnreachable`:
        only an answer that does not know the job means it is gone."""
        fields = self._show_job(job_id)
        if fields:
            state = normalise(fields.get("JobState", "PENDING"))
            extra = {"start_time": _known(fields.get("StartTime")), "end_time": _known(fields.get("EndTime")),
                     "nodes": _known(fields.get("NodeList")), "elapsed_s": _seconds(fields.get("RunTime", "")),
                     **_identity(fields)}
            return state, self._exit_code(state, fields.get("ExitCode", ""), extra), extra
        a = self.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o",
                      "State,ExitCode,Start,End,NodeList,ElapsedRaw,JobName,Submit,User"])
        if a.returncode != 0 and not _accounting_disabled(a.stderr):
            raise SlurmUnreachable(f"Slurm is not answering about job {job_id}: the controller has no record of it "
                                   f"and the accounting database did not answer ({one_line(a.stderr)})")
        if a.returncode == 0 and a.stdout.strip():
            state, code, start, end, nodes, elapsed, name, submit, user = \
                (a.stdout.strip().splitlines()[0].split("|") + [""] * 9)[:9]
            state = normalise(state)
            extra = {"start_time": start, "end_time": end, "nodes": nodes, "elapsed_s": elapsed, "job_name": name,
                     "submit_time": _known(submit), "user": user}
            return state, self._exit_code(state, code, extra), extra
        raise LaunchError(f"Slurm knows no job {job_id} any more (scontrol and sacct answered, and neither knows it)")

    def _exit_code(self, state: str, code: str, extra: dict[str, str]) -> int | None:
        """The program's exit code, or None for a job whose node was lost (then ``extra['reason']`` says why)."""
        if state != "NODE_FAIL":
            return _exit(code)
        reasons = self.run(["sinfo", "-h", "-R", "-n", extra.get("nodes") or "", "-o", "%N|%E"])
        said = [line.replace("|", ": ", 1) for line in reasons.stdout.splitlines() if "|" in line] \
            if reasons.returncode == 0 and extra.get("nodes") else []
        extra["reason"] = ("node " + "; node ".join(said)) if said else "a node of the job failed"
        return None

    def _show_job(self, job_id: str) -> dict[str, str]:
        """``scontrol --local -o show job``'s fields (``--local``: no federation lookup, one RPC); {} if the
        controller does not know the job; :class:`SlurmUnreachable` if it did not answer."""
        s = self.run(["scontrol", "--local", "-o", "show", "job", str(job_id)])
        if s.returncode != 0 and "Invalid job id" not in s.stderr + s.stdout:
            raise SlurmUnreachable(f"Slurm is not answering: `scontrol show job {job_id}` failed "
                                   f"({one_line(s.stderr or s.stdout)})")
        if s.returncode != 0 or "JobState=" not in s.stdout:
            return {}
        return dict(kv.split("=", 1) for kv in s.stdout.split() if "=" in kv)

    def status(self, folder: RunFolder) -> str:
        m = folder.read()
        if m.get("state") in FINAL or not m.get("job_id"):
            return m.get("state", "PENDING")
        state, code, extra = self.query(str(m["job_id"]))
        if not _same_job(m, extra):
            raise LaunchError(_not_this_runs(folder, m, extra, f"its last known state is {m.get('state', 'PENDING')}; "
                                                               "Slurm's state of that job is not reported"))
        changes: dict[str, object] = {"state": state}
        if state != "PENDING" and not m.get("start_time"):
            changes["start_time"] = extra.get("start_time") or now_iso()
        if state in FINAL:
            changes.update(exit_code=code, end_time=extra.get("end_time") or now_iso(), nodes=extra.get("nodes"))
            if not extra.get("end_time"):  # Slurm no longer says when (a controller outage outlived the job's record)
                changes["end_time_observed"] = True
            if extra.get("reason"):
                changes["reason"] = extra["reason"]
            if disk_full_note(folder, state):
                changes["note"] = disk_full_note(folder, state)
            changes.update(_billing_actual(m, self.site, extra.get("elapsed_s", "")))
            remove_secrets(folder)  # the batch script removes it too; a job cancelled while pending never ran that
        folder.update(**changes)
        return state

    def cancel(self, folder: RunFolder) -> str:
        """Cancel the run's job, only if it is still this run's (job id, name and submit time match what the
        manifest recorded: job ids restart when a cluster is rebuilt) and still pending or running. Returns what
        was done; raises LaunchError, doing nothing, otherwise."""
        m = folder.read()
        job_id = m.get("job_id")
        if not job_id:
            raise LaunchError(f"{folder.path.name} has no job id: it was never submitted, so there is nothing to cancel")
        if m.get("state") in FINAL:
            raise LaunchError(f"{folder.path.name} already ended ({m['state']}): nothing to cancel")
        state, _, extra = self.query(str(job_id))
        if not _own_job(m, extra):
            raise LaunchError(_not_this_runs(folder, m, extra, "Nothing was cancelled"))
        if state in FINAL:
            self.status(folder)
            raise LaunchError(f"{folder.path.name} (job {job_id}) already ended ({state}): nothing to cancel")
        proc = self.run(["scancel", str(job_id)])
        if proc.returncode != 0:
            raise LaunchError(f"scancel {job_id} failed: {proc.stderr.strip()}")
        return f"cancel requested for job {job_id} ({state})"

    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]:
        return attach_argv(folder.read().get("job_id"), command, pty=False)

    def job_nodes(self, folder: RunFolder, manifest: dict | None = None) -> list[str]:
        """The nodes of the run's job while it runs (one ``scontrol show job``; the list expands locally); a job
        that is not the run's own (:func:`_own_job`) is a LaunchError, as nothing may be started inside it."""
        m = folder.read() if manifest is None else manifest
        job_id = m.get("job_id")
        if not job_id:
            raise LaunchError(f"{folder.path.name} has no job id: it was never submitted")
        fields = self._show_job(str(job_id))
        if fields and not _own_job(m, extra := _identity(fields)):
            raise LaunchError(_not_this_runs(folder, m, extra, "nothing was watched"))
        state = normalise(fields.get("JobState", "")) if fields else "unknown to Slurm"
        if state != "RUNNING" or fields.get("NodeList", "(null)") in ("", "(null)"):
            raise LaunchError(f"{folder.path.name} (job {job_id}) is {state}: its nodes can be watched only while it "
                              "runs; wait until `run.status()` says RUNNING")
        h = self.run(["scontrol", "show", "hostnames", fields["NodeList"]])
        return h.stdout.split() if h.returncode == 0 and h.stdout.strip() else [fields["NodeList"]]

    def watch_steps(self, folder: RunFolder, command: list[str],
                    nodes: Iterable[str] | None = None) -> list[tuple[str, list[str]]]:
        """(node, argv) per node of the run's job: one overlapping step that runs ``command`` there (a
        long-lived reader: a watch costs one step per node, not one per sample). The job must be the run's own
        and the nodes its nodes."""
        m = folder.read()
        own = self.job_nodes(folder, m)
        chosen = list(nodes) if nodes else own
        stray = [n for n in chosen if n not in own]
        if stray:
            raise LaunchError(f"{folder.path.name}: {', '.join(map(repr, stray))} not among the nodes of job "
                              f"{m.get('job_id')} ({', '.join(own)}); give one of those")
        return [(node, attach_argv(m.get("job_id"), (), node=node, pty=False) + ["--nodes=1", "--ntasks=1", "--quiet",
                                                                                 *command])
                for node in chosen]

def one_line(text: str) -> str:
    """A command's message on one line, for an error that quotes it."""
    return " ".join(text.split())[:300] or "no message"


def _accounting_disabled(stderr: str) -> bool:
    """sacct on a cluster without accounting (it will never know a finished job): not an outage."""
    return "accounting storage is disabled" in stderr.lower()


def _same_job(manifest: dict, extra: dict[str, str]) -> bool:
    """Is Slurm's job the one this run submitted? Its name and user match, and it was submitted within 10 minutes
    of the time the run recorded. Runs from before these were recorded match on the id alone."""
    name, when = manifest.get("job_name"), manifest.get("submitted_epoch")
    if name is not None and extra.get("job_name") not in ("", None, name):
        return False
    user = manifest.get("job_user")
    if user is not None and extra.get("user") not in ("", None, user):
        return False
    if when is None or not extra.get("submit_time"):
        return True
    try:
        submitted = datetime.fromisoformat(extra["submit_time"]).timestamp()
    except ValueError:
        return True
    return abs(submitted - float(when)) < 600


def _identity(fields: dict[str, str]) -> dict[str, str]:
    """Who a job is, from ``scontrol show job``'s fields: its name, submit time and user."""
    return {"job_name": fields.get("JobName", ""), "submit_time": _known(fields.get("SubmitTime")),
            "user": fields.get("UserId", "").split("(")[0]}


def _own_job(manifest: dict, extra: dict[str, str]) -> bool:
    """Before a job is touched (cancelled, or a step started in it): the run recorded its name, user and submit
    time, Slurm's job has all three (:func:`_same_job`), and its user is whoever asks. A manifest is data that
    anyone who could write the folder may have changed, so an id alone, or another user's job, is never enough."""
    recorded = all(manifest.get(k) is not None for k in ("job_name", "job_user", "submitted_epoch"))
    return (recorded and bool(extra.get("submit_time")) and extra.get("job_name") == manifest["job_name"]
            and extra.get("user") == manifest["job_user"] == getpass.getuser() and _same_job(manifest, extra))


def _not_this_runs(folder: RunFolder, manifest: dict, extra: dict[str, str], then: str) -> str:
    """Why the job of the run's recorded id is another job (a rebuilt cluster gave the id again), and ``then``."""
    job_id = manifest.get("job_id")
    when = manifest.get("submitted_epoch")
    mine = f"the run submitted {manifest.get('job_name')!r}" + (
        f" at {datetime.fromtimestamp(float(when)).isoformat(timespec='seconds')}" if when is not None else "") + (
        f" as {manifest['job_user']}" if manifest.get("job_user") else "")
    return (f"job {job_id} is not {folder.path.name}'s any more (Slurm's job {job_id} is named "
            f"{extra.get('job_name')!r}, submitted {extra.get('submit_time') or 'at an unknown time'}"
            + (f" by {extra['user']}" if extra.get("user") else "") + f"; {mine}): job ids restart when a cluster "
            f"is rebuilt, so this run's own job is gone; {then}")


def _known(value: str | None) -> str:
    """scontrol's ``Unknown``/``None``/``(null)`` placeholders -> ''."""
    return "" if value in (None, "Unknown", "None", "(null)") else str(value)


def _seconds(run_time: str) -> str:
    """scontrol's ``RunTime`` (``[D-]HH:MM:SS``) as seconds, the way sacct's ``ElapsedRaw`` gives it; '' if none."""
    try:
        return str(parse_time(run_time, "RunTime"))
    except SpecError:
        return ""


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
