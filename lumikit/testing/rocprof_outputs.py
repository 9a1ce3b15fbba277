"""Generated rocprofv3 outputs with known contents: the same activities as a rocpd database, a Perfetto trace and
the CSV files, so tests (and a notebook that says "generated") can check that every reader ranks them the same.

The rocpd writer follows ROCprofiler-SDK's documented schema (version 3: uuid-suffixed ``rocpd_*`` tables, rows
tagged with the process ``guid``, unsuffixed views); the Perfetto writer follows rocprofv3's track layout (one
thread track per host thread for API calls, ``COMPUTE AGENT [n] QUEUE [q] (GPU)`` tracks for kernels, ``COPY to
AGENT [n] THREAD [t] (GPU)`` tracks for copies, slices in the categories ``hip_api``, ``kernel_dispatch``,
``memory_copy``), with interned names and an incremental clock as the Perfetto SDK writes them.
"""
from __future__ import annotations

import csv
import io
import os
import sqlite3
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..files import write_new


@dataclass(frozen=True)
class Dispatch:
    """One kernel dispatch of one process."""

    host: str
    pid: int
    gpu: int
    name: str
    start: int
    end: int
    queue: int = 1
    stream: int = 0
    tid: int = 0  # 0: the process's main thread (tid = pid)


@dataclass(frozen=True)
class Copy:
    """One asynchronous memory copy (``MEMORY_COPY_HOST_TO_DEVICE`` ...) to or from a GPU."""

    host: str
    pid: int
    name: str
    start: int
    end: int
    size: int
    src_gpu: int | None  # None: the CPU
    dst_gpu: int | None


@dataclass(frozen=True)
class ApiCall:
    """One host API call (a region on a CPU thread)."""

    host: str
    pid: int
    name: str
    start: int
    end: int
    category: str = "HIP_RUNTIME_API_EXT"
    tid: int = 0


@dataclass(frozen=True)
class Run:
    """Everything a profiled job recorded, over any number of processes and nodes."""

    dispatches: tuple[Dispatch, ...]
    copies: tuple[Copy, ...] = ()
    api: tuple[ApiCall, ...] = ()

    def processes(self) -> list[tuple[str, int]]:
        """(host, pid) of every process, in order of first appearance."""
        seen: dict[tuple[str, int], None] = {}
        for rec in (*self.dispatches, *self.copies, *self.api):
            seen.setdefault((rec.host, rec.pid), None)
        return list(seen)

    def of(self, host: str, pid: int) -> "Run":
        """The part of the run that one process recorded."""
        def mine(recs: Iterable) -> tuple:
            return tuple(r for r in recs if (r.host, r.pid) == (host, pid))
        return Run(mine(self.dispatches), mine(self.copies), mine(self.api))


KERNELS = (
    "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_APM1_ABV0",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "ncclDevKernel_Generic(ncclDevComm*, channelMasks, ncclWork*)",
    "void at::native::(anonymous namespace)::batch_norm_collect_statistics_kernel<float, float, float, 512>"
    "(at::PackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
    "(at::native::ReduceOp<float, at::native::MeanOps<float, float> >)",
)


def generated_run(nodes: int = 2, processes_per_node: int = 2, steps: int = 4) -> Run:
    """A small data-parallel job: per process and step a GEMM, an add, an all-reduce, a norm and a mean (each
    kernel a different length per process), one host-to-device copy and the HIP calls that launched them."""
    dispatches, copies, api = [], [], []
    for n in range(nodes):
        host = f"nid{5001 + n:06d}"
        for p in range(processes_per_node):
            pid, gpu = 40000 + 100 * n + p, p
            t = 1_000_000 * (1 + p + 10 * n)
            for step in range(steps):
                copies.append(Copy(host, pid, "MEMORY_COPY_HOST_TO_DEVICE", t, t + 20_000 + 1000 * p, 4 << 20,
                                   None, gpu))
                api.append(ApiCall(host, pid, "hipMemcpyAsync", t - 3_000, t + 1_000))
                t += 25_000
                for k, name in enumerate(KERNELS):
                    length = (5 - k) * 7_000 + 300 * p + 50 * step + 1_000 * n
                    api.append(ApiCall(host, pid, "hipLaunchKernel", t - 2_000, t - 500))
                    dispatches.append(Dispatch(host, pid, gpu, name, t, t + length))
                    t += length + 1_500
    return Run(tuple(dispatches), tuple(copies), tuple(api))


# --- rocpd (SQLite) -------------------------------------------------------------------------------------------

_SCHEMA = {
    "rocpd_metadata": "id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, value TEXT NOT NULL",
    "rocpd_string": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, string TEXT NOT NULL UNIQUE",
    "rocpd_info_node": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, hash BIGINT NOT NULL UNIQUE, "
                       "machine_id TEXT NOT NULL UNIQUE, system_name TEXT, hostname TEXT, release TEXT, "
                       "version TEXT, hardware_name TEXT, domain_name TEXT",
    "rocpd_info_process": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                          "ppid INTEGER, pid INTEGER NOT NULL, init BIGINT, fini BIGINT, start BIGINT, "
                          "\"end\" BIGINT, command TEXT, environment JSONB DEFAULT '{}' NOT NULL, "
                          "extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_thread": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                         "ppid INTEGER, pid INTEGER NOT NULL, tid INTEGER NOT NULL, name TEXT, start BIGINT, "
                         "\"end\" BIGINT, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_agent": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                        "pid INTEGER NOT NULL, type TEXT CHECK (type IN ('CPU', 'GPU', 'NIC')), "
                        "absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, "
                        "name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, user_name TEXT, "
                        "extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_queue": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                        "pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_stream": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                         "pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_code_object": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                              "pid INTEGER NOT NULL, agent_id INTEGER, uri TEXT, load_base BIGINT, "
                              "load_size BIGINT, load_delta BIGINT, storage_type TEXT, "
                              "extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                                "pid INTEGER NOT NULL, code_object_id INTEGER NOT NULL, kernel_name TEXT, "
                                "display_name TEXT, kernel_object INTEGER, kernarg_segment_size INTEGER, "
                                "kernarg_segment_alignment INTEGER, group_segment_size INTEGER, "
                                "private_segment_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER, "
                                "accum_vgpr_count INTEGER, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_event": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, category_id INTEGER, "
                   "stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, "
                   "call_stack JSONB DEFAULT '{}' NOT NULL, line_info JSONB DEFAULT '{}' NOT NULL, "
                   "extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_region": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                    "pid INTEGER NOT NULL, tid INTEGER NOT NULL, start BIGINT NOT NULL, \"end\" BIGINT NOT NULL, "
                    "name_id INTEGER NOT NULL, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                             "pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER NOT NULL, "
                             "kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, "
                             "queue_id INTEGER NOT NULL, stream_id INTEGER NOT NULL, start BIGINT NOT NULL, "
                             "\"end\" BIGINT NOT NULL, private_segment_size INTEGER, group_segment_size INTEGER, "
                             "workgroup_size_x INTEGER NOT NULL, workgroup_size_y INTEGER NOT NULL, "
                             "workgroup_size_z INTEGER NOT NULL, grid_size_x INTEGER NOT NULL, "
                             "grid_size_y INTEGER NOT NULL, grid_size_z INTEGER NOT NULL, "
                             "region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL",
    "rocpd_memory_copy": "id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL, "
                         "pid INTEGER NOT NULL, tid INTEGER, start BIGINT NOT NULL, \"end\" BIGINT NOT NULL, "
                         "name_id INTEGER NOT NULL, dst_agent_id INTEGER, dst_address INTEGER, "
                         "src_agent_id INTEGER, src_address INTEGER, size INTEGER NOT NULL, queue_id INTEGER, "
                         "stream_id INTEGER, region_name_id INTEGER, event_id INTEGER, "
                         "extdata JSONB DEFAULT '{}' NOT NULL",
}


class _Db:
    """Inserts into the tables of one suffix, for one process (one guid)."""

    def __init__(self, con: sqlite3.Connection, suffix: str, guid: str) -> None:
        self.con, self.sfx, self.guid = con, suffix, guid
        self.strings: dict[str, int] = {}

    def insert(self, table: str, **values: object) -> int:
        values = {"guid": self.guid, **values} if table != "rocpd_metadata" else values
        cols = ", ".join(f'"{c}"' for c in values)
        marks = ", ".join("?" for _ in values)
        cur = self.con.execute(f'INSERT INTO "{table}{self.sfx}" ({cols}) VALUES ({marks})', tuple(values.values()))
        return int(cur.lastrowid)

    def string(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = self.insert("rocpd_string", string=text)
        return self.strings[text]


def _create(con: sqlite3.Connection, suffix: str, views: bool) -> None:
    for table, columns in _SCHEMA.items():
        con.execute(f'CREATE TABLE "{table}{suffix}" ({columns})')
        if views:
            con.execute(f'CREATE VIEW "{table}" AS SELECT * FROM "{table}{suffix}"')


def _fill(db: _Db, run: Run, host: str, pid: int, proc_index: int) -> None:
    """One process's rows: node, process, threads, agents (a CPU and 8 GCDs), symbols, events and activities."""
    db.insert("rocpd_metadata", tag="schema_version", value="3")
    nid = db.insert("rocpd_info_node", hash=hash(host) & 0x7FFFFFFF, machine_id=f"{host}-{proc_index}",
                    system_name="Linux", hostname=host)
    times = [r.start for r in (*run.dispatches, *run.copies, *run.api)] + \
            [r.end for r in (*run.dispatches, *run.copies, *run.api)]
    ppid = db.insert("rocpd_info_process", nid=nid, ppid=1, pid=pid, start=min(times), end=max(times),
                     command="python train.py")
    threads: dict[int, int] = {}

    def thread(tid: int) -> int:
        real = tid or pid
        if real not in threads:
            threads[real] = db.insert("rocpd_info_thread", nid=nid, ppid=1, pid=ppid, tid=real)
        return threads[real]

    agents = {None: db.insert("rocpd_info_agent", nid=nid, pid=ppid, type="CPU", absolute_index=0,
                              logical_index=0, type_index=0, name="AMD EPYC 7A53 64-Core Processor")}
    for g in range(8):
        agents[g] = db.insert("rocpd_info_agent", nid=nid, pid=ppid, type="GPU", absolute_index=1 + g,
                              logical_index=1 + g, type_index=g, name="gfx90a", product_name="AMD Instinct MI250X")
    code = db.insert("rocpd_info_code_object", nid=nid, pid=ppid, agent_id=agents[0], uri="memory://")
    symbols: dict[str, int] = {}
    queues: dict[int, int] = {}
    streams: dict[int, int] = {}
    for i, d in enumerate(run.dispatches, start=1):
        if d.name not in symbols:
            symbols[d.name] = db.insert("rocpd_info_kernel_symbol", nid=nid, pid=ppid, code_object_id=code,
                                        kernel_name=f"_Z{len(d.name)}{d.name.split('(')[0].replace(' ', '_')}",
                                        display_name=d.name, sgpr_count=32, arch_vgpr_count=64)
        if d.queue not in queues:
            queues[d.queue] = db.insert("rocpd_info_queue", nid=nid, pid=ppid, name=f"queue {d.queue}")
        if d.stream not in streams:
            streams[d.stream] = db.insert("rocpd_info_stream", nid=nid, pid=ppid, name=f"stream {d.stream}")
        ev = db.insert("rocpd_event", category_id=db.string("KERNEL_DISPATCH"), correlation_id=i)
        db.insert("rocpd_kernel_dispatch", nid=nid, pid=ppid, tid=thread(d.tid), agent_id=agents[d.gpu],
                  kernel_id=symbols[d.name], dispatch_id=i, queue_id=queues[d.queue], stream_id=streams[d.stream],
                  start=d.start, end=d.end, workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1,
                  grid_size_x=65536, grid_size_y=1, grid_size_z=1, event_id=ev)
    for c in run.copies:
        ev = db.insert("rocpd_event", category_id=db.string("MEMORY_COPY"))
        db.insert("rocpd_memory_copy", nid=nid, pid=ppid, tid=thread(0), start=c.start, end=c.end,
                  name_id=db.string(c.name), src_agent_id=agents[c.src_gpu], dst_agent_id=agents[c.dst_gpu],
                  size=c.size, event_id=ev)
    for a in run.api:
        ev = db.insert("rocpd_event", category_id=db.string(a.category))
        db.insert("rocpd_region", nid=nid, pid=ppid, tid=thread(a.tid), start=a.start, end=a.end,
                  name_id=db.string(a.name), event_id=ev)


def write_rocpd(path: str | os.PathLike[str], run: Run, *, merged: bool = False) -> Path:
    """Write a run as rocprofv3 would: ``merged=False`` needs a run of one process (one ``.db`` per process, with
    unsuffixed views); ``merged=True`` puts every process in one file under its own suffix, without views."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(path)
    procs = run.processes()
    if not merged and len(procs) != 1:
        raise ValueError(f"one database per process: this run has {len(procs)} (write each .of(host, pid))")
    con = sqlite3.connect(path)
    try:
        for i, (host, pid) in enumerate(procs):
            suffix = "_" + str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{host}/{pid}")).replace("-", "_")
            _create(con, suffix, views=not merged)
            _fill(_Db(con, suffix, guid=suffix[1:]), run.of(host, pid), host, pid, i)
        con.commit()
    finally:
        con.close()
    return path


def write_rocpd_per_process(folder: str | os.PathLike[str], run: Run) -> list[Path]:
    """One database per process at ``<host>/<pid>/<pid>_results.db``, rocprofv3's layout."""
    out = []
    for host, pid in run.processes():
        d = Path(folder) / host / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        out.append(write_rocpd(d / f"{pid}_results.db", run.of(host, pid)))
    return out


# --- CSV ------------------------------------------------------------------------------------------------------

TRACE_HEADER = ("Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
                "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size",
                "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y",
                "Grid_Size_Z")


def write_kernel_traces(folder: str | os.PathLike[str], run: Run) -> list[Path]:
    """The same dispatches as rocprofv3's CSV twin: ``<host>/<pid>/<pid>_kernel_trace.csv`` per process."""
    out = []
    for host, pid in run.processes():
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(TRACE_HEADER)
        names: dict[str, int] = {}
        for i, d in enumerate(run.of(host, pid).dispatches, start=1):
            kid = names.setdefault(d.name, len(names) + 1)
            w.writerow(["KERNEL_DISPATCH", f"Agent {1 + d.gpu}", d.queue, d.stream, d.tid or pid, i, kid, d.name, i,
                        d.start, d.end, 0, 0, 256, 1, 1, 65536, 1, 1])
        target = Path(folder) / host / str(pid)
        target.mkdir(parents=True, exist_ok=True)
        out.append(write_new(target / f"{pid}_kernel_trace.csv", buf.getvalue()))
    return out


# --- Perfetto -------------------------------------------------------------------------------------------------

def write_pftrace(path: str | os.PathLike[str], run: Run, *, incremental_clock: bool = True) -> Path:
    """One process's activities as rocprofv3's ``<pid>_results.pftrace`` (needs the ``perfetto`` package)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    procs = run.processes()
    if len(procs) != 1:
        raise ValueError(f"one trace per process: this run has {len(procs)}")
    host, pid = procs[0]
    trace = pb.Trace()
    seq = 7
    clock = 64  # a sequence-scoped incremental clock, as the Perfetto SDK uses
    interned: dict[str, dict[str, int]] = {"cat": {}, "name": {}, "ann": {}}
    last = [0]

    def packet(first: bool = False) -> pb.TracePacket:
        p = trace.packet.add()
        p.trusted_packet_sequence_id = seq
        if first:
            p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        else:
            p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        return p

    start = min(r.start for r in (*run.dispatches, *run.copies, *run.api)) - 1000
    head = packet(first=True)
    if incremental_clock:
        head.trace_packet_defaults.timestamp_clock_id = clock
        snap = head.clock_snapshot
        snap.clocks.add(clock_id=6, timestamp=start)  # BOOTTIME
        snap.clocks.add(clock_id=clock, timestamp=start, is_incremental=True)
        last[0] = start
    # Track descriptors: the process, its main thread, then one track per queue and per copy destination.
    desc = packet().track_descriptor
    desc.uuid, desc.process.pid, desc.process.process_name = 1, pid, "python"
    desc = packet().track_descriptor
    desc.uuid, desc.parent_uuid, desc.thread.pid, desc.thread.tid = 2, 1, pid, pid
    tracks: dict[tuple, int] = {}

    def track(key: tuple, name: str) -> int:
        if key not in tracks:
            tracks[key] = 100 + len(tracks)
            d = packet().track_descriptor
            d.uuid, d.name = tracks[key], name
        return tracks[key]

    def iid(kind: str, text: str, p: pb.TracePacket) -> int:
        table = interned[kind]
        if text not in table:
            table[text] = len(table) + 1
            entry = {"cat": p.interned_data.event_categories, "name": p.interned_data.event_names,
                     "ann": p.interned_data.debug_annotation_names}[kind].add()
            entry.iid, entry.name = table[text], text
        return table[text]

    events = []  # (ts, order, kind, track, category, name, annotations)
    for a in run.api:
        tr = 2 if a.tid in (0, pid) else track(("thread", a.tid), f"THREAD {a.tid} ({a.tid})")
        cat = "hip_api" if a.category.startswith("HIP") else "hsa_api" if a.category.startswith("HSA") else "marker_api"
        events.append((a.start, 1, a.end, tr, cat, a.name, {"begin_ns": a.start, "end_ns": a.end}))
    for d in run.dispatches:
        tr = track(("queue", d.gpu, d.queue), f"COMPUTE AGENT [{d.gpu}] QUEUE [{d.queue - 1}] (GPU)")
        events.append((d.start, 1, d.end, tr, "kernel_dispatch", d.name,
                       {"begin_ns": d.start, "end_ns": d.end, "agent": f"GPU-{d.gpu}", "queue": d.queue - 1}))
    for c in run.copies:
        dst = "CPU" if c.dst_gpu is None else "GPU"
        tr = track(("copy", c.dst_gpu), f"COPY to AGENT [{0 if c.dst_gpu is None else c.dst_gpu}] THREAD [0] ({dst})")
        events.append((c.start, 1, c.end, tr, "memory_copy", c.name,
                       {"begin_ns": c.start, "end_ns": c.end, "copy_bytes": c.size}))
    slices = []
    for ts, _, end, tr, cat, name, ann in events:
        slices.append((ts, 1, tr, cat, name, ann))
        slices.append((end, 0, tr, cat, None, None))
    slices.sort(key=lambda s: (s[0], s[1]))  # an end before a begin at the same time
    for ts, begin, tr, cat, name, ann in slices:
        p = packet()
        if incremental_clock:
            p.timestamp, last[0] = ts - last[0], ts
        else:
            p.timestamp = ts
        ev = p.track_event
        ev.track_uuid = tr
        if begin:
            ev.type = pb.TrackEvent.TYPE_SLICE_BEGIN
            ev.category_iids.append(iid("cat", cat, p))
            ev.name_iid = iid("name", name, p)
            for key, value in ann.items():
                a = ev.debug_annotations.add()
                a.name_iid = iid("ann", key, p)
                if isinstance(value, int):
                    a.uint_value = value
                else:
                    a.string_value = str(value)
        else:
            ev.type = pb.TrackEvent.TYPE_SLICE_END
    return write_new(path, trace.SerializeToString())


def write_pftrace_per_process(folder: str | os.PathLike[str], run: Run) -> list[Path]:
    """One Perfetto trace per process at ``<host>/<pid>_results.pftrace``, the 2026 workshop's layout."""
    out = []
    for host, pid in run.processes():
        d = Path(folder) / host
        d.mkdir(parents=True, exist_ok=True)
        out.append(write_pftrace(d / f"{pid}_results.pftrace", run.of(host, pid)))
    return out

