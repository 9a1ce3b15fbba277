"""A dress rehearsal: submit every module's real job, wait, and set what each module promises against what ran.

:func:`rehearse` takes the jobs from :mod:`lumikit.course_jobs` (the specs the notebooks launch), runs each behind
:mod:`lumikit.rehearse.probe` (which records what every rank sees, then execs the module's own command), waits
with the backend's gentle polling (:meth:`lumikit.launch.Run.wait`), and writes ``report.md`` and ``report.json``
into a rehearsal folder under ``runs/``: per job the job id, state, elapsed time, GPU-hours, the report card's
highlights and each promise with its measurement. The jobs' run folders stay inside it (``runs/``), with
``bundle.json`` naming each one for ``lumikit reference add``.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..course_jobs import CourseJob, Promise, course_jobs
from ..errors import LaunchError, LumikitError
from ..files import write_atomic
from ..json_output import to_json
from ..jobs.python import module_argv
from ..jobs.spec import JobSpec
from ..launch import launch
from ..launch.backend import Run
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
            "network": found.network if found else None}


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


def measure(key: str, seen: list[dict[str, Any]], rccl: dict[str, Any], card: dict[str, Any]) -> tuple[Any, str]:
    """The measured value of a promise key (see :class:`lumikit.course_jobs.Promise`) and a note on it."""
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
    if key == "busy_power_w":
        power = _busy_power(card)
        if power is None:
            busy = "no GCD reached 50 % busy in the record" if card.get("gcds") else ""
            return None, "; ".join(x for x in (card.get("status", ""), busy) if x)
        if card.get("kind") == "generated":  # a stand-in's readings are shown, never held against a promise
            return None, f"generated readings only ({power:g} W from the stand-in tool): not a measurement"
        return power, "mean power of the GCDs that computed (the report card)"
    return None, f"no measurement for {key!r}"


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
        measured, note = measure(p.key, seen, rccl, card)
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
                 "| module | job | job id | state | elapsed (s) | GPU-hours | report card |",
                 "|---|---|---|---|---|---|---|"]
        for o in self.outcomes:
            lines.append(f"| {o.module} | {o.key} | {o.job_id or '-'} | {o.state} | {_num(o.elapsed_s)} | "
                         f"{_num(o.gpu_hours)} | {_cell(str(o.card.get('status', '')))} |")
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


def rehearse(site: Site | str | None = None, modules: list[str] | None = None, *,
             runs_dir: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
             licence: str = "CC-BY-4.0", say: Callable[[str], None] = lambda line: None) -> Rehearsal:
    """Submit every module's job (or those of ``modules``) on ``site``, wait for all, write the report.

    All jobs are submitted first, then followed one after the other with :meth:`Run.wait` (gentle polling, no
    fixed sleeps); a job refused at submission is reported FAILED with Slurm's message and the others go on.
    ``licence`` is the one the instructor gives the outputs in ``bundle.json``'s ``reference add`` commands."""
    s = load_site(site)
    started = datetime.now(timezone.utc)
    folder = Path(runs_dir or os.environ.get("LUMIKIT_RUNS_DIR") or DEFAULT_RUNS).resolve() / f"rehearsal-{s.name}-{started:%Y%m%dT%H%M%SZ}"
    suffix = 1
    while folder.exists():
        suffix += 1
        folder = folder.with_name(f"rehearsal-{s.name}-{started:%Y%m%dT%H%M%SZ}-{suffix}")
    (folder / "runs").mkdir(parents=True)
    jobs = [j for j in course_jobs(modules, site=s, scratch=folder / "scratch")
            if not (j.gpu_only and s.name != "lumi")]
    (folder / "scratch").mkdir()
    submitted: list[tuple[CourseJob, Run | None, str]] = []
    for job in jobs:
        try:
            run = launch(probed(job.spec), site=s, runs_dir=folder / "runs")
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


__all__ = ["Check", "DEFAULT_TIMEOUT_S", "Outcome", "Rehearsal", "bundle", "card_highlights", "measure",
           "observations", "outcome", "probed", "rccl_summary", "rehearse", "verdict"]
