"""What modules 04 and 07 show from GPU records: the learner's own run's card (else a generated session's, labelled),
a predicted energy set against the measured one, energy per step and per sample of several runs side by side, and a
run folder's record over time (a shipped recording from another machine too).

Pure helpers over :mod:`lumikit.record.card`; the notebooks call them and draw their tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..errors import LumikitError
from ..smi.record_layout import run_folder
from ..smi.sessions import read_session
from .card import ReportCard, card_of_run, report_card, session_samples

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ..smi.model import Snapshot

#: The generated session a run without a GPU record (a laptop) is shown instead of: 8 GCDs, GCD 4 starved.
FALLBACK_SESSION = "ddp-8gcd-starved"


def card_or_generated(run: Any, session: str = FALLBACK_SESSION) -> tuple[ReportCard, str]:
    """The run's report card if it has a GPU record, else the card of the generated ``session``; and one line that
    says which, and whether its readings are recorded or generated."""
    own = card_of_run(run)
    if not own.absent:
        kinds = "/".join(sorted({info["kind"] for info in own.nodes.values()}))
        return own, f"the GPU record of your run {own.run} ({kinds} readings)"
    s = read_session(session)
    card = report_card({"generated-node": s}, {"site": s.header.site or "lumi"}, run=f"generated session {session}",
                       site=s.header.site or "lumi")
    return card, (f"your run has no GPU record ({own.absent}); shown instead: the GENERATED session {session} "
                  f"({s.header.source})")


def _packages(card: ReportCard) -> list[Any]:
    """The rows that carry a package's power (the even GCD of an MI250X; every GPU elsewhere)."""
    return [r for r in card.rows if r.power_mean_w is not None]


def energy_check(card: ReportCard, watts_per_package: float) -> pd.DataFrame:
    """A prediction (every package drawing ``watts_per_package`` for the whole record) beside the measured energy,
    per node: kJ predicted, kJ measured, and measured / predicted."""
    import pandas as pd

    rows = []
    for node, info in card.nodes.items():
        packages = [r for r in _packages(card) if r.node == node]
        measured = sum(r.energy_j or 0.0 for r in packages)
        predicted = watts_per_package * len(packages) * float(info["duration_s"])
        rows.append({"node": node, "readings": info["kind"], "packages": len(packages),
                     "seconds": round(float(info["duration_s"]), 1), "predicted kJ": round(predicted / 1e3, 2),
                     "measured kJ": round(measured / 1e3, 2),
                     "measured / predicted": round(measured / predicted, 2) if predicted else None})
    return pd.DataFrame(rows).set_index("node")


def energy_per_step(cards: Mapping[str, ReportCard], results: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Per run (by label): its readings' kind, steps, energy per step and per sample, mean power, from its card's
    step window and the workload's summary (``global_batch_size``); a run without a record says why."""
    import pandas as pd

    rows = []
    for label, card in cards.items():
        result = results.get(label, {})
        batch = result.get("global_batch_size")
        if card.absent or not card.steps:
            why = card.absent or "the record holds no window of the workload's steps (too short a run?)"
            rows.append({"run": label, "readings": "none", "steps": result.get("steps"), "J per step": None,
                         "J per sample": None, "mean W": None, "why not": why})
            continue
        kinds = "/".join(sorted({info["kind"] for info in card.nodes.values()}))
        per_step = float(card.steps["energy_per_step_j"])
        rows.append({"run": label, "readings": kinds, "steps": card.steps["steps"], "J per step": round(per_step, 1),
                     "J per sample": round(per_step / batch, 3) if batch else None,
                     "mean W": round(float(card.steps["mean_power_w"]), 0), "why not": ""})
    return pd.DataFrame(rows).set_index("run")


def record_snapshots(run_or_path: Any, node: str | None = None) -> tuple[list[Snapshot], str]:
    """One node's GPU record of a run folder as snapshots (seconds since the record started) and the record's kind
    (recorded / generated). The samples are read with the site the run's manifest names, not the one in the record's
    header: a record packed from another machine (``lumikit reference add``) names a site file of that machine."""
    from ..launch.runfolder import RunFolder
    from ..smi.model import Snapshot
    from ..smi.readings import FORMAT, to_devices
    from . import read_record

    folder = run_folder(run_or_path)
    sessions = read_record(folder)
    if not sessions:
        raise LumikitError(f"{folder}: no GPU record (gpu/<node>.jsonl) in it; give a run folder whose job had GPUs")
    name = node if node is not None else next(iter(sessions))
    if name not in sessions:
        raise LumikitError(f"{folder}: no record of node {name!r}; its record has {', '.join(sessions)}")
    session = sessions[name]
    site = RunFolder(folder).read().get("site") or "lumi"
    snaps = [Snapshot(devices=to_devices(s.devices), format=FORMAT, timestamp=s.t, source=session.header.label)
             for s in session_samples(session, site)]
    return snaps, session.header.kind


def record_timeline(run_or_path: Any, title: str, node: str | None = None) -> Figure:
    """Power, busy % and VRAM % over time of one node's GPU record (:func:`lumikit.smi.plots.timeline`), marked
    when its readings are generated; ``title`` says what and where (a recording from a machine that is not LUMI)."""
    from ..smi.plots import timeline

    snaps, kind = record_snapshots(run_or_path, node)
    return timeline(snaps, title=title, generated=kind == "generated")


__all__ = ["FALLBACK_SESSION", "card_or_generated", "energy_check", "energy_per_step", "record_snapshots",
           "record_timeline"]
