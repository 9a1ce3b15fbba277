"""How much of a window the trace covers: its wall time, the part of it that no traced op covers, and the time
before the first GPU work.

A *traced op* is a CPU op (``cpu_op``), a runtime call, a DataLoader iteration, or GPU work (kernel, copy, memset),
on any thread or stream. Python functions (``python_function``, recorded with ``with_stack=True``) and other user
annotations such as ``ProfilerStep#N`` are not ops: time covered only by them is host time the profiler did not
break down (Python between operators, preprocessing, a tokenizer), the part of a step a critical path built from ops
alone misses.
Used by ``critical-path``, ``idle`` and ``summary`` alike, so all three state the same numbers.
"""
from __future__ import annotations

import re

import numpy as np

from .columns import Columns
from .metrics import merge_intervals
from .tables import GPU_CATEGORIES, RUNTIME_CATEGORIES

#: Host event categories that count as traced ops.
TRACED_HOST_CATEGORIES = ("cpu_op",) + RUNTIME_CATEGORIES
#: Host annotations that count as data loading (traced: the critical path books their time as ``data_loading``).
DATA_LOADING = re.compile(r"enumerate\(DataLoader\)|DataLoader.*__next__")


def window_coverage(ev: Columns, start: float, end: float) -> dict:
    """JSON-ready coverage of the window [start, end] (trace µs) of a rank's events: ``window_us`` (its wall
    time), ``traced_us`` and ``untraced_us`` (covered by no traced op), ``untraced_share`` (of the window),
    ``before_gpu_us`` (from the window's start to the first GPU work running in it; the whole window when none)
    and ``before_gpu_untraced_us`` (the part of that lead no traced op covers)."""
    window = max(0.0, float(end) - float(start))
    ts, dur = ev["ts"], ev["dur"]
    ok = np.isfinite(ts) & np.isfinite(dur) & (dur >= 0)
    s0, e0 = np.maximum(ts, start), np.minimum(ts + dur, end)
    inside = ok & (e0 > s0)
    gpu = inside & ev.label_mask("cat", GPU_CATEGORIES)
    host = inside & (ev.label_mask("cat", TRACED_HOST_CATEGORIES)
                     | (ev.label_mask("cat", ("user_annotation",)) & ev.label_mask("name", DATA_LOADING.search)))
    traced = gpu | host
    ms, me = merge_intervals(s0[traced], e0[traced])
    covered = float((me - ms).sum())
    first_gpu = float(s0[gpu].min()) if gpu.any() else float(end)
    lead = max(0.0, first_gpu - float(start))
    early = host & (s0 < first_gpu)
    hs, he = merge_intervals(s0[early], np.minimum(e0[early], first_gpu))
    lead_traced = float((he - hs).sum())
    return {"window_us": _r(window), "traced_us": _r(covered), "untraced_us": _r(window - covered),
            "untraced_share": round((window - covered) / window, 6) if window > 0 else 0.0,
            "before_gpu_us": _r(lead), "before_gpu_untraced_us": _r(max(0.0, lead - lead_traced))}


def describe_coverage(cov: dict, path_us: float | None = None) -> str:
    """One line for people: the window's wall time (and the path beside it), the untraced share, the lead."""
    path = "" if path_us is None else f", critical path {path_us / 1000:.3f} ms"
    line = (f"window wall time {cov['window_us'] / 1000:.3f} ms{path}; "
            f"{100 * cov['untraced_share']:.1f} % of the window ({cov['untraced_us'] / 1000:.3f} ms) is covered "
            f"by no traced op")
    if cov["before_gpu_us"] > 0:
        line += (f"; {cov['before_gpu_us'] / 1000:.3f} ms before the first GPU work"
                 f" ({cov['before_gpu_untraced_us'] / 1000:.3f} ms of it untraced host time)")
    return line


def _r(value: float) -> float:
    return round(float(value), 3)
