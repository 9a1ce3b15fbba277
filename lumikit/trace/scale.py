"""Traces at scale: one rank at a time, in this process or as a Slurm job array, then one reduction.

A multi-node job writes one trace per rank (16-1024 files of 50-1000 MB). Loading them all, as HTA does, needs
memory for every rank at once. :func:`summarise_ranks` loads one rank, reduces it to its summary (a few kB) and
lets it go before the next, so memory stays near that of the largest rank; :func:`reduce_summaries` then adds what
needs every rank (the straggler). :func:`summarise_via_slurm` hands the per-rank work to a job array through the
site's Slurm backend (each task takes every N-th rank and writes one JSON file per rank) and reduces the files.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import LaunchError, TraceError
from ..files import atomic_path
from .loader import find_trace_files, load_trace

#: Array tasks at once by default (``%N`` in ``--array``): a fair share of a shared cluster.
MAX_PARALLEL = 16


def rank_summary(rank: int, path: Path | str, *, top: int = 10, include_last_step: bool = False,
                 salvage: bool = False, progress: bool = False) -> dict:
    """The summary of one rank's trace (as in :meth:`TraceAnalyzer.summary`), with the per-step rows the
    straggler reduction needs under ``straggler_rows``."""
    from .analyses import TraceAnalyzer

    analyzer = TraceAnalyzer(load_trace(path, rank_map={rank: path}, salvage=salvage, progress=progress),
                             include_last_step=include_last_step)
    info = analyzer.rank_summary(rank, top=top)
    info["straggler_rows"] = analyzer.straggler_rows(rank)
    return info


def summarise_ranks(path: Path | str, *, rank_map: Mapping[int, str | Path] | None = None, top: int = 10,
                    include_last_step: bool = False, salvage: bool = False, progress: bool = False
                    ) -> Iterator[tuple[int, dict]]:
    """(rank, summary) for every rank under ``path``, one rank in memory at a time."""
    for rank, file in find_trace_files(path, rank_map).items():
        yield rank, rank_summary(rank, file, top=top, include_last_step=include_last_step, salvage=salvage,
                                 progress=progress)


def reduce_summaries(per_rank: Mapping[int, dict], include_last_step: bool = False) -> dict:
    """The summary of the whole job from per-rank summaries: the same shape as :meth:`TraceAnalyzer.summary`."""
    from .analyses import straggler_rank, window_note

    ranks = sorted(per_rank)
    rows = [row for r in ranks for row in per_rank[r].get("straggler_rows", [])]
    straggler = straggler_rank(rows, ranks) if len(ranks) > 1 else None
    note = window_note(include_last_step, max((len(per_rank[r].get("steps", [])) for r in ranks), default=0))
    return {"ranks": {str(r): {k: v for k, v in per_rank[r].items() if k != "straggler_rows"} for r in ranks},
            "straggler": straggler, "window": note}


# -- Slurm job array ---------------------------------------------------------------------------------------
def _task_command(plan: Path) -> list[str]:
    return [sys.executable, "-m", "lumikit.trace.scale", str(plan)]


def summarise_via_slurm(path: Path | str, *, rank_map: Mapping[int, str | Path] | None = None, top: int = 10,
                        include_last_step: bool = False, tasks: int | None = None, site=None,
                        partition: str | None = None, time_limit: str = "0:30:00", mem: str = "4G",
                        timeout: float = 3600, poll: float = 2.0, runs_dir: str | os.PathLike[str] | None = None
                        ) -> dict:
    """Summarise every rank as a Slurm job array and reduce the result (see :func:`ranks_via_slurm`)."""
    per_rank, via = ranks_via_slurm(path, rank_map=rank_map, top=top, include_last_step=include_last_step,
                                    tasks=tasks, site=site, partition=partition, time_limit=time_limit, mem=mem,
                                    timeout=timeout, poll=poll, runs_dir=runs_dir)
    result = reduce_summaries(per_rank, include_last_step)
    result["via"] = via
    return result


def calls_via_slurm(path: Path | str, *, rank_map: Mapping[int, str | Path] | None = None, tasks: int | None = None,
                    **options) -> dict[int, dict]:
    """Every rank's collective calls (:func:`lumikit.trace.matched.rank_calls`) read by a Slurm job array."""
    per_rank, _ = ranks_via_slurm(path, rank_map=rank_map, tasks=tasks, work="collectives", **options)
    return per_rank


def ranks_via_slurm(path: Path | str, *, rank_map: Mapping[int, str | Path] | None = None, top: int = 10,
                    include_last_step: bool = False, tasks: int | None = None, site=None,
                    partition: str | None = None, time_limit: str = "0:30:00", mem: str = "4G",
                    timeout: float = 3600, poll: float = 2.0, runs_dir: str | os.PathLike[str] | None = None,
                    work: str = "summary") -> tuple[dict[int, dict], dict]:
    """Per-rank results (``work``: ``summary`` or ``collectives``) from a Slurm job array, one task per
    ``len(ranks)/tasks`` ranks, and where they ran.

    The array script is the site backend's own batch script for a one-task job, with ``--array`` added; each
    task reads the plan in the run folder and writes ``parts/rank-<R>.json``. Raises :class:`LaunchError` when
    a task fails (its log is named)."""
    from ..config import config_path, load_config
    from ..jobs.render import resolve
    from ..jobs.spec import JobSpec
    from ..jobs.validate import missing_account, validate
    from ..launch.runfolder import RunFolder
    from ..launch.slurm import SlurmBackend

    files = find_trace_files(path, rank_map)
    backend = SlurmBackend(site)
    folder = RunFolder.create("trace-summary", runs_dir)
    n_tasks = max(1, min(tasks or len(files), len(files)))
    plan = folder.path / "plan.json"
    plan.write_text(json.dumps({"files": {str(r): str(Path(p).resolve()) for r, p in files.items()}, "tasks": n_tasks,
                                "top": top, "include_last_step": include_last_step, "work": work,
                                "out": str(folder.path / "parts")}, indent=1))
    spec = JobSpec(command=tuple(_task_command(plan)), name="trace-summary", partition=partition or
                   _cpu_partition(backend.site), ntasks_per_node=1, cpus_per_task=1, mem=mem, time=time_limit)
    spec = resolve(spec, backend.site, load_config())  # the user's account, as launch() does
    validate(spec, backend.site)
    lack = missing_account(spec, backend.site, str(config_path()))
    if lack:
        raise lack
    script = backend.script(spec, folder)
    array = f"#SBATCH --array=0-{n_tasks - 1}%{min(n_tasks, MAX_PARALLEL)}"
    script = script.replace("\n\nset -eo pipefail", f"\n{array}\n\nset -eo pipefail", 1)
    script = script.replace(f"--output={folder.path}/slurm-%j.out", f"--output={folder.path}/slurm-%A_%a.out")
    script = script.replace(f"--output={folder.path}/rank%t.out", f"--output={folder.path}/task%a.out")
    script = script.replace(f"--error={folder.path}/rank%t.err", f"--error={folder.path}/task%a.err")
    batch = folder.path / "job.sbatch"
    batch.write_text(script)
    proc = backend.run(["sbatch", "--parsable", "--no-requeue", str(batch)])
    if proc.returncode != 0:
        raise LaunchError(f"Slurm rejected the trace summary array: {(proc.stderr or proc.stdout).strip()}")
    job_id = proc.stdout.strip().split(";")[0]
    folder.update(job_id=job_id, state="PENDING", backend="slurm", kind="trace-summary-array")
    deadline = time.monotonic() + timeout
    while True:
        q = backend.run(["squeue", "-h", "-j", job_id, "-o", "%i"])
        if q.returncode == 0 and not q.stdout.strip():
            break
        if time.monotonic() > deadline:
            backend.run(["scancel", job_id])
            raise LaunchError(f"trace summary array {job_id} did not finish within {timeout:.0f} s; cancelled it")
        time.sleep(poll)
    folder.update(state="COMPLETED")
    per_rank = {}
    for rank in files:
        part = folder.path / "parts" / f"rank-{rank}.json"
        if not part.is_file():
            task = sorted(files).index(rank) % n_tasks
            raise LaunchError(f"rank {rank}: array task {task} of job {job_id} wrote no summary; see "
                              f"{folder.path / f'task{task}.err'}")
        per_rank[rank] = json.loads(part.read_text())
    return per_rank, {"slurm_job": job_id, "tasks": n_tasks, "run_folder": str(folder.path)}


def _cpu_partition(site) -> str | None:
    """A partition for CPU-only work: the site's ``small`` if it has one, else its default."""
    return "small" if "small" in site.partitions else site.default_partition or None


def run_task(plan_path: Path | str, task: int) -> list[Path]:
    """Array task ``task``: summarise its share of the ranks in the plan, one JSON file per rank."""
    plan = json.loads(Path(plan_path).read_text())
    files = {int(r): p for r, p in plan["files"].items()}
    mine = [r for i, r in enumerate(sorted(files)) if i % int(plan["tasks"]) == task]
    out = Path(plan["out"])
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rank in mine:
        if plan.get("work") == "collectives":
            from .matched import rank_calls

            info = rank_calls(rank, files[rank])
        else:
            info = rank_summary(rank, files[rank], top=int(plan["top"]),
                                include_last_step=bool(plan["include_last_step"]))
        target = out / f"rank-{rank}.json"
        with atomic_path(target) as tmp:
            Path(tmp).write_text(json.dumps(info))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    """Entry point of one array task: ``python -m lumikit.trace.scale PLAN`` with ``SLURM_ARRAY_TASK_ID`` set."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m lumikit.trace.scale PLAN.json (inside a Slurm array task)", file=sys.stderr)
        return 2
    try:
        task = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
        for path in run_task(args[0], task):
            print(path)
    except (TraceError, OSError, ValueError) as exc:
        print(f"lumikit: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
