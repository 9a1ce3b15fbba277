"""A dress rehearsal: submit every module's real job, wait, and set what each module promises against what ran.

:func:`rehearse` takes the jobs from :mod:`lumikit.course_jobs` (the specs the notebooks launch), runs each behind
:mod:`lumikit.rehearse.probe` (which records what every rank sees, then execs the module's own command), waits
with the backend's gentle polling (:meth:`lumikit.launch.Run.wait`), and writes ``report.md`` and ``report.json``
into a rehearsal folder under ``runs/``: per job the job id, state, elapsed time, GPU-hours, the report card's
highlights and each promise with its measurement. The jobs' run folders stay inside it (``runs/``), with
``bundle.json`` naming each one for ``lumikit reference add``.

:func:`detach` runs the same rehearsal as one batch job (a small CPU job that submits and follows the others), so
it outlives the Jupyter session or shell that started it; :func:`collect` reads its report back later.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..course_jobs import DEVICE_LOCAL_RANK, CourseJob, Promise, course_jobs
from ..errors import LaunchError, LumikitError
from ..files import load_json_bounded, read_bytes, write_atomic
from ..json_output import to_json
from ..jobs.python import host_python, module_argv
from ..jobs.spec import JobSpec, spec
from ..launch import launch, open_run
from ..text import printable
from ..launch.backend import Run
from ..launch.states import FINAL
from ..launch.runfolder import DEFAULT_RUNS, git_revision
from ..site import Site, load_site

#: How long one job may take before the rehearsal stops waiting for it (it keeps running; the report says so).
DEFAULT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Check:
    """One promise set against its measurement: ``verdict`` is ``holds``, ``differs`` or ``not measured``."""

    key: str
    says: str
    expected: Any
    measured: Any
    verdict: str
    note: str = ""


@dataclass
class Outcome:
    """What one module's job did in the rehearsal."""

    module: str
    key: str
    run: str
    job_id: str | None
    state: str
    elapsed_s: float | None
    gpu_hours: float | None
    card: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    error: str = ""


def probed(spec: JobSpec) -> JobSpec:
    """The spec with :mod:`lumikit.rehearse.probe` in front of its command (same resources, same command after
    it) and ``NCCL_DEBUG=INFO`` for multi-rank jobs, so RCCL says which transport it took."""
    env = dict(spec.env)
    if spec.total_tasks > 1:
        env.setdefault("NCCL_DEBUG", "INFO")
    return spec.with_(command=(*module_argv("lumikit.rehearse.probe", "--"), *spec.command), env=env)


def observations(run_dir: Path) -> list[dict[str, Any]]:
    """Every rank's ``probe.rank<N>.json`` (what it saw), by rank; unreadable files are skipped."""
    out = []
    for p in sorted(run_dir.glob("probe.rank*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda o: o.get("rank", 0))


def rccl_summary(run_dir: Path) -> dict[str, Any]:
    """Whether the job's logs hold RCCL's ``NCCL INFO`` lines, and the transport they name (see
    :func:`lumikit.logs.rccl.parse_rccl`)."""
    from ..logs.rccl import parse_rccl

    text = "".join(p.read_text(errors="replace") for p in sorted(run_dir.glob("rank*.err")) + sorted(
        run_dir.glob("slurm-*.out")) if p.is_file() and p.stat().st_size < 50_000_000)
    lines = sum(1 for line in text.splitlines() if "NCCL INFO" in line)
    found = parse_rccl(text, source=str(run_dir)) if lines else None
    return {"nccl_info_lines": lines, "transport": found.transport if found else None,
            "network": found.network if found else None, "provider": found.provider if found else None,
            "over_slingshot": found.ok if found else None, "says": found.describe() if found else None}


def card_highlights(run: Run) -> dict[str, Any]:
    """The report card's highlights for this run (:func:`lumikit.record.card.card_of_run`): per node and GCD the
    mean busy %, mean power, peak VRAM and energy, the findings, the computing GPU-hours and energy per step;
    ``kind`` says whether the readings are recorded or generated."""
    from ..record.card import card_of_run

    try:
        card = card_of_run(run.path)
    except (LumikitError, OSError) as exc:
        return {"status": f"no report card: {exc}"}
    if card.absent:
        return {"status": f"no GPU record: {card.absent}"}
    kinds = sorted({info["kind"] for info in card.nodes.values()})
    keep = ("node", "gcd", "samples", "busy_mean_pct", "power_mean_w", "vram_peak_gib", "energy_j")
    return {"status": f"{len(card.nodes)} node(s), {sum(r.samples for r in card.rows)} samples, {'/'.join(kinds)}",
            "kind": "generated" if "generated" in kinds else "recorded",
            "gcds": [{k: getattr(r, k) for k in keep} for r in card.rows],
            "findings": [f["message"] for f in card.findings],
            "computing_gpu_hours": card.billing.get("computing_gpu_hours"),
            "energy_per_step_j": card.steps.get("energy_per_step_j")}


def _busy_power(card: dict[str, Any]) -> float | None:
    """The mean power of the GCDs that computed (mean busy at least 50 %), from the card's highlights."""
    powers = [float(r["power_mean_w"]) for r in card.get("gcds", []) if r.get("power_mean_w") is not None
              and float(r.get("busy_mean_pct") or 0) >= 50]
    return round(sum(powers) / len(powers), 1) if powers else None


def measure(key: str, seen: list[dict[str, Any]], rccl: dict[str, Any], card: dict[str, Any],
            run_dir: Path | None = None) -> tuple[Any, str]:
    """The measured value of a promise key (see :class:`lumikit.course_jobs.Promise`) and a note on it
    (``run_dir``: the job's run folder, for what the job wrote there)."""
    if key == "ranks":
        return len(seen), "ranks that wrote what they saw"
    if key == "nodes":
        return len({o.get("node") for o in seen}), ", ".join(sorted({str(o.get("node")) for o in seen}))
    if key == "gpus_visible":
        counts = sorted({o.get("gpus_visible") for o in seen}, key=str)
        note = "; ".join(sorted({str(o.get("device")) for o in seen}))
        return (counts[0] if len(counts) == 1 else counts), note
    if key == "cores_per_rank":
        sizes = sorted({len(o.get("cpus") or []) for o in seen})
        cpus = {o.get("rank"): _ranges(o.get("cpus") or []) for o in seen}
        return (sizes[0] if len(sizes) == 1 else sizes), "; ".join(f"rank {r}: {c}" for r, c in cpus.items())
    if key == "disjoint_cores":
        by_node: dict[str, list[set[int]]] = {}
        for o in seen:
            by_node.setdefault(str(o.get("node")), []).append(set(o.get("cpus") or []))
        shared = any(a & b for sets in by_node.values() for i, a in enumerate(sets) for b in sets[i + 1:])
        return (not shared) if seen else None, "no two ranks of a node share a CPU" if not shared else "ranks share CPUs"
    if key == "rccl_used":
        if not rccl["nccl_info_lines"]:
            return False, "no NCCL INFO lines in the logs (no RCCL: gloo on CPUs, or NCCL_DEBUG unset)"
        return True, f"transport {rccl['transport']}, network {rccl['network']}"
    if key == "device_local_rank":
        return _device_local_rank(seen)
    if key == "rccl_transport":
        if not rccl["nccl_info_lines"]:
            return None, "no NCCL INFO lines in the logs: no RCCL here (gloo on CPUs), or NCCL_DEBUG unset"
        shown = "ofi/cxi" if rccl.get("over_slingshot") else f"{rccl['transport']}/{rccl.get('provider') or '-'}"
        return shown, str(rccl.get("says") or "")
    if key == "ladder_rungs":
        return ladder_rungs(run_dir)
    if key == "busy_power_w":
        power = _busy_power(card)
        if power is None:
            busy = "no GCD reached 50 % busy in the record" if card.get("gcds") else ""
            return None, "; ".join(x for x in (card.get("status", ""), busy) if x)
        if card.get("kind") == "generated":  # a stand-in's readings are shown, never held against a promise
            return None, f"generated readings only ({power:g} W from the stand-in tool): not a measurement"
        return power, "mean power of the GCDs that computed (the report card)"
    return None, f"no measurement for {key!r}"


def ladder_rungs(run_dir: Path | None) -> tuple[Any, str]:
    """The rungs of the run's ``ladder.json`` that have samples/s (a positive median, its min and max) from at
    least two timed repeats and their spread, comma-separated in order; the note names the rungs without them."""
    from ..ladder.table import read_ladder

    if run_dir is None:
        return None, "no run folder to read ladder.json from"
    try:
        data = read_ladder(run_dir)
    except LumikitError as exc:
        return None, str(exc)
    complete, lacking = [], []
    for row in data["rungs"]:
        rate = row.get("samples_per_s")
        numbers = [rate.get(k) for k in ("median", "min", "max")] if isinstance(rate, dict) else []
        values = rate.get("values") if isinstance(rate, dict) else None
        ok = (len(numbers) == 3 and all(isinstance(x, (int, float)) for x in numbers) and numbers[0] > 0
              and isinstance(values, list) and len(values) >= 2 and isinstance(row.get("spread_pct"), (int, float)))
        (complete if ok else lacking).append(str(row.get("rung")))
    note = f"{len(complete)} rung(s) with samples/s and spread, {data.get('measured_on', '?')}"
    if lacking:
        note += f"; without them: {', '.join(lacking)}"
    return ",".join(complete), note


def _device_local_rank(seen: list[dict[str, Any]]) -> tuple[Any, str]:
    """Whether every rank sees the same number of GCDs and uses device ``LOCAL_RANK``, a GCD no other rank of its
    node uses (from the probe: PyTorch's count where it sees GPUs, else Slurm's GPU variables, which lumi-sim sets
    too)."""
    if not seen:
        return None, "no rank wrote what it saw"
    counts, problems, parts = set(), [], []
    used: dict[str, list[Any]] = {}
    for o in seen:
        gcds = [str(g) for g in o.get("gcds") or []]
        n = o.get("gpus_visible") or len(gcds)
        local = o.get("local_rank")
        source = "PyTorch" if o.get("gpus_visible") else "Slurm's GPU variables"
        counts.add(n)
        if not n:
            problems.append(f"rank {o.get('rank')} sees no GCD")
            continue
        if local is None or local >= n:
            problems.append(f"rank {o.get('rank')}: LOCAL_RANK {local} but it sees {n} GCD(s)")
        gcd = gcds[local % len(gcds)] if gcds and local is not None else local
        used.setdefault(str(o.get("node")), []).append(gcd)
        parts.append(f"rank {o.get('rank')} sees {n} ({source}), LOCAL_RANK {local} -> GCD {gcd}")
    problems += [f"ranks on {node} share GCD(s) {', '.join(sorted({str(g) for g in gs if gs.count(g) > 1}))}"
                 for node, gs in used.items() if len(gs) != len(set(gs))]
    if len(counts) > 1:
        problems.append(f"ranks see different numbers of GCDs: {sorted(counts)}")
    measured = "; ".join(problems) if problems else DEVICE_LOCAL_RANK.format(gcds=counts.pop())
    return measured, "; ".join(parts)


def _ranges(cpus: list[int]) -> str:
    """[1, 2, 3, 9] -> '1-3,9'."""
    out, start, prev = [], None, None
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = c
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out) or "-"


def verdict(promise: Promise, measured: Any) -> str:
    """``holds`` when the measurement equals the promise (power: within 25 %), ``not measured`` when there is
    none, else ``differs``."""
    if measured is None:
        return "not measured"
    if promise.key == "busy_power_w":
        return "holds" if abs(float(measured) - float(promise.expected)) <= 0.25 * float(promise.expected) else "differs"
    return "holds" if measured == promise.expected else "differs"


def _elapsed(manifest: dict[str, Any]) -> float | None:
    if isinstance(manifest.get("elapsed_s"), (int, float)):
        return float(manifest["elapsed_s"])
    try:
        start = datetime.fromisoformat(str(manifest["start_time"]))
        end = datetime.fromisoformat(str(manifest["end_time"]))
    except (KeyError, ValueError):
        return None
    if (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return round((end - start).total_seconds(), 1)


def _gpu_hours(manifest: dict[str, Any]) -> float | None:
    bill = manifest.get("billing_actual") or {}
    if bill.get("gpu_hours") is not None:
        return round(float(bill["gpu_hours"]), 4)
    rate = (manifest.get("billing_estimate") or {}).get("gpu_hours_per_hour")
    elapsed = _elapsed(manifest)
    return round(float(rate) * elapsed / 3600, 4) if rate is not None and elapsed is not None else None


def outcome(job: CourseJob, run: Run, state: str, error: str = "") -> Outcome:
    """Read one finished job back from its run folder: probes, RCCL lines, the report card, the bill."""
    m = run.manifest
    seen = observations(run.path)
    rccl = rccl_summary(run.path)
    card = card_highlights(run)
    checks = []
    for p in job.promises:
        measured, note = measure(p.key, seen, rccl, card, run.path)
        checks.append(Check(p.key, p.says, p.expected, measured, verdict(p, measured), note))
    return Outcome(job.module, job.key, str(run.path), m.get("job_id"), state, _elapsed(m), _gpu_hours(m), card,
                   checks, error)


@dataclass
class Rehearsal:
    """A rehearsal's folder and what each job did."""

    folder: Path
    site: str
    outcomes: list[Outcome]
    started: str
    finished: str = ""

    @property
    def all_completed(self) -> bool:
        return bool(self.outcomes) and all(o.state == "COMPLETED" for o in self.outcomes)

    def to_dict(self) -> dict[str, Any]:
        return {"site": self.site, "folder": str(self.folder), "started": self.started, "finished": self.finished,
                "commit": git_revision(Path(__file__).parent), "all_completed": self.all_completed,
                "jobs": [asdict(o) for o in self.outcomes]}

    def markdown(self) -> str:
        """The report as Markdown: a summary table, then each job's promises against the measurements."""
        done = sum(o.state == "COMPLETED" for o in self.outcomes)
        lines = [f"# Rehearsal on {self.site}", "",
                 f"{self.started} to {self.finished}; {done} of {len(self.outcomes)} jobs COMPLETED. "
                 f"Run folders: `{self.folder / 'runs'}`.", ""]
        if self.site != "lumi":
            lines += [f"{self.site} is not LUMI: the promises are LUMI's (its GCDs, CPU binding and power), so "
                      "'differs' on them is expected here; what counts here is that every job COMPLETED. GPU "
                      "readings here are generated by a stand-in tool and are never held against a promise.", ""]
        lines += [
                 "| module | job | run folder | job id | state | elapsed (s) | GPU-hours | report card |",
                 "|---|---|---|---|---|---|---|---|"]
        for o in self.outcomes:
            lines.append(f"| {o.module} | {o.key} | {_cell(Path(o.run).name) if o.run else '-'} | {o.job_id or '-'} | "
                         f"{o.state} | {_num(o.elapsed_s)} | {_num(o.gpu_hours)} | "
                         f"{_cell(str(o.card.get('status', '')))} |")
        for o in self.outcomes:
            lines += ["", f"## {o.module} {o.key}: {o.state}", ""]
            if o.error:
                lines += [f"Error: {_cell(o.error)}", ""]
            lines += [f"Report card: {_cell(str(o.card.get('status', '-')))}", ""]
            for g in o.card.get("gcds", []):
                lines.append(f"- {g['node']} GCD {g['gcd']}: {g['samples']} samples, busy {_num(g['busy_mean_pct'])} "
                             f"% mean, {_num(g['power_mean_w'])} W mean, VRAM peak {_num(g['vram_peak_gib'])} GiB, "
                             f"energy {_num(g['energy_j'])} J ({o.card.get('kind')})")
            lines += [f"- finding: {_cell(f)}" for f in o.card.get("findings", [])]
            if o.card.get("gcds"):
                lines.append("")
            lines += ["| promise (the module says) | expected on LUMI | measured | verdict | how |", "|---|---|---|---|---|"]
            lines += [f"| {_cell(c.says)} | {c.expected} | {'-' if c.measured is None else _cell(str(c.measured))} | {c.verdict} | {_cell(c.note)} |"
                      for c in o.checks]
        lines += ["", "Each job's run folder holds its logs, `probe.rank<N>.json` (what each rank saw) and, where the "
                  "GPU record is on, `gpu/`: `bundle.json` lists them for `lumikit reference add`."]
        return "\n".join(lines) + "\n"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _cell(text: str) -> str:
    """Text safe in one Markdown table cell (no pipes, no line breaks, no control characters)."""
    return "".join(ch if ch.isprintable() else " " for ch in text.replace("|", "/"))[:300]


def new_folder(site: Site, runs_dir: str | os.PathLike[str] | None = None) -> Path:
    """A new, empty rehearsal folder ``runs/rehearsal-SITE-TIME[-N]`` (``mkdir`` without exist_ok: two
    rehearsals started in the same second get their own)."""
    base = Path(runs_dir or os.environ.get("LUMIKIT_RUNS_DIR") or DEFAULT_RUNS).resolve()
    stamp = f"rehearsal-{site.name}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    base.mkdir(parents=True, exist_ok=True)
    for suffix in range(1, 1000):
        folder = base / (stamp if suffix == 1 else f"{stamp}-{suffix}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise LaunchError(f"{base}: 999 rehearsal folders named {stamp}; remove some")


def rehearse(site: Site | str | None = None, modules: list[str] | None = None, *,
             runs_dir: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
             licence: str = "CC-BY-4.0", say: Callable[[str], None] = lambda line: None,
             folder: str | os.PathLike[str] | None = None) -> Rehearsal:
    """Submit every module's job (or those of ``modules``) on ``site``, wait for all, write the report.

    All jobs are submitted first, then followed one after the other with :meth:`Run.wait` (gentle polling, no
    fixed sleeps); a job refused at submission is reported FAILED with Slurm's message and the others go on.
    Each job's run folder is named after its module and key (``…-07-ddp-…``), so no two share a name.
    ``licence`` is the one the instructor gives the outputs in ``bundle.json``'s ``reference add`` commands.
    ``folder``: an existing rehearsal folder to fill (the batch driver's, see :func:`detach`) instead of a new one
    under ``runs_dir``."""
    s = load_site(site)
    started = datetime.now(timezone.utc)
    folder = Path(folder).resolve() if folder is not None else new_folder(s, runs_dir)
    if (folder / "runs").exists() or not folder.is_dir():
        raise LaunchError(f"{folder}: not an empty rehearsal folder (it already has runs/, or is missing); "
                          "give a new folder, or leave --into out")
    (folder / "runs").mkdir()
    jobs = [j for j in course_jobs(modules, site=s, scratch=folder / "scratch")
            if not (j.gpu_only and s.name != "lumi")]
    (folder / "scratch").mkdir()
    submitted: list[tuple[CourseJob, Run | None, str]] = []
    for job in jobs:
        try:
            run = launch(probed(job.spec).with_(name=f"{job.module}-{job.key}"), site=s, runs_dir=folder / "runs")
            say(f"{job.title}: submitted as {run.job_id or run.path.name}")
            submitted.append((job, run, ""))
        except LumikitError as exc:
            say(f"{job.title}: refused: {exc}")
            submitted.append((job, None, str(exc)))
    outcomes = []
    for job, run, error in submitted:
        if run is None:
            outcomes.append(Outcome(job.module, job.key, "", None, "FAILED", None, None, {}, [], error))
            continue
        try:
            state = run.wait(timeout=timeout, progress=False)
        except LaunchError as exc:
            state, error = run.manifest.get("state", "UNKNOWN"), str(exc)
        say(f"{job.title}: {state}")
        outcomes.append(outcome(job, run, state, error))
    result = Rehearsal(folder, s.name, outcomes, started.isoformat(timespec="seconds"),
                       datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_atomic(folder / "report.json", to_json(result.to_dict())[0] + "\n")  # standard JSON: no NaN
    write_atomic(folder / "report.md", result.markdown())
    write_atomic(folder / "bundle.json", json.dumps(bundle(result, licence), indent=2) + "\n")
    return result


#: The file a detached rehearsal's folder holds about its driver job.
DRIVER_FILE = "driver.json"


def _hms(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def driver_spec(site: Site, folder: Path, modules: list[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
                licence: str = "CC-BY-4.0") -> JobSpec:
    """The rehearsal's driver as one batch job: ``lumikit rehearse --into FOLDER`` on one core of a CPU partition
    (on LUMI ``small``), for the jobs' time plus half an hour. It runs the job's Python from the host
    (:func:`lumikit.jobs.python.host_python`: on LUMI the venv's launcher, which enters the course container with
    Slurm's client bound in), since it submits the other jobs itself."""
    partition = next((p.name for p in site.partitions.values() if p.kind == "cpu" and not p.exclusive),
                     site.default_partition)
    argv = [host_python(), "-m", "lumikit", "rehearse", "--site", site.source or site.name, "--into", str(folder),
            "--timeout", f"{timeout:g}", "--licence", licence, "--json"]
    if modules:
        argv += ["--modules", ",".join(modules)]
    # a driver submitted from a kernel inside the container must not look "already inside" to the launcher
    env = {"SINGULARITY_CONTAINER": "", "APPTAINER_CONTAINER": ""} if site.uses_containers else {}
    return spec(argv, name="rehearsal-driver", partition=partition, ntasks_per_node=1, cpus_per_task=1,
                time=_hms(timeout + 1800), env=env)


def detach(site: Site | str | None = None, modules: list[str] | None = None, *,
           runs_dir: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
           licence: str = "CC-BY-4.0") -> Path:
    """Submit the whole rehearsal as one batch job (:func:`driver_spec`) and return its folder at once; the job
    goes on when the shell or Jupyter session that started it ends. :func:`collect` reads the report later."""
    s = load_site(site)
    folder = new_folder(s, runs_dir)
    run = launch(driver_spec(s, folder, modules, timeout=timeout, licence=licence), site=s,
                 runs_dir=folder / "driver", gpu_record=False)
    write_atomic(folder / DRIVER_FILE, json.dumps({"run": str(run.path), "job_id": run.job_id, "site": s.name,
                                                   "submitted": datetime.now(timezone.utc).isoformat(
                                                       timespec="seconds")}) + "\n")
    return folder


def collect(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A rehearsal folder's ``report.json`` (as a dict), once its driver has written it; else a
    :class:`~lumikit.errors.LaunchError` that says where the driver job stands and where its log is."""
    path = Path(folder)
    report = path / "report.json"
    if report.is_file():
        return load_json_bounded(read_bytes(report, "a rehearsal report"), str(report))
    driver = path / DRIVER_FILE
    if not driver.is_file():
        raise LaunchError(f"{path}: no report.json and no {DRIVER_FILE}: not a rehearsal folder; give the folder "
                          "that `lumikit rehearse --detach` printed")
    info = load_json_bounded(read_bytes(driver, "a rehearsal's driver file", limit=1 << 20), str(driver))
    run = open_run(_driver_run(path, info))
    state = run.status()
    log = run.path / f"slurm-{info.get('job_id')}.out"
    if state not in FINAL:
        raise LaunchError(f"{path}: the rehearsal is still going (driver job {info.get('job_id')} is {state}); "
                          f"collect it again later (its log: {log})")
    raise LaunchError(f"{path}: the driver job {info.get('job_id')} ended {state} without a report; read its "
                      f"log {log} and rank0.err in {run.path}")


def _driver_run(folder: Path, info: object) -> Path:
    """The driver job's run folder that ``driver.json`` names: a string naming a folder inside the rehearsal's
    own ``driver/`` (where :func:`detach` put it), else a LaunchError naming the damage (a rehearsal folder is data:
    it never points ``collect`` at another folder, whose manifest would choose what is queried)."""
    run = info.get("run") if isinstance(info, dict) else None
    damaged = f"{printable(str(folder / DRIVER_FILE))}: damaged rehearsal driver file"
    if not isinstance(run, str) or not run or "\0" in run:
        raise LaunchError(f"{damaged} (no 'run' folder named in it). Fix: collect the folder that "
                          "`lumikit rehearse --detach` printed, or detach the rehearsal again")
    try:
        own, named = (folder / "driver").resolve(), Path(run).resolve()
    except (OSError, RuntimeError, ValueError):
        named = own = None
    if own is None or named is None or own not in named.parents:
        raise LaunchError(f"{damaged}: its run {printable(run[:200])!r} is not inside {printable(str(folder))}/driver. "
                          "Fix: collect the folder that `lumikit rehearse --detach` printed, or detach it again")
    return named


def bundle(result: Rehearsal, licence: str = "CC-BY-4.0") -> list[dict[str, Any]]:
    """One entry per completed job: its run folder and the ``lumikit reference add`` command that packs it, with
    a source line naming the site, the date and the module."""
    out = []
    for o in result.outcomes:
        if o.state != "COMPLETED" or not o.run:
            continue
        source = f"lumikit rehearse on {result.site}, {result.started[:10]}, module {o.module} job {o.key}"
        out.append({"module": o.module, "job": o.key, "run": o.run, "source": source,
                    "command": ["lumikit", "reference", "add", o.run, "--source", source, "--licence", licence]})
    return out


__all__ = ["Check", "DEFAULT_TIMEOUT_S", "DRIVER_FILE", "Outcome", "Rehearsal", "bundle", "card_highlights", "collect",
           "detach", "driver_spec", "ladder_rungs", "measure", "new_folder", "observations", "outcome", "probed",
           "rccl_summary", "rehearse", "verdict"]
