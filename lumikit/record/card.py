"""The report card of a run: what its GPUs did, per node and GCD, from its GPU record (a pure function).

:func:`report_card` takes the sessions (:func:`lumikit.record.read_record`), the manifest and the markers and
returns a :class:`ReportCard`: per node and GCD the samples, mean/max busy %, mean/max power (on an MI250X the
package power, printed on the even GCD), peak VRAM, energy (from the tool's counter where it prints one, else the
power integrated over the samples, and it says which), clocks; the findings of :mod:`lumikit.smi.interpret`; the
billed GPU-hours beside the GPU-hours the GCDs were computing; energy and mean power per phase (markers) or step
(a course workload's metrics). Nothing here reads a file: :func:`card_of_run` does that.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..site import PowerThresholds, load_site
from ..smi.interpret import gcd_activity, interpret_window, main_group, packages_of, package_power
from ..smi.model import Snapshot
from ..smi.sessions import Session
from .recorder import GPU_DIR

GIB = 2**30
J_PER_KWH = 3.6e6


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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReportCard:
    """The card: rows (node x GCD), per-node findings and notes, billing, phases and steps; ``text()`` for a
    terminal, ``to_dict()`` for ``--json``, ``figure()`` for a notebook."""

    run: str
    rows: list[GcdRow] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    billing: dict[str, Any] = field(default_factory=dict)
    phases: list[dict[str, Any]] = field(default_factory=list)
    steps: dict[str, Any] = field(default_factory=dict)
    absent: str | None = None  # why the run has no GPU record (None when it has one)
    series: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)  # node -> (t, node power)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "record": "absent" if self.absent else "present", "why_absent": self.absent,
                "nodes": self.nodes, "gcds": [r.to_dict() for r in self.rows], "findings": self.findings,
                "billing": self.billing, "phases": self.phases, "steps": self.steps}

    def text(self) -> str:
        """The card as plain text: one line per node and GCD, then findings, GPU-hours and phases."""
        if self.absent:
            return f"{self.run}: no GPU record: {self.absent}"
        out = [f"GPU record of {self.run}"]
        if any(info["kind"] == "generated" for info in self.nodes.values()):
            out.append("  GENERATED readings: a stand-in tool printed them on nodes without a GPU; not real hardware")
        for node, info in self.nodes.items():
            if info["kind"] == "absent":
                out.append(f"  {node}: no GPU record: {info['description']}")
                continue
            out.append(f"  {node}: {info['kind']}, {info['samples']} samples every {info['interval_s']:g} s "
                       f"over {info['duration_s']:.0f} s; source: {info['source'] or '-'}")
            out.extend(f"    note: {n}" for n in info.get("notes", ()))
        head = (f"{'node':<12} {'GCD':>3} {'samples':>7} {'busy% mean/max':>15} {'power W mean/max':>17} "
                f"{'VRAM peak':>17} {'energy':>20} {'sclk MHz mean/max':>18}")
        out += ["", head]
        for r in self.rows:
            busy = f"{_f(r.busy_mean_pct, 0)}/{_f(r.busy_max_pct, 0)}"
            power = f"{_f(r.power_mean_w, 0)}/{_f(r.power_max_w, 0)}" if r.power_mean_w is not None else r.power_note
            vram = (f"{_f(r.vram_peak_gib, 1)} GiB ({_f(r.vram_peak_pct, 0)} %)" if r.vram_peak_gib is not None
                    else "-")
            energy = (f"{_f(r.energy_j, 0)} J {r.energy_kwh:.4f} kWh" if r.energy_j is not None and
                      r.energy_kwh is not None else "-")
            sclk = f"{_f(r.sclk_mean_mhz, 0)}/{_f(r.sclk_max_mhz, 0)}"
            out.append(f"{r.node:<12} {r.gcd:>3} {r.samples:>7} {busy:>15} {power:>17} {vram:>17} {energy:>20} "
                       f"{sclk:>18}")
        sources = sorted({r.energy_source for r in self.rows if r.energy_j is not None})
        if sources:
            out.append("energy: " + "; ".join(sources))
        if any(r.power_note for r in self.rows):
            out.append("power: an MI250X prints its package power (both GCDs) on the even GCD, so that row's power "
                       "and energy are the package's; the odd GCD's row says which GCD carries it")
        out.append("")
        if self.findings:
            out.append("findings (interpret's held in at least half of the samples; idle: in all of them):")
            out.extend(f"  {f['node']}: {f['message']}" for f in self.findings)
        else:
            out.append("findings: none (no idle, starved or waiting GCD, no memory near full)")
        b = self.billing
        out.append(f"GPU-hours: billed {_f(b.get('billed_gpu_hours'), 4)} ({b.get('billed_from', 'unknown')}); "
                   f"the GCDs were computing for {_f(b.get('computing_gpu_hours'), 4)} "
                   f"({b.get('computing_rule', '')})")
        for p in self.phases:
            out.append(f"phase {p['name']!r}: {p['duration_s']:.1f} s, {_f(p['energy_j'], 0)} J, mean "
                       f"{_f(p['mean_power_w'], 0)} W")
        if self.steps:
            s = self.steps
            out.append(f"steps ({s['source']}): {s['steps']} steps over {s['span_s']:.1f} s, "
                       f"{_f(s['energy_per_step_j'], 1)} J per step at a mean {_f(s['mean_power_w'], 0)} W (power "
                       "interpolated between samples: an estimate where steps are shorter than the interval)")
        return "\n".join(out)

    def table(self) -> Any:
        """The rows as a pandas DataFrame (a notebook's table)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def figure(self) -> Any:
        """A small picture: each node's power over time (the sum of what its GCDs print), and the phases."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 2.6))
        for node, pts in self.series.items():
            ax.plot([t for t, _ in pts], [p if p is not None else float("nan") for _, p in pts],
                    label=f"{node} ({self.nodes[node]['kind']})")
        for p in self.phases:
            ax.axvspan(p["start_s"], p["start_s"] + p["duration_s"], alpha=0.1)
            ax.text(p["start_s"], ax.get_ylim()[1], p["name"], fontsize=7, va="top")
        ax.set_xlabel("seconds since the record started")
        ax.set_ylabel("node power (W)")
        ax.set_title(f"GPU record of {self.run}", fontsize=9)
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


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _trapezoid(points: Sequence[tuple[float, float]]) -> float:
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))


def energy_counters(stdout: str) -> dict[int, float]:
    """GPU index -> the energy counter in joules, where the output is ``amd-smi metric --json`` and prints one
    (``energy.total_energy_consumption`` with its unit); ``{}`` otherwise."""
    try:
        data = json.loads(stdout)
    except (ValueError, RecursionError):
        return {}
    items = data.get("gpu_data") if isinstance(data, dict) else data
    out: dict[int, float] = {}
    scale = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "\u00b5J": 1e-6, "kJ": 1e3}
    for g in items if isinstance(items, list) else ():
        if not isinstance(g, dict) or not isinstance(g.get("energy"), dict):
            continue
        e = g["energy"].get("total_energy_consumption")
        value, unit = (e.get("value"), e.get("unit", "J")) if isinstance(e, dict) else (e, "J")
        if isinstance(g.get("gpu"), int) and isinstance(value, (int, float)) and unit in scale:
            out[g["gpu"]] = float(value) * scale[unit]
    return out


def _frames(session: Session, site: Any) -> tuple[list[tuple[float, Snapshot, str]], list[str]]:
    """(t, snapshot, raw) of every frame that parses; notes for those that do not."""
    from ..errors import LumikitError
    from ..smi.parse import parse_smi

    good, bad = [], 0
    for fr in session.frames:
        try:
            good.append((fr.t, parse_smi(fr.stdout, source=session.header.name, site=site), fr.stdout))
        except LumikitError:
            bad += 1
    notes = list(session.notes)
    if bad:
        notes.append(f"{bad} sample(s) the tool printed nothing readable for (a failed call) were left out")
    return good, notes


def _node_rows(node: str, session: Session, th: PowerThresholds, site: Any, hbm_gib: float
               ) -> tuple[list[GcdRow], list[str], list[tuple[float, float | None]], list[Snapshot]]:
    frames, notes = _frames(session, site)
    snaps = [s for _, s, _ in frames]
    ts = [t for t, _, _ in frames]
    interval = session.header.interval_s
    weights = [(ts[i + 1] - ts[i]) if i + 1 < len(ts) else interval for i in range(len(ts))]
    low_power_w = (th.idle_below_w + th.one_gcd_busy_w) / 2
    per: dict[int, dict[str, list]] = {}
    series: list[tuple[float, float | None]] = []
    counters: dict[int, list[tuple[float, float]]] = {}
    for (t, snap, raw), w in zip(frames, weights):
        devices = main_group(snap)
        pkgs = packages_of(devices)
        pkg_power = {d.index: package_power(g) for g in pkgs.values() for d in g}
        watts = [d.power_w for d in devices if d.power_w is not None]
        series.append((t, sum(watts) if watts else None))
        for gpu, joules in energy_counters(raw).items():
            counters.setdefault(gpu, []).append((t, joules))
        for d in devices:
            acc = per.setdefault(d.index, {k: [] for k in ("busy", "power", "pw", "vram", "vpct", "sclk", "comp")})
            if d.gpu_busy_pct is not None:
                acc["busy"].append(d.gpu_busy_pct)
            if d.power_w is not None:
                acc["power"].append(d.power_w)
                acc["pw"].append((t, d.power_w))
            if d.vram_used_bytes is not None:
                acc["vram"].append(d.vram_used_bytes / GIB)
            if d.vram_pct is not None:
                acc["vpct"].append(d.vram_pct)
            if d.sclk_mhz is not None:
                acc["sclk"].append(d.sclk_mhz)
            power = pkg_power.get(d.index, d.power_w)
            computing = gcd_activity(d, th) == "busy" and (power is None or power >= low_power_w)
            acc["comp"].append(w if computing else 0.0)
    rows = []
    pair_of = {d.index: min(x.index for x in g) for g in packages_of(main_group(snaps[-1])).values() for d in g} \
        if snaps else {}
    for gcd, acc in sorted(per.items()):
        note = ""
        if not acc["power"] and gcd in pair_of and pair_of[gcd] != gcd:
            note = f"on GCD {pair_of[gcd]}"
        energy, source = None, ""
        if gcd in counters and len(counters[gcd]) >= 2:
            energy = counters[gcd][-1][1] - counters[gcd][0][1]
            source = f"the tool's energy counter ({session.header.source.split(' ')[0] or 'amd-smi'})"
        elif len(acc["pw"]) >= 2:
            energy = _trapezoid(acc["pw"])
            source = "power integrated over the samples (trapezoid rule): the tool prints no energy counter"
        vram_peak = max(acc["vram"]) if acc["vram"] else None
        vram_pct = max(acc["vpct"]) if acc["vpct"] else (100 * vram_peak / hbm_gib if vram_peak is not None else None)
        rows.append(GcdRow(
            node=node, gcd=gcd, kind=session.header.kind, samples=len(acc["comp"]),
            busy_mean_pct=_mean(acc["busy"]), busy_max_pct=max(acc["busy"]) if acc["busy"] else None,
            power_mean_w=_mean(acc["power"]), power_max_w=max(acc["power"]) if acc["power"] else None,
            power_note=note, vram_peak_gib=vram_peak, vram_peak_pct=vram_pct, energy_j=energy,
            energy_kwh=None if energy is None else energy / J_PER_KWH, energy_source=source,
            sclk_mean_mhz=_mean(acc["sclk"]), sclk_max_mhz=max(acc["sclk"]) if acc["sclk"] else None,
            computing_s=sum(acc["comp"])))
    return rows, notes, series, snaps


def _idle_findings(node: str, rows: Sequence[GcdRow], th: PowerThresholds) -> list[dict[str, Any]]:
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
    return {"billed_gpu_hours": billed, "billed_from": billed_from,
            "computing_gpu_hours": computing_s / 3600 * rate, "computing_gcd_seconds": computing_s,
            "computing_rule": f"GCD-seconds at or above {site.power.busy_pct:.0f} % busy with the package above "
                              f"{(site.power.idle_below_w + site.power.one_gcd_busy_w) / 2:.0f} W, x {rate:g} "
                              f"GPU-hours per GCD-hour" if site is not None else ""}


def _at(pts: Sequence[tuple[float, float]], t: float) -> float:
    """The power at ``t``, linear between the two samples around it (``pts`` sorted, ``t`` within them)."""
    for (t0, p0), (t1, p1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return p0 if t1 == t0 else p0 + (p1 - p0) * (t - t0) / (t1 - t0)
    return pts[-1][1]


def _window(series: Mapping[str, Sequence[tuple[float, float | None]]], start: float, end: float
            ) -> tuple[float | None, float | None]:
    """Energy (J) and mean power (W) of all nodes between two record times: the samples inside and the power
    interpolated at both ends (a window shorter than the interval is an estimate between two samples), clipped to
    the record's span."""
    energy, seen = 0.0, False
    for raw in series.values():
        pts = [(t, p) for t, p in raw if p is not None]
        if len(pts) < 2:
            continue
        a, b = max(start, pts[0][0]), min(end, pts[-1][0])
        if b <= a:
            continue
        inside = [(a, _at(pts, a))] + [(t, p) for t, p in pts if a < t < b] + [(b, _at(pts, b))]
        energy += _trapezoid(inside)
        seen = True
    if not seen or end <= start:
        return None, None
    return energy, energy / (end - start)


def report_card(sessions: Mapping[str, Session], manifest: Mapping[str, Any] | None = None,
                markers: Sequence[Mapping[str, Any]] = (), steps: Sequence[Mapping[str, Any]] = (), *,
                run: str = "run", site: Any = None) -> ReportCard:
    """The card of a run from its record (node -> session), manifest, markers and a workload's step rows
    (``{"time": epoch at the step's end, "step_time_s": ...}``). Pure: reads no file."""
    manifest = manifest or {}
    site_obj = load_site(site or manifest.get("site") or "lumi")
    th = site_obj.power
    card = ReportCard(run=run)
    present = {n: s for n, s in sessions.items() if s.header.kind != "absent"}
    if not present:
        card.absent = _why_absent(sessions, manifest)
        card.billing = _billing(manifest, [], site_obj)
        return card
    hbm = float(site_obj.node.gcd_memory_gb)
    for node, sess in sessions.items():
        if node not in present:  # a node without a tool, beside nodes with one: said, never filled in
            card.nodes[node] = {"kind": "absent", "source": "", "samples": 0, "interval_s": sess.header.interval_s,
                                "started": sess.header.started, "duration_s": 0.0, "notes": [],
                                "description": sess.header.description}
    starts = []
    for node, sess in present.items():
        rows, notes, series, snaps = _node_rows(node, sess, th, site_obj.name, hbm)
        card.rows.extend(rows)
        card.series[node] = series
        ts = [t for t, _ in series]
        card.nodes[node] = {"kind": sess.header.kind, "source": sess.header.source, "samples": len(snaps),
                            "interval_s": sess.header.interval_s, "started": sess.header.started,
                            "duration_s": (ts[-1] - ts[0]) if len(ts) > 1 else 0.0, "notes": notes,
                            "description": sess.header.description}
        for f in interpret_window(snaps, th):
            card.findings.append({"node": node, "kind": f.kind, "devices": list(f.devices), "message": f.message})
        card.findings.extend(_idle_findings(node, rows, th))
        if sess.header.started is not None:
            starts.append(sess.header.started)
    card.billing = _billing(manifest, card.rows, site_obj)
    t0 = min(starts) if starts else None
    if t0 is not None:
        # every node's series on one clock: seconds since the earliest node's start
        for node, sess in present.items():
            shift = (sess.header.started or t0) - t0
            card.series[node] = [(t + shift, p) for t, p in card.series[node]]
        card.phases = _phases(card.series, markers, t0)
        card.steps = _steps(card.series, steps, t0)
    return card


def _phases(series: Mapping[str, Sequence[tuple[float, float | None]]], markers: Sequence[Mapping[str, Any]],
            t0: float) -> list[dict[str, Any]]:
    """A phase runs from one marker to the next (of any rank; a name marked by several ranks starts at the first)
    and the last one to the end of the record."""
    end = max((pts[-1][0] for pts in series.values() if pts), default=0.0)
    firsts: dict[str, float] = {}
    for m in sorted(markers, key=lambda m: m["time"]):
        firsts.setdefault(str(m["name"]), float(m["time"]) - t0)
    ordered = sorted(firsts.items(), key=lambda kv: kv[1])
    out = []
    for i, (name, start) in enumerate(ordered):
        stop = ordered[i + 1][1] if i + 1 < len(ordered) else end
        energy, mean = _window(series, start, stop)
        out.append({"name": name, "start_s": start, "duration_s": max(0.0, stop - start), "energy_j": energy,
                    "mean_power_w": mean})
    return out


def _steps(series: Mapping[str, Sequence[tuple[float, float | None]]], steps: Sequence[Mapping[str, Any]],
           t0: float) -> dict[str, Any]:
    """Energy per step over the span of a workload's steps (rank 0's metrics): the record's energy between the
    first step's start and the last step's end, divided by the steps in it."""
    rows = [s for s in steps if _finite(s.get("time")) and _finite(s.get("step_time_s"))]
    if len(rows) < 2:
        return {}
    start = min(float(s["time"]) - float(s["step_time_s"]) for s in rows) - t0
    stop = max(float(s["time"]) for s in rows) - t0
    energy, mean = _window(series, start, stop)
    if energy is None:
        return {}
    return {"source": "rank 0's metrics (lumikit.workloads)", "steps": len(rows), "span_s": stop - start,
            "energy_j": energy, "energy_per_step_j": energy / len(rows), "mean_power_w": mean}


def _why_absent(sessions: Mapping[str, Session], manifest: Mapping[str, Any]) -> str:
    plan = manifest.get("gpu_record")
    said = [s.header.description for s in sessions.values() if s.header.description]
    if said:
        return "; ".join(dict.fromkeys(said))
    if isinstance(plan, dict) and not plan.get("enabled", True):
        return f"the record was off: {plan.get('why', 'turned off')}"
    if not manifest:
        return "this folder has no manifest and no gpu/ record files"
    if plan is None:
        return ("this run was launched before lumikit recorded GPUs (its manifest has no gpu_record); launch it "
                "again to get one")
    return "the job wrote no gpu/<node>.jsonl (did it start? see `lumikit tail RUN`)"


def card_of_run(run_or_path: Any) -> ReportCard:
    """Read a run folder (record, manifest, markers, rank 0's workload metrics) and make its card."""
    from ..launch.runfolder import RunFolder
    from . import _run_dir, read_capped, read_markers, read_record

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
    return report_card(read_record(folder), manifest, read_markers(folder), steps, run=Path(folder).name,
                       site=manifest.get("site"))
