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


def _in_categories(events: pd.DataFrame, cats: tuple[str, ...]) -> np.ndarray:
    return events["cat"].isin(cats).to_numpy()


def _step_rows(events: pd.DataFrame, cats: tuple[str, ...]) -> pd.DataFrame:
    names = events["name"]
    cats_ok = _in_categories(events, cats)
    step_names = [c for c in names.cat.categories if _STEP.match(c)]
    mask = cats_ok & names.isin(step_names).to_numpy()
    rows = events.loc[mask, ["name", "pid", "ts", "dur"]]
    return pd.DataFrame({
        "step": np.array([step_number(n) for n in rows["name"].astype(str)], dtype=np.int64),
        "pid": rows["pid"].to_numpy(),
        "start": rows["ts"].to_numpy(),
        "end": (rows["ts"] + rows["dur"]).to_numpy(),
    })


def step_table(events: pd.DataFrame) -> pd.DataFrame:
    """Host-side profiler steps: step, start, end, dur (µs), one row per ``ProfilerStep#N``, by start time."""
    steps = _step_rows(events, HOST_STEP_CATEGORIES).drop(columns="pid")
    steps = steps.sort_values("start").drop_duplicates("step", keep="first").reset_index(drop=True)
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


def _class_of_names(events: pd.DataFrame) -> np.ndarray:
    return np.array([classify_kernel(n) for n in events["name"].cat.categories], dtype=object)


def gpu_table(events: pd.DataFrame) -> pd.DataFrame:
    """GPU activities of one rank with their launch and step.

    Columns: name, cat, kclass (compute/communication/memory), device (pid), stream, ts, dur, end, correlation,
    bytes, step, launch_name, launch_ts, launch_dur, launch_tid. ``step`` comes from the GPU-side
    ``ProfilerStep#N`` annotation holding the activity when there is one, else from the step of the host call
    that launched it; -1 when neither is known.
    """
    gmask = _in_categories(events, GPU_CATEGORIES)
    gpu = events.loc[gmask, ["name", "cat", "pid", "stream", "ts", "dur", "correlation", "bytes"]]
    gpu = gpu.rename(columns={"pid": "device"}).reset_index(drop=True)
    gpu["end"] = gpu["ts"] + gpu["dur"]
    names_class = _class_of_names(events)
    codes = gpu["name"].cat.codes.to_numpy()
    kclass = names_class[codes] if len(codes) else np.empty(0, dtype=object)
    is_mem_cat = gpu["cat"].isin(("gpu_memcpy", "gpu_memset")).to_numpy()
    kclass = np.where(is_mem_cat, "memory", kclass)
    gpu["kclass"] = pd.Categorical(kclass, categories=["compute", "communication", "memory"])
    gpu["name"] = gpu["name"].cat.remove_unused_categories()

    # launches: runtime/driver events joined on correlation id
    rmask = _in_categories(events, RUNTIME_CATEGORIES) & (events["correlation"].to_numpy() >= 0)
    runtime = events.loc[rmask, ["name", "tid", "ts", "dur", "correlation"]]
    runtime = runtime.drop_duplicates("correlation", keep="first").set_index("correlation")
    joined = runtime.reindex(gpu["correlation"].to_numpy())
    launch_names = joined["name"].astype(object).to_numpy()
    gpu["launch_name"] = np.where(pd.isna(launch_names), "", launch_names).astype(str)
    gpu["launch_ts"] = joined["ts"].to_numpy()
    gpu["launch_dur"] = joined["dur"].to_numpy()
    gpu["launch_tid"] = joined["tid"].fillna(-1).astype(np.int64).to_numpy()

    # steps: host steps for launches, GPU-side annotations where present
    host = step_table(events)
    launch_step = assign_steps(np.nan_to_num(gpu["launch_ts"].to_numpy(), nan=-np.inf), host["start"].to_numpy(),
                               host["end"].to_numpy(), host["step"].to_numpy())
    step = launch_step
    gsteps = _step_rows(events, (GPU_STEP_CATEGORY,)).sort_values("start")
    if len(gsteps):
        on_gpu = np.full(len(gpu), -1, dtype=np.int64)
        dev = gpu["device"].to_numpy()
        for device, rows in gsteps.groupby("pid"):
            sel = dev == device
            on_gpu[sel] = assign_steps(gpu["ts"].to_numpy()[sel], rows["start"].to_numpy(), rows["end"].to_numpy(),
                                       rows["step"].to_numpy())
        step = np.where(on_gpu >= 0, on_gpu, launch_step)
    gpu["step"] = step
    return gpu


def launch_table(gpu: pd.DataFrame) -> pd.DataFrame:
    """Kernel launch delays (µs): the gap between the end of the host launch call and the start of the GPU work
    it enqueued (clipped at zero, as HTA does), with the host call's own duration. Only launched activities."""
    launched = gpu[gpu["launch_name"] != ""]
    delay = (launched["ts"] - launched["launch_ts"] - launched["launch_dur"]).clip(lower=0)
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
