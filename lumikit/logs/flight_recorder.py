"""PyTorch's flight recorder dumps: which rank never joined which collective of which process group.

With ``TORCH_FR_BUFFER_SIZE`` (older name ``TORCH_NCCL_TRACE_BUFFER_SIZE``) set, every process group of a rank
keeps its last collectives in a ring buffer and writes it out on a timeout (``TORCH_FR_DUMP_TEMP_FILE`` /
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` + the rank, default ``/tmp/nccl_trace_rank_<rank>``), or when the program
calls ``torch._C._distributed_c10d._dump_fr_trace()``. A dump is a pickled dict (or the same as JSON from
``_dump_fr_trace_json``): ``version``, ``pg_config`` (process group -> name, desc, ranks), ``pg_status`` and
``entries``, one per collective with ``process_group`` (name, desc), ``collective_seq_id``, ``profiling_name``
(``nccl:all_reduce``, ``gloo:broadcast``), ``state`` (scheduled / started / completed; gloo only schedules) and
sizes. The rank is not inside: as torch's own ``fr_trace`` tool does, it is the number the file name ends with.

A hang reads as: every rank reached collective N-1 of a group, and some ranks have no entry for collective N (they
never called it), or never started it. Pickles are read with an unpickler that builds only plain values, so a
dump cannot run code.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import LumikitError, ParseError

_RANK = re.compile(r"(\d+)(?:\.json)?$")
_MAX_BYTES = 256 << 20  # a ring buffer of a few thousand entries is megabytes; more is not a dump


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, strings and numbers; refuses every class or function a pickle names."""

    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle's signature
        raise ParseError(f"the pickle names {module}.{name}: not a flight recorder dump (those hold plain values "
                         "only); refusing to build it")


@dataclass
class FlightRecord:
    """One rank's dump: its rank (from the file name), the process groups and their collectives in order."""

    path: Path
    rank: int | None
    version: str
    pg_config: dict
    entries: list[dict] = field(default_factory=list)
    pg_status: dict = field(default_factory=dict)

    def last_seq(self) -> dict[str, int]:
        """The last collective sequence number this rank recorded, per process group description."""
        out: dict[str, int] = {}
        for e in self.entries:
            if e.get("is_p2p"):
                continue
            group = _group(e)
            out[group] = max(out.get(group, 0), int(e.get("collective_seq_id") or 0))
        return out


def _group(entry: dict) -> str:
    pg = entry.get("process_group") or ("?", "?")
    name, desc = (list(pg) + ["", ""])[:2]
    return f"{desc or name} (id {name})"


def is_flight_recorder_dump(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like a flight recorder dump (a pickle or JSON naming ``pg_config`` and ``entries``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return (head[:1] == b"\x80" or head.lstrip()[:1] == b"{") and b"entries" in head and \
        (b"pg_config" in head or b"comm_lib_version" in head or b"collective_seq_id" in head)


def read_flight_recorder(path: str | os.PathLike[str]) -> FlightRecord:
    """Read one dump (pickle or JSON); the rank is the number its file name ends with (None without one)."""
    p = Path(path)
    if not p.is_file():
        raise LumikitError(f"{p}: no such file; give the dump files (default /tmp/nccl_trace_rank_<rank>, or "
                           "TORCH_FR_DUMP_TEMP_FILE<rank>)")
    if p.stat().st_size > _MAX_BYTES:
        raise ParseError(f"{p.stat().st_size:,} bytes: larger than any flight recorder dump", source=str(p))
    data = p.read_bytes()
    try:
        if data[:1] == b"\x80":
            dump = _PlainUnpickler(io.BytesIO(data)).load()
        else:
            dump = json.loads(data)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise ParseError(f"not a readable flight recorder dump ({str(exc)[:120]}); was it cut while being "
                         "written?", source=str(p)) from None
    if not isinstance(dump, dict) or not isinstance(dump.get("entries"), list):
        raise ParseError("no 'entries' list: not a flight recorder dump", source=str(p))
    m = _RANK.search(p.name)
    return FlightRecord(path=p, rank=int(m.group(1)) if m else None, version=str(dump.get("version", "?")),
                        pg_config=dump.get("pg_config") or {}, entries=[e for e in dump["entries"]
                                                                        if isinstance(e, dict)],
                        pg_status=dump.get("pg_status") or {})


@dataclass(frozen=True)
class Hang:
    """A collective some ranks entered and others never did."""

    group: str
    seq: int
    collective: str
    waiting: tuple[int, ...]   # ranks that recorded collective ``seq``
    missing: tuple[int, ...]   # ranks whose last recorded collective of the group is before ``seq``
    last_seen: dict           # missing rank -> its last collective sequence number

    def describe(self) -> str:
        """One sentence: who never joined what."""
        who = ", ".join(f"rank {r} (last: collective {self.last_seen[r]})" for r in self.missing)
        return (f"{who} never joined collective {self.seq} ({self.collective}) of process group {self.group}; "
                f"rank{'s' if len(self.waiting) > 1 else ''} {', '.join(map(str, self.waiting))} waited in it")


def find_hangs(records: Iterable[FlightRecord]) -> list[Hang]:
    """Per process group, the first collective that some ranks recorded and others did not."""
    records = [r for r in records if r.rank is not None]
    groups = sorted({g for r in records for g in r.last_seq()})
    hangs = []
    for group in groups:
        last = {r.rank: r.last_seq().get(group, 0) for r in records}
        top = max(last.values())
        behind = sorted(r for r, s in last.items() if s < top)
        if not behind:
            continue
        seq = min(last[r] for r in behind) + 1
        waiting = sorted(r for r, s in last.items() if s >= seq)
        name = next((str(e.get("profiling_name")) for r in records for e in r.entries
                     if _group(e) == group and int(e.get("collective_seq_id") or 0) == seq), "?")
        hangs.append(Hang(group, seq, name, tuple(waiting), tuple(behind), {r: last[r] for r in behind}))
    return hangs
