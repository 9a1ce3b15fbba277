"""amd-smi outputs: ``amd-smi monitor`` (all column sets, ROCm 6.1 to 7.1), the ROCm 7 default box view, and
``amd-smi metric --json`` (a bare list in ROCm 6.1, ``{"gpu_data": [...]}`` later; leaves are
``{"value", "unit"}`` objects or the string ``"N/A"``).

Cells carry their unit after a blank (``171 W``, ``32 °C``, ``0.2/ 25.4 GB``): a token that starts with a letter,
``°`` or ``%`` (and is not ``N/A``) belongs to the cell before it, and so does a token after a trailing ``/``.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable

from ..errors import ParseError
from . import values as v
from .lines import Line, is_note
from .model import DeviceReading, GpuProcess, Snapshot

MONITOR_HEADER = re.compile(r"^\s*GPU\s+(?:XCP\s+)?POWER\b")
BOX_TITLE = re.compile(r"^\|\s*AMD-SMI\b|^\|\s*BDF\s")

_MONITOR_COLUMNS = {
    "GPU": "index", "POWER": "power_w", "GPU_TEMP": "temp_c", "GPU_T": "temp_c", "GFX_UTIL": "gpu_busy_pct",
    "GFX%": "gpu_busy_pct", "GFX_CLOCK": "sclk_mhz", "GFX_CLK": "sclk_mhz", "MEM_CLOCK": "mclk_mhz",
    "MEM_CLK": "mclk_mhz", "VRAM_USED": "vram_used", "VRAM_TOTAL": "vram_total", "VRAM_USAGE": "vram_usage",
    "VRAM%": "vram_pct",
}


def join_units(tokens: Iterable[str]) -> list[str]:
    """Blank-split tokens -> cells, units and ``a/ b`` fractions glued to their number."""
    cells: list[str] = []
    for tok in tokens:
        unit = tok[0].isalpha() or tok[0] in "°%"
        if cells and ((unit and tok.upper() != "N/A") or cells[-1].endswith("/")):
            cells[-1] = f"{cells[-1]} {tok}"
        else:
            cells.append(tok)
    return cells


def _fraction(cell: str | None) -> tuple[str | None, str | None]:
    """``734/750 W`` -> (``734 W``, ``750 W``); ``0.2/ 25.4 GB`` -> (``0.2 GB``, ``25.4 GB``)."""
    if cell is None or "/" not in cell:
        return cell, None
    left, _, right = cell.partition("/")
    right = right.strip()
    parts = right.split(None, 1)
    unit = parts[1] if len(parts) == 2 else ""
    return f"{left.strip()} {unit}".strip(), right


def _percent_of(used: int | None, total: int | None) -> float | None:
    return round(100.0 * used / total, 1) if used is not None and total else None


def parse_monitor(lines: list[Line], source: str) -> Snapshot:
    """``amd-smi monitor [-ptumv|-q|...]``: a header row and one row per GPU (or XCP), then an optional
    ``PROCESS INFO:`` table."""
    start = next((i for i, (_, s) in enumerate(lines) if MONITOR_HEADER.match(s)), None)
    if start is None:
        no, s = lines[0] if lines else (1, "")
        raise ParseError("no 'amd-smi monitor' header ('GPU  POWER ...') found", source=source, line_no=no, line=s)
    header = lines[start][1].split()
    devices: list[DeviceReading] = []
    notes: list[str] = []
    processes: list[GpuProcess] = []
    rest = lines[start + 1:]
    for i, (no, s) in enumerate(rest):
        if not s.strip():
            continue
        if s.strip().upper().startswith("PROCESS INFO"):
            processes = _process_rows(rest[i + 1:], source)
            break
        if is_note(s):
            notes.append(s.strip())
            continue
        if MONITOR_HEADER.match(s):
            continue  # `amd-smi monitor -w` repeats its header
        cells = join_units(s.split())
        if len(cells) != len(header):
            raise ParseError(f"a monitor row with {len(cells)} cells under a header of {len(header)}",
                             source=source, line_no=no, line=s)
        row = {_MONITOR_COLUMNS[h]: c for h, c in zip(header, cells) if h in _MONITOR_COLUMNS}
        index = v.integer(row.get("index"))
        if index is None:
            raise ParseError("a monitor row that does not start with a GPU number", source=source, line_no=no,
                             line=s)
        used = v.nbytes(row.get("vram_used"), "mib")
        total = v.nbytes(row.get("vram_total"), "mib")
        if "vram_usage" in row:
            u, t = _fraction(row["vram_usage"])
            used, total = v.nbytes(u, "gib"), v.nbytes(t, "gib")
        devices.append(DeviceReading(
            index=index, power_w=v.number(row.get("power_w")), temp_c=v.number(row.get("temp_c")),
            gpu_busy_pct=v.number(row.get("gpu_busy_pct")), sclk_mhz=v.number(row.get("sclk_mhz")),
            mclk_mhz=v.number(row.get("mclk_mhz")), vram_used_bytes=used, vram_total_bytes=total,
            vram_pct=v.number(row.get("vram_pct")) or _percent_of(used, total)))
    if not devices:
        no, s = lines[start]
        raise ParseError("an amd-smi monitor header without GPU rows", source=source, line_no=no, line=s)
    return Snapshot(devices=tuple(devices), format="amd-smi-monitor", source=source, notes=tuple(notes),
                    processes=tuple(processes))


def _process_rows(lines: list[Line], source: str) -> list[GpuProcess]:
    header: list[str] | None = None
    out = []
    for no, s in lines:
        if not s.strip():
            continue
        if header is None:
            header = s.split()
            continue
        toks = s.split()
        if len(toks) < 3 or v.ascii_index(toks[0]) is None:
            raise ParseError("a process row that does not start with a GPU number", source=source, line_no=no,
                             line=s)
        name, pid_tok, cells = toks[1], toks[2], join_units(toks[3:])
        cols = dict(zip(header[3:], cells))
        out.append(GpuProcess(pid=v.integer(pid_tok) or 0, devices=(int(toks[0]),), name=name,
                              vram_bytes=v.nbytes(cols.get("VRAM_MEM"))))
    return out


def parse_box(lines: list[Line], source: str) -> Snapshot:
    """The ROCm 7 default ``amd-smi`` view: two boxed rows per GPU (``BDF GPU-Name | Mem-Uti Temp UEC
    Power-Usage`` and ``GPU HIP-ID OAM-ID Partition-Mode | GFX-Uti Fan Mem-Usage``) and a process box."""
    devices: list[DeviceReading] = []
    processes: list[GpuProcess] = []
    pending: tuple[int, str, list[str], list[str]] | None = None
    in_procs = False
    for no, s in lines:
        st = s.strip()
        if not st.startswith("|") or st.startswith("|=") or st.startswith("|-"):
            continue
        parts = [p.strip() for p in st.strip("|").split("|")]
        if len(parts) == 1:
            body = parts[0]
            if body.startswith("Processes"):
                in_procs = True
            elif in_procs and body[:1].isdigit():
                toks = body.split()
                if len(toks) < 3 or v.ascii_index(toks[0]) is None:
                    raise ParseError("a process row that is not 'GPU PID NAME ...'", source=source, line_no=no,
                                     line=s)
                cells = join_units(toks[3:])
                processes.append(GpuProcess(pid=v.integer(toks[1]) or 0, devices=(int(toks[0]),), name=toks[2],
                                            vram_bytes=v.nbytes(cells[1]) if len(cells) > 1 else None))
            continue
        if len(parts) != 2:
            raise ParseError("a boxed row with more than two panels", source=source, line_no=no, line=s)
        left, right = parts[0].split(), join_units(parts[1].split())
        if not left or left[0] in ("BDF", "GPU", "AMD-SMI", "Platform:"):
            continue
        if ":" in left[0]:  # first row of a GPU: bus id and name
            pending = (no, s, left, right)
            continue
        if pending is None or not left[0].isdigit() or len(right) != 3 or len(pending[3]) != 4:
            raise ParseError("a boxed GPU row that does not follow the 'BDF GPU-Name' row", source=source,
                             line_no=no, line=s)
        _, _, first_left, first_right = pending
        power, cap = _fraction(first_right[3])
        used, total = _fraction(right[2])
        used_b, total_b = v.nbytes(used, "mib"), v.nbytes(total, "mib")
        devices.append(DeviceReading(
            index=int(left[0]), bus_id=first_left[0], name=" ".join(first_left[1:]) or None,
            temp_c=v.number(first_right[1]), power_w=v.number(power), power_cap_w=v.number(cap),
            gpu_busy_pct=v.number(right[0]), fan_pct=v.number(right[1]), vram_used_bytes=used_b,
            vram_total_bytes=total_b, vram_pct=_percent_of(used_b, total_b)))
        pending = None
    if not devices:
        raise ParseError("an amd-smi box view without GPU rows", source=source)
    return Snapshot(devices=tuple(devices), format="amd-smi-default", source=source, processes=tuple(processes))


def _leaf(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if isinstance(node, dict):
        node = node.get("value")
    if isinstance(node, str) and v.is_missing(node):
        return None
    return node


def _first(node: Any, *paths: tuple[str, ...]) -> Any:
    for p in paths:
        val = _leaf(node, *p)
        if val is not None:
            return val
    return None


def _num(val: Any) -> float | None:
    """A JSON value as a reading: a finite number, else None (an overflowing or infinite value is damage)."""
    if isinstance(val, bool):
        return None
    if isinstance(val, (int, float)):
        try:
            f = float(val)
        except OverflowError:  # an integer of hundreds of digits
            return None
        return f if math.isfinite(f) else None
    return v.number(val) if isinstance(val, str) else None


def _mem(node: Any, key: str) -> int | None:
    """A ``mem_usage`` entry in bytes (its unit is given next to the value, MB meaning MiB)."""
    entry = node.get(key) if isinstance(node, dict) else None
    if isinstance(entry, dict):
        val, unit = entry.get("value"), entry.get("unit", "MB")
        return v.nbytes(f"{val} {unit}") if isinstance(val, (int, float)) else None
    return None


def parse_metric_json(data: Any, source: str) -> Snapshot:
    """``amd-smi metric [--flags] --json``: a list of per-GPU objects, or that list under ``gpu_data``."""
    items = data.get("gpu_data") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ParseError("expected a list of GPUs (or {'gpu_data': [...]}) as `amd-smi metric --json` prints",
                         source=source)
    devices = []
    for pos, gpu in enumerate(items):
        if not isinstance(gpu, dict):
            raise ParseError(f"GPU entry {pos} is {type(gpu).__name__}, not an object", source=source)
        idx = gpu.get("gpu", pos)
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise ParseError(f"GPU entry {pos} has a non-integer 'gpu' number {idx!r}", source=source)
        mem = gpu.get("mem_usage")
        used, total = _mem(mem, "used_vram"), _mem(mem, "total_vram")
        perf = _leaf(gpu, "perf_level")
        devices.append(DeviceReading(
            index=idx,
            power_w=_num(_first(gpu, ("power", "socket_power"), ("power", "average_socket_power"),
                                ("power", "current_socket_power"))),
            power_cap_w=_num(_first(gpu, ("power", "power_limit"), ("power_cap",))),
            temp_c=_num(_first(gpu, ("temperature", "edge"), ("temperature", "hotspot"))),
            sclk_mhz=_num(_first(gpu, ("clock", "gfx_0", "clk"), ("clock", "gfx", "clk"))),
            mclk_mhz=_num(_first(gpu, ("clock", "mem_0", "clk"), ("clock", "mem", "clk"))),
            fan_pct=_num(_first(gpu, ("fan", "usage"))),
            gpu_busy_pct=_num(_first(gpu, ("usage", "gfx_activity"), ("usage", "gfx_usage"))),
            perf=str(perf).removeprefix("AMDSMI_DEV_PERF_LEVEL_").lower() if perf is not None else None,
            vram_used_bytes=used, vram_total_bytes=total, vram_pct=_percent_of(used, total)))
    return Snapshot(devices=tuple(devices), format="amd-smi-metric-json", source=source)
