"""A generated rocprofv3 database of HIP calls with their arguments, whose idle causes and critical path are known by
construction: for the tests of ``lumikit trace idle|critical-path`` on rocpd databases, and their benchmark.

The tables are those of :mod:`lumikit.testing.rocprof_outputs` (rocpd schema 3) plus ``rocpd_arg``, filled as
rocprofiler-sdk's writer fills them: a GPU activity shares ``rocpd_event.stack_id`` with the HIP call that enqueued
it (the external correlation id, 0 here, goes in ``correlation_id``), and each call has one ``rocpd_arg`` row per
argument (``position``, ``type``, ``name``, ``value``). The handle texts below are made up: the readers match them
as opaque text, so their spelling does not matter.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import NamedTuple

from .rocprof_outputs import _Db, _create

PID, MAIN, HELPER = 40000, 40000, 40001
#: Stream handles (compute, communication, a side stream) and event handles.
STREAM_A, STREAM_B, STREAM_C = "0x7f00a0", "0x7f00b0", "0x7f00c0"
EVENT_1, EVENT_2 = "0x5500e1", "0x5500e2"
COMM = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"
SUFFIX = "_00000000_0000_0000_0000_000000000001"


class Call(NamedTuple):
    """One HIP call (times in µs) with its handle arguments and the GPU work it enqueued (kernel, stream handle,
    start µs, end µs), if any: a memory copy when the name is rocprofv3's (``MEMORY_COPY_DEVICE_TO_HOST`` ...)."""

    tid: int
    name: str
    start: float
    end: float
    args: dict
    work: tuple[str, str, float, float] | None = None


#: One step. Known answers (µs), by construction: the critical path is the launch delay 20 + gemm_first 500 +
#: gemm_second 300, the event wait to the collective (80), the stream sync back to the host, launch 15 + gemm_third
#: 100, the device sync, hipLaunchKernel's own 4, hipMalloc 195, launch 10 + loss_kernel 85: 1309 in all. The idle
#: gaps: 5 queued (the collective was launched long before), 25 while the host waits in hipStreamSynchronize, 15 in
#: hipDeviceSynchronize, 215 while it is in hipMalloc: 260. hipHostMalloc on the helper thread is off the path.
STEP = (
    Call(MAIN, "hipLaunchKernel", 0, 10, {"stream": STREAM_A}, ("gemm_first", STREAM_A, 20, 520)),
    Call(MAIN, "hipLaunchKernel", 12, 22, {"stream": STREAM_A}, ("gemm_second", STREAM_A, 520, 820)),
    Call(MAIN, "hipEventRecord", 24, 26, {"event": EVENT_1, "stream": STREAM_A}),
    Call(MAIN, "hipLaunchKernel", 27, 29, {"stream": STREAM_C}, ("side_kernel", STREAM_C, 35, 60)),
    Call(MAIN, "hipEventRecord", 30, 32, {"event": EVENT_2, "stream": STREAM_C}),  # later, of another event
    Call(MAIN, "hipStreamWaitEvent", 33, 35, {"stream": STREAM_B, "event": EVENT_1}),
    Call(MAIN, "hipLaunchKernel", 36, 40, {"stream": STREAM_B}, (COMM, STREAM_B, 825, 905)),
    Call(MAIN, "hipStreamSynchronize", 42, 910, {"stream": STREAM_B}),
    Call(MAIN, "hipLaunchKernel", 915, 920, {"stream": STREAM_A}, ("gemm_third", STREAM_A, 930, 1030)),
    Call(MAIN, "hipDeviceSynchronize", 921, 1035, {}),
    Call(MAIN, "hipLaunchKernel", 1036, 1040, {"stream": STREAM_A}, ("norm_kernel", STREAM_A, 1045, 1100)),
    Call(MAIN, "hipMalloc", 1105, 1300, {}),
    Call(MAIN, "hipLaunchKernel", 1305, 1310, {"stream": STREAM_A}, ("loss_kernel", STREAM_A, 1315, 1400)),
    Call(HELPER, "hipHostMalloc", 100, 700, {}),
)
STEP_PATH_US, STEP_IDLE_US, STEP_US = 1309.0, 260.0, 1500.0


def start_calls_db(con: sqlite3.Connection) -> tuple[_Db, int]:
    """A schema-3 database's tables (with ``rocpd_arg`` for call arguments), its version and one node: the start
    that every generated call database shares. Returns the writer and the node's id."""
    _create(con, SUFFIX, views=True)
    con.execute(f'CREATE TABLE "rocpd_arg{SUFFIX}" (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, '
                'event_id INTEGER NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL, name TEXT NOT NULL, '
                "value TEXT, extdata JSONB DEFAULT '{}' NOT NULL)")
    db = _Db(con, SUFFIX, "guid-1")
    db.insert("rocpd_metadata", tag="schema_version", value="3")
    return db, db.insert("rocpd_info_node", hash=1, machine_id="m", system_name="Linux", hostname="nid005001")


def write_calls_db(path: str | os.PathLike[str], steps: int = 1, arguments: bool = True, events: bool = True,
                   calls: tuple[Call, ...] = STEP, step_us: float = STEP_US) -> Path:
    """``calls`` (:data:`STEP`) ``steps`` times (every ``step_us`` µs) as one process's rocpd database;
    ``rocpd_arg`` rows for the handles (and a function address) when ``arguments``, without the event handles when
    not ``events``."""
    con = sqlite3.connect(path)
    try:
        db, nid = start_calls_db(con)
        proc = db.insert("rocpd_info_process", nid=nid, ppid=1, pid=PID, start=0, end=_ns(steps * step_us),
                         command="python train.py")
        threads = {t: db.insert("rocpd_info_thread", nid=nid, ppid=1, pid=proc, tid=t) for t in (MAIN, HELPER)}
        cpu = db.insert("rocpd_info_agent", nid=nid, pid=proc, type="CPU", absolute_index=0, logical_index=0,
                        type_index=0)
        gpu = db.insert("rocpd_info_agent", nid=nid, pid=proc, type="GPU", absolute_index=1, logical_index=1,
                        type_index=0, name="gfx90a")
        code = db.insert("rocpd_info_code_object", nid=nid, pid=proc, agent_id=gpu)
        queue = db.insert("rocpd_info_queue", nid=nid, pid=proc, name="queue 0")
        streams = {h: db.insert("rocpd_info_stream", nid=nid, pid=proc, name=f"stream {h}")
                   for h in (STREAM_A, STREAM_B, STREAM_C)}
        symbols: dict[str, int] = {}
        api, dispatch, copy = (db.string(c) for c in ("HIP_RUNTIME_API_EXT", "KERNEL_DISPATCH", "MEMORY_COPY"))
        corr = 0
        for step in range(steps):
            t0 = step * step_us
            for call in calls:
                corr += 1
                ev = db.insert("rocpd_event", category_id=api, stack_id=corr, parent_stack_id=0, correlation_id=0)
                db.insert("rocpd_region", nid=nid, pid=proc, tid=threads[call.tid], start=_ns(t0 + call.start),
                          end=_ns(t0 + call.end), name_id=db.string(call.name), event_id=ev)
                if arguments:
                    db.insert("rocpd_arg", event_id=ev, position=0, type="const void*", name="function_address",
                              value="0x1234")
                    for pos, (name, value) in enumerate(call.args.items(), start=1):
                        if events or name != "event":
                            db.insert("rocpd_arg", event_id=ev, position=pos, type=f"hip{name.title()}_t",
                                      name=name, value=value)
                if call.work and call.work[0].startswith("MEMORY_COPY"):
                    name, handle, k0, k1 = call.work
                    to_host = name.endswith("TO_HOST")
                    cev = db.insert("rocpd_event", category_id=copy, stack_id=corr, parent_stack_id=corr,
                                    correlation_id=0)
                    db.insert("rocpd_memory_copy", nid=nid, pid=proc, tid=threads[call.tid], start=_ns(t0 + k0),
                              end=_ns(t0 + k1), name_id=db.string(name), src_agent_id=gpu if to_host else cpu,
                              dst_agent_id=cpu if to_host else gpu, size=4 << 20, queue_id=queue,
                              stream_id=streams[handle], event_id=cev)
                elif call.work:
                    kernel, handle, k0, k1 = call.work
                    if kernel not in symbols:
                        symbols[kernel] = db.insert("rocpd_info_kernel_symbol", nid=nid, pid=proc,
                                                    code_object_id=code, kernel_name=kernel, display_name=kernel)
                    kev = db.insert("rocpd_event", category_id=dispatch, stack_id=corr, parent_stack_id=corr,
                                    correlation_id=0)
                    db.insert("rocpd_kernel_dispatch", nid=nid, pid=proc, tid=threads[call.tid], agent_id=gpu,
                              kernel_id=symbols[kernel], dispatch_id=corr, queue_id=queue,
                              stream_id=streams[handle], start=_ns(t0 + k0), end=_ns(t0 + k1),
                              workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=1024,
                              grid_size_y=1, grid_size_z=1, event_id=kev)
        con.commit()
    finally:
        con.close()
    return Path(path)


def _ns(us: float) -> int:
    return int(round(us * 1000))
