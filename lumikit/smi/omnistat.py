"""Omnistat's exports as sessions: ``omnistat-query --job ID --export`` writes ``omnistat-rocm.gpu.csv``, one
row per timestamp and one column per (metric, node, GPU), which reads here as one session per node.

The layout, as ROCm/omnistat documents it (``docs/installation/user-mode.md``, "Exporting time series data", and
``omnistat/query.py``, ``export_metrics``; v1.14, commit e93110fb): pandas' CSV of a frame whose columns are a
three-level index ``metric`` / ``instance`` (the node) / ``card`` (the GPU) and whose index is ``timestamp``, i.e.::

    metric,rocm_utilization_percentage,rocm_utilization_percentage,...
    instance,node01,node01,...
    card,0,1,...
    timestamp,,,...
    2025-01-01 10:00:00,100.0,100.0,...

read there with ``pandas.read_csv(path, header=[0, 1, 2], index_col=0)``. The metrics the export holds for the
GPUs: ``rocm_utilization_percentage``, ``rocm_vram_used_percentage``, ``rocm_temperature_celsius``,
``rocm_sclk_clock_mhz``, ``rocm_average_socket_power_watts`` (on an MI250X the even GCD reports the package).

Nodes are named without the port Prometheus gives them (``nid005001:8001`` -> ``nid005001``). Where the export
folder also holds the vendor counters (``omnistat-vendor.csv``: ``metric`` / ``instance`` / ``vendor``;
``omnistat-vendor.gpu.csv``: ``metric`` / ``instance`` / ``accel`` / ``vendor``; ``omnistat/query.py``,
``export``, ROCm/omnistat@0fbbf811: the HPE Cray pm_counters as ``omnistat_vendor_energy_joules``,
``omnistat_vendor_accel_energy_joules`` ...), each frame carries them as ``pm`` in the names of
:mod:`lumikit.smi.pm_counters` (``energy``, ``cpu_energy``, ``accel0_energy`` ...), so the report card shows node,
CPU, memory and accelerator energy beside the GPU figure.

The sessions are ``kind = "recorded"`` (Omnistat read the GPUs of a real job) with a ``source`` naming the export;
each frame keeps that node's cells of one CSV row as JSON (``{"format": "omnistat-export", ...}``), which
:func:`lumikit.smi.parse.parse_smi` reads through :func:`parse_frame`: every session reader (the dashboard, the
report card, replays) takes them like any other session.
"""
from __future__ import annotations

import csv
import io
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

from ..errors import LumikitError, ParseError
from ..files import open_regular, read_text, regular_file
from .model import DeviceReading, Snapshot
from .values import ascii_index
from .sessions import Frame, Session, SessionHeader

GPU_FILE = "omnistat-rocm.gpu.csv"
VENDOR_FILES = ("omnistat-vendor.csv", "omnistat-vendor.gpu.csv")
#: Omnistat's vendor metric -> the pm_counters file it comes from (``{accel}``: the accel label).
VENDOR_METRICS: dict[str, str] = {
    "omnistat_vendor_energy_joules": "energy", "omnistat_vendor_power_watts": "power",
    "omnistat_vendor_cpu_energy_joules": "cpu_energy", "omnistat_vendor_cpu_power_watts": "cpu_power",
    "omnistat_vendor_memory_energy_joules": "memory_energy", "omnistat_vendor_memory_power_watts": "memory_power",
    "omnistat_vendor_accel_energy_joules": "accel{accel}_energy",
    "omnistat_vendor_accel_power_watts": "accel{accel}_power",
}
FORMAT = "omnistat-export"
#: Omnistat metric -> the snapshot field it fills.
METRICS: dict[str, str] = {
    "rocm_utilization_percentage": "gpu_busy_pct",
    "rocm_vram_used_percentage": "vram_pct",
    "rocm_temperature_celsius": "temp_c",
    "rocm_sclk_clock_mhz": "sclk_mhz",
    "rocm_mclk_clock_mhz": "mclk_mhz",
    "rocm_average_socket_power_watts": "power_w",
    "rocm_vram_total_bytes": "vram_total_bytes",
}
MAX_BYTES = 512 << 20  # an hour of 1-s samples of 100 nodes x 8 GPUs x 5 metrics is ~150 MB


def export_file(path: str | os.PathLike[str]) -> Path:
    """The per-GPU CSV of an export: ``path`` itself, or ``omnistat-rocm.gpu.csv`` in the folder ``path``; a
    :class:`LumikitError` naming it unless it is a regular file of at most :data:`MAX_BYTES`."""
    p = Path(path)
    if p.is_dir():
        p = p / GPU_FILE
    if not os.path.lexists(p):
        raise LumikitError(f"{p}: no such file; give `{GPU_FILE}` (written by `omnistat-query --job ID --export "
                           "DIR`) or the folder it is in")
    regular_file(p, f"the export's {GPU_FILE}", limit=MAX_BYTES)
    return p


def is_omnistat_export(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an Omnistat per-GPU export (or a folder holding one)."""
    p = Path(path)
    p = p / GPU_FILE if p.is_dir() else p
    try:
        with open_regular(p, f"an Omnistat export ({GPU_FILE})") as fh:
            return fh.read(7) == b"metric,"
    except (LumikitError, OSError):
        return False


def _epoch(cell: str, source: str, line_no: int) -> float:
    """A timestamp cell (``2025-01-01 10:00:00``, as pandas writes Prometheus' UTC times) as epoch seconds."""
    try:
        when = datetime.fromisoformat(cell.strip())
    except ValueError:
        raise ParseError("a row whose first cell is not a timestamp like '2025-01-01 10:00:00'", source=source,
                         line_no=line_no, line=cell) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def node_name(instance: str) -> str:
    """A Prometheus ``instance`` label as the node's name: ``nid005001:8001`` -> ``nid005001``."""
    host, sep, port = instance.strip().rpartition(":")
    return host if sep and ascii_index(port) is not None and host else instance.strip()


def _csv_rows(path: Path) -> list[list[str]]:
    """The rows of an export CSV (a lone ``\r`` read as a line end, as pandas writes on any platform); a damaged
    file is a :class:`ParseError` naming it."""
    text = read_text(path, f"an Omnistat export ({path.name})", limit=MAX_BYTES)
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise ParseError(f"not a readable CSV ({exc}); is the export complete?", source=str(path)) from None


def read_vendor(folder: str | os.PathLike[str]) -> dict[str, dict[float, dict[str, float]]]:
    """``{node: {epoch: {pm_counters name: value}}}`` from an export folder's vendor files (``{}`` without them).
    The header lines name their levels in the first cell (``metric``, ``instance``, ``accel``, ``vendor``) down
    to ``timestamp``; a file in another layout is a :class:`ParseError` naming it."""
    out: dict[str, dict[float, dict[str, float]]] = {}
    base = Path(folder)
    for name in VENDOR_FILES:
        path = base / name
        if not path.is_file():
            continue
        rows = _csv_rows(path)
        heads = []
        for row in rows:
            if not row or row[0] == "timestamp":
                break
            heads.append(row)
        levels = {row[0]: row[1:] for row in heads}
        if "metric" not in levels or "instance" not in levels:
            raise ParseError("an Omnistat vendor export without its 'metric' and 'instance' header lines",
                             source=str(path), line_no=1)
        if len({len(cells) for cells in levels.values()}) != 1:
            raise ParseError("header lines with different numbers of columns (" + ", ".join(
                f"{level}: {len(cells)}" for level, cells in levels.items())[:200] + ")", source=str(path))
        columns = []
        for i, metric in enumerate(levels["metric"]):
            accel = levels.get("accel", [""] * len(levels["metric"]))[i] if "accel" in levels else ""
            key = VENDOR_METRICS.get(metric.strip(), "").format(accel=accel.strip())
            columns.append((key, node_name(levels["instance"][i])) if key and "{" not in key else None)
        body = len(heads) + (1 if len(rows) > len(heads) and rows[len(heads)][:1] == ["timestamp"] else 0)
        for line_no, row in enumerate(rows[body:], start=body + 1):
            if not row or not any(c.strip() for c in row):
                continue
            when = _epoch(row[0], str(path), line_no)
            for col, cell in zip(columns, row[1:]):
                value = _number(cell)
                if col is not None and value is not None:
                    out.setdefault(col[1], {}).setdefault(when, {})[col[0]] = value
    return out


def _number(cell: str) -> float | None:
    try:
        v = float(cell)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def parse_frame(data: dict[str, Any], source: str = "<omnistat frame>") -> Snapshot:
    """The snapshot of one frame of an Omnistat session (``{"format": "omnistat-export", "node", "timestamp",
    "cards": {card: {metric: value}}}``: one node's cells of one CSV row); :func:`lumikit.smi.parse.parse_smi`
    hands such frames here, so these sessions read like any other."""
    cards = data.get("cards")
    if not isinstance(cards, dict):
        raise ParseError("an Omnistat frame without its 'cards' object", source=source)
    devices = []
    for card, values in sorted(cards.items(), key=lambda kv: ascii_index(kv[0]) if ascii_index(kv[0]) is not None
                               else -1):
        if ascii_index(card) is None or not isinstance(values, dict):
            raise ParseError(f"an Omnistat frame with GPU {ascii(card)[:40]} (a number in ASCII digits with its "
                             f"metrics expected)", source=source)
        fields: dict[str, Any] = {}
        for metric, v in values.items():
            if metric in METRICS and isinstance(v, (int, float)) and not isinstance(v, bool):
                number = _number(str(v)) if isinstance(v, float) else (float(v) if abs(v) < 2**63 else None)
                if number is not None:
                    fields[METRICS[metric]] = int(number) if METRICS[metric] == "vram_total_bytes" else number
        host = data.get("node")
        devices.append(DeviceReading(index=ascii_index(card), host=host if isinstance(host, str) else None, **fields))
    return Snapshot(devices=tuple(devices), format=FORMAT, source=source)


def read_omnistat(path: str | os.PathLike[str], *, note: str = "") -> dict[str, Session]:
    """``{node: session}`` of an Omnistat per-GPU export (the CSV, or its export folder); see the module doc for
    the layout. ``note`` is added to each session's source (e.g. where the file came from). A file in another
    layout is a :class:`ParseError` naming the line and what was expected."""
    p = export_file(path)
    source = str(p)
    rows = _csv_rows(p)
    heads = (("metric", "a metric name per column"), ("instance", "a node per column"), ("card", "a GPU per column"))
    if len(rows) < 3:
        raise ParseError(f"{len(rows)} lines; an Omnistat export starts with three header lines (metric, "
                         "instance, card)", source=source)
    for i, (word, what) in enumerate(heads):
        if not rows[i] or rows[i][0] != word:
            raise ParseError(f"line {i + 1} should start with {word!r} ({what}), as `omnistat-query --export` "
                             f"writes {GPU_FILE}; is this another export file?", source=source, line_no=i + 1,
                             line=",".join(rows[i])[:200])
    metrics, nodes, cards = rows[0][1:], rows[1][1:], rows[2][1:]
    if not (len(metrics) == len(nodes) == len(cards)) or not metrics:
        raise ParseError("the three header lines have different numbers of columns", source=source, line_no=3)
    columns = []
    for metric, node, card in zip(metrics, nodes, cards):
        if ascii_index(card) is None:
            raise ParseError(f"GPU (card) label {ascii(card)[:40]} is not a number in ASCII digits", source=source,
                             line_no=3)
        columns.append((metric, node_name(node), card.strip()))
    body_start = 4 if len(rows) > 3 and rows[3] and rows[3][0] == "timestamp" and not any(rows[3][1:]) else 3
    per_node: dict[str, list[tuple[float, dict[str, dict[str, float | None]]]]] = {}
    for line_no, row in enumerate(rows[body_start:], start=body_start + 1):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(columns) + 1:
            raise ParseError(f"{len(row)} cells where the header has {len(columns) + 1}", source=source,
                             line_no=line_no, line=",".join(row)[:200])
        when = _epoch(row[0], source, line_no)
        cells: dict[str, dict[str, dict[str, float | None]]] = {}
        for (metric, node, card), cell in zip(columns, row[1:]):
            cells.setdefault(node, {}).setdefault(card, {})[metric] = _number(cell)
        for node, cards_ in cells.items():
            if any(v is not None for values in cards_.values() for v in values.values()):
                per_node.setdefault(node, []).append((when, cards_))
    if not per_node:
        raise ParseError("no row with a reading", source=source)
    vendor = read_vendor(p.parent)
    found = sorted({m for m, _, _ in columns})
    known = [m for m in found if m in METRICS]
    out: dict[str, Session] = {}
    for node in sorted(per_node):
        samples = sorted(per_node[node], key=lambda s: s[0])
        started = samples[0][0]
        gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:]) if b[0] > a[0]]
        header = SessionHeader(
            name=node, kind="recorded", started=started, interval_s=median(gaps) if gaps else 1.0,
            site="lumi", command=("omnistat-query", "--export"),
            source=f"Omnistat export {p.name} (omnistat-query --export)" + (f"; {note}" if note else ""),
            description=f"recorded from {node}'s GPUs by Omnistat: {', '.join(known) or 'no known metric'} "
                        f"({len(samples)} samples)")
        pm = vendor.get(node, {})
        frames = [Frame(t=when - started, exit_status=0, stdout=json.dumps(
            {"format": FORMAT, "node": node, "timestamp": when, "cards": cards_,
             **({"pm": {**pm[when], "time": when}} if when in pm else {})}, sort_keys=True))
            for when, cards_ in samples]
        notes = [f"{p}: metrics this reader does not use: {', '.join(m for m in found if m not in METRICS)}"] \
            if len(known) < len(found) else []
        out[node] = Session(header=header, frames=frames, notes=notes)
    return out
