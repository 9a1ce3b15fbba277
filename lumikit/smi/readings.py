"""A sample as parsed numbers per GCD: the compact form a run's GPU record keeps (``lumikit-readings-1``).

A record line holds ``"r": [[busy %, W, sclk MHz, mclk MHz, °C, VRAM %, VRAM MiB, J], ...]`` (one list per
device, in :data:`COLUMNS` order; ``null`` where the tool printed nothing, trailing ``null``\\ s left out) and
``"i"`` (the device numbers) where they are not 0, 1, 2, ... A line of 8 GCDs is about 300 bytes where the
tool's own ``amd-smi metric --json`` is about 40 kB: a week at 2 s stays under 100 MB. The energy column is the
tool's own counter (``amd-smi``'s ``energy.total_energy_consumption``) where it prints one, in a run's record
minus its value at the first sample (kept there as ``"e0"``): only its increases are used.

:func:`encode` makes the lists from a parsed snapshot; :func:`frame_text` and :func:`parse_frame` let the
session readers take such a line like any tool output (``parse_smi`` reads ``{"format": FORMAT, ...}``).
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

from ..errors import ParseError
from .model import DeviceReading, Snapshot

FORMAT = "lumikit-readings-1"
COLUMNS: tuple[str, ...] = ("gpu_busy_pct", "power_w", "sclk_mhz", "mclk_mhz", "temp_c", "vram_pct",
                            "vram_used_mib", "energy_j")
MIB = 2**20
_ROUND = (1, 1, 0, 0, 1, 1, 0, 0)  # decimals kept per column: the tools print no finer


def _compact(value: float | None, decimals: int) -> float | int | None:
    if value is None or not math.isfinite(value):
        return None
    v = round(value, decimals)
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


def encode(devices: Sequence[DeviceReading], energies: Mapping[int, float] | None = None
           ) -> tuple[list[int] | None, list[list[float | int | None]]]:
    """(device numbers, or None when they are 0..n-1; one list of :data:`COLUMNS` values per device)."""
    energies = energies or {}
    rows = []
    for d in devices:
        used = d.vram_used_bytes / MIB if d.vram_used_bytes is not None else None
        raw = (d.gpu_busy_pct, d.power_w, d.sclk_mhz, d.mclk_mhz, d.temp_c, d.vram_pct, used, energies.get(d.index))
        row = [_compact(v, n) for v, n in zip(raw, _ROUND)]
        while row and row[-1] is None:
            row.pop()
        rows.append(row)
    indices = [d.index for d in devices]
    return (None if indices == list(range(len(indices))) else indices), rows


def decode(indices: Sequence[int] | None, rows: Sequence[Sequence[Any]]) -> list[tuple[int, tuple[float | None, ...]]]:
    """``[(device, values in COLUMNS order)]``: every value a finite float or None (anything else is None)."""
    n = len(COLUMNS)
    idx = list(indices) if indices is not None else list(range(len(rows)))
    if len(idx) != len(rows):
        raise ParseError(f"{len(rows)} device rows for {len(idx)} device numbers")
    out = []
    for i, row in zip(idx, rows):
        if not isinstance(row, list) or isinstance(i, bool) or not isinstance(i, int):
            raise ParseError("a device row that is not a list of numbers")
        vals = [float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v) else None
                for v in row[:n]]
        out.append((i, tuple(vals + [None] * (n - len(vals)))))
    return out


def _finite(v: float) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def to_devices(decoded: Sequence[tuple[int, tuple[float | None, ...]]]) -> tuple[DeviceReading, ...]:
    """The :class:`DeviceReading` of each decoded row (the energy column has no reading field: it is dropped; a
    VRAM figure of over 1e15 MiB, which no device holds, is read as none)."""
    out = []
    for i, (busy, power, sclk, mclk, temp, vpct, used, _energy) in decoded:
        out.append(DeviceReading(index=i, gpu_busy_pct=busy, power_w=power, sclk_mhz=sclk, mclk_mhz=mclk,
                                 temp_c=temp, vram_pct=vpct,
                                 vram_used_bytes=int(used * MIB) if used is not None and abs(used) < 1e15 else None))
    return tuple(out)


#: The largest energy counter read, in joules (1e18 J: 30 GW for a year); beyond it a counter is damage.
MAX_ENERGY_J = 1e18
_ENERGY_SCALE = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "\u00b5J": 1e-6, "kJ": 1e3}


def energy_counters(stdout: str, dropped: list[int] | None = None) -> dict[int, float]:
    """GPU index -> the energy counter in joules, where the output is ``amd-smi metric --json`` and prints one
    (``energy.total_energy_consumption`` with its unit); ``{}`` otherwise. Read with the compact format's bounds:
    finite numbers up to :data:`MAX_ENERGY_J`, integers of at most 40 digits, units as strings, GPU ids as ints;
    a counter outside them is left out, and counted in ``dropped`` (one element a value) when given."""
    from ..files import load_json_bounded  # the one bounded JSON reader (finite floats, int digit limits)

    if not stdout.lstrip().startswith(("[", "{")):
        return {}
    try:
        data = load_json_bounded(stdout, "<amd-smi metric --json output>")
    except ParseError:
        if dropped is not None and "total_energy_consumption" in stdout:
            dropped.append(1)  # a number beyond the bounds anywhere in the output: its counters are not read
        return {}
    items = data.get("gpu_data") if isinstance(data, dict) else data
    out: dict[int, float] = {}
    for g in items if isinstance(items, list) else ():
        if not isinstance(g, dict) or not isinstance(g.get("energy"), dict):
            continue
        e = g["energy"].get("total_energy_consumption")
        value, unit = (e.get("value"), e.get("unit", "J")) if isinstance(e, dict) else (e, "J")
        gpu = g.get("gpu")
        if (type(gpu) is not int or not isinstance(unit, str) or unit not in _ENERGY_SCALE
                or isinstance(value, bool) or not isinstance(value, (int, float))):
            if e is not None and dropped is not None:
                dropped.append(1)
            continue
        joules = float(value) * _ENERGY_SCALE[unit]  # at most 40 digits: float() cannot overflow
        if math.isfinite(joules) and abs(joules) <= MAX_ENERGY_J:
            out[gpu] = joules
        elif dropped is not None:
            dropped.append(1)
    return out


def frame_text(record_line: Mapping[str, Any]) -> str:
    """The text a session frame holds for a compact record line: ``{"format": FORMAT, "i": ..., "r": ...}``."""
    return json.dumps({"format": FORMAT, "i": record_line.get("i"), "r": record_line["r"]},
                      separators=(",", ":"))


def parse_frame(data: Mapping[str, Any], source: str = "<record line>") -> Snapshot:
    """The snapshot of a :func:`frame_text` (what :func:`lumikit.smi.parse.parse_smi` hands here)."""
    rows = data.get("r")
    if not isinstance(rows, list):
        raise ParseError("a readings frame without its 'r' list", source=source)
    try:
        decoded = decode(data.get("i"), rows)
    except ParseError as err:
        raise err.at(source) from None
    if not decoded:
        raise ParseError("a readings frame with no device", source=source)
    return Snapshot(devices=to_devices(decoded), format=FORMAT, source=source)


__all__ = ["COLUMNS", "FORMAT", "decode", "encode", "energy_counters", "frame_text", "parse_frame", "to_devices"]
