"""What the ``advise`` rules read from one rank's trace, measured once: the critical path and its what-ifs, the
GPU idle causes, the kernels of the analysed steps and the host's blocking calls."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import LumikitError

#: fp32 matrix kernels: Tensile's single-precision GEMMs (``Cijk_..._SB_``), cuBLAS's sgemm and f32 xmma kernels.
FP32_GEMM = r"Cijk_A[a-z]+_B[a-z]+_S(?:B|S)?_|sgemm|gemm_f32f32_f32f32_f32|Kernel2<float"
GEMM = r"Cijk_|gemm|Gemm|GEMM"
#: Kernels that stream memory with little arithmetic (elementwise, reductions, norms, softmax).
MEMORY_BOUND = r"elementwise|reduce_kernel|Reduce|norm|softmax|Softmax|vectorized|unrolled|copy_kernel|cat_"
LOADER = r"enumerate\(DataLoader\)|DataLoader.*__next__"
COMM = r"^(?:nccl|rccl)"
#: Remove (a wait) or halve (work): the what-if factors.
REMOVE, HALVE = 1e6, 2.0
#: Host ops that hold a blocking sync and what they are in the learner's code.
SYNC_OPS = {"aten::item": ".item()", "aten::_local_scalar_dense": ".item() / float(tensor)",
            "aten::nonzero": "torch.nonzero / boolean indexing", "aten::to": ".to('cpu') / .cpu()",
            "aten::copy_": "a device-to-host copy (.cpu(), .numpy())", "aten::masked_select": "boolean masking"}


@dataclass
class RankEvidence:
    """What the rules read from one rank's trace: the critical path with its what-ifs, idle causes, kernels."""

    rank: int
    path_us: float
    bound_by: dict[str, float]
    what_if: dict[str, float]  # rule -> speed-up % of the path
    idle_us: float
    span_us: float
    causes: dict[str, float]
    gaps: list[dict]
    steps: int
    all_steps: int  # profiled steps, the dropped last one too (what whole-trace counts are spread over)
    kernels: int
    kernel_us: np.ndarray
    kernel_names: list[str]
    syncs: list[tuple[str, str, float, float, int]]  # (call, enclosing op, ts, end, step)
    comm_overlap: float | None
    path_events: list[dict] = field(default_factory=list)
    window_us: float = 0.0  # the analysed steps' wall time
    longest_call: tuple[str, float] = ("", 0.0)  # the window's longest launch, allocation or module load (µs)


def rank_evidence(analyzer: Any, rank: int) -> RankEvidence:
    """Measure one rank once for every rule (one critical-path graph, its what-ifs, the idle causes)."""
    from ..trace.critical_path import WhatIf, choose_window, critical_path
    from ..trace.idle import idle_report
    from ..trace import runtime_names as rn

    ev = analyzer.trace[rank].columns
    names = ev.labels["name"]
    window = choose_window(ev, include_last_step=analyzer.include_last_step)
    wanted = {"loader": (LOADER, REMOVE), "fp32": (FP32_GEMM, HALVE), "comm": (COMM, REMOVE),
              "memory": (MEMORY_BOUND, HALVE), "gemm": (GEMM, HALVE)}
    present = {k: v for k, v in wanted.items() if any(re.search(v[0], n) for n in names)}
    cp = critical_path(ev, what_if=[WhatIf(p, f) for p, f in present.values()],
                       include_last_step=analyzer.include_last_step)
    what_if = {k: w["speedup_pct"] for k, w in zip(present, cp["what_if"])}
    rep = idle_report(analyzer, [rank])["ranks"]
    devices = rep.get(str(rank)) or rep.get(rank) or {}
    idle_us = sum(d["idle_us"] for d in devices.values())
    span_us = sum(d["span_us"] for d in devices.values())
    causes: dict[str, float] = {}
    gaps: list[dict] = []
    for d in devices.values():
        for c, us in d["causes"].items():
            causes[c] = causes.get(c, 0.0) + us
        gaps += d["gaps"]
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    inside = (ts >= window.start) & (ts <= window.end)
    is_kernel = ev.label_mask("cat", ("kernel",)) & inside
    kernel_rows = np.flatnonzero(is_kernel)
    kinds = np.append(rn.kind_codes(names), np.int8(0))[ev["name"]]
    runtime = ev.label_mask("cat", ("cuda_runtime",)) & inside
    waits = np.isin(kinds, [rn.DEVICE_SYNC, rn.STREAM_SYNC, rn.EVENT_SYNC]) & runtime  # a query only polls
    copies = np.flatnonzero(np.isin(kinds, [rn.BLOCKING_COPY, rn.ASYNC_COPY]) & runtime)
    d2h = ev.label_mask("cat", ("gpu_memcpy",)) & ev.label_mask("name", lambda n: "DtoH" in n or "Device -> Host"
                                                                 in n or "D2H" in n)
    d2h_ids = set(ev["correlation"][d2h & (ev["correlation"] >= 0)].tolist())
    back = [r for r in copies.tolist() if int(ev["correlation"][r]) in d2h_ids]  # a copy back to the host
    blocking = np.sort(np.concatenate([np.flatnonzero(waits), np.array(back, dtype=np.int64)]))
    ops = np.flatnonzero(ev.label_mask("cat", ("cpu_op",)) & inside)
    sc = analyzer.step_columns(rank)

    def step_of(t: float) -> int:
        hit = np.flatnonzero((sc["start"] <= t) & (sc["end"] >= t)) if len(sc) else []
        return int(sc["step"][hit[0]]) if len(hit) else -1

    syncs = []
    for r in blocking.tolist():
        holder = [o for o in ops.tolist() if ts[o] <= ts[r] and end[o] >= end[r] and names[ev["name"][o]] in SYNC_OPS]
        op = names[ev["name"][holder[0]]] if holder else ""  # the outermost: what the learner's code called
        syncs.append((names[ev["name"][r]], op, float(ts[r]), float(end[r]), step_of(float(ts[r]))))
    all_steps = max(1, len(analyzer.step_columns(rank)))
    steps = max(1, all_steps - (0 if analyzer.include_last_step or all_steps == 1 else 1))
    overlap = None
    try:
        ov = analyzer.overlap(rank)
        overlap = min(ov.values()) if ov else None
    except (LumikitError, ValueError, KeyError):
        pass
    return RankEvidence(rank=rank, path_us=float(cp["path_us"]), bound_by=dict(cp["bound_by"]), what_if=what_if,
                        idle_us=idle_us, span_us=span_us, causes=causes, gaps=gaps, steps=steps,
                        all_steps=all_steps,
                        kernels=len(kernel_rows), kernel_us=ev["dur"][kernel_rows].astype(float),
                        kernel_names=[names[c] for c in ev["name"][kernel_rows].tolist()], syncs=syncs,
                        comm_overlap=overlap, path_events=list(cp["path_events"]),
                        window_us=float(window.end - window.start), longest_call=_longest_call(ev, inside, kinds))


#: Runtime calls whose first use costs milliseconds once: a kernel's first launch loads its code object, the first
#: allocations grow the caching allocator.
ONE_OFF_CALLS = ("Malloc", "MallocAsync", "ModuleLoad", "ModuleLoadData", "ModuleGetFunction")


def _longest_call(ev: Any, inside: np.ndarray, kinds: np.ndarray) -> tuple[str, float]:
    """The window's longest launch, allocation or module-load call: (name, µs)."""
    from ..trace import runtime_names as rn

    names = ev.labels["name"]
    runtime = np.flatnonzero(ev.label_mask("cat", ("cuda_runtime", "cuda_driver")) & inside)
    keep = [r for r in runtime.tolist() if kinds[r] == rn.LAUNCH or names[ev["name"][r]].endswith(ONE_OFF_CALLS)]
    if not keep:
        return "", 0.0
    best = max(keep, key=lambda r: float(ev["dur"][r]))
    return names[ev["name"][best]], float(ev["dur"][best])
