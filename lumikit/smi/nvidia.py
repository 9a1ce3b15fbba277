"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``.

With a header the columns are named (``utilization.gpu [%]``); without one, the columns are those of
:data:`QUERY_FIELDS` (what the sampler asks for) when the count matches, else they are recognised by shape:
timestamp, bus id, name, ``P0`` state, and cells with units (``%``: GPU then memory utilisation; ``W``: draw then
limit; ``MHz``: SM then memory clock; ``MiB``: with three or more such cells, the largest is the total).
Rows with several timestamps are several samples: a sample ends where a device repeats.
"""
from __future__ import annotations

import csv
import re
from datetime import datetime, timezone

from ..errors import ParseError
from . import values as v
from .lines import Line
from .model import DeviceReading, Snapshot

FORMAT = "nvidia-smi-csv"

# What the sampler queries (and the default column list for header-less CSV of the same width).
QUERY_FIELDS: tuple[str, ...] = (
    "timestamp", "index", "name", "pci.bus_id", "temperature.gpu", "power.draw", "power.limit", "clocks.sm",
    "clocks.mem", "fan.speed", "pstate", "utilization.gpu", "memory.used", "memory.total",
)

_FIELD_MAP = {
    "timestamp": "timestamp", "index": "index", "name": "name", "pci.bus_id": "bus_id",
    "temperature.gpu": "temp_c", "power.draw": "power_w", "power.draw.average": "power_w",
    "power.draw.instant": "power_w", "power.limit": "power_cap_w", "enforced.power.limit": "power_cap_w",
    "clocks.sm": "sclk_mhz", "clocks.current.sm": "sclk_mhz", "clocks.gr": "sclk_mhz",
    "clocks.current.graphics": "sclk_mhz", "clocks.mem": "mclk_mhz", "clocks.current.memory": "mclk_mhz",
    "fan.speed": "fan_pct", "pstate": "perf", "utilization.gpu": "gpu_busy_pct", "memory.used": "vram_used",
    "memory.total": "vram_total", "memory.free": "vram_free",
}
_KNOWN_HEADS = frozenset(_FIELD_MAP) | {"driver_version", "utilization.memory", "pcie.link.gen.max",
                                        "pcie.link.gen.current", "serial", "uuid"}
MAX_COLUMNS = 200  # nvidia-smi has about 100 query fields; a line with more commas is read no further
_BUS = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d$")
_STAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?$")
_PSTATE = re.compile(r"^P\d{1,2}$")


def _head(cell: str) -> str:
    return cell.split("[")[0].strip().lower()


def is_header(line: str) -> bool:
    """A ``--format=csv`` header line (every column a known query field)."""
    if line.count(",") > MAX_COLUMNS:  # far more columns than any query: not a header (and not read cell by cell)
        return False
    heads = [_head(c) for c in line.split(",")]
    return len(heads) >= 2 and sum(h in _KNOWN_HEADS for h in heads) * 2 > len(heads)


def looks_like_rows(lines: list[Line]) -> bool:
    """Header-less rows: comma-separated, with a bus id or a timestamp in them."""
    body = [s for _, s in lines if s.strip()]
    if not body:
        return False
    cells = [c.strip() for c in body[0].split(",", MAX_COLUMNS)[:MAX_COLUMNS]]
    return len(cells) >= 3 and any(_BUS.match(c) or _STAMP.match(c) for c in cells)


def timestamp(cell: str | None) -> float | None:
    """``2024/06/01 11:27:05.177`` (nvidia-smi's local time, read as UTC) -> epoch seconds."""
    if not cell or not _STAMP.match(cell.strip()):
        return None
    fmt = "%Y/%m/%d %H:%M:%S.%f" if "." in cell else "%Y/%m/%d %H:%M:%S"
    try:
        return datetime.strptime(cell.strip(), fmt).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:  # the shape of a time stamp with an impossible date or hour
        return None


def _by_shape(cells: list[str]) -> dict[str, str]:
    row: dict[str, str] = {}
    seen: dict[str, int] = {}
    mib: list[tuple[int, str]] = []
    order = {"%": ("gpu_busy_pct", None), "W": ("power_w", "power_cap_w"), "MHz": ("sclk_mhz", "mclk_mhz")}
    for pos, c in enumerate(cells):
        if _STAMP.match(c):
            row["timestamp"] = c
        elif _BUS.match(c):
            row["bus_id"] = c
        elif _PSTATE.match(c):
            row["perf"] = c
        elif c.endswith(" MiB"):
            mib.append((pos, c))
        elif c.upper().startswith(("NVIDIA", "TESLA", "QUADRO", "GEFORCE")):
            row["name"] = c
        else:
            unit = c.rsplit(" ", 1)[-1] if " " in c else ""
            if unit in order:
                k = seen.get(unit, 0)
                seen[unit] = k + 1
                names = order[unit]
                if k < len(names) and names[k]:
                    row[names[k]] = c
    if len(mib) >= 3:  # total, used and free (in some order): the total is the largest
        row["vram_total"] = max(mib, key=lambda pc: v.number(pc[1]) or 0.0)[1]
    return row


def parse_nvidia_csv(lines: list[Line], source: str) -> list[Snapshot]:
    """Every sample in the CSV, in order (most outputs hold one)."""
    body = [(no, s) for no, s in lines if s.strip()]
    if not body:
        raise ParseError("an empty nvidia-smi CSV", source=source)
    fields: list[str | None] | None = None
    if is_header(body[0][1]):
        fields = [_FIELD_MAP.get(_head(c)) for c in body[0][1].split(",")]
        body = body[1:]
    rows: list[tuple[dict[str, str], Line]] = []
    for no, s in body:
        cells = [c.strip() for c in next(csv.reader([s]))]
        if fields is not None:
            if len(cells) != len(fields):
                raise ParseError(f"a CSV row with {len(cells)} fields under a header of {len(fields)}",
                                 source=source, line_no=no, line=s)
            row = {f: c for f, c in zip(fields, cells) if f}
        elif len(cells) == len(QUERY_FIELDS):
            row = {_FIELD_MAP[f]: c for f, c in zip(QUERY_FIELDS, cells)}
        else:
            row = _by_shape(cells)
        if "index" not in row and "bus_id" not in row:
            raise ParseError("an nvidia-smi row with neither a GPU index nor a bus id", source=source, line_no=no,
                             line=s)
        rows.append((row, (no, s)))
    buses = sorted({r["bus_id"] for r, _ in rows if "bus_id" in r and "index" not in r})
    samples: list[list[DeviceReading]] = [[]]
    stamps: list[float | None] = [None]
    for row, (no, s) in rows:
        idx = v.integer(row["index"]) if "index" in row else buses.index(row["bus_id"])
        if idx is None:
            raise ParseError("a GPU index that is not a number", source=source, line_no=no, line=s)
        if any(d.index == idx for d in samples[-1]):
            samples.append([])
            stamps.append(None)
        if stamps[-1] is None:
            stamps[-1] = timestamp(row.get("timestamp"))
        used = v.nbytes(row.get("vram_used"), "mib")
        total = v.nbytes(row.get("vram_total"), "mib")
        if used is None and total is not None and row.get("vram_free") is not None:
            free = v.nbytes(row["vram_free"], "mib")
            used = total - free if free is not None else None
        samples[-1].append(DeviceReading(
            index=idx, name=v.text(row.get("name")), bus_id=v.text(row.get("bus_id")),
            temp_c=v.number(row.get("temp_c")), power_w=v.number(row.get("power_w")),
            power_cap_w=v.number(row.get("power_cap_w")), sclk_mhz=v.number(row.get("sclk_mhz")),
            mclk_mhz=v.number(row.get("mclk_mhz")), fan_pct=v.number(row.get("fan_pct")),
            perf=v.text(row.get("perf")), gpu_busy_pct=v.number(row.get("gpu_busy_pct")),
            vram_used_bytes=used, vram_total_bytes=total,
            vram_pct=round(100.0 * used / total, 1) if used is not None and total else None))
    if not samples[-1]:
        raise ParseError("an nvidia-smi CSV header without GPU rows", source=source)
    return [Snapshot(devices=tuple(sorted(devs, key=lambda d: d.index)), format=FORMAT, timestamp=t,
                     source=source) for devs, t in zip(samples, stamps)]
