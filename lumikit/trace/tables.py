"""Derived per-rank tables: profiler steps, GPU activities joined to their launches, and kernel classes.

ROCm-aware by construction: GPU work is recognised by its category (``kernel``, ``gpu_memcpy``, ``gpu_memset``),
never by ``stream > 0`` (ROCm kernels run on stream 0), and a launch is the runtime/driver event with the same
correlation id, whatever its name (``hipExtModuleLaunchKernel`` as well as ``cudaLaunchKernel``).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..kernels import classify_kernel

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver")
HOST_STEP_CATEGORIES = ("user_annotation", "cpu_op")
GPU_STEP_CATEGORY = "gpu_user_annotation"
_STEP = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
#: Runtime calls that put work on a GPU stream (CUDA and HIP spellings).
LAUNCH_PATTERN = re.compile(
    r"^(?:cuda|hip)(?:LaunchKernel(?:ExC)?|LaunchCooperativeKernel\w*|ModuleLaunchKernel|ExtModuleLaunchKernel|"
    r"ExtLaunchKernel|ExtLaunchMultiKernelMultiDevice|GraphLaunch|Memcpy\w*|Memset\w*)$|^cuLaunchKernel(?:Ex)?$")


def is_launch_name(name: str) -> bool:
    """Whether a runtime call enqueues GPU work (``hipModuleLaunchKernel``, ``cudaMemcpyAsync`` ...).

    >>> is_launch_name("hipExtModuleLaunchKernel"), is_launch_name("hipGetDevicePropertiesR0600")
    (True, False)
    """
    return bool(LAUNCH_PATTERN.match(name))


def step_number(name: str) -> int | None:
    """The N of a ``ProfilerStep#N`` name, else None."""
    m = _STEP.match(name)
    return int(m.group(1)) if m else None


def _category_mask(column: pd.Series, wanted) -> np.ndarray:
    """Rows of a categorical column whose value satisfies ``wanted`` (a tuple of values or a predicate), tested
    once per category instead of once per row."""
    categories = column.cat.categories
    if callable(wanted):
        ok = np.fromiter((bool(wanted(c)) for c in categories), dtype=bool, count=len(categories))
    else:
        ok = np.asarray(categories.isin(wanted), dtype=bool)
    codes = column.cat.codes.to_numpy()
    return np.append(ok, False)[codes]  # code -1 (missing) lands on the appended False


def _in_categories(events: pd.DataFrame, cats: tuple[str, ...]) -> np.ndarray:
    return _category_mask(events["cat"], cats)


def _step_rows(events: pd.DataFrame, cats: tuple[str, ...]) -> pd.DataFrame:
    mask = _in_categories(events, cats) & _category_mask(events["name"], _STEP.match)
    idx = np.flatnonzero(mask)
    names = events["name"].cat.categories
    ts, dur = events["ts"].to_numpy()[idx], events["dur"].to_numpy()[idx]
    return pd.DataFrame({
        "step": np.array([step_number(names[c]) for c in events["name"].cat.codes.to_numpy()[idx]], dtype=np.int64),
        "pid": events["pid"].to_numpy()[idx],
        "start": ts,
        "end": ts + dur,
    })


def step_table(events: pd.DataFrame) -> pd.DataFrame:
    """Host-side profiler steps: step, start, end, dur (µs), one row per ``ProfilerStep#N``, by start time."""
    steps = _step_rows(events, HOST_STEP_CATEGORIES).drop(columns="pid")
    steps = steps.sort_values("start", kind="stable").drop_duplicates("step", keep="first").reset_index(drop=True)
    steps["dur"] = steps["end"] - steps["start"]
    return steps


def assign_steps(ts: np.ndarray, starts: np.ndarray, ends: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """For each timestamp, the step whose [start, end) interval holds it, else -1 (intervals sorted by start)."""
    if len(starts) == 0:
        return np.full(len(ts), -1, dtype=np.int64)
    idx = np.searchsorted(starts, ts, side="right") - 1
    ok = idx >= 0
    safe = np.where(ok, idx, 0)
    ok &= ts < ends[safe]
    return np.where(ok, steps[safe], -1).astype(np.int64)


def assign_overlapping_steps(ts: np.ndarray, starts: np.ndarray, ends: np.ndarray, steps: np.ndarray,
                             hint: np.ndarray) -> np.ndarray:
    """Like :func:`assign_steps`, for intervals that may overlap (GPU-side step spans do when step N's last
    kernels still run after step N+1's first one started): a timestamp inside several spans gets the ``hint`` step
    (the step of the host call that launched it) when that is one of them, else the earliest span holding it."""
    order = np.argsort(starts, kind="stable")
    starts, ends, steps = starts[order], ends[order], steps[order]
    if len(starts) < 2 or (ends[:-1] <= starts[1:]).all():
        return assign_steps(ts, starts, ends, steps)
    out = np.full(len(ts), -1, dtype=np.int64)
    matched = np.zeros(len(ts), dtype=bool)
    for k in range(len(starts) - 1, -1, -1):  # latest first, so the earliest holding span is written last
        inside = (ts >= starts[k]) & (ts < ends[k])
        out[inside] = steps[k]
        matched |= inside & (hint == steps[k])
    return np.where(matched, hint, out)


def _class_of_names(names: pd.Index) -> np.ndarray:
    return np.array([classify_kernel(n) for n in names], dtype=object)


def _first_match(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each wanted key, the position of its first occurrence in ``keys``, and whether there is one."""
    if len(keys) == 0:
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    uniq, first = np.unique(keys, return_index=True)
    pos = np.minimum(np.searchsorted(uniq, wanted), len(uniq) - 1)
    return first[pos], uniq[pos] == wanted


def gpu_table(events: pd.DataFrame, host_steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """GPU activities of one rank with their launch and step.

    Columns: name, cat, kclass (compute/communication/memory), device (pid), stream, ts, dur, end, correlation,
    bytes, step, launch_name, launch_ts, launch_dur, launch_tid. ``step`` comes from the GPU-side
    ``ProfilerStep#N`` annotation holding the activity when there is one, else from the step of the host call
    that launched it; -1 when neither is known. Where GPU-side step spans overlap, an activity inside two of them
    goes to the step that launched it (not to the later span). ``host_steps`` is the rank's :func:`step_table`
    when the caller already has it.
    """
    idx = np.flatnonzero(_in_categories(events, GPU_CATEGORIES))
    col = {c: events[c].to_numpy() for c in ("pid", "tid", "stream", "ts", "dur", "correlation", "bytes")}
    names, name_codes = events["name"].cat.categories, events["name"].cat.codes.to_numpy()
    codes = name_codes[idx]
    ts, dur = col["ts"][idx], col["dur"][idx]
    gpu = pd.DataFrame({
        "name": pd.Categorical.from_codes(codes, categories=names).remove_unused_categories(),
        "cat": pd.Categorical.from_codes(events["cat"].cat.codes.to_numpy()[idx], dtype=events["cat"].dtype),
        "device": col["pid"][idx], "stream": col["stream"][idx], "ts": ts, "dur": dur,
        "correlation": col["correlation"][idx], "bytes": col["bytes"][idx], "end": ts + dur,
    })
    kclass = _class_of_names(names)[codes] if len(codes) else np.empty(0, dtype=object)
    is_mem_cat = gpu["cat"].isin(("gpu_memcpy", "gpu_memset")).to_numpy()
    gpu["kclass"] = pd.Categorical(np.where(is_mem_cat, "memory", kclass),
                                   categories=["compute", "communication", "memory"])

    # launches: the first runtime/driver event with the same correlation id
    ridx = np.flatnonzero(_in_categories(events, RUNTIME_CATEGORIES) & (col["correlation"] >= 0))
    where, found = _first_match(col["correlation"][ridx], gpu["correlation"].to_numpy())
    launch = ridx[where] if len(ridx) else where  # no launch events (a slice that starts after them): none found
    launch_names = np.append(np.asarray(names, dtype=object), "")
    gpu["launch_name"] = pd.array(launch_names[np.where(found, name_codes[launch], len(names))] if len(ridx)
                                  else np.full(len(gpu), "", dtype=object), dtype="str")
    gpu["launch_ts"] = np.where(found, col["ts"][launch], np.nan) if len(ridx) else np.full(len(gpu), np.nan)
    gpu["launch_dur"] = np.where(found, col["dur"][launch], np.nan) if len(ridx) else np.full(len(gpu), np.nan)
    gpu["launch_tid"] = np.where(found, col["tid"][launch], -1) if len(ridx) else np.full(len(gpu), -1)

    # steps: host steps for launches, GPU-side annotations where present
    host = step_table(events) if host_steps is None else host_steps
    launch_step = assign_steps(np.nan_to_num(gpu["launch_ts"].to_numpy(), nan=-np.inf), host["start"].to_numpy(),
                               host["end"].to_numpy(), host["step"].to_numpy())
    step = launch_step
    gsteps = _step_rows(events, (GPU_STEP_CATEGORY,)).sort_values("start", kind="stable")
    if len(gsteps):
        on_gpu = np.full(len(gpu), -1, dtype=np.int64)
        dev = gpu["device"].to_numpy()
        for device, rows in gsteps.groupby("pid"):
            sel = dev == device
            on_gpu[sel] = assign_overlapping_steps(ts[sel], rows["start"].to_numpy(), rows["end"].to_numpy(),
                                                   rows["step"].to_numpy(), launch_step[sel])
        step = np.where(on_gpu >= 0, on_gpu, launch_step)
    gpu["step"] = step
    return gpu


def launch_table(gpu: pd.DataFrame) -> pd.DataFrame:
    """Kernel launch delays (µs): the gap between the end of the host launch call and the start of the GPU work
    it enqueued, with the host call's own duration. Only launched activities.

    Not clipped at zero: a negative delay (GPU work that starts before its launch call returns, or even before
    it began) is what clock skew between host and GPU timestamps looks like on ROCm, and is worth seeing.
    HTA clips at zero; ``launch_delay.clip(lower=0)`` gives its numbers."""
    launched = gpu[gpu["launch_name"] != ""]
    delay = launched["ts"] - launched["launch_ts"] - launched["launch_dur"]
    return pd.DataFrame({
        "correlation": launched["correlation"].to_numpy(),
        "name": launched["name"].astype(str).to_numpy(),
        "kclass": launched["kclass"].astype(str).to_numpy(),
        "launch_name": launched["launch_name"].to_numpy(),
        "step": launched["step"].to_numpy(),
        "cpu_duration": launched["launch_dur"].to_numpy(),
        "gpu_duration": launched["dur"].to_numpy(),
        "launch_delay": delay.to_numpy(),
    })
