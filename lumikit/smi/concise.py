"""rocm-smi's default "Concise Info" table, all header generations.

- ROCm <= 5.0: ``GPU  Temp (DieEdge)  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%``
- ROCm 5.x:   ``GPU  Temp  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%`` (temperatures ``39.0c``)
- ROCm 6.0:   ``Device  [Model : Revision]  Temp  Power  Partitions ...`` with a name row under each device
- ROCm 6.1.1+: ``Device  Node  IDs  Temp  Power  Partitions ...`` with a second header row (``(DID, GUID) ...``)

Column widths adapt to the content and two cells hold spaces (``0x7408,   13395``, ``N/A, N/A, 0``), so rows are
split on blanks and re-joined where a token ends in a comma or a bracket is still open; the header goes through
the same rule and the cells are matched to it by position.
"""
from __future__ import annotations

import re

from ..errors import ParseError
from . import values as v
from .lines import Line, is_banner, is_note
from .model import DeviceReading, Snapshot

FORMAT = "rocm-smi-concise"

HEADER = re.compile(r"^(GPU|Device)\s+(?:\S+\s+){0,3}?(?:Temp|\[Model)")
_ROW = re.compile(r"^\d+\s")

# header cell (lower case, the part before any "(" sub-label) -> model field
_COLUMNS = {
    "gpu": "index", "device": "index", "node": "node_id", "temp": "temp_c", "avgpwr": "power_w",
    "power": "power_w", "sclk": "sclk_mhz", "mclk": "mclk_mhz", "fan": "fan_pct", "perf": "perf",
    "pwrcap": "power_cap_w", "vram%": "vram_pct", "gpu%": "gpu_busy_pct",
}


def join_cells(tokens: list[str], *, header: bool = False) -> list[str]:
    """Re-join blank-split tokens into cells: after a trailing comma, inside ``[...]``, and (header only) a
    ``(sub-label)`` onto the column it qualifies."""
    if not header and not any(t.endswith(",") or "[" in t for t in tokens):
        return tokens  # ROCm 5 rows: nothing to re-join
    cells: list[str] = []
    depth = 0
    for tok in tokens:
        glue = bool(cells) and (depth > 0 or cells[-1].endswith(",") or (header and tok.startswith("(")))
        if glue:
            cells[-1] = f"{cells[-1]} {tok}"
        else:
            cells.append(tok)
        depth = max(0, depth + tok.count("[") - tok.count("]"))
    return cells


def _column_key(cell: str) -> str:
    return cell.split("(")[0].strip().lower()


def parse_concise(lines: list[Line], source: str) -> Snapshot:
    """Parse one concise table; raises :class:`ParseError` naming the line that does not fit."""
    start = next((i for i, (_, s) in enumerate(lines) if HEADER.match(s)), None)
    if start is None:
        no, s = lines[0] if lines else (1, "")
        raise ParseError("no rocm-smi concise header ('GPU  Temp ...' or 'Device ...') found", source=source,
                         line_no=no, line=s)
    header = join_cells(lines[start][1].split(), header=True)
    fields = [_COLUMNS.get(_column_key(c)) for c in header]
    name_rows = any(c.startswith("[Model") for c in header)
    devices: list[dict[str, object]] = []
    notes: list[str] = []
    seen_row = ended = False
    for no, s in lines[start + 1:]:
        body = s.strip()
        if is_note(s):
            notes.append(body)
            continue
        if ended:
            continue  # after the table: only the WARNING lines before the end banner matter
        if is_banner(s):
            ended = seen_row and body.startswith("=")
            continue
        if _ROW.match(s):
            cells = join_cells(s.split())
            if len(cells) != len(header):
                raise ParseError(f"a device row with {len(cells)} cells under a header of {len(header)} "
                                 f"({' | '.join(header)})", source=source, line_no=no, line=s)
            row = {f: c for f, c in zip(fields, cells) if f}
            row["_line"] = (no, s)
            devices.append(row)
            seen_row = True
        elif seen_row and name_rows and "name" not in devices[-1]:
            devices[-1]["name"] = body  # the ROCm 6.0 layout prints the device name on a row of its own
        elif not seen_row:
            continue  # the second header row: "(DID, GUID) (Edge) (Avg) ..." or "Name (20 chars) ..."
        else:
            raise ParseError("a line inside the concise table that is neither a device row nor a name row",
                             source=source, line_no=no, line=s)
    if not devices:
        no, s = lines[start]
        raise ParseError("a concise table header without device rows", source=source, line_no=no, line=s)
    return Snapshot(devices=tuple(_reading(d, source) for d in devices), format=FORMAT, source=source,
                    notes=tuple(notes))


def _reading(row: dict[str, object], source: str) -> DeviceReading:
    cell = {k: str(val) for k, val in row.items() if k not in ("_line", "name")}
    index = v.integer(cell.get("index"))
    if index is None:
        no, s = row["_line"]  # type: ignore[misc]
        raise ParseError("a device row that does not start with a device number", source=source, line_no=no,
                         line=s)
    return DeviceReading(
        index=index,
        node_id=v.integer(cell.get("node_id")),
        temp_c=v.number(cell.get("temp_c")),
        power_w=v.number(cell.get("power_w")),
        power_cap_w=v.number(cell.get("power_cap_w")),
        sclk_mhz=v.number(cell.get("sclk_mhz")),
        mclk_mhz=v.number(cell.get("mclk_mhz")),
        fan_pct=v.number(cell.get("fan_pct")),
        perf=v.text(cell.get("perf")),
        vram_pct=v.number(cell.get("vram_pct")),
        gpu_busy_pct=v.number(cell.get("gpu_busy_pct")),
        name=v.text(row.get("name")),  # type: ignore[arg-type]
    )
