"""rocm-smi's machine and per-view outputs: ``--json``, ``--csv``, the ``GPU[0] : key: value`` views
(``--showuse``, ``--showmemuse``, ``--showmeminfo vram``, ``--showtoponuma``, ``--showtopo``, ``--showbus``,
``--showproduct``, a full dump), ``--showhw`` and ``--showpidgpus``.

All of them reduce to a ``key -> value`` record per device that :mod:`lumikit.smi.rocm_keys` maps onto the
model. Matrix sections (``--showtopo`` weights, hops, link types) and error lines inside the output are kept as
notes, not readings: the documented result for a topology view is the devices with their NUMA node.
"""
from __future__ import annotations

import csv
import re
from typing import Any

from ..errors import ParseError
from . import values as v
from .lines import Line, first_content, is_banner, is_note
from .model import GpuProcess, Snapshot
from .rocm_keys import card_index, normal_key, reading_from_record

KEY_VALUE = re.compile(r"^GPU(?:\[(\d{1,4})\]| (\d{1,4}))[ \t]*:[ \t]?(.*)$")
_PID = re.compile(r"^PID (\d+) is using (\d+) DRM device")
_HW_HEADER = re.compile(r"^GPU\s+NODE\s+DID\b")
_BUS = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d$")


def parse_json_rocm(data: dict[str, Any], source: str) -> Snapshot:
    """``rocm-smi [flags] --json``: ``{"card0": {...}, ..., "system": {...}}`` with string values."""
    devices = []
    notes = []
    for key, rec in data.items():
        idx = card_index(key)
        if idx is None:
            if key.lower() == "system" and isinstance(rec, dict) and "Driver version" in rec:
                notes.append(f"driver version {rec['Driver version']}")
            continue
        if not isinstance(rec, dict):
            raise ParseError(f"{key!r} holds {type(rec).__name__}, not an object of readings", source=source)
        record = {normal_key(str(k)): str(val) for k, val in rec.items()}
        devices.append(reading_from_record(idx, record))
    if not devices:
        raise ParseError("a JSON object with no 'cardN' entries; expected `rocm-smi --json` output",
                         source=source)
    return Snapshot(devices=tuple(sorted(devices, key=lambda d: d.index)), format="rocm-smi-json",
                    source=source, notes=tuple(notes))


def parse_csv_rocm(lines: list[Line], source: str) -> Snapshot:
    """``rocm-smi [flags] --csv``: a ``device,<key>,<key>...`` header and one ``cardN,...`` row per device."""
    body = [(no, s) for no, s in lines if s.strip()]
    header_no, header_line = body[0]
    header = next(csv.reader([header_line]))
    keys = [normal_key(h) for h in header]
    devices = []
    for no, s in body[1:]:
        row = next(csv.reader([s]))
        if len(row) != len(header):
            raise ParseError(f"a CSV row with {len(row)} fields under a header of {len(header)}", source=source,
                             line_no=no, line=s)
        idx = card_index(row[0])
        if idx is None:
            raise ParseError("a CSV row that does not start with a device name like 'card0'", source=source,
                             line_no=no, line=s)
        devices.append(reading_from_record(idx, dict(zip(keys[1:], row[1:]))))
    if not devices:
        raise ParseError("a rocm-smi CSV header without device rows", source=source, line_no=header_no,
                         line=header_line)
    return Snapshot(devices=tuple(devices), format="rocm-smi-csv", source=source)


def parse_key_value(lines: list[Line], source: str) -> Snapshot:
    """The ``GPU[0]\\t\\t: key: value`` views (tabs in real output, spaces in most docs, ``GPU 0 :`` in ROCm 5
    topology), plus ``--showpidgpus`` and ``--showhw`` tables."""
    records: dict[int, dict[str, str]] = {}
    notes: list[str] = []
    processes: list[GpuProcess] = []
    hw_header = False
    lines_iter = iter(enumerate(lines))
    for i, (no, s) in lines_iter:
        m = KEY_VALUE.match(s)
        if m:
            idx = int(m.group(1) or m.group(2))
            rest = m.group(3)
            key, sep, val = rest.partition(":")
            rec = records.setdefault(idx, {})
            if sep and key.strip() and not key.strip().isdigit():
                rec.setdefault(normal_key(key), val.strip())
            continue
        if is_note(s):
            notes.append(s.strip())
            continue
        pid = _PID.match(s)
        if pid and i + 1 < len(lines):
            nxt = lines[i + 1][1].split()
            devs = tuple(int(t) for t in nxt if v.ascii_index(t) is not None)
            processes.append(GpuProcess(pid=int(pid.group(1)), devices=devs))
            for d in devs:
                records.setdefault(d, {})
            continue
        if _HW_HEADER.match(s):
            hw_header = True
            continue
        if hw_header and s[:1].isdigit():
            cells = s.split()
            if len(cells) >= 2 and v.ascii_index(cells[0]) is not None:
                rec = records.setdefault(int(cells[0]), {})
                if cells[1].isdigit():
                    rec.setdefault("node id", cells[1])
                bus = next((c for c in cells if _BUS.match(c)), None)
                if bus:
                    rec.setdefault("pci bus", bus)
            continue
    if not records:
        no, s = first_content(lines)
        raise ParseError("no 'GPU[N] : key: value' lines, device table or PID list found", source=source,
                         line_no=no, line=s)
    devices = tuple(reading_from_record(idx, rec) for idx, rec in sorted(records.items()))
    return Snapshot(devices=devices, format="rocm-smi-text", source=source, notes=tuple(notes),
                    processes=tuple(processes))


def looks_like_key_value(lines: list[Line]) -> bool:
    """Whether the text is one of the ``GPU[0] : key: value`` views or their relatives."""
    for _, s in lines:
        if KEY_VALUE.match(s) or _PID.match(s) or _HW_HEADER.match(s):
            return True
        if "GPUs Indexed by PID" in s or "Concise Hardware Info" in s:
            return True
    return False


def is_rocm_csv(lines: list[Line]) -> bool:
    first = next((s for _, s in lines if s.strip() and not is_banner(s)), "")
    return first.lower().startswith("device,")

