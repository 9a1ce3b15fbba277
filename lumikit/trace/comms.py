"""Collective communication in a trace: which collective, how many bytes, how long, and the bandwidth it reached.

Kineto records every torch.distributed call as a ``record_param_comms`` CPU op, and newer PyTorch copies its fields
onto the RCCL/NCCL kernel too (``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``,
``dtype``). Where the kernel lacks them, the kernel is joined to its launch (same correlation id) and the launch to
the ``record_param_comms`` span around it on the same thread; older traces give the size there as ``Input Dims``
and ``Input type``.

Bandwidths follow nccl-tests' definitions (``doc/PERFORMANCE.md`` of NVIDIA/nccl-tests): algorithm bandwidth
``algbw = S / t``, with S the bytes of the whole array (the output of an all-gather, the input of a
reduce-scatter), and bus bandwidth ``busbw = algbw x factor``: all-reduce 2(n-1)/n, reduce-scatter, all-gather and
all-to-all (n-1)/n, broadcast, reduce and point-to-point 1. Bus bandwidth is what compares with a link's peak.
``t`` here is the kernel's duration, which includes the time a rank waits for the others to arrive, so a
straggler makes everyone else's bandwidth look low: read the fastest calls of a size as the link's figure.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from .loader import Trace
from .scan import scan_events

_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_(?P<op>[A-Za-z]+?)(?:_|\(|$)")
#: How kernel names and torch's collective names map to one spelling.
_OPS = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "all_gather_into_tensor": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "reducescatter": "reduce_scatter", "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "alltoall": "all_to_all", "all_to_all": "all_to_all",
    "alltoall_base": "all_to_all", "all_to_allv": "all_to_all", "sendrecv": "send_recv", "send": "send_recv",
    "recv": "send_recv", "barrier": "barrier", "gather": "gather", "scatter": "scatter",
}
#: nccl-tests' bus bandwidth correction factors, as functions of the group size n.
BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
DTYPE_BYTES = {
    "float": 4, "float32": 4, "int": 4, "int32": 4, "uint32": 4, "half": 2, "float16": 2, "c10::half": 2,
    "bfloat16": 2, "c10::bfloat16": 2, "short": 2, "int16": 2, "double": 8, "float64": 8, "long": 8, "int64": 8,
    "unsigned char": 1, "byte": 1, "uint8": 1, "char": 1, "int8": 1, "bool": 1, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "signed char": 1,
}
COLUMNS = ["rank", "device", "ts", "dur_us", "collective", "kernel", "dtype", "elements", "bytes", "group_size",
           "algbw_gb_s", "busbw_gb_s"]


def normalise_collective(name: str | None) -> str | None:
    """One spelling for a collective (``allreduce``, ``all_reduce``, ``AllReduce`` -> ``all_reduce``)."""
    if not name:
        return None
    return _OPS.get(name.lower(), name.lower())


def collective_of_kernel(name: str) -> str | None:
    """The collective a communication kernel runs (``ncclDevKernel_AllGather_...`` -> ``all_gather``), if named."""
    m = _KERNEL.match(name)
    return normalise_collective(m.group("op")) if m else None


def is_comm_kernel(name: str) -> bool:
    """Whether a GPU kernel is an RCCL/NCCL one."""
    return bool(_KERNEL.match(name))


def dtype_bytes(dtype: str | None) -> int | None:
    """Bytes per element of a dtype as traces spell it (``Float``, ``BFloat16``, ``unsigned char``), or None."""
    return DTYPE_BYTES.get(str(dtype).lower()) if dtype else None


def bus_bandwidth(collective: str, nbytes: float, seconds: float, group_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for one call, by nccl-tests' definitions (NaN where undefined)."""
    if not seconds or seconds <= 0 or not nbytes or nbytes <= 0:
        return float("nan"), float("nan")
    algbw = nbytes / seconds / 1e9
    factor = BUS_FACTOR.get(collective)
    if factor is None or (group_size or 0) < 1:
        return algbw, float("nan")
    return algbw, algbw * factor(max(1, int(group_size)))


def _comm_events(path: Path) -> tuple[list[dict], list[dict]]:
    """(communication kernels, record_param_comms ops) of one trace file, with their args."""
    kernels, ops = [], []

    def keep(ev: dict) -> bool:
        if ev.get("ph") != "X":
            return False
        name = ev.get("name")
        if name == "record_param_comms":
            ops.append(ev)
        elif ev.get("cat") == "kernel" and isinstance(name, str) and is_comm_kernel(name):
            kernels.append(ev)
        return False

    for _ in scan_events(path, (b"ccl", b"record_param_comms"), keep):
        pass
    return kernels, ops


def _size_from_op(args: Mapping) -> tuple[str | None, int | None, str | None, int | None]:
    """(collective, elements, dtype, group size) from a record_param_comms' args, old or new style."""
    collective = normalise_collective(args.get("Collective name"))
    n_in, n_out = args.get("In msg nelems"), args.get("Out msg nelems")
    elements = max((v for v in (n_in, n_out) if isinstance(v, int)), default=None)
    dtype = args.get("dtype")
    if elements is None:  # older PyTorch: the first input's shape and type
        dims, types = args.get("Input Dims"), args.get("Input type")
        if isinstance(dims, list) and dims and isinstance(dims[0], list) and dims[0] and \
                all(isinstance(d, int) for d in dims[0]):
            elements = int(np.prod(dims[0]))
            dtype = dtype or (types[0] if isinstance(types, list) and types else None)
    group = args.get("Group size")
    return collective, elements, dtype, group if isinstance(group, int) else None


def collective_table(trace: Trace, ranks: list[int] | None = None) -> pd.DataFrame:
    """One row per communication kernel: rank, device, start, duration (µs), collective, kernel name, dtype,
    elements, bytes, group size, and the algorithm and bus bandwidth (GB/s)."""
    rows = []
    for rank in ranks if ranks is not None else trace.rank_ids:
        rt = trace[rank]
        kernels, ops = _comm_events(rt.path)
        if not kernels:
            continue
        world = (rt.metadata.get("distributedInfo") or {}).get("world_size")
        ev = rt.events
        runtime = ev[ev["cat"].isin(("cuda_runtime", "cuda_driver")) & (ev["correlation"] >= 0)]
        launch_of = dict(zip(runtime["correlation"].to_numpy().tolist(),
                             zip(runtime["ts"].to_numpy().tolist(), runtime["tid"].to_numpy().tolist())))
        by_ext = {op.get("args", {}).get("External id"): op for op in ops if isinstance(op.get("args"), dict)}
        spans: dict = {}
        for op in ops:
            spans.setdefault(op.get("tid"), []).append(op)
        for k in kernels:
            args = k.get("args") if isinstance(k.get("args"), dict) else {}
            collective, elements, dtype, group = _size_from_op(args)
            if elements is None:
                op = by_ext.get(args.get("External id"))
                if op is None and args.get("correlation") in launch_of:
                    ts, tid = launch_of[args["correlation"]]
                    inside = [o for o in spans.get(tid, ()) if o["ts"] <= ts <= o["ts"] + o.get("dur", 0)]
                    op = inside[-1] if inside else None
                if op is not None:
                    c2, elements, dtype, g2 = _size_from_op(op.get("args") or {})
                    collective, group = collective or c2, group or g2
            collective = collective or collective_of_kernel(k["name"])
            size = dtype_bytes(dtype)
            nbytes = elements * size if elements is not None and size else None
            if group is None and collective == "send_recv":
                group = 2
            dur = float(k.get("dur") or 0.0)
            algbw, busbw = bus_bandwidth(collective or "", nbytes or 0, dur * 1e-6, group or world or 0)
            rows.append({"rank": rank, "device": int(args.get("device", k.get("pid", -1)) or 0), "ts": float(k["ts"]),
                         "dur_us": dur, "collective": collective, "kernel": k["name"], "dtype": dtype,
                         "elements": elements, "bytes": nbytes, "group_size": group or world, "algbw_gb_s": algbw,
                         "busbw_gb_s": busbw})
    return pd.DataFrame(rows, columns=COLUMNS)


def collective_summary(table: pd.DataFrame, links: Mapping[str, Mapping] | None = None) -> pd.DataFrame:
    """Per rank, collective, dtype and group size: calls, bytes, kernel time, the bus bandwidth of all calls
    together (bytes over time, with the correction factor) and of the fastest call, and, for each link of the site
    profile, the share of its peak that the fastest call reached."""
    sized = table[table["bytes"].notna() & (table["dur_us"] > 0)]
    rows = []
    for (rank, collective, dtype, group), g in sized.groupby(["rank", "collective", "dtype", "group_size"],
                                                              dropna=False):
        nbytes, seconds = float(g["bytes"].sum()), float(g["dur_us"].sum()) * 1e-6
        _, busbw = bus_bandwidth(collective, nbytes, seconds, int(group) if group == group else 0)
        best = float(g["busbw_gb_s"].max())
        row = {"rank": rank, "collective": collective, "dtype": dtype, "group_size": group, "calls": len(g),
               "bytes": nbytes, "time_us": seconds * 1e6, "busbw_gb_s": busbw, "best_busbw_gb_s": best}
        for name, link in (links or {}).items():
            row[f"of_{name}"] = best / float(link["gb_s"]) if link.get("gb_s") else float("nan")
        rows.append(row)
    cols = ["rank", "collective", "dtype", "group_size", "calls", "bytes", "time_us", "busbw_gb_s", "best_busbw_gb_s"]
    return pd.DataFrame(rows, columns=cols + [f"of_{n}" for n in (links or {})])


def describe_collectives(summary: pd.DataFrame, links: Mapping[str, Mapping] | None = None) -> list[str]:
    """A sentence per row of :func:`collective_summary`, set against the site's link speeds."""
    lines = []
    for row in summary.itertuples():
        text = (f"rank {row.rank}: {row.calls} x {row.collective} ({row.dtype}, group of {row.group_size}), "
                f"{row.bytes / 1e6:.1f} MB in {row.time_us / 1e3:.2f} ms: bus bandwidth {row.busbw_gb_s:.1f} GB/s "
                f"overall, {row.best_busbw_gb_s:.1f} GB/s at best")
        if links:
            text += " (" + ", ".join(f"{100 * getattr(row, f'of_{n}'):.0f} % of {n.replace('_', ' ')} "
                                     f"{link['gb_s']} GB/s" for n, link in links.items()) + ")"
        lines.append(text)
    return lines
