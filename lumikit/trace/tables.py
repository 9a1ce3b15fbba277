"""Derived per-rank tables: profiler steps, GPU activities joined to their launches, and kernel classes.

ROCm-aware by construction: GPU work is recognised by its category (``kernel``, ``gpu_memcpy``, ``gpu_memset``),
never by ``stream > 0`` (ROCm kernels run on stream 0), and a launch is the runtime/driver event with the same
correlation id, whatever its name (``hipExtModuleLaunchKernel`` as well as ``cudaLaunchKernel``).

Each table is computed on numpy :class:`~lumikit.trace.columns.Columns` (``step_columns``, ``gpu_columns``); the
``*_table`` functions give the same in pandas. Both accept a rank's events either way.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..kernels import CLASSES, classify_kernel
from .columns import Columns, as_columns

if TYPE_CHECKING:
    import pandas as pd

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver")
HOST_STEP_CATEGORIES = ("user_annotation", "cpu_op")
GPU_STEP_CATEGORY = "gpu_user_annotation"
_STEP = re.compile(r"^ProfilerStep\s*#\s*(\d{1,18})(?!\d)")  # 19+ digits: no real step, and no int64
#: Runtime calls that put work on a GPU stream (CUDA and HIP spellings): the launches that link to GPU activities
#: through their External id when a trace has no correlation ids.
LAUNCH_PATTERN = re.compile(
    r"^(?:cuda|hip)(?:LaunchKernel(?:ExC)?|LaunchCooperativeKernel\w*|ModuleLaunchKernel|ExtModuleLaunchKernel|"
    r"ExtLaunchKernel|ExtLaunchMultiKernelMultiDevice|GraphLaunch|Memcpy\w*|Memset\w*)$|^cuLaunchKernel(?:Ex)?$")


def step_number(name: str) -> int | None:
    """The N of a ``ProfilerStep#N`` name, else None."""
    m = _STEP.match(name)
    return int(m.group(1)) if m else None


def _step_rows(ev: Columns, cats: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``ProfilerStep#N`` events of the given categories: step, pid, start, end (in table order)."""
    idx = np.flatnonzero(ev.label_mask("cat", cats) & ev.label_mask("name", _STEP.match))
    names = ev.labels["name"]
    ts, dur = ev["ts"][idx], ev["dur"][idx]
    return {"step": np.array([step_number(names[c]) for c in ev["name"][idx]], dtype=np.int64),
            "pid": ev["pid"][idx], "start": ts, "end": ts + dur}


def step_columns(events: "Columns | pd.DataFrame") -> Columns:
    """Host-side profiler steps: step, start, end, dur (µs), one row per ``ProfilerStep#N`` (the first one seen
    of a number), by start time."""
    rows = _step_rows(as_columns(events), HOST_STEP_CATEGORIES)
    order = np.argsort(rows["start"], kind="stable")
    step = rows["step"][order]
    _, first = np.unique(step, return_index=True)
    keep = order[np.sort(first)]
    start, end = rows["start"][keep], rows["end"][keep]
    return Columns({"step": rows["step"][keep], "start": start, "end": end, "dur": end - start})


def step_table(events: "Columns | pd.DataFrame") -> "pd.DataFrame":
    """:func:`step_columns` as a pandas table."""
    return step_columns(events).to_frame()


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


def _first_match(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each wanted key, the position of its first occurrence in ``keys``, and whether there is one."""
    if len(keys) == 0:
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    low, high = int(keys.min()), int(keys.max())
    if high - low < 4 * len(keys) + 1024:  # dense ids (correlation ids count up): a lookup table, no sort
        first_at = np.full(high - low + 1, -1, dtype=np.int64)
        first_at[keys[::-1] - low] = np.arange(len(keys) - 1, -1, -1)  # the earliest write lands last
        inside = (wanted >= low) & (wanted <= high)
        pos = first_at[np.where(inside, wanted - low, 0)]
        found = inside & (pos >= 0)
        return np.where(found, pos, 0), found
    uniq, first = np.unique(keys, return_index=True)
    pos = np.minimum(np.searchsorted(uniq, wanted), len(uniq) - 1)
    return first[pos], uniq[pos] == wanted


def _link_by_external_id(ev: Columns, idx: np.ndarray, found: np.ndarray, launch: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Launches for GPU activities without a correlation match, through the ``External id`` they share with their
    launch call: PyTorch's ROCm traces may lack ``correlation`` (chakra#128). Within one External id (an operator
    that launched several kernels) the n-th activity by start time goes with the n-th launch call. Nothing to do,
    and no cost, when every activity was matched."""
    missing = np.flatnonzero(~found & (ev["external_id"][idx] >= 0))
    if len(missing) == 0:
        return found, launch
    ridx = np.flatnonzero(ev.label_mask("cat", RUNTIME_CATEGORIES) & ev.label_mask("name", LAUNCH_PATTERN.match)
                          & (ev["external_id"] >= 0))
    taken = set(launch[found].tolist())
    calls: dict[int, list[int]] = {}
    for r in ridx[np.argsort(ev["ts"][ridx], kind="stable")].tolist():
        if r not in taken:
            calls.setdefault(int(ev["external_id"][r]), []).append(r)
    found, launch = found.copy(), launch.copy()
    for i in missing[np.argsort(ev["ts"][idx[missing]], kind="stable")].tolist():
        queue = calls.get(int(ev["external_id"][idx[i]]))
        if queue:
            launch[i], found[i] = queue.pop(0), True
    return found, launch


def gpu_columns(events: "Columns | pd.DataFrame", host_steps: Columns | None = None) -> Columns:
    """GPU activities of one rank with their launch and step.

    Columns: name, cat, device (pid), stream, ts, dur, correlation, bytes, end, kclass (labels ``CLASSES``),
    launch_name (a code into the name labels, -1 for none), launch_ts, launch_dur, launch_tid, step. ``step`` comes
    from the GPU-side ``ProfilerStep#N`` annotation holding the activity when there is one, else from the step of
    the host call that launched it; -1 when neither is known. Where GPU-side step spans overlap, an activity
    inside two of them goes to the step that launched it (not to the later span). ``host_steps`` is the rank's
    :func:`step_columns` when the caller already has it.
    """
    ev = as_columns(events)
    names = ev.labels["name"]
    idx = np.flatnonzero(ev.label_mask("cat", GPU_CATEGORIES))
    codes = ev["name"][idx]
    ts, dur = ev["ts"][idx], ev["dur"][idx]
    correlation = ev["correlation"][idx]
    classes = np.zeros(len(names) + 1, dtype=np.int8)  # classified once per name the GPU ran; -1 lands on 0
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(names)))
    classes[used] = [CLASSES.index(classify_kernel(names[c])) for c in used]
    is_mem_cat = ev.label_mask("cat", ("gpu_memcpy", "gpu_memset"))[idx]
    data = {"name": codes, "cat": ev["cat"][idx], "device": ev["pid"][idx], "stream": ev["stream"][idx], "ts": ts,
            "dur": dur, "correlation": correlation, "bytes": ev["bytes"][idx], "end": ts + dur,
            "kclass": np.where(is_mem_cat, np.int8(CLASSES.index("memory")), classes[codes])}

    # launches: the first runtime/driver event with the same correlation id, else by External id
    ridx = np.flatnonzero(ev.label_mask("cat", RUNTIME_CATEGORIES) & (ev["correlation"] >= 0))
    where, found = _first_match(ev["correlation"][ridx], correlation)
    if len(ridx) == 0:  # no launch events (a slice that starts after them): none found
        found = np.zeros(len(idx), dtype=bool)
    launch = ridx[where] if len(ridx) else np.zeros(len(idx), dtype=np.int64)
    found, launch = _link_by_external_id(ev, idx, found, launch)
    if found.any():
        data["launch_name"] = np.where(found, ev["name"][launch], -1).astype(np.int32)
        data["launch_ts"] = np.where(found, ev["ts"][launch], np.nan)
        data["launch_dur"] = np.where(found, ev["dur"][launch], np.nan)
        data["launch_tid"] = np.where(found, ev["tid"][launch], -1)
    else:
        data["launch_name"] = np.full(len(idx), -1, dtype=np.int32)
        data["launch_ts"], data["launch_dur"] = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
        data["launch_tid"] = np.full(len(idx), -1)

    # steps: host steps for launches, GPU-side annotations where present
    host = step_columns(ev) if host_steps is None else host_steps
    launch_step = assign_steps(np.nan_to_num(data["launch_ts"], nan=-np.inf), host["start"], host["end"],
                               host["step"])
    step = launch_step
    gsteps = _step_rows(ev, (GPU_STEP_CATEGORY,))
    if len(gsteps["step"]):
        order = np.argsort(gsteps["start"], kind="stable")
        gsteps = {k: v[order] for k, v in gsteps.items()}
        on_gpu = np.full(len(idx), -1, dtype=np.int64)
        dev = data["device"]
        for device in dict.fromkeys(gsteps["pid"].tolist()):  # a few devices, in order of appearance
            rows = gsteps["pid"] == device
            sel = dev == device
            on_gpu[sel] = assign_overlapping_steps(ts[sel], gsteps["start"][rows], gsteps["end"][rows],
                                                   gsteps["step"][rows], launch_step[sel])
        step = np.where(on_gpu >= 0, on_gpu, launch_step)
    data["step"] = step
    return Columns(data, {"name": names, "cat": ev.labels["cat"], "kclass": list(CLASSES),
                          "launch_name": names})


def gpu_frame(gpu: Columns) -> "pd.DataFrame":
    """A :func:`gpu_columns` table in pandas: name, cat and kclass categoricals (names the rank's GPU ran),
    launch_name as text ("" for none)."""
    import pandas as pd

    names = gpu.labels["name"]
    data: dict[str, object] = {
        "name": pd.Categorical.from_codes(gpu["name"], categories=names).remove_unused_categories(),
        "cat": pd.Categorical.from_codes(gpu["cat"], categories=gpu.labels["cat"]),
    }
    for col in ("device", "stream", "ts", "dur", "correlation", "bytes", "end"):
        data[col] = gpu[col]
    data["kclass"] = pd.Categorical.from_codes(gpu["kclass"].astype(np.int8), categories=list(CLASSES))
    text = np.append(np.asarray(names, dtype=object), "")
    data["launch_name"] = pd.array(text[gpu["launch_name"]], dtype="str")  # -1 lands on the appended ""
    for col in ("launch_ts", "launch_dur", "launch_tid", "step"):
        data[col] = gpu[col]
    return pd.DataFrame(data, copy=False)


def gpu_table(events: "Columns | pd.DataFrame", host_steps: "pd.DataFrame | Columns | None" = None
              ) -> "pd.DataFrame":
    """:func:`gpu_columns` as a pandas table (see :func:`gpu_frame`)."""
    host = None if host_steps is None else as_columns(host_steps)
    return gpu_frame(gpu_columns(events, host))


def launched(gpu: "Columns | pd.DataFrame") -> np.ndarray:
    """Which GPU activities have a known host launch call."""
    names = as_columns(gpu)["launch_name"]
    return names >= 0 if names.dtype.kind in "iu" else names != ""


def launch_delays(gpu: "Columns | pd.DataFrame") -> np.ndarray:
    """The launch delay (µs) of every launched activity: GPU start minus the end of its host launch call."""
    g = as_columns(gpu)
    ok = launched(g)
    return g["ts"][ok] - g["launch_ts"][ok] - g["launch_dur"][ok]


def started_before_call(gpu: "Columns | pd.DataFrame") -> np.ndarray:
    """Which launched activities started on the GPU before their host call even began (in the order of
    :func:`launch_delays`): only these would show host and GPU clocks disagreeing."""
    g = as_columns(gpu)
    ok = launched(g)
    return g["ts"][ok] < g["launch_ts"][ok]


def launch_table(gpu: "Columns | pd.DataFrame") -> "pd.DataFrame":
    """Kernel launch delays (µs): the gap between the end of the host launch call and the start of the GPU work
    it enqueued, with the host call's own duration. Only launched activities.

    Not clipped at zero: a negative delay is GPU work that started before its launch call returned, a long or
    synchronous call (a blocking copy such as ``hipMemcpyWithStream``, a launch that waited) whose work began
    while it still ran; worth seeing, not clock skew (that would be work starting before its call began, see
    :func:`started_before_call`). HTA clips at zero; ``launch_delay.clip(lower=0)`` gives its numbers."""
    import pandas as pd

    g = as_columns(gpu)
    ok = launched(g)
    return pd.DataFrame({
        "correlation": g["correlation"][ok],
        "name": _texts(g, "name", ok),
        "kclass": _texts(g, "kclass", ok),
        "launch_name": _texts(g, "launch_name", ok),
        "step": g["step"][ok],
        "cpu_duration": g["launch_dur"][ok],
        "gpu_duration": g["dur"][ok],
        "launch_delay": launch_delays(g),
    })


def _texts(g: Columns, col: str, rows: np.ndarray) -> np.ndarray:
    """A column's values as text (labels looked up where it is coded)."""
    values = g[col][rows]
    if col not in g.labels:
        return values.astype(object)
    return np.append(np.asarray(g.labels[col], dtype=object), "")[values]
