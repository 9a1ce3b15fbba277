"""How a launch starts the GPU record (:mod:`lumikit.record`): on by default for jobs that ask for GPUs.

Slurm: the batch script starts one recorder per node as one background ``srun --overlap`` step before the job's own
step and stops it after (never a controller RPC per sample). Local: the supervisor starts one recorder for the run.
The site may name the tool (``[slurm] record_command``, a stream command with ``{interval}``, and
``record_kind``: lumi-sim's stand-in is ``generated``); otherwise the recorder picks the best tool it finds.
"""
from __future__ import annotations

import math
import shlex
import warnings
from typing import Any

from ..errors import LaunchError
from ..jobs.python import module_argv, with_python
from ..jobs.spec import JobSpec
from ..site import Site
from ..record.recorder import DEFAULT_INTERVAL_S, STOP_FILE
from ..smi.sources import MIN_INTERVAL_S

RECORDER_PID = "LUMIKIT_RECORDER_PID"
STEP_STATUS = "LUMIKIT_STEP_STATUS"


def asks_gpus(spec: JobSpec) -> bool:
    """Whether the job asks for GPUs (any of the GPU options)."""
    return bool(spec.gpus_per_node or spec.gpus or spec.gpus_per_task)


def plan(spec: JobSpec, enabled: bool = True, interval: float = DEFAULT_INTERVAL_S) -> dict[str, Any]:
    """What the manifest says about the record (``gpu_record``): on or off, the interval, and why.

    An interval under the recorder's floor (:data:`MIN_INTERVAL_S`) is raised to it, as the recorder would, with a
    note and a warning: the manifest then holds the interval the samples really have (the card judges gaps by it).
    """
    if not (isinstance(interval, (int, float)) and not isinstance(interval, bool) and math.isfinite(interval)
            and 0 < interval <= 3600):
        raise LaunchError(f"--gpu-record-interval {interval!r}: give the seconds between two GPU samples, from "
                          f"{MIN_INTERVAL_S:g} (the recorder's floor) to 3600 (default {DEFAULT_INTERVAL_S:g})")
    if not enabled:
        return {"enabled": False, "why": "turned off at launch (--no-gpu-record / gpu_record=False)"}
    if not asks_gpus(spec):
        return {"enabled": False, "why": "the job asks for no GPUs"}
    if interval < MIN_INTERVAL_S:
        note = (f"interval {interval:g} s asked; recorded every {MIN_INTERVAL_S:g} s, the recorder's floor (shorter "
                "intervals cost more CPU than a GPU reading is worth)")
        warnings.warn(f"--gpu-record-interval: {note}", UserWarning, stacklevel=2)
        return {"enabled": True, "interval_s": float(MIN_INTERVAL_S), "note": note}
    return {"enabled": True, "interval_s": float(interval)}


def recorder_args(site: Site, run_dir: str, interval: float, python: str | None = None, *,
                  site_tool: bool = True) -> list[str]:
    """``python -m lumikit.record sample ...`` for this site (its stand-in or tool where the profile names one);
    ``python``: the job's Python (:mod:`lumikit.jobs.python`) unless given; a ``{python}`` word in the site's
    tool command becomes that same interpreter (lumi-sim's stand-in tool is a lumikit module)."""
    sample = ["sample", "--run-dir", run_dir, "--interval", f"{interval:g}", "--site", site.ref]
    argv = [python, "-m", "lumikit.record", *sample] if python else module_argv("lumikit.record", *sample)
    command = site.slurm.get("record_command") if site_tool else None
    if command:
        argv += ["--kind", str(site.slurm.get("record_kind", "recorded")), "--stream", "--command",
                 *with_python((str(c) for c in command), argv[0])]
    return argv


def in_job_environment(argv: list[str], spec: JobSpec, site: Site) -> list[str]:
    """``argv`` the way the job's ranks run their command: inside the job's container (on LUMI the job's Python,
    the workbook's venv, and the SMI tools are there; the node's own python3 is too old and has no lumikit), with
    its environment recipes and working folder; no profiler and no rank variables."""
    from ..jobs.render import payload

    return payload(spec.with_(command=tuple(argv), profile=None, profile_ranks=(), rank_env=False), site)[0]


def sbatch_lines(record: dict[str, Any] | None, site: Site, run_dir: str,
                 spec: JobSpec | None = None) -> tuple[list[str], list[str]]:
    """The batch-script lines before the job's step (start one recorder per node in the background) and after it
    (stop them). Should the script end early anyway (a cancelled job), Slurm ends the recorder with the job.

    ``--mem=0`` (the job's memory, shared by ``--overlap``): without it, on Slurm 22.05 (lumi-sim) the recorder's
    step cannot start beside a job step that holds all of the job's memory ("Memory required by task is not
    available"); with it, the job's own step still starts at once (tried on lumi-sim, both orders)."""
    if not record or not record.get("enabled"):
        return [], []
    rec = recorder_args(site, run_dir, float(record.get("interval_s", DEFAULT_INTERVAL_S)))
    if spec is not None:
        rec = in_job_environment(rec, spec, site)
    step = ["srun", "--overlap", "--nodes=${SLURM_JOB_NUM_NODES}", "--ntasks=${SLURM_JOB_NUM_NODES}",
            "--ntasks-per-node=1", "--cpus-per-task=1", "--mem=0", "--cpu-bind=none", "--input=none", "--quiet",
            f"--output={run_dir}/gpu/recorder-node%n.log"]
    words = [w if w.startswith("--nodes=$") or w.startswith("--ntasks=$") else shlex.quote(w) for w in step]
    before = ["# the GPU record (lumikit.record): one sampler per node, for the job's life, into "
              f"{run_dir}/gpu/<node>.jsonl",
              f"mkdir -p {shlex.quote(run_dir + '/gpu')}",
              " ".join(words) + " " + shlex.join(rec) + " &",
              f"{RECORDER_PID}=$!"]
    # a clean stop: the stop file ends each node's recorder after its next sample (srun then reports nothing);
    # one that has not ended within an interval and 10 s is killed
    stop = shlex.quote(f"{run_dir}/gpu/{STOP_FILE}")
    polls = int(2 * (float(record.get("interval_s", DEFAULT_INTERVAL_S)) + 10))
    after = [f"touch {stop}",
             f'for _ in $(seq {polls}); do kill -0 "${RECORDER_PID}" 2>/dev/null || break; sleep 0.5; done',
             f'kill "${RECORDER_PID}" 2>/dev/null || true; wait "${RECORDER_PID}" || true']
    return before, after


def with_record(script: str, record: dict[str, Any] | None, site: Site, run_dir: str,
                spec: JobSpec | None = None) -> str:
    """A rendered batch script (its last line is the job's step) with the recorder around that step. The step's
    status is kept and becomes the script's after the recorder has stopped, so a failed step still ends the job
    with its own exit code (and the recorder ends cleanly then too)."""
    before, after = sbatch_lines(record, site, run_dir, spec)
    if not before:
        return script
    head, step = script.rstrip("\n").rsplit("\n", 1)
    return "\n".join([head, *before, f"{STEP_STATUS}=0", f"{step} || {STEP_STATUS}=$?", *after,
                      f'exit "${STEP_STATUS}"']) + "\n"


def local_argv(record: dict[str, Any] | None, site: Site, run_dir: str) -> list[str] | None:
    """The local supervisor's recorder command (None when the record is off): this machine's own tool, if any
    (a ``[slurm] record_command`` is for the cluster's nodes), stopping when the supervisor ends."""
    if not record or not record.get("enabled"):
        return None
    interval = float(record.get("interval_s", DEFAULT_INTERVAL_S))
    return recorder_args(site, run_dir, interval, site_tool=False) + ["--stop-with-parent"]
