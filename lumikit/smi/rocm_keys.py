"""rocm-smi's ``key: value`` vocabulary, shared by ``--json``, ``--csv`` and the ``GPU[0] : key: value`` views.

Key names drift across ROCm versions (``GPU memory use (%)`` -> ``GPU Memory Allocated (VRAM%)``, ``Card series``
-> ``Card Series``, ``Average`` -> ``Current Socket Graphics Package Power (W)``), so each field has a list of
aliases, matched case-insensitively with any trailing colon removed. Every value is a string.
"""
from __future__ import annotations

import math

import re
from typing import Mapping

from . import values as v
from .model import DeviceReading

_ALIASES: dict[str, tuple[str, ...]] = {
    "temp_c": ("temperature (sensor edge) (c)", "temperature (sensor junction) (c)"),
    "power_w": ("average graphics package power (w)", "current socket graphics package power (w)",
                "current socket power (w)"),
    "power_cap_w": ("max graphics package power (w)",),
    "sclk_mhz": ("sclk clock speed", "sclk clock level"),
    "mclk_mhz": ("mclk clock speed", "mclk clock level"),
    "fan_pct": ("fan speed (%)",),
    "perf": ("performance level",),
    "gpu_busy_pct": ("gpu use (%)",),
    "vram_alloc_pct": ("gpu memory allocated (vram%)",),
    "mem_use_pct": ("gpu memory use (%)",),
    "vram_used_bytes": ("vram total used memory (b)",),
    "vram_total_bytes": ("vram total memory (b)",),
    "node_id": ("node id",),
    "name": ("card series", "device name"),
    "bus_id": ("pci bus",),
    "numa_node": ("(topology) numa node",),
}

_CLOCK = re.compile(r"\((\d+(?:\.\d+)?)\s*[MmGg]hz\)")


def normal_key(key: str) -> str:
    """The alias-table form of a key: lower case, no trailing colon, single spaces."""
    return " ".join(key.strip().rstrip(":").split()).lower()


def lookup(record: Mapping[str, str], field: str) -> str | None:
    """The first value found under one of ``field``'s aliases (``record`` keys already normalised)."""
    for alias in _ALIASES[field]:
        val = record.get(alias)
        if val is not None and not v.is_missing(val):
            return val
    return None


def clock(cell: str | None) -> float | None:
    """``(1650Mhz)``, ``0 (300Mhz)``, ``1: (400Mhz)`` or ``1650Mhz`` -> MHz."""
    if cell is None:
        return None
    m = _CLOCK.search(cell)
    if m is None:
        return v.number(cell)
    val = float(m.group(1))
    return val if math.isfinite(val) else None  # "(1e400Mhz)" is damage, not a clock


def reading_from_record(index: int, record: Mapping[str, str]) -> DeviceReading:
    """One device from its normalised ``key -> value`` record.

    VRAM %: the allocation percentage where printed, else computed from the byte counts, else (old ROCm) the
    ``GPU memory use (%)`` value.
    """
    used = v.integer(lookup(record, "vram_used_bytes"))
    total = v.integer(lookup(record, "vram_total_bytes"))
    vram_pct = v.number(lookup(record, "vram_alloc_pct"))
    if vram_pct is None and used is not None and total:
        vram_pct = round(100.0 * used / total, 1)
    if vram_pct is None:
        vram_pct = v.number(lookup(record, "mem_use_pct"))
    bus = lookup(record, "bus_id")
    return DeviceReading(
        index=index,
        node_id=v.integer(lookup(record, "node_id")),
        temp_c=v.number(lookup(record, "temp_c")),
        power_w=v.number(lookup(record, "power_w")),
        power_cap_w=v.number(lookup(record, "power_cap_w")),
        sclk_mhz=clock(lookup(record, "sclk_mhz")),
        mclk_mhz=clock(lookup(record, "mclk_mhz")),
        fan_pct=v.number(lookup(record, "fan_pct")),
        perf=v.text(lookup(record, "perf")),
        vram_pct=vram_pct,
        vram_used_bytes=used,
        vram_total_bytes=total,
        gpu_busy_pct=v.number(lookup(record, "gpu_busy_pct")),
        name=v.text(lookup(record, "name")),
        bus_id=bus.strip() if bus else None,
        numa_node=v.integer(lookup(record, "numa_node")),
    )


def card_index(key: str) -> int | None:
    """``card3`` -> 3 (the device keys of ``--json`` and ``--csv``); ``None`` for other keys."""
    k = key.strip().lower()
    return v.ascii_index(k[4:]) if k.startswith("card") and len(k) < 12 else None
