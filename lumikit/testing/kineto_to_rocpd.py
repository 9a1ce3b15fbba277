"""A Kineto trace written as the rocpd database rocprofv3 would have recorded for the same run: its HIP calls
(``cuda_runtime`` events) become ``rocpd_region`` rows with their ``stream`` and ``event`` arguments in ``rocpd_arg``,
its kernels and memsets ``rocpd_kernel_dispatch`` rows (HIP fills a buffer with a kernel), its copies
``rocpd_memory_copy`` rows, linked to their call by ``rocpd_event.stack_id`` = the Kineto correlation id. What Kineto
records and rocprofv3 does not (CPU ops, Python functions, annotations) is left out, as it is from a real database.

So a test can compare what the analyses say of one generated step read both ways (the issue-38 acceptance line "a
rocpd database of the known-answer step gives the same path as its Kineto trace"). Generated data.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import orjson

from .rocpd_calls import start_calls_db

HOST_CATS = ("cuda_runtime",)
KERNEL_CATS = ("kernel", "gpu_memset")
COPY_CATS = ("gpu_memcpy",)


def _copy_name(name: str) -> str:
    n = name.lower()
    return ("MEMORY_COPY_HOST_TO_DEVICE" if "htod" in n else "MEMORY_COPY_DEVICE_TO_HOST" if "dtoh" in n
            else "MEMORY_COPY_DEVICE_TO_DEVICE")


def kineto_to_rocpd(trace: str | os.PathLike[str], out: str | os.PathLike[str], *, pid: int = 40000,
                    window_us: tuple[float, float] | None = None) -> Path:
    """Write the HIP calls and GPU work of a (generated) Kineto trace file as one process's rocpd database; with
    ``window_us`` only the calls that start inside it and the work they launched."""
    events = orjson.loads(Path(trace).read_bytes())["traceEvents"]
    events = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    host = [e for e in events if e.get("cat") in HOST_CATS]
    if window_us is not None:
        host = [e for e in host if window_us[0] <= float(e["ts"]) < window_us[1]]
    launched = {(e.get("args") or {}).get("correlation") for e in host}
    gpu = [e for e in events if e.get("cat") in KERNEL_CATS + COPY_CATS
           and (window_us is None or (e.get("args") or {}).get("correlation") in launched)]
    base = min(float(e["ts"]) for e in host + gpu)

    def ns(us: float) -> int:
        return int(round((float(us) - base) * 1000))

    con = sqlite3.connect(out)
    try:
        db, nid = start_calls_db(con)
        end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in host + gpu)
        proc = db.insert("rocpd_info_process", nid=nid, ppid=1, pid=pid, start=0, end=ns(end), command="python")
        threads: dict[object, int] = {}
        agents: dict[object, int] = {}
        streams: dict[object, int] = {}
        symbols: dict[str, int] = {}
        cpu = db.insert("rocpd_info_agent", nid=nid, pid=proc, type="CPU", absolute_index=0, logical_index=0,
                        type_index=0)
        code = db.insert("rocpd_info_code_object", nid=nid, pid=proc, agent_id=cpu)
        queue = db.insert("rocpd_info_queue", nid=nid, pid=proc, name="queue 0")
        api, dispatch, copy = (db.string(c) for c in ("HIP_RUNTIME_API_EXT", "KERNEL_DISPATCH", "MEMORY_COPY"))
        for e in host:
            args = e.get("args") or {}
            tid = threads.setdefault(e.get("tid"), db.insert("rocpd_info_thread", nid=nid, ppid=1, pid=proc,
                                                             tid=int(e.get("tid") or pid)))
            ev = db.insert("rocpd_event", category_id=api, stack_id=args.get("correlation"), parent_stack_id=0,
                           correlation_id=0)
            db.insert("rocpd_region", nid=nid, pid=proc, tid=tid, start=ns(e["ts"]), end=ns(e["ts"] + e["dur"]),
                      name_id=db.string(str(e["name"])), event_id=ev)
            for pos, name in enumerate(("stream", "event"), start=1):
                if name in args:
                    db.insert("rocpd_arg", event_id=ev, position=pos, type=f"hip{name.title()}_t", name=name,
                              value=str(args[name]))
        for e in gpu:
            args = e.get("args") or {}
            dev = args.get("device", 0)
            if dev not in agents:
                agents[dev] = db.insert("rocpd_info_agent", nid=nid, pid=proc, type="GPU", absolute_index=1 + int(dev),
                                        logical_index=1 + int(dev), type_index=int(dev), name="gfx90a")
            stream = streams.setdefault(args.get("stream"), db.insert("rocpd_info_stream", nid=nid, pid=proc,
                                                                      name=f"stream {args.get('stream')}"))
            start, stop = ns(e["ts"]), ns(e["ts"] + e["dur"])
            if e["cat"] in COPY_CATS:
                cev = db.insert("rocpd_event", category_id=copy, stack_id=args.get("correlation"), correlation_id=0)
                to_host = _copy_name(e["name"]).endswith("TO_HOST")
                db.insert("rocpd_memory_copy", nid=nid, pid=proc, start=start, end=stop,
                          name_id=db.string(_copy_name(e["name"])), src_agent_id=agents[dev] if to_host else cpu,
                          dst_agent_id=cpu if to_host else agents[dev], size=int(args.get("bytes", 0)),
                          queue_id=queue, stream_id=stream, event_id=cev)
                continue
            if e["name"] not in symbols:
                symbols[e["name"]] = db.insert("rocpd_info_kernel_symbol", nid=nid, pid=proc, code_object_id=code,
                                               kernel_name=e["name"], display_name=e["name"])
            kev = db.insert("rocpd_event", category_id=dispatch, stack_id=args.get("correlation"), correlation_id=0)
            db.insert("rocpd_kernel_dispatch", nid=nid, pid=proc, agent_id=agents[dev], kernel_id=symbols[e["name"]],
                      dispatch_id=len(symbols), queue_id=queue, stream_id=stream, start=start, end=stop,
                      workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=1024,
                      grid_size_y=1, grid_size_z=1, event_id=kev)
        con.commit()
    finally:
        con.close()
    return Path(out)
