"""One table of CUDA and HIP runtime call names, by what the call does to the GPU queue.

The critical path (and the idle-cause analysis) ask the same questions of every runtime call in a trace: does it
put work on a stream, does the host wait in it, and for what (the device, a stream, an event, a copy)? Kineto
writes CUDA names (``cudaStreamSynchronize``) on NVIDIA and HIP names (``hipStreamSynchronize``) on ROCm; this
module answers by name for both spellings so no analysis keeps its own list.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

#: What a runtime call does, as small integer codes (``kind_codes`` gives one per name).
OTHER, LAUNCH, DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, EVENT_QUERY, EVENT_RECORD, STREAM_WAIT_EVENT, \
    BLOCKING_COPY, ASYNC_COPY = range(10)
KIND_NAMES = ("other", "launch", "device_sync", "stream_sync", "event_sync", "event_query", "event_record",
              "stream_wait_event", "blocking_copy", "async_copy")

_SUFFIXES: dict[int, tuple[str, ...]] = {
    LAUNCH: ("LaunchKernel", "LaunchKernelExC", "LaunchCooperativeKernel", "LaunchCooperativeKernelMultiDevice",
             "ModuleLaunchKernel", "ExtModuleLaunchKernel", "ExtLaunchKernel", "ExtLaunchMultiKernelMultiDevice",
             "GraphLaunch", "MemsetAsync", "MemsetD8Async", "MemsetD16Async", "MemsetD32Async"),
    DEVICE_SYNC: ("DeviceSynchronize", "CtxSynchronize"),
    STREAM_SYNC: ("StreamSynchronize",),
    EVENT_SYNC: ("EventSynchronize",),
    EVENT_QUERY: ("EventQuery",),
    EVENT_RECORD: ("EventRecord", "EventRecordWithFlags"),
    STREAM_WAIT_EVENT: ("StreamWaitEvent",),
    # synchronous copies: the host returns when the copy is done (HIP's hipMemcpyWithStream too)
    BLOCKING_COPY: ("Memcpy", "Memcpy2D", "Memcpy3D", "MemcpyDtoH", "MemcpyHtoD", "MemcpyDtoD", "MemcpyPeer",
                    "MemcpyWithStream", "MemcpyToSymbol", "MemcpyFromSymbol", "Memset", "MemsetD8", "MemsetD32"),
    # asynchronous copies: may still block (pageable host memory), as HTA assumes for cudaMemcpyAsync
    ASYNC_COPY: ("MemcpyAsync", "Memcpy2DAsync", "Memcpy3DAsync", "MemcpyDtoHAsync", "MemcpyHtoDAsync",
                 "MemcpyDtoDAsync", "MemcpyPeerAsync", "MemcpyToSymbolAsync", "MemcpyFromSymbolAsync"),
}
#: The driver-API spellings Kineto writes on NVIDIA (``cuLaunchKernel``) that have no ``cuda``/``hip`` prefix.
_DRIVER = {"cuLaunchKernel": LAUNCH, "cuLaunchKernelEx": LAUNCH, "cuCtxSynchronize": DEVICE_SYNC,
           "cuStreamSynchronize": STREAM_SYNC, "cuEventSynchronize": EVENT_SYNC, "cuEventRecord": EVENT_RECORD,
           "cuStreamWaitEvent": STREAM_WAIT_EVENT,
           **dict.fromkeys(("cuMemcpy", "cuMemcpyDtoH", "cuMemcpyHtoD", "cuMemcpyDtoD", "cuMemcpyPeer",
                            "cuMemcpy_v2", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoD_v2"), BLOCKING_COPY),
           **dict.fromkeys(("cuMemcpyAsync", "cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoDAsync",
                            "cuMemcpyPeerAsync", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2",
                            "cuMemcpyDtoDAsync_v2"), ASYNC_COPY)}
_TABLE: dict[str, int] = {f"{prefix}{suffix}": kind for kind, suffixes in _SUFFIXES.items()
                          for suffix in suffixes for prefix in ("cuda", "hip")} | _DRIVER
#: The calls in which the host waits for the GPU: on the critical path they carry no weight of their own.
BLOCKING_KINDS = frozenset({DEVICE_SYNC, STREAM_SYNC, EVENT_SYNC, EVENT_QUERY, BLOCKING_COPY, ASYNC_COPY})
#: Kineto's ``cuda_sync`` event names (CUDA only) and the kind of wait each one reports.
CUDA_SYNC_EVENTS = {"Context Sync": DEVICE_SYNC, "Stream Sync": STREAM_SYNC, "Event Sync": EVENT_SYNC,
                    "Stream Wait Event": STREAM_WAIT_EVENT}


def runtime_kind(name: str) -> int:
    """The kind code of one runtime call name (``OTHER`` for a name not in the table)."""
    return _TABLE.get(name, OTHER)


def kind_codes(names: Iterable[str]) -> np.ndarray:
    """One kind code per name (a trace's name labels), for lookups by name code."""
    return np.fromiter((_TABLE.get(n, OTHER) for n in names), dtype=np.int8)


def is_blocking(name: str) -> bool:
    """Whether the host waits in this call for GPU work (a sync or a copy)."""
    return runtime_kind(name) in BLOCKING_KINDS


def to_hip(name: str) -> str:
    """The HIP spelling of a CUDA runtime name (``cudaStreamSynchronize`` -> ``hipStreamSynchronize``); other
    names unchanged. What a ROCm trace of the same program calls it."""
    return "hip" + name[4:] if name.startswith("cuda") else name
