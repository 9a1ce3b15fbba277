"""The report card of a run: what its GPUs did, per node, GCD and package, over the job's own window (pure).

:func:`report_card` takes the node records (sessions, or record files streamed by :func:`card_of_run`), the
manifest and the markers and returns a :class:`ReportCard`:

- per GCD: samples, mean/max busy %, peak VRAM, clocks and the seconds it was computing (busy % at or above the
  site's ``busy_pct``, unless its package's own power says it was waiting); its power and energy only where they
  are its own (a GPU that reports per GPU) or its package's and the package is wholly the job's;
- per package (an MI250X reports power once per package, and ``amd-smi`` prints 0 W on the second GCD): power and
  energy, attributed to the job's GCDs in it, or "package power includes GCDs outside this job" on a shared node;
- per node and for the job: the window integrated (the job's start and end from the manifest, the edges
  extrapolated and labelled), gaps and a record that stopped early flagged, totals, LUMI's node energy counters
  (``/sys/cray/pm_counters``) beside the GPU tool's figure and Slurm's ``ConsumedEnergy`` for whole-node jobs;
- findings (:mod:`lumikit.smi.interpret`), billed GPU-hours beside computing ones, energy per phase and step.

One integration rule for every figure (:mod:`lumikit.record.integrate`). Nothing here reads a file but
:func:`card_of_run`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import LumikitError
from ..launch.states import FINAL
from ..site import load_site, site_of_record
from ..smi.interpret import main_group
from ..smi.pm_counters import VALUE_FILES, energy_between
from ..smi.readings import decode, encode, energy_counters
from ..smi.sessions import Session, SessionHeader
from ..text import printable
from .accumulate import NodeSummary, findings, mean_max, runnings, summarise
from .integrate import GAP_INTERVALS, trapezoid_window
from .packages import OWN, NodeLayout, layout, whole_node
from .recorder import GPU_DIR
from .store import Chunk, Sample, chunks_of

GIB = 2**30
J_PER_KWH = 3.6e6
SHARED = "package power includes GCDs outside this job"


@dataclass
class GcdRow:
    """One line of the card: one GCD (device) of one node."""

    node: str
    gcd: int
    kind: str
    samples: int
    busy_mean_pct: float | None
    busy_max_pct: float | None
    power_mean_w: float | None
    power_max_w: float | None
    power_note: str
    vram_peak_gib: float | None
    vram_peak_pct: float | None
    energy_j: float | None
    energy_kwh: float | None
    energy_source: str
    sclk_mean_mhz: float | None
    sclk_max_mhz: float | None
    computing_s: float
    node_gcd: int | None = None   # the node's GCD this device is (see lumikit.record.packages)
    package: int | None = None
    in_job: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PackageRow:
    """One package (an MI250X: two GCDs, one power reading) of one node with GCDs of the job in it."""

    node: str
    package: int
    gcds: list[int]               # the node's GCDs of this package in the record
    job_gcds: list[int]           # those that are the job's
    outside: list[int]            # the package's GCDs that are not the job's (shared node): power includes them
    power_mean_w: float | None
    power_max_w: float | None
    energy_j: float | None
    energy_source: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReportCard:
    """The card: rows (node x GCD), packages, per-node coverage and totals, findings, billing, phases and steps;
    ``text()`` for a terminal, ``to_dict()`` for ``--json``, ``figure()`` for a notebook."""

    run: str
    rows: list[GcdRow] = field(default_factory=list)
    packages: list[PackageRow] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    billing: dict[str, Any] = field(default_factory=dict)
    phases: list[dict[str, Any]] = field(default_factory=list)
    steps: dict[str, Any] = field(default_factory=dict)
    window: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=dict)
    absent: str | None = None  # why the run has no GPU record (None when it has one)
    series: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)  # node -> (t, node power)
    run_note: str = ""  # how the run ended, as its manifest notes it (a full disk, a recorder that was ended)
    record_note: str = ""  # what the launch noted about the record (an interval raised to the recorder's floor)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "record": "absent" if self.absent else "present", "why_absent": self.absent,
                "window": self.window, "nodes": self.nodes, "gcds": [r.to_dict() for r in self.rows],
                "packages": [p.to_dict() for p in self.packages], "totals": self.totals,
                "findings": self.findings, "billing": self.billing, "phases": self.phases, "steps": self.steps,
                "run_note": self.run_note, "record_note": self.record_note}

    def text(self) -> str:
        """The card as plain text: nodes, one line per GCD and per package, totals, findings, GPU-hours, phases."""
        if self.absent:
            return printable(f"{self.run}: no GPU record: {self.absent}")
        out = [f"GPU record of {self.run}"] + ([f"  run note: {self.run_note}"] if self.run_note else [])
        out += [f"  record note: {self.record_note}"] if self.record_note else []
        if any(info["kind"] == "generated" for info in self.nodes.values()):
            out.append("  GENERATED readings: a stand-in tool printed them on nodes without a GPU; not real hardware")
        w = self.window
        if w:
            out.append(f"  window: {w['duration_s']:.1f} s, {w['source']}")
        for node, info in self.nodes.items():
            if info["kind"] == "absent":
                out.append(f"  {node}: no GPU record: {info['description']}")
                continue
            if not info["samples"]:
                out.append(f"  {node}: {info['kind']}, no samples; source: {info['source'] or '-'}")
            else:
                out.append(f"  {node}: {info['kind']}, {info['samples']} samples every {info['interval_s']:g} s; "
                           f"covers {info['covered_s']:.1f} of {info['window_s']:.1f} s{_edges(info)}; "
                           f"source: {info['source'] or '-'}")
            out.extend(f"    FLAG: {f}" for f in info.get("flags", ()))
            out.extend(f"    note: {n}" for n in info.get("notes", ()))
        if not self.rows:
            out += ["", "no samples: nothing to sum up (findings and totals need at least one sample)"]
            return "\n".join(printable(line) for line in out)
        head = (f"{'node':<12} {'GCD':>3} {'samples':>7} {'busy% mean/max':>15} {'power W mean/max':>17} "
                f"{'VRAM peak':>17} {'energy':>20} {'sclk MHz mean/max':>18} {'computing s':>11}")
        out += ["", head]
        for r in self.rows:
            busy = f"{_f(r.busy_mean_pct, 0)}/{_f(r.busy_max_pct, 0)}"
            power = f"{_f(r.power_mean_w, 0)}/{_f(r.power_max_w, 0)}" if r.power_mean_w is not None else "-"
            vram = (f"{_f(r.vram_peak_gib, 1)} GiB ({_f(r.vram_peak_pct, 0)} %)" if r.vram_peak_gib is not None
                    else f"({_f(r.vram_peak_pct, 0)} %)" if r.vram_peak_pct is not None else "-")
            energy = (f"{_f(r.energy_j, 0)} J {r.energy_kwh:.4f} kWh" if r.energy_j is not None and
                      r.energy_kwh is not None else "-")
            sclk = f"{_f(r.sclk_mean_mhz, 0)}/{_f(r.sclk_max_mhz, 0)}"
            line = (f"{r.node:<12} {r.gcd:>3} {r.samples:>7} {busy:>15} {power:>17} {vram:>17} {energy:>20} "
                    f"{sclk:>18} {r.computing_s:>11.1f}")
            notes = [n for n in (r.power_note, "" if r.in_job else "not this job's GCD") if n]
            out.append(line + (f"  ({'; '.join(notes)})" if notes else ""))
        if self.packages:
            out += ["", "packages (an MI250X reports one power for its two GCDs: amd-smi prints 0 W on the second, "
                        "rocm-smi N/A):"]
            for p in self.packages:
                power = f"{_f(p.power_mean_w, 0)}/{_f(p.power_max_w, 0)} W" if p.power_mean_w is not None else "- W"
                energy = f"{_f(p.energy_j, 0)} J" if p.energy_j is not None else "- J"
                owner = ("the job's GCDs " + "+".join(map(str, p.job_gcds))) if p.job_gcds else "no GCD of the job"
                out.append(f"  {p.node} package {p.package} (GCDs {'+'.join(map(str, p.gcds)) or '-'}): power "
                           f"mean/max {power}, energy {energy} ({p.energy_source or 'no power reading'}); "
                           f"{owner}" + (f"; {SHARED} ({'+'.join(map(str, p.outside))})" if p.outside else "")
                           + (f"; {p.note}" if p.note else ""))
        sources = sorted({r.energy_source for r in self.rows if r.energy_j is not None})
        if sources:
            out.append("energy: " + "; ".join(sources))
        out.append("")
        out.extend(self._totals_text())
        out.append("")
        if self.findings:
            out.append("findings (interpret's held in at least half of the samples; idle: in all of them):")
            out.extend(f"  {f['node']}: {f['message']}" for f in self.findings)
        else:
            out.append("findings: none (no idle, starved or waiting GCD, no memory near full)")
        out.append(self.billing_line())
        for p in self.phases:
            out.append(f"phase {p['name']!r}: {p['duration_s']:.1f} s, {_f(p['energy_j'], 0)} J, mean "
                       f"{_f(p['mean_power_w'], 0)} W")
        if self.steps:
            s = self.steps
            out.append(f"steps ({s['source']}): {s['steps']} steps over {s['span_s']:.1f} s, "
                       f"{_f(s['energy_per_step_j'], 1)} J per step at a mean {_f(s['mean_power_w'], 0)} W (power "
                       "interpolated between samples: an estimate where steps are shorter than the interval)")
        return "\n".join(printable(line) for line in out)  # names from the record and manifest: escaped

    def billing_line(self) -> str:
        """The GPU-hours billed beside those the job's GCDs spent computing, each with where it comes from."""
        b = self.billing
        return (f"GPU-hours: billed {_f(b.get('billed_gpu_hours'), 4)} ({b.get('billed_from', 'unknown')}); "
                f"the job's GCDs were computing for {_f(b.get('computing_gpu_hours'), 4)} "
                f"({b.get('computing_rule', '')})")

    def _totals_text(self) -> list[str]:
        out = ["totals (the job's GCDs and packages; the same trapezoid rule for every figure):"]
        for node, t in self.totals.get("nodes", {}).items():
            out.append(f"  {node}: {_energy(t.get('gpu_energy_j'))} on the GPUs ({t.get('gpu_energy_source')})"
                       + (f", {_energy(t['shared_energy_j'])} more on packages shared with other jobs"
                          if t.get("shared_energy_j") else "")
                       + f"; computing {t['computing_gcd_s']:.1f} GCD-s" + _pm_text(t.get("pm_counters")))
        job = self.totals.get("job", {})
        if job:
            out.append(f"  job: {_energy(job.get('gpu_energy_j'))} on the GPUs, computing "
                       f"{job['computing_gcd_s']:.1f} GCD-s over {job['window_s']:.1f} s"
                       + _pm_text(job.get("pm_counters")))
            if job.get("consumed_energy"):
                out.append(f"  Slurm ConsumedEnergy: {job['consumed_energy']}")
        return out

    def table(self) -> Any:
        """The rows as a pandas DataFrame (a notebook's table)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def figure(self) -> Any:
        """A small picture: each node's power over time (the sum of its packages' power), and the phases."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 2.6))
        for node, pts in self.series.items():
            ax.plot([t for t, _ in pts], [p if p is not None else float("nan") for _, p in pts],
                    label=printable(f"{node} ({self.nodes[node]['kind']})").replace("$", r"\$"))
        for p in self.phases:
            ax.axvspan(p["start_s"], p["start_s"] + p["duration_s"], alpha=0.1)
            ax.text(p["start_s"], ax.get_ylim()[1], printable(p["name"]), fontsize=7, va="top", parse_math=False)
        ax.set_xlabel("seconds since the record started")
        ax.set_ylabel("node power (W)")
        ax.set_title(printable(f"GPU record of {self.run}"), fontsize=9, parse_math=False)
        ax.legend(fontsize=7)
        fig.tight_layout()
        return fig

    def _repr_html_(self) -> str:
        import html

        if self.absent:
            return f"<p>{html.escape(self.text())}</p>"
        return f"<pre>{html.escape(self.text())}</pre>"


def _f(x: float | None, nd: int) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{nd}f}"


def _energy(j: float | None) -> str:
    return "- J" if j is None else f"{j:.0f} J ({j / J_PER_KWH:.4f} kWh)"


def _edges(info: Mapping[str, Any]) -> str:
    parts = []
    if info.get("start_edge_s"):
        parts.append(f"first {info['start_edge_s']:.1f} s extrapolated from the first sample")
    if info.get("end_edge_s"):
        parts.append(f"last {info['end_edge_s']:.1f} s extrapolated from the last sample")
    return f" ({'; '.join(parts)})" if parts else ""


def _pm_text(pm: Mapping[str, Any] | None) -> str:
    if not pm:
        return ""
    e = pm.get("energy_j", {})
    accel = sum(v for k, v in e.items() if k.startswith("accel"))
    parts = [f"{label} {_energy(e.get(key))}" for key, label in (("energy", "node"), ("cpu_energy", "CPU"),
                                                                  ("memory_energy", "memory")) if key in e]
    if any(k.startswith("accel") for k in e):
        parts.insert(1, f"accelerators {_energy(accel)}")
    note = f"; {pm['note']}" if pm.get("note") else ""
    return f"; pm_counters over {pm.get('span_s', 0):.1f} s: " + ", ".join(parts) + note


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class NodeInput:
    """One node's record as the card reads it: header, sample blocks (read once), notes known up front, end state."""

    header: SessionHeader
    samples: Iterable[Chunk]
    notes: list[str]
    end_state: dict[str, Any]
    pm_start: dict[str, float] | None
    after: Any = None  # called after the samples were read: more notes (what a record file had to leave out)
    expected: int = 0  # about how many samples (the findings judge every k-th of a long record)


def session_samples(session: Session, site: str) -> Iterator[Sample]:
    """A session's frames as :class:`Sample` (tool output parsed; compact record frames decoded)."""
    from ..smi.parse import parse_smi

    for fr in session.frames:
        text = fr.stdout
        if text.startswith('{"format":"lumikit-readings-1"'):
            data = json.loads(text)
            yield Sample(fr.t, fr.exit_status, decode(data.get("i"), data["r"]))
            continue
        try:
            snap = parse_smi(text, source=session.header.name, site=site)
        except LumikitError:
            continue
        idx, rows = encode(main_group(snap), energy_counters(text))
        pm = None
        if text.startswith('{"cards"') and '"pm"' in text:  # an Omnistat frame with the vendor counters
            got = json.loads(text).get("pm")
            pm = {k: float(v) for k, v in got.items() if _finite(v)} if isinstance(got, dict) else None
        yield Sample(fr.t, fr.exit_status, decode(idx, rows), pm)


def _node_input(node: str, src: Any, site: str) -> NodeInput:
    if isinstance(src, Session):
        bad = sum(1 for fr in src.frames if not fr.stdout.strip())
        notes = list(src.notes)
        after = (lambda: [f"{bad} sample(s) the tool printed nothing readable for (a failed call) were left out"]
                 if bad else [])
        return NodeInput(src.header, chunks_of(session_samples(src, site)), notes, {}, None, after,
                         len(src.frames))
    rf = src  # a lumikit.record.store.RecordFile

    def after() -> list[str]:
        out = []
        if rf.failed:
            out.append(f"{rf.failed} sample(s) the tool printed nothing readable for (a failed call) were left out")
        if rf.damaged:
            out.append(f"{rf.damaged} damaged line(s) in the middle of {rf.path.name} were skipped")
        if rf.dropped:
            out.append(f"{rf.dropped} value(s) outside the readable bounds (a number past a double's range or of "
                       f"over 40 digits, a unit that is not a string) in {rf.path.name} were left out")
        if rf.torn:
            out.append(f"{rf.path}: the last line is cut short (the recorder was killed mid-write); the complete "
                       "samples before it are kept")
        return out

    pm = rf.head.get("pm_start")
    return NodeInput(rf.header, rf.chunks(), sampler_notes(rf.head), rf.end_state(),
                     pm if isinstance(pm, dict) else None, after, rf.estimate())


#: At most this many of a record's sampler notes, each cut at NOTE_CHARS (the recorder writes two or three).
MAX_NOTES, NOTE_CHARS = 8, 300


def sampler_notes(head: Mapping[str, Any]) -> list[str]:
    """The recorder's notes on how it sampled, from a record's header (``sampler``: the interval raised to the floor
    or to a per-call tool's run time, a tool started per sample), as card notes; nothing for a header without them."""
    sampler = head.get("sampler")
    notes = sampler.get("notes") if isinstance(sampler, Mapping) else None
    if not isinstance(notes, list):
        return []
    how = sampler.get("how")
    label = f"sampler ({printable(how)[:20]})" if isinstance(how, str) and how else "sampler"
    return [f"{label}: {printable(n[:NOTE_CHARS])}" for n in notes[:MAX_NOTES] if isinstance(n, str) and n.strip()]




def _epoch(value: Any) -> float | None:
    """A manifest time (ISO 8601; Slurm's have no zone and are the cluster's local time) as epoch seconds."""
    if not isinstance(value, str) or not value.strip() or value in ("Unknown", "None", "N/A"):
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return when.timestamp()  # a naive time is taken as this machine's local time (the cluster's, on LUMI)


def job_window(manifest: Mapping[str, Any]) -> tuple[float | None, float | None, str]:
    """The job's (start, end) in epoch seconds from the manifest (Slurm's times, or the local backend's), and
    where they came from."""
    start, end = _epoch(manifest.get("start_time")), _epoch(manifest.get("end_time"))
    if start is not None and manifest.get("end_time_observed"):  # when lumikit saw the end, maybe long after it
        return start, None, ("the job's start (manifest) to the last sample: Slurm gave no end time (it was asked "
                             "only after it had forgotten the job, e.g. after a controller outage)")
    if start is not None and end is not None and end >= start:
        return start, end, "the job's start and end (manifest, from Slurm or the local backend)"
    if start is not None:
        return start, None, "the job's start (manifest) to the last sample: the job has no end time yet"
    return None, None, "the record's own span (the manifest has no job times)"


#: A manifest start this far from the recorders' starts is read in another time zone than it was written in.
ZONE_SLACK_S = 1800.0


def _zone_checked(start: float | None, end: float | None, source: str, manifest: Mapping[str, Any],
                  started: Sequence[float | None]) -> tuple[float | None, float | None, str]:
    """Slurm writes its times without a zone (the cluster's local time): read on a machine in another zone they
    are off by whole quarter-hours. Where the start is that far from when the recorders started (epoch seconds,
    zone-free) and within two minutes of whole quarter-hours, shift the window by those, and say so."""
    known = [s for s in started if s is not None]
    raw = manifest.get("start_time")
    naive = isinstance(raw, str) and _epoch(raw) is not None and datetime.fromisoformat(raw.strip()).tzinfo is None
    if start is None or not known or not naive or abs(min(known) - start) <= ZONE_SLACK_S:
        return start, end, source
    offset = min(known) - start
    shift = round(offset / 900.0) * 900.0
    if abs(offset - shift) > 120.0:  # not a zone's whole quarter-hours: a batch script that set up for long
        return start, end, source
    note = (f"{source}; its times have no time zone and read {-shift / 3600:+g} h off the recorders' clocks here "
            "(written in another zone): shifted back")
    return start + shift, None if end is None else end + shift, note


def report_card(sessions: Mapping[str, Any], manifest: Mapping[str, Any] | None = None,
                markers: Sequence[Mapping[str, Any]] = (), steps: Sequence[Mapping[str, Any]] = (), *,
                run: str = "run", site: Any = None) -> ReportCard:
    """The card of a run from its record (node -> :class:`Session` or streamed record file), manifest, markers
    and a workload's step rows (``{"time": epoch at the step's end, "step_time_s": ...}``). Reads no file."""
    manifest = manifest or {}
    site_obj = load_site(site or manifest.get("site") or "lumi")
    th = site_obj.power
    record = manifest.get("gpu_record")
    record_note = record.get("note") if isinstance(record, Mapping) else None
    card = ReportCard(run=run, run_note=printable(str(manifest.get("note") or "")),
                      record_note=printable(record_note[:NOTE_CHARS]) if isinstance(record_note, str) else "")
    inputs = {n: _node_input(n, s, site_obj.name) for n, s in sessions.items()}
    present = {n: i for n, i in inputs.items() if i.header.kind != "absent"}
    if not present:
        card.absent = _why_absent({n: i.header for n, i in inputs.items()}, manifest)
        card.billing = _billing(manifest, [], site_obj)
        return card
    whole = whole_node(manifest, site_obj)
    job_start, job_end, source = job_window(manifest)
    job_start, job_end, source = _zone_checked(job_start, job_end, source, manifest,
                                               [i.header.started for i in present.values()])
    for node, inp in inputs.items():
        if node not in present:  # a node without a tool, beside nodes with one: said, never filled in
            card.nodes[node] = {"kind": "absent", "source": "", "samples": 0, "interval_s": inp.header.interval_s,
                                "started": inp.header.started, "duration_s": 0.0, "notes": [], "flags": [],
                                "description": inp.header.description}
    full: dict[str, tuple[Any, Any, float, float]] = {}
    ends, nodes_totals = [], {}
    for node, inp in present.items():
        summ, a, b = _summarise(inp, site_obj, whole, job_start, job_end)
        rows, packages = _rows(node, inp.header, summ)
        card.rows.extend(rows)
        card.packages.extend(packages)
        info, totals = _node_info(node, inp, summ, a, b, rows, packages, whole, manifest, source)
        card.nodes[node] = info
        nodes_totals[node] = totals
        for f in findings(summ, th):
            card.findings.append({"node": node, "kind": f.kind, "devices": list(f.devices), "message": f.message})
        card.findings.extend(_idle_findings(node, [r for r in rows if r.in_job], th))
        full[node] = (summ.times, summ.power, inp.header.interval_s, inp.header.started or 0.0)
        ends.append(b)
    card.billing = _billing(manifest, [r for r in card.rows if r.in_job], site_obj)
    card.totals = {"nodes": nodes_totals, "job": _job_totals(nodes_totals, card.nodes, manifest, whole)}
    known = [s for _, _, _, s in full.values() if s]
    t0 = min(known) if known else 0.0
    shifted = {n: (ts, ps, iv, (st or t0) - t0) for n, (ts, ps, iv, st) in full.items()}
    card.series = {n: _thin(ts, ps, sh) for n, (ts, ps, _, sh) in shifted.items()}
    end = max((b + sh for b, (_, _, _, sh) in zip(ends, shifted.values())), default=0.0)
    duration = (job_end - job_start) if job_start is not None and job_end is not None else \
        max((info.get("window_s", 0.0) for info in card.nodes.values()), default=0.0)
    card.window = {"start": job_start, "end": job_end, "duration_s": duration, "source": source}
    card.phases = _phases(shifted, markers, t0, end)
    card.steps = _steps(shifted, steps, t0)
    return card


def _summarise(inp: NodeInput, site_obj: Any, whole: bool, job_start: float | None, job_end: float | None
               ) -> tuple[NodeSummary, float, float]:
    h = inp.header
    started = h.started
    a = job_start - started if job_start is not None and started is not None else 0.0
    b = job_end - started if job_end is not None and started is not None else math.inf
    summ = summarise(inp.samples, lambda devs: layout(devs, site_obj, h.job_gpus, h.job_gpus_from, whole),
                     site_obj.power, (a, b), h.interval_s, inp.expected)
    if b == math.inf:
        b = max(a, summ.last_t if summ.last_t is not None else a)
        for r in runnings(summ):
            r.end = b
    return summ, a, b


def _rows(node: str, header: SessionHeader, summ: NodeSummary) -> tuple[list[GcdRow], list[PackageRow]]:
    lay = summ.layout or NodeLayout()
    tool = header.source.split(" ")[0] if header.source else "the tool"
    energy_of: dict[int, tuple[float | None, str]] = {}
    for p, pacc in summ.packages.items():
        if pacc.energy is None or not pacc.power[1]:
            energy_of[p] = (None, "")
            continue
        fin = pacc.energy.finish()
        how = (f"{tool}'s energy counter" if pacc.energy.from_counter else "package power integrated (trapezoid)")
        energy_of[p] = (fin["value"], how)  # type: ignore[assignment]
    rows = []
    for i, g in sorted(summ.gcds.items()):
        pkg = lay.package.get(i, OWN + i)
        members = lay.members.get(pkg, [i])
        job_members = [m for m in members if m in lay.in_job]
        carrier = min(job_members or members)
        pacc = summ.packages.get(pkg)
        pk_mean, pk_max = mean_max(pacc.power) if pacc else (None, None)
        energy, how = energy_of.get(pkg, (None, ""))
        outside = lay.outside(pkg)
        note = ""
        power = (None, None)
        if outside and i in lay.in_job:
            note, energy = f"{SHARED} (GCD {'+'.join(map(str, outside))})", None
        elif pk_mean is None:
            partner = [x for x in members if x != i]
            note, energy = f"no power reading for package {pkg}" + (
                f" (it is printed on GCD {lay.gcd.get(partner[0], partner[0])})" if partner else ""), None
        elif i == carrier:
            power = (pk_mean, pk_max)
            if len(members) > 1:
                note = f"package {pkg}: GCDs {'+'.join(str(lay.gcd.get(m, m)) for m in members)}"
        else:
            note, energy = f"on GCD {lay.gcd.get(carrier, carrier)}", None
        busy_mean, busy_max = mean_max(g.busy)
        sclk_mean, sclk_max = mean_max(g.sclk)
        comp = g.computing.finish()["value"] if g.computing is not None else None
        vram_pct = g.vram_pct if g.vram_pct is not None else None
        rows.append(GcdRow(
            node=node, gcd=i, kind=header.kind, samples=g.n, busy_mean_pct=busy_mean, busy_max_pct=busy_max,
            power_mean_w=power[0], power_max_w=power[1], power_note=note, vram_peak_gib=g.vram_gib,
            vram_peak_pct=vram_pct, energy_j=energy, energy_kwh=None if energy is None else energy / J_PER_KWH,
            energy_source=how if energy is not None else "", sclk_mean_mhz=sclk_mean, sclk_max_mhz=sclk_max,
            computing_s=float(comp or 0.0), node_gcd=lay.gcd.get(i), package=pkg, in_job=i in lay.in_job))
    packages = []
    for p, members in sorted(lay.members.items()):
        job_members = [m for m in members if m in lay.in_job]
        if not job_members or p >= OWN:
            continue
        pacc = summ.packages.get(p)
        mean, mx = mean_max(pacc.power) if pacc else (None, None)
        energy, how = energy_of.get(p, (None, ""))
        packages.append(PackageRow(node=node, package=p, gcds=[lay.gcd.get(m, m) for m in members],
                                   job_gcds=[lay.gcd.get(m, m) for m in job_members], outside=lay.outside(p),
                                   power_mean_w=mean, power_max_w=mx, energy_j=energy, energy_source=how))
    return rows, packages


def _node_info(node: str, inp: NodeInput, summ: NodeSummary, a: float, b: float, rows: Sequence[GcdRow],
               packages: Sequence[PackageRow], whole: bool, manifest: Mapping[str, Any], source: str
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    h = inp.header
    cov = summ.cover.finish() if summ.cover is not None and summ.samples else {}
    notes = list(inp.notes) + (inp.after() if inp.after else [])
    if summ.layout is not None and summ.layout.how:
        notes.append(f"GCDs: {summ.layout.how}")
    for what, (count, example) in summ.dropped.items():
        notes.append(f"left out {count} {what} (e.g. {example:g}): not a reading hardware can give")
    if summ.counter_resets:
        notes.append(f"{summ.counter_resets} energy-counter step(s) went down or jumped (a reset or damage): the "
                     "package power's trapezoid is used there")
    if summ.stride > 1:
        notes.append(f"findings judged on every {summ.stride}th sample ({len(summ.kept)} of {summ.samples})")
    flags = _flags(h, summ, cov, inp.end_state, manifest)
    info = {"kind": h.kind, "source": h.source, "samples": summ.samples, "interval_s": h.interval_s,
            "started": h.started, "duration_s": float(cov.get("covered_s", 0.0)),
            "covered_s": float(cov.get("covered_s", 0.0)), "window_s": max(0.0, b - a),
            "start_edge_s": cov.get("start_edge_s", 0.0), "end_edge_s": cov.get("end_edge_s", 0.0),
            "late_start_s": cov.get("late_start_s", 0.0), "early_stop_s": cov.get("early_stop_s", 0.0),
            "gaps": cov.get("gaps", 0), "window": source, "flags": flags, "notes": notes,
            "description": h.description, "end_state": inp.end_state.get("state"),
            "job_gpus": list(h.job_gpus)}
    own = [p for p in packages if not p.outside]
    shared = [p for p in packages if p.outside]
    gpu = [p.energy_j for p in own if p.energy_j is not None]
    totals = {"gpu_energy_j": sum(gpu) if gpu else None,
              "gpu_energy_source": "; ".join(sorted({p.energy_source for p in own if p.energy_j is not None}))
              or "no package wholly the job's with a power reading",
              "shared_energy_j": sum(p.energy_j for p in shared if p.energy_j is not None) or None,
              "computing_gcd_s": sum(r.computing_s for r in rows if r.in_job),
              "pm_counters": _pm(inp, summ, whole)}
    return info, totals


def _flags(h: SessionHeader, summ: NodeSummary, cov: Mapping[str, Any], end_state: Mapping[str, Any],
           manifest: Mapping[str, Any]) -> list[str]:
    out = []
    state = end_state.get("state")
    if state == "disk full":
        out.append(f"the record was cut short by a full disk after {end_state.get('samples', '?')} samples "
                   f"({end_state.get('why', 'no space left on the device')})")
    elif state == "write failed":
        out.append(f"the record stopped: writing it failed ({end_state.get('why', '?')})")
    if not summ.samples:
        return out + ["no samples: the recorder wrote its header and nothing else"]
    if cov.get("early_stop_s"):
        killed = (" and never wrote its end (killed?)" if state == "recording" and manifest.get("state") in
                  FINAL else "")
        out.append(f"the record stopped {cov['early_stop_s']:.1f} s before the job ended: its recorder ended early"
                   f"{killed}; that stretch is not counted")
    elif state == "recording" and manifest.get("state") in FINAL:
        out.append("the recorder never wrote its end (killed?); the samples it wrote cover the job")
    if cov.get("late_start_s"):
        out.append(f"the record started {cov['late_start_s']:.1f} s after the job did; that stretch is not counted")
    gaps = summ.cover.gaps if summ.cover is not None else []
    if gaps:
        t0, t1 = max(gaps, key=lambda g: g[1] - g[0])
        out.append(f"{len(gaps)} gap(s) longer than {GAP_INTERVALS} intervals ({GAP_INTERVALS * h.interval_s:g} s) "
                   f"between samples, the longest {t1 - t0:.1f} s from {t0:.1f} s: figures across them are "
                   "interpolated")
    return out


def _pm(inp: NodeInput, summ: NodeSummary, whole: bool) -> dict[str, Any] | None:
    """The node's pm_counters energies between the first and the last reading the record holds."""
    first = inp.pm_start or summ.first_pm
    end = inp.end_state.get("pm_end")
    last = end if isinstance(end, dict) else summ.last_pm
    if not first or not last or first is last:
        return None
    energies = energy_between(first, last)
    if not energies:
        return {"energy_j": {}, "span_s": 0.0, "note": "the counters restarted (generation changed): no figure"}
    span = float(last.get("time", 0.0)) - float(first.get("time", 0.0))
    note = "" if whole else ("the job did not have the node to itself: node, CPU and memory counters include other "
                             "jobs; an accelerator counter includes the other GCD of its package")
    return {"energy_j": energies, "span_s": span, "note": note,
            "files": sorted(k for k in energies if k in VALUE_FILES)}


def _job_totals(nodes: Mapping[str, Mapping[str, Any]], infos: Mapping[str, Mapping[str, Any]],
                manifest: Mapping[str, Any], whole: bool) -> dict[str, Any]:
    gpu = [t["gpu_energy_j"] for t in nodes.values() if t.get("gpu_energy_j") is not None]
    pm: dict[str, float] = {}
    spans = []
    for t in nodes.values():
        p = t.get("pm_counters") or {}
        for k, v in p.get("energy_j", {}).items():
            pm[k] = pm.get(k, 0.0) + v
        if p.get("span_s"):
            spans.append(p["span_s"])
    out: dict[str, Any] = {
        "gpu_energy_j": sum(gpu) if gpu else None,
        "computing_gcd_s": sum(t["computing_gcd_s"] for t in nodes.values()),
        "window_s": max((float(i.get("window_s", 0.0)) for i in infos.values()), default=0.0),
        "pm_counters": {"energy_j": pm, "span_s": max(spans, default=0.0),
                        "note": "" if whole else "node counters include other jobs"} if pm else None}
    ce = manifest.get("consumed_energy")
    if isinstance(ce, dict) and whole and ce.get("joules") is not None:
        out["consumed_energy"] = f"{_energy(float(ce['joules']))} ({ce.get('from', 'sacct')})"
    elif isinstance(ce, dict) and whole and ce.get("why"):
        out["consumed_energy"] = f"none ({ce['why']})"
    return out


def _thin(ts: Sequence[float], ps: Sequence[float], shift: float, limit: int = 5000
          ) -> list[tuple[float, float | None]]:
    """At most about ``limit`` points (every k-th) of a node's power for a picture, on the common clock."""
    step = max(1, len(ts) // limit)
    return [(t + shift, None if math.isnan(p) else p) for t, p in zip(ts[::step], ps[::step])]


def _idle_findings(node: str, rows: Sequence[GcdRow], th: Any) -> list[dict[str, Any]]:
    """A GCD that never reached the site's busy % in the whole record: allocated, and idle."""
    idle = [r.gcd for r in rows if r.busy_max_pct is not None and r.busy_max_pct < th.busy_pct]
    if not idle:
        return []
    names = ("GCD " if len(idle) == 1 else "GCDs ") + ",".join(map(str, idle))
    return [{"node": node, "kind": "idle", "devices": idle,
             "message": f"{names} never reached {th.busy_pct:.0f} % busy in the whole record: allocated (and "
                        "billed) but idle"}]


def _billing(manifest: Mapping[str, Any], rows: Sequence[GcdRow], site: Any) -> dict[str, Any]:
    from ..jobs.billing import billing_rule

    actual, estimate = manifest.get("billing_actual"), manifest.get("billing_estimate")
    billed, billed_from = None, "the manifest has no bill (a site without GPU billing)"
    if isinstance(actual, dict) and actual.get("gpu_hours") is not None:
        billed, billed_from = actual["gpu_hours"], f"Slurm's elapsed time {manifest.get('elapsed_s')} s"
    elif isinstance(estimate, dict) and estimate.get("gpu_hours") is not None:
        billed, billed_from = estimate["gpu_hours"], "the estimate for the whole --time (no elapsed time known)"
    rule = billing_rule(site) if site is not None else None
    rate = rule.gpu_hours_per_gcd_hour if rule else 1.0
    computing_s = sum(r.computing_s for r in rows)
    low = (site.power.idle_below_w + site.power.one_gcd_busy_w) / 2
    return {"billed_gpu_hours": billed, "billed_from": billed_from,
            "computing_gpu_hours": computing_s / 3600 * rate, "computing_gcd_seconds": computing_s,
            "computing_rule": f"GCD-seconds at or above {site.power.busy_pct:.0f} % busy, unless the package's own "
                              f"power was below {low:.0f} W (busy but waiting), x {rate:g} GPU-hours per GCD-hour"}


def _window_energy(series: Mapping[str, tuple[Any, Any, float, float]], start: float, end: float
                   ) -> tuple[float | None, float | None]:
    """Energy (J) and mean power (W) of all nodes between two times on the common clock (the card's rule)."""
    if end <= start:
        return None, None
    total, seen = 0.0, False
    for ts, ps, interval, shift in series.values():
        e = trapezoid_window(ts, ps, start - shift, end - shift, interval)
        if e is not None:
            total, seen = total + e, True
    return (total, total / (end - start)) if seen else (None, None)


def _phases(series: Mapping[str, tuple[Any, Any, float, float]], markers: Sequence[Mapping[str, Any]],
            t0: float, end: float) -> list[dict[str, Any]]:
    """A phase runs from one marker to the next (of any rank; a name marked by several ranks starts at the first)
    and the last one to the end of the window."""
    firsts: dict[str, float] = {}
    for m in sorted(markers, key=lambda m: m["time"]):
        firsts.setdefault(str(m["name"]), float(m["time"]) - t0)
    ordered = sorted(firsts.items(), key=lambda kv: kv[1])
    out = []
    for i, (name, start) in enumerate(ordered):
        stop = ordered[i + 1][1] if i + 1 < len(ordered) else end
        energy, mean = _window_energy(series, start, stop)
        out.append({"name": name, "start_s": start, "duration_s": max(0.0, stop - start), "energy_j": energy,
                    "mean_power_w": mean})
    return out


def _steps(series: Mapping[str, tuple[Any, Any, float, float]], steps: Sequence[Mapping[str, Any]],
           t0: float) -> dict[str, Any]:
    """Energy per step over the span of a workload's steps (rank 0's metrics): the record's energy between the
    first step's start and the last step's end, divided by the steps in it."""
    rows = [s for s in steps if _finite(s.get("time")) and _finite(s.get("step_time_s"))]
    if len(rows) < 2:
        return {}
    start = min(float(s["time"]) - float(s["step_time_s"]) for s in rows) - t0
    stop = max(float(s["time"]) for s in rows) - t0
    energy, mean = _window_energy(series, start, stop)
    if energy is None:
        return {}
    return {"source": "rank 0's metrics (lumikit.workloads)", "steps": len(rows), "span_s": stop - start,
            "energy_j": energy, "energy_per_step_j": energy / len(rows), "mean_power_w": mean}


def _why_absent(headers: Mapping[str, SessionHeader], manifest: Mapping[str, Any]) -> str:
    plan = manifest.get("gpu_record")
    said = [h.description for h in headers.values() if h.description]
    if said:
        return "; ".join(dict.fromkeys(said))
    if isinstance(plan, dict) and not plan.get("enabled", True):
        return f"the record was off: {plan.get('why', 'turned off')}"
    if not manifest:
        return "this folder has no manifest and no gpu/ record files"
    if plan is None:
        return ("this run was launched before lumikit recorded GPUs (its manifest has no gpu_record); launch it "
                "again to get one")
    return ("the job wrote no gpu/<node>.jsonl (did it start? the recorder's own output is in "
            "gpu/recorder-node*.log; see also `lumikit tail RUN`)")


def open_records(folder: Path, site: str | None = None) -> dict[str, Any]:
    """Node -> streamed record file (:func:`lumikit.record.store.open_record`) of a run folder, named as
    :func:`lumikit.record.read_record` names them (a node with two records: ``node#2``)."""
    from . import record_files
    from .store import open_record

    files = [open_record(p, site) for p in record_files(folder, not_regular=True)]
    files.sort(key=lambda f: (f.header.name, f.header.started or 0.0))
    out: dict[str, Any] = {}
    for f in files:
        key, n = f.header.name, 1
        while key in out:
            n += 1
            key = f"{f.header.name}#{n}"
        out[key] = f
    return out


def card_of_run(run_or_path: Any) -> ReportCard:
    """Read a run folder (record, manifest, markers, rank 0's workload metrics) and make its card; the record
    files are streamed (any size)."""
    from ..launch.runfolder import RunFolder
    from . import _run_dir, read_capped, read_markers

    folder = _run_dir(run_or_path)
    # a copied record (gpu/ without the manifest) still gets its card; anything else must be a run folder
    manifest = RunFolder(folder).read() if (folder / GPU_DIR).is_dir() else RunFolder.open(folder).read()
    steps: list[dict[str, Any]] = []
    for line in read_capped(folder / "metrics.rank0.jsonl").splitlines()[:1_000_000]:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict) and "epoch_end" not in row:
            steps.append(row)
    site, _ = site_of_record(manifest.get("site") or "lumi", folder)  # a run folder never names a file to read
    if whole_node(manifest, site):
        from .slurm_energy import consumed_energy

        answer = consumed_energy(manifest, folder)
        if answer is not None:
            manifest = {**manifest, "consumed_energy": answer}
    card = report_card(open_records(folder), manifest, read_markers(folder), steps, run=Path(folder).name,
                       site=site)
    logs = recorder_logs(folder)
    if card.absent and logs:
        card.absent += "".join(f"\n  {name} (last lines):\n" + "\n".join(f"    {line}" for line in lines)
                               for name, lines in logs.items())
    return card


def recorder_logs(folder: Path, last: int = 8) -> dict[str, list[str]]:
    """``{"gpu/recorder-node0.log": its last lines}``: what each node's recorder step printed (its errors, e.g.
    ``No module named 'lumikit'`` where the job's Python lacks it), control characters escaped."""
    from ..text import printable
    from . import read_capped

    gpu = folder / GPU_DIR
    out = {}
    for path in sorted(gpu.glob("recorder-node*.log")) if gpu.is_dir() else ():
        text = read_capped(path)
        lines = [printable(line) for line in text.splitlines() if line.strip()][-last:]
        out[f"{GPU_DIR}/{path.name}"] = lines or ["(empty)"]
    return out
