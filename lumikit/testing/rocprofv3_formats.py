"""The known HIP-call step of :mod:`.rocpd_calls` written as rocprofv3's other output formats: ``--output-format
json`` (``<pid>_results.json``) and ``--output-format csv`` (``<pid>_kernel_trace.csv``, ``<pid>_hip_api_trace.csv``,
``<pid>_memory_copy_trace.csv``), laid out as rocprofiler-sdk writes them (see
:mod:`lumikit.rocprof.rocprofv3_outputs` for the sources). Neither format keeps the calls' arguments. Generated
data: say so wherever it is shown.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from .rocpd_calls import PID, STEP, STEP_US, Call, _ns
from .rocprof_outputs import TRACE_HEADER

#: Buffer kinds in the order of their numbers (``strings.buffer_records`` is indexed by them).
KINDS = ["NONE", "HSA_CORE_API", "HSA_AMD_EXT_API", "HSA_IMAGE_EXT_API", "HSA_FINALIZE_EXT_API", "HIP_RUNTIME_API",
         "HIP_COMPILER_API", "MARKER_CORE_API", "MARKER_CONTROL_API", "MARKER_NAME_API", "MEMORY_COPY",
         "KERNEL_DISPATCH"]
COPY_OPS = ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST",
            "MEMORY_COPY_DEVICE_TO_DEVICE"]
CPU_AGENT, GPU_AGENT = 100, 200


def _calls(steps: int, calls: tuple[Call, ...], step_us: float):
    corr = 0
    for step in range(steps):
        for call in calls:
            corr += 1
            yield corr, step * step_us, call


def write_rocprofv3_json(path: str | os.PathLike[str], steps: int = 1, calls: tuple[Call, ...] = STEP,
                         step_us: float = STEP_US) -> Path:
    """``calls`` ``steps`` times as one process of rocprofv3's JSON output."""
    hip_ops = sorted({c.name for c in calls})
    kernels = sorted({c.work[0] for c in calls if c.work and not c.work[0].startswith("MEMORY_COPY")})
    streams = sorted({c.work[1] for c in calls if c.work})
    hip, dispatches, copies = [], [], []
    for corr, t0, call in _calls(steps, calls, step_us):
        hip.append({"size": 48, "kind": KINDS.index("HIP_RUNTIME_API"), "operation": hip_ops.index(call.name),
                    "correlation_id": {"internal": corr, "external": 0, "ancestor": 0},
                    "start_timestamp": _ns(t0 + call.start), "end_timestamp": _ns(t0 + call.end),
                    "thread_id": call.tid})
        if not call.work:
            continue
        name, handle, k0, k1 = call.work
        common = {"size": 96, "thread_id": call.tid, "correlation_id": {"internal": corr, "external": 0},
                  "start_timestamp": _ns(t0 + k0), "end_timestamp": _ns(t0 + k1)}
        if name.startswith("MEMORY_COPY"):
            to_host = name.endswith("TO_HOST")
            copies.append({**common, "kind": KINDS.index("MEMORY_COPY"), "operation": COPY_OPS.index(name),
                           "dst_agent_id": {"handle": CPU_AGENT if to_host else GPU_AGENT},
                           "src_agent_id": {"handle": GPU_AGENT if to_host else CPU_AGENT}, "bytes": 4 << 20})
        else:
            dispatches.append({**common, "kind": KINDS.index("KERNEL_DISPATCH"), "operation": 0, "dispatch_info": {
                "size": 64, "agent_id": {"handle": GPU_AGENT}, "queue_id": {"handle": 7000 + streams.index(handle)},
                "kernel_id": 1 + kernels.index(name), "dispatch_id": corr, "private_segment_size": 0,
                "group_segment_size": 0, "workgroup_size": {"x": 256, "y": 1, "z": 1},
                "grid_size": {"x": 1024, "y": 1, "z": 1}}})
    strings = [{"kind": k, "operations": []} for k in KINDS]
    strings[KINDS.index("HIP_RUNTIME_API")]["operations"] = hip_ops
    strings[KINDS.index("MEMORY_COPY")]["operations"] = COPY_OPS
    strings[KINDS.index("KERNEL_DISPATCH")]["operations"] = ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE",
                                                             "KERNEL_DISPATCH_COMPLETE"]
    process = {
        "metadata": {"pid": PID, "init_time": 0, "fini_time": _ns(steps * step_us), "command": ["python", "train.py"]},
        "agents": [{"id": {"handle": CPU_AGENT}, "type": 1, "node_id": 0, "logical_node_id": 0,
                    "logical_node_type_id": 0, "name": "AMD EPYC 7A53"},
                   {"id": {"handle": GPU_AGENT}, "type": 2, "node_id": 4, "logical_node_id": 1,
                    "logical_node_type_id": 0, "name": "gfx90a", "product_name": "AMD Instinct MI250X"}],
        "counters": [], "strings": {"callback_records": [], "buffer_records": strings, "marker_api": []},
        "code_objects": [], "host_functions": [],
        "kernel_symbols": [{"kernel_id": 1 + i, "code_object_id": 1, "kernel_name": f"_Z{len(k)}{k}",
                            "formatted_kernel_name": k, "truncated_kernel_name": k} for i, k in enumerate(kernels)],
        "summary": [], "callback_records": {"counter_collection": []},
        "buffer_records": {"kernel_dispatch": dispatches, "hip_api": hip, "hsa_api": [], "marker_api": [],
                           "rccl_api": [], "memory_copy": copies, "memory_allocation": [], "scratch_memory": []},
    }
    out = Path(path)
    out.write_text(json.dumps({"rocprofiler-sdk-tool": [process]}, indent=1))
    return out


def write_rocprofv3_csv(folder: str | os.PathLike[str], steps: int = 1, calls: tuple[Call, ...] = STEP,
                        step_us: float = STEP_US) -> Path:
    """``calls`` ``steps`` times as rocprofv3's CSV files of one process; returns the kernel trace's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    api, kern, copy = (io.StringIO() for _ in range(3))
    wa, wk, wc = (csv.writer(b, quoting=csv.QUOTE_NONNUMERIC) for b in (api, kern, copy))
    wa.writerow(["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp",
                 "End_Timestamp"])
    wk.writerow(TRACE_HEADER)
    wc.writerow(["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id",
                 "Start_Timestamp", "End_Timestamp"])
    streams = sorted({c.work[1] for c in calls if c.work})
    kernels = sorted({c.work[0] for c in calls if c.work})
    for corr, t0, call in _calls(steps, calls, step_us):
        wa.writerow(["HIP_RUNTIME_API", call.name, PID, call.tid, corr, _ns(t0 + call.start), _ns(t0 + call.end)])
        if not call.work:
            continue
        name, handle, k0, k1 = call.work
        if name.startswith("MEMORY_COPY"):
            to_host = name.endswith("TO_HOST")
            wc.writerow(["MEMORY_COPY", name, streams.index(handle) + 1, "Agent 1" if to_host else "Agent 0",
                         "Agent 0" if to_host else "Agent 1", corr, _ns(t0 + k0), _ns(t0 + k1)])
        else:
            wk.writerow(["KERNEL_DISPATCH", "Agent 1", 1, streams.index(handle) + 1, call.tid, corr,
                         kernels.index(name) + 1, name, corr, _ns(t0 + k0), _ns(t0 + k1), 0, 0, 256, 1, 1, 1024, 1,
                         1])
    (folder / f"{PID}_hip_api_trace.csv").write_text(api.getvalue())
    (folder / f"{PID}_memory_copy_trace.csv").write_text(copy.getvalue())
    trace = folder / f"{PID}_kernel_trace.csv"
    trace.write_text(kern.getvalue())
    return trace
