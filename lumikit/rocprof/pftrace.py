"""rocprofv3's Perfetto output (``--output-format pftrace``: ``<pid>_results.pftrace``), read offline.

The file is a protobuf ``Trace`` of packets. rocprofv3 describes one track per host thread (API calls), one per
agent queue (``COMPUTE AGENT [0] QUEUE [0] (GPU)``, or per stream) for kernels and one per copy destination
(``COPY to AGENT [1] THREAD [0] (GPU)``), then writes begin/end slices in the categories ``hip_api``, ``hsa_api``,
``marker_api``, ``rccl_api``, ``kernel_dispatch`` and ``memory_copy``, with names, categories and annotation keys
interned per packet sequence and timestamps often on an incremental clock. The decoding uses the protobuf classes
that the ``perfetto`` package ships (``perfetto_trace_pb2``); its trace processor, which downloads a binary, is
not used. Track names, categories and annotation keys (``corr_id``, ``queue``, ``stream_ID``, ``agent``,
``copy_bytes``) were checked against rocprofv3's writer (``generatePerfetto.cpp``, ROCm/rocm-systems, Aug 2025).
That writer moves the boundary of two overlapping dispatches on one track to their midpoint (a firmware timestamp
workaround it logs at INFO level), so kernel times in a ``.pftrace`` can differ slightly from the CSV and rocpd
outputs of the same run.
"""
from __future__ import annotations

import os
import re
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import read_bytes
from .activities import Activities

INSTALL_HINT = ("reading a .pftrace needs the perfetto package (pip install perfetto==0.59.1, which brings "
                "protobuf); or re-run rocprofv3 with --output-format csv")
#: rocprofv3's slice categories -> the table they go to.
CATEGORY_KIND = {"kernel_dispatch": "kernel", "memory_copy": "copy", "hip_api": "api", "hsa_api": "api",
                 "marker_api": "api", "rccl_api": "api", "rocdecode_api": "api", "rocjpeg_api": "api"}
_QUEUE_TRACK = re.compile(r"^COMPUTE\s+\w+\s*\[(\d+)\]\s*QUEUE\s*\[(\d+)\]")
_COPY_TRACK = re.compile(r"^COPY to \w+\s*\[(\d+)\]")
_BOOTTIME = 6


def _protos() -> Any:
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError:
        raise LumikitError(INSTALL_HINT) from None
    return perfetto_trace_pb2


@dataclass
class _Sequence:
    """Per packet-sequence state: interned strings, the default clock and the incremental clocks."""

    names: dict[int, str] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)
    annotations: dict[int, str] = field(default_factory=dict)
    default_clock: int | None = None
    default_track: int | None = None
    clocks: dict[int, list[float]] = field(default_factory=dict)  # id -> [value_ns, unit_ns, offset_ns]

    def clear(self) -> None:
        self.names.clear()
        self.categories.clear()
        self.annotations.clear()


def _annotation_value(a: Any) -> object:
    for key in ("uint_value", "int_value", "double_value", "string_value", "bool_value", "pointer_value"):
        if a.HasField(key):
            return getattr(a, key)
    return None


def _timestamp(packet: Any, seq: _Sequence) -> int | None:
    if not packet.HasField("timestamp"):
        ev = packet.track_event
        if packet.HasField("track_event") and ev.HasField("timestamp_absolute_us"):
            return int(ev.timestamp_absolute_us * 1000)
        return None
    clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else seq.default_clock
    if clock is not None and clock in seq.clocks:
        state = seq.clocks[clock]
        state[0] += packet.timestamp * state[1]
        return int(state[0] + state[2])
    return int(packet.timestamp)


def _snapshot(snap: Any, seq: _Sequence) -> None:
    """Incremental clocks start at their snapshot value; the offset maps them onto the snapshot's boot clock."""
    reference = next((c.timestamp for c in snap.clocks if c.clock_id == _BOOTTIME), None)
    for c in snap.clocks:
        if c.is_incremental:
            unit = float(c.unit_multiplier_ns or 1)
            start = c.timestamp * unit
            seq.clocks[c.clock_id] = [start, unit, 0.0 if reference is None else reference - start]


def _slices(trace: Any, pb: Any) -> tuple[list[dict], dict[int, dict]]:
    """Every complete slice (begin/end paired per track) and every track's descriptor."""
    sequences: dict[int, _Sequence] = defaultdict(_Sequence)
    tracks: dict[int, dict] = {}
    open_: dict[int, list[dict]] = defaultdict(list)
    done: list[dict] = []
    cleared = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    for packet in trace.packet:
        seq = sequences[packet.trusted_packet_sequence_id]
        if (packet.sequence_flags & cleared) or packet.incremental_state_cleared:
            seq.clear()
        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.default_clock = d.timestamp_clock_id
            if d.HasField("track_event_defaults") and d.track_event_defaults.HasField("track_uuid"):
                seq.default_track = d.track_event_defaults.track_uuid
        if packet.HasField("clock_snapshot"):
            _snapshot(packet.clock_snapshot, seq)
        if packet.HasField("interned_data"):
            i = packet.interned_data
            seq.names.update((e.iid, e.name) for e in i.event_names)
            seq.categories.update((e.iid, e.name) for e in i.event_categories)
            seq.annotations.update((e.iid, e.name) for e in i.debug_annotation_names)
        if packet.HasField("track_descriptor"):
            t = packet.track_descriptor
            tracks[t.uuid] = {"name": t.name or t.static_name or t.thread.thread_name or t.process.process_name,
                              "pid": t.thread.pid or t.process.pid or None, "tid": t.thread.tid or None,
                              "parent": t.parent_uuid or None}
        ts = _timestamp(packet, seq)
        if not packet.HasField("track_event") or ts is None:
            continue
        ev = packet.track_event
        track = ev.track_uuid if ev.HasField("track_uuid") else (seq.default_track or 0)
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            cats = [seq.categories.get(c, "") for c in ev.category_iids] + list(ev.categories)
            name = seq.names.get(ev.name_iid, "") if ev.HasField("name_iid") else ev.name
            args = {(seq.annotations.get(a.name_iid, "") if a.HasField("name_iid") else a.name): _annotation_value(a)
                    for a in ev.debug_annotations}
            open_[track].append({"name": name, "category": cats[0] if cats else "", "start_ns": ts,
                                 "track": track, "args": args})
        elif ev.type == pb.TrackEvent.TYPE_SLICE_END and open_[track]:
            s = open_[track].pop()
            s["end_ns"] = ts
            done.append(s)
    return done, tracks


def _text(value: str | bytes) -> str:
    """A name as text: protobuf hands back bytes where a damaged file holds invalid UTF-8."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def _kind(category: str, track_name: str) -> str:
    if category in CATEGORY_KIND:
        return CATEGORY_KIND[category]
    if track_name.startswith(("COMPUTE", "STREAM")):
        return "kernel"
    if track_name.startswith("COPY"):
        return "copy"
    return "api"


def _pid(tracks: dict[int, dict], uuid: int, fallback: int | None) -> int | None:
    seen = set()
    while uuid and uuid not in seen:
        seen.add(uuid)
        t = tracks.get(uuid, {})
        if t.get("pid"):
            return t["pid"]
        uuid = t.get("parent") or 0
    return fallback


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """The protobuf varint at ``pos`` and the position after it, or None when the data ends inside it."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


def _complete_packets(data: bytes) -> int:
    """How many leading bytes of a ``Trace`` hold complete top-level fields (its packets): a file cut short keeps
    what it wrote before the cut. Stops at the first field that is not length-delimited (no trace: the protobuf
    decoder then says what is wrong) or that runs past the end."""
    pos = 0
    while pos < len(data):
        tag = _varint(data, pos)
        if tag is None or tag[0] & 7 != 2:
            return pos if tag is None else len(data)
        size = _varint(data, tag[1])
        if size is None or size[1] + size[0] > len(data):
            return pos
        pos = size[1] + size[0]
    return pos


def _read_one(path: Path, pb: Any) -> dict[str, pd.DataFrame]:
    data = read_bytes(path, "a rocprofv3 .pftrace or a run folder")
    if not data.strip(b"\0"):
        raise ParseError(f"empty ({len(data):,} bytes{', all zero' if data else ''}): rocprofv3 wrote nothing into "
                         "this trace (the program was stopped, or crashed, before the profiler finished); re-run, or "
                         "use --output-format csv", source=str(path))
    complete = _complete_packets(data)
    try:
        trace = pb.Trace.FromString(data[:complete])
    except Exception as exc:  # protobuf raises its own DecodeError, not importable without the package
        raise ParseError(f"not a Perfetto trace, or one damaged inside ({type(exc).__name__}: {exc}); re-run, or "
                         "use --output-format csv", source=str(path)) from None
    if complete < len(data):
        if not trace.packet:
            raise ParseError(f"not a Perfetto trace, or one cut short before its first complete packet "
                             f"({len(data):,} bytes); re-run, or use --output-format csv", source=str(path))
        warnings.warn(f"{path}: cut short (the job stopped while writing it?): kept its {len(trace.packet):,} "
                      f"complete packets, the last {len(data) - complete:,} bytes are an incomplete one", stacklevel=3)
    slices, tracks = _slices(trace, pb)
    m = re.match(r"^(\d+)_", path.name)
    file_pid = int(m.group(1)) if m else next((t["pid"] for t in tracks.values() if t.get("pid")), None)
    host = path.parent.name if m else None
    rows: dict[str, list[dict]] = {"kernel": [], "copy": [], "api": []}
    for s in slices:
        track = tracks.get(s["track"], {})
        tname = _text(track.get("name") or "")
        kind = _kind(_text(s["category"]), tname)
        args = s["args"]
        row = {"name": _text(s["name"]), "start_ns": s["start_ns"], "end_ns": s["end_ns"],
               "pid": _pid(tracks, s["track"], file_pid), "hostname": host, "correlation_id": args.get("corr_id"),
               "track": tname}
        if kind == "kernel":
            q = _QUEUE_TRACK.match(tname)
            row.update(gpu_index=int(q.group(1)) if q else None,
                       queue_id=args.get("queue", int(q.group(2)) if q else None),
                       stream_id=args.get("stream_ID"), agent=args.get("agent"))
        elif kind == "copy":
            c = _COPY_TRACK.match(tname)
            row.update(size_bytes=args.get("copy_bytes"), src_agent=args.get("src_agent"),
                       dst_agent=args.get("dst_agent"), dst_index=int(c.group(1)) if c else None)
        else:
            row.update(category=s["category"] or None, tid=track.get("tid"))
        rows[kind].append(row)
    processes = pd.DataFrame([{"hostname": host, "pid": file_pid, "command": None}]) if file_pid else None
    return {k: pd.DataFrame(v) for k, v in rows.items()} | {"processes": processes}


def read_pftrace(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Activities:
    """Read one rocprofv3 ``.pftrace`` or several (one per process) into one :class:`Activities`.

    Kernels carry ``gpu_index`` and ``queue_id`` from their track, copies ``size_bytes`` from the slice's
    ``copy_bytes``; ``pid`` and ``hostname`` come from the ``<host>/<pid>_results.pftrace`` layout where the
    name follows it. Without the ``perfetto`` package this raises a :class:`LumikitError` that says how to
    install it, or to re-run with ``--output-format csv``.
    """
    pb = _protos()
    files = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not files:
        raise LumikitError("no .pftrace files given")
    parts = [_read_one(f, pb) for f in files]

    def cat(key: str) -> pd.DataFrame | None:
        tables = [p[key] for p in parts if p[key] is not None and len(p[key])]
        return pd.concat(tables, ignore_index=True) if tables else None

    return Activities.build(cat("kernel"), cat("copy"), cat("api"), source=", ".join(str(f) for f in files),
                            processes=cat("processes"), generation="v3 pftrace")
