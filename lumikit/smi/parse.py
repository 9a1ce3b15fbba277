"""One entry point for every GPU tool output: detect the format, parse, add packages from the site profile.

``parse_smi(text)`` accepts rocm-smi (concise, ``--json``, ``--csv``, the ``GPU[0] : key: value`` views),
amd-smi (``monitor``, the default box view, ``metric --json``), nvidia-smi ``--query-gpu`` CSV and ``gpu_check``,
with or without ``srun --label`` prefixes, shell prompts and ``WARNING`` lines around them.
"""
from __future__ import annotations

import csv
import json
from dataclasses import replace
from typing import Callable

from ..errors import ParseError
from ..site import Site, load_site
from ..sniff import looks_like_sentence
from . import amd_smi, concise, gpu_check, nvidia, rocm_views
from .lines import Line, exit_status, first_content, numbered, split_tasks
from .model import DeviceReading, Snapshot

MAX_CHARS = 20_000_000  # bigger than any tool output; a guard against reading the wrong file

FORMATS = ("rocm-smi-concise", "rocm-smi-json", "rocm-smi-csv", "rocm-smi-text", "amd-smi-monitor",
           "amd-smi-default", "amd-smi-metric-json", "nvidia-smi-csv", "gpu_check", "omnistat-export",
           "lumikit-readings-1")


def detect_format(lines: list[Line]) -> str:
    """The name of the format of one task's lines (one of :data:`FORMATS`); :class:`ParseError` if none fits."""
    joined_start = next((s.lstrip() for _, s in lines if s.strip()), "")
    if joined_start.startswith(("{", "[")):
        return "json"
    if gpu_check.looks_like_gpu_check(lines):
        return "gpu_check"
    for _, s in lines:
        if amd_smi.BOX_TITLE.match(s):
            return "amd-smi-default"
        if amd_smi.MONITOR_HEADER.match(s):
            return "amd-smi-monitor"
        if concise.HEADER.match(s):
            return "rocm-smi-concise"
    if rocm_views.is_rocm_csv(lines):
        return "rocm-smi-csv"
    body = [s for _, s in lines if s.strip()]
    if body and (nvidia.is_header(body[0]) or nvidia.looks_like_rows(lines)):
        return "nvidia-smi-csv"
    if rocm_views.looks_like_key_value(lines):
        return "rocm-smi-text"
    no, s = first_content(lines)
    raise ParseError("not a rocm-smi, amd-smi, nvidia-smi or gpu_check output this parser knows "
                     "(run the tool with --json or --csv, or see lumikit.smi.parse.FORMATS)" + _looks_like(lines),
                     source="<text>", line_no=no, line=s)


def _looks_like(lines: list[Line]) -> str:
    """What the text looks like instead, for a refusal (empty when nothing else fits)."""
    head = "\n".join(s for _, s in lines[:200])
    return looks_like_sentence(head, unless="GPU tool output")


#: Keys of one GPU entry of `amd-smi metric --json` (a list of objects without any of them is something else).
_AMD_METRIC_KEYS = frozenset({"gpu", "power", "usage", "temperature", "clock", "mem_usage", "fan", "perf_level",
                              "voltage", "pcie", "energy", "ecc", "throttle"})


def _parse_json(lines: list[Line], source: str) -> list[Snapshot]:
    text = "\n".join(s for _, s in lines)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, or an integer of 4,300+ digits
        line_no = getattr(exc, "lineno", None)
        line = None
        if line_no is not None and 0 < line_no <= len(lines):
            line_no, line = lines[line_no - 1]
        raise ParseError(f"not valid JSON ({getattr(exc, 'msg', exc)})", source=source, line_no=line_no,
                         line=line) from None
    if isinstance(data, dict) and data.get("format") == "omnistat-export":  # a frame of lumikit.smi.omnistat
        from .omnistat import parse_frame
        return [parse_frame(data, source)]
    if isinstance(data, dict) and data.get("format") == "lumikit-readings-1":  # a compact GPU record line
        from .readings import parse_frame as parse_readings
        return [parse_readings(data, source)]
    if isinstance(data, dict) and any(str(k).lower().startswith("card") for k in data):
        return [rocm_views.parse_json_rocm(data, source)]
    items = data.get("gpu_data") if isinstance(data, dict) else data
    if isinstance(items, list) and all(isinstance(g, dict) and _AMD_METRIC_KEYS & set(g) for g in items):
        return [amd_smi.parse_metric_json(data, source)]
    raise ParseError("JSON that is neither `rocm-smi --json` ({'card0': ...}) nor `amd-smi metric --json` "
                     "([{'gpu': 0, 'power': ...}, ...] or {'gpu_data': [...]})" + _looks_like(lines), source=source)


_PARSERS: dict[str, Callable[[list[Line], str], list[Snapshot]]] = {
    "json": _parse_json,
    "gpu_check": lambda ls, src: [gpu_check.parse_gpu_check(ls, src)],
    "amd-smi-default": lambda ls, src: [amd_smi.parse_box(ls, src)],
    "amd-smi-monitor": lambda ls, src: [amd_smi.parse_monitor(ls, src)],
    "rocm-smi-concise": lambda ls, src: [concise.parse_concise(ls, src)],
    "rocm-smi-csv": lambda ls, src: [rocm_views.parse_csv_rocm(ls, src)],
    "nvidia-smi-csv": nvidia.parse_nvidia_csv,
    "rocm-smi-text": lambda ls, src: [rocm_views.parse_key_value(ls, src)],
}


def parse_smi_series(text: str, *, source: str = "<text>", timestamp: float | None = None,
                     site: str | Site | None = "lumi") -> list[Snapshot]:
    """Every sample in ``text`` (a CSV of several timestamps gives several; most outputs give one).

    ``site`` gives the GCD -> package pairs (``None``: no packages). ``timestamp`` applies where the output
    carries none of its own.
    """
    if len(text) > MAX_CHARS:
        raise ParseError(f"{len(text)} characters is far more than any GPU tool prints; is this the right file?",
                         source=source)
    lines = numbered(text)
    status = exit_status(lines)
    groups = split_tasks(lines)
    tasks = [t for t in groups if t is not None]
    if tasks and not any(s.strip() for _, s in groups.get(None, [])):
        groups.pop(None, None)
    per_task: list[tuple[int | None, list[Snapshot]]] = []
    for task, task_lines in groups.items():
        if task is None and tasks:
            continue  # unlabelled lines between labelled output: srun's own messages
        try:
            fmt = detect_format(task_lines)
            per_task.append((task, _PARSERS[fmt](task_lines, source)))
        except ParseError as err:
            raise err.at(source) from None
        except csv.Error as err:  # a field past the csv module's 128 KB limit, a NUL: no tool prints one
            raise ParseError(f"not a GPU tool's CSV ({err})", source=source) from None
    site_obj = load_site(site) if site is not None else None
    series_len = max(len(snaps) for _, snaps in per_task)
    out = []
    for i in range(series_len):
        parts = [(task, snaps[min(i, len(snaps) - 1)]) for task, snaps in per_task]
        devices: list[DeviceReading] = []
        notes: list[str] = []
        processes = []
        for task, snap in parts:
            devs = [replace(d, task=task) if task is not None else d for d in snap.devices]
            devices.extend(assign_packages(devs, site_obj))
            notes.extend(snap.notes)
            processes.extend(snap.processes)
        first = parts[0][1]
        out.append(Snapshot(devices=tuple(devices), format=first.format,
                            timestamp=first.timestamp if first.timestamp is not None else timestamp,
                            source=source, notes=tuple(notes), processes=tuple(processes), exit_status=status))
    return out


def parse_smi(text: str, *, source: str = "<text>", timestamp: float | None = None,
              site: str | Site | None = "lumi") -> Snapshot:
    """Parse one GPU tool output into a :class:`Snapshot` (the latest sample where the text holds several).

    Raises :class:`~lumikit.errors.ParseError` naming the line when the text is not a known format.
    """
    return parse_smi_series(text, source=source, timestamp=timestamp, site=site)[-1]


def assign_packages(devices: list[DeviceReading], site: Site | None) -> list[DeviceReading]:
    """Set ``package`` from the site's GCD pairs when the devices are the site's whole node.

    Applies only when the device indices are exactly the site's GCD indices and nothing in the output
    contradicts the site's GCD (a device name naming another product, or a memory size far from the site's HBM
    per GCD); otherwise the devices keep ``package=None``.
    """
    if site is None or not devices:
        return devices
    gcds = {g.index: g.package for g in site.node.gcds}
    if sorted(d.index for d in devices) != sorted(gcds):
        return devices
    hbm = site.node.gcd_memory_gb * 2**30
    for d in devices:
        if d.name and "MI250" not in d.name and "Aldebaran" not in d.name:
            return devices
        if d.vram_total_bytes and abs(d.vram_total_bytes - hbm) > 0.1 * hbm:
            return devices
    return [replace(d, package=gcds[d.index]) for d in devices]
