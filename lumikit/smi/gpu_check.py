"""``gpu_check -l`` (lumi-CPEtools): which GCDs (by bus id) each MPI rank sees, and on which node.

``MPI 000 - OMP 000 - HWT 001 (CCD0) - Node nid005109 - RT_GPU_ID 0,1 - GPU_ID 0,1 - Bus_ID c1(GCD0/CCD6),...``
becomes one reading per (rank, GCD): ``index`` = the GCD number, ``task`` = the rank, ``host`` = the node,
``bus_id`` = the bus number. OpenMP threads of one rank repeat the same GCDs and are folded.
"""
from __future__ import annotations

import re

from ..errors import ParseError
from .lines import Line, first_content
from .model import DeviceReading, Snapshot

FORMAT = "gpu_check"

ROW = re.compile(r"^MPI (\d{1,6}) - OMP (\d{1,4}) - HWT (\d{1,5}) \(CCD\d{1,3}\) - Node (\S{1,64}) - RT_GPU_ID "
                 r"[\d,]{1,64} - GPU_ID [\d,]{1,64} - Bus_ID (\S{1,400})$")
_BUS = re.compile(r"([0-9a-fA-F]{1,4})\(GCD(\d{1,2})/CCD\d{1,2}\)")


def looks_like_gpu_check(lines: list[Line]) -> bool:
    return any(ROW.match(s) for _, s in lines)


def parse_gpu_check(lines: list[Line], source: str) -> Snapshot:
    """Parse ``gpu_check -l`` output (``+ srun ...`` trace lines become notes)."""
    seen: dict[tuple[int, int], DeviceReading] = {}
    notes = []
    for no, s in lines:
        if not s.strip():
            continue
        if s.startswith("+ "):
            notes.append(s.strip())
            continue
        m = ROW.match(s)
        if m is None:
            raise ParseError("a line that is not a gpu_check row ('MPI 000 - OMP 000 - HWT ...')", source=source,
                             line_no=no, line=s)
        rank, host = int(m.group(1)), m.group(4)
        buses = _BUS.findall(m.group(5))
        if not buses:
            raise ParseError("a gpu_check row without 'bus(GCDn/CCDm)' entries", source=source, line_no=no, line=s)
        for bus, gcd in buses:
            seen.setdefault((rank, int(gcd)), DeviceReading(index=int(gcd), task=rank, host=host, bus_id=bus))
    if not seen:
        no, s = first_content(lines)
        raise ParseError("no gpu_check rows found", source=source, line_no=no, line=s)
    return Snapshot(devices=tuple(seen[k] for k in sorted(seen)), format=FORMAT, source=source, notes=tuple(notes))
