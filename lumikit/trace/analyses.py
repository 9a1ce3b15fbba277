"""The trace analyses, per rank and across ranks, behind one facade object with ``get_*`` methods (like HTA's).

``TraceAnalyzer(load_trace(path))`` answers: step times, kernel time by class and top kernels, temporal and
idle-time breakdowns, communication/computation overlap, kernel launch delays and the straggler rank. Every method
returns a pandas table; ``summary()`` gathers the headline numbers as plain JSON-ready values.

Two choices follow HTA so the numbers compare: by default the last ProfilerStep (often cut short when the profiler
stops) is left out of the analyses (``include_last_step=True`` keeps it), and a step's GPU work is the work its
host launched. Unlike HTA, time is measured per (rank, device): one process driving several GPUs
(``nn.DataParallel``) gets one row per device, and a warning, instead of a union that hides an idle device.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .loader import Trace, load_trace
from .metrics import comm_comp_overlap, idle_breakdown, temporal_breakdown, union_length
from .tables import gpu_table, launch_table, step_table

CLASSES = ("compute", "communication", "memory")


class TraceAnalyzer:
    """Analyses over a loaded :class:`~lumikit.trace.loader.Trace` (tables are derived once per rank)."""

    def __init__(self, trace: Trace, *, include_last_step: bool = False) -> None:
        self.trace = trace
        self.include_last_step = include_last_step
        self._gpu: dict[int, pd.DataFrame] = {}
        self._window: dict[int, pd.DataFrame] = {}
        self._steps: dict[int, pd.DataFrame] = {}
        self._warned: set[int] = set()

    @classmethod
    def from_path(cls, path: Path | str, *, include_last_step: bool = False, **load_options) -> "TraceAnalyzer":
        """Load ``path`` (file or folder) with :func:`load_trace` and analyse it."""
        return cls(load_trace(path, **load_options), include_last_step=include_last_step)

    @property
    def ranks(self) -> list[int]:
        """The ranks of the trace, in increasing order."""
        return self.trace.rank_ids

    def gpu(self, rank: int) -> pd.DataFrame:
        """The GPU activity table of a rank, every activity (see :func:`lumikit.trace.tables.gpu_table`)."""
        if rank not in self._gpu:
            self._gpu[rank] = gpu_table(self.trace[rank].events, self.steps(rank))
            devices = self.devices(rank)
            if len(devices) > 1 and rank not in self._warned:
                self._warned.add(rank)
                warnings.warn(_many_devices(rank, devices), stacklevel=2)
        return self._gpu[rank]

    def devices(self, rank: int) -> list[int]:
        """The GPU devices (trace pids) that a rank's process drove, in increasing order."""
        table = self._gpu.get(rank)
        if table is None:
            table = self.gpu(rank)
        return sorted(int(d) for d in pd.unique(table["device"]))

    def dropped_step(self, rank: int) -> int | None:
        """The step left out of the analyses (the last one, as HTA does), or None when every step counts
        (``include_last_step=True``, or fewer than two steps)."""
        steps = self.steps(rank)
        if self.include_last_step or len(steps) < 2:
            return None
        return int(steps.loc[steps["start"].idxmax(), "step"])

    def window(self, rank: int) -> pd.DataFrame:
        """The GPU activities the analyses count: without the last step's work unless ``include_last_step``
        (work launched from the host before the last ProfilerStep began; unlaunched work that started before it)."""
        if rank not in self._window:
            gpu = self.gpu(rank)
            if self.dropped_step(rank) is None:
                self._window[rank] = gpu
            else:
                last = float(self.steps(rank)["start"].max())
                launch = gpu["launch_ts"].to_numpy()
                when = np.where(np.isnan(launch), gpu["ts"].to_numpy(), launch)
                self._window[rank] = gpu[when < last]
        return self._window[rank]

    def steps(self, rank: int) -> pd.DataFrame:
        """The host-side profiler steps of a rank."""
        if rank not in self._steps:
            self._steps[rank] = step_table(self.trace[rank].events)
        return self._steps[rank]

    def _selected(self, rank: int, steps: Iterable[int] | None) -> pd.DataFrame:
        if steps is None:
            return self.window(rank)
        gpu = self.gpu(rank)
        return gpu[gpu["step"].isin(list(steps))]

    # -- steps -----------------------------------------------------------------------------------------
    def get_profiler_steps(self) -> list[int]:
        """Every ProfilerStep number seen on any rank."""
        found: set[int] = set()
        for r in self.ranks:
            found.update(int(s) for s in self.steps(r)["step"])
        return sorted(found)

    def get_step_times(self) -> pd.DataFrame:
        """Per rank and step: host start and duration (µs), GPU busy time and GPU activity count in the step."""
        frames = []
        for r in self.ranks:
            steps = self.steps(r)
            gpu = self.gpu(r)
            step, ts, end = gpu["step"].to_numpy(), gpu["ts"].to_numpy(), gpu["end"].to_numpy()
            numbers = steps["step"].to_numpy()
            masks = [step == s for s in numbers]
            frames.append(pd.DataFrame({
                "rank": r, "step": numbers, "start_us": steps["start"].to_numpy(), "dur_us": steps["dur"].to_numpy(),
                "gpu_busy_us": [union_length(ts[m], end[m]) for m in masks],
                "gpu_activities": [int(m.sum()) for m in masks],
                "analysed": numbers != (self.dropped_step(r) if self.dropped_step(r) is not None else -1),
            }))
        return _concat(frames, ["rank", "step", "start_us", "dur_us", "gpu_busy_us", "gpu_activities", "analysed"])

    # -- kernels ---------------------------------------------------------------------------------------
    def get_kernel_breakdown(self, steps: Iterable[int] | None = None) -> pd.DataFrame:
        """Per rank and class (compute / communication / memory): total time (µs, summed durations), count, share."""
        rows = []
        for r in self.ranks:
            gpu = self._selected(r, steps)
            dur, codes = gpu["dur"].to_numpy(), gpu["kclass"].cat.codes.to_numpy()
            totals = np.bincount(codes, weights=dur, minlength=len(CLASSES))
            counts = np.bincount(codes, minlength=len(CLASSES))
            total = float(dur.sum())
            for i, k in enumerate(CLASSES):
                t = float(totals[i])
                rows.append({"rank": r, "kclass": k, "total_us": t, "count": int(counts[i]),
                             "fraction": t / total if total else 0.0})
        return pd.DataFrame(rows, columns=["rank", "kclass", "total_us", "count", "fraction"])

    def get_top_kernels(self, n: int = 10, steps: Iterable[int] | None = None) -> pd.DataFrame:
        """The ``n`` GPU activities with the most total time on each rank."""
        frames = []
        for r in self.ranks:
            gpu = self._selected(r, steps)
            dur = gpu["dur"].to_numpy()
            names = gpu["name"].cat.categories
            key = gpu["name"].cat.codes.to_numpy().astype(np.int64) * len(CLASSES) + gpu["kclass"].cat.codes.to_numpy()
            sums = np.bincount(key, weights=dur)
            counts = np.bincount(key)
            present = np.flatnonzero(counts)
            best = present[np.argsort(-sums[present], kind="stable")][:n]
            total = float(dur.sum())
            frames.append(pd.DataFrame({
                "rank": r, "name": np.array([str(names[k // len(CLASSES)]) for k in best], dtype=object),
                "kclass": np.array([CLASSES[k % len(CLASSES)] for k in best], dtype=object),
                "count": counts[best], "total_us": sums[best], "mean_us": sums[best] / counts[best],
                "fraction": sums[best] / total if total else 0.0,
            }))
        return _concat(frames, ["rank", "name", "kclass", "count", "total_us", "mean_us", "fraction"])

    # -- time breakdowns -------------------------------------------------------------------------------
    def get_temporal_breakdown(self, steps: Iterable[int] | None = None) -> pd.DataFrame:
        """Per rank and device: span, idle, compute and non-compute time (µs) and their fractions of the span."""
        rows = []
        for r in self.ranks:
            for device, gpu in _by_device(self._selected(r, steps), self.devices(r)):
                t = temporal_breakdown(gpu)
                span = t["span_us"]
                rows.append({"rank": r, "device": device, **t,
                             **{f"{k}_fraction": (t[f"{k}_us"] / span if span else 0.0)
                                for k in ("idle", "compute", "non_compute")}})
        return pd.DataFrame(rows, columns=["rank", "device", "span_us", "idle_us", "compute_us", "non_compute_us",
                                           "idle_fraction", "compute_fraction", "non_compute_fraction"])

    def get_idle_time_breakdown(self, steps: Iterable[int] | None = None,
                                consecutive_kernel_delay: float = 30.0) -> pd.DataFrame:
        """Per rank, device and stream: idle time waiting for the host, between kernels, and other (µs)."""
        frames = []
        for r in self.ranks:
            table = idle_breakdown(self._selected(r, steps), consecutive_kernel_delay)
            table.insert(0, "rank", r)
            frames.append(table)
        return _concat(frames, ["rank", "device", "stream", "host_wait_us", "kernel_wait_us", "other_us"])

    def get_comm_comp_overlap(self, steps: Iterable[int] | None = None) -> pd.DataFrame:
        """Per rank and device: the share of communication time overlapped by computation (NaN without
        communication)."""
        return pd.DataFrame([{"rank": r, "device": d, "overlap": comm_comp_overlap(g)} for r in self.ranks
                             for d, g in _by_device(self._selected(r, steps), self.devices(r))],
                            columns=["rank", "device", "overlap"])

    # -- launches and stragglers -----------------------------------------------------------------------
    def get_kernel_launch_delays(self, steps: Iterable[int] | None = None) -> pd.DataFrame:
        """Per launched GPU activity: launch call, its duration, the GPU duration and the launch delay (µs)."""
        frames = []
        for r in self.ranks:
            table = launch_table(self._selected(r, steps))
            table.insert(0, "rank", r)
            frames.append(table)
        return _concat(frames, ["rank", "correlation", "name", "kclass", "launch_name", "step", "cpu_duration",
                                "gpu_duration", "launch_delay"])

    def straggler_rows(self, rank: int) -> list[dict]:
        """Per step of a rank: its host duration and its communication kernel time (µs), what
        :func:`straggler_table` compares across ranks."""
        gpu = self.gpu(rank)
        comm = (gpu["kclass"] == "communication").to_numpy()
        step, dur = gpu["step"].to_numpy(), gpu["dur"].to_numpy()
        steps = self.steps(rank)
        return [{"rank": rank, "step": s, "dur_us": float(d), "comm_us": float(dur[comm & (step == s)].sum())}
                for s, d in zip(steps["step"].to_numpy().tolist(), steps["dur"].to_numpy().tolist())]

    def get_stragglers(self) -> pd.DataFrame:
        """Per rank: mean step time, mean communication time per step, and how often it was the straggler.

        In a synchronous job every rank waits in the collectives for the slowest one, so the straggler of a
        step is the rank that spent the least time in communication kernels (it arrived last and waited least);
        without communication, the rank with the longest step.
        """
        return straggler_table([row for r in self.ranks for row in self.straggler_rows(r)], self.ranks)

    def get_straggler(self) -> int | None:
        """The rank most often found to be the straggler, or None (one rank, or no step on several ranks)."""
        return straggler_of(self.get_stragglers())

    # -- collectives and memory ----------------------------------------------------------------------
    def get_collectives(self) -> pd.DataFrame:
        """One row per RCCL/NCCL kernel: collective, bytes, group size, algorithm and bus bandwidth (GB/s)
        (see :mod:`lumikit.trace.comms`; reads the files again for the communication args)."""
        from .comms import collective_table

        return collective_table(self.trace)

    def get_collective_bandwidth(self, site=None) -> pd.DataFrame:
        """Per rank and collective: calls, bytes, time and bus bandwidth, as a share of each link speed of the
        site profile (``site``: a name, a :class:`~lumikit.site.Site`, or None for LUMI's figures)."""
        from ..site import load_site
        from .comms import collective_summary

        return collective_summary(self.get_collectives(), load_site(site or "lumi").links)

    # -- headline numbers ------------------------------------------------------------------------------
    def summary(self, top: int = 10) -> dict:
        """JSON-ready headline numbers per rank: step times, kernel totals by class (µs), top kernels, the
        idle / compute / non-compute fractions and overlap per device, launch delays; plus the straggler rank
        and a ``window`` sentence that says which steps were counted."""
        steps = self.get_step_times()
        kinds = self.get_kernel_breakdown()
        tops = self.get_top_kernels(top)
        temporal = self.get_temporal_breakdown()
        overlap = self.get_comm_comp_overlap()
        ranks = {}
        for r in self.ranks:
            rt = self.trace[r]
            gpu = self.gpu(r)
            s = steps[steps["rank"] == r]
            k = kinds[kinds["rank"] == r]
            t = tops[tops["rank"] == r]
            devices = {}
            for tb, ov in zip(temporal[temporal["rank"] == r].itertuples(), overlap[overlap["rank"] == r].itertuples()):
                devices[str(tb.device)] = {
                    "temporal": {"span_us": _r(tb.span_us), "idle": _r(tb.idle_fraction, 4),
                                 "compute": _r(tb.compute_fraction, 4), "non_compute": _r(tb.non_compute_fraction, 4)},
                    "comm_comp_overlap": None if np.isnan(ov.overlap) else _r(ov.overlap, 4),
                }
            one = next(iter(devices.values())) if len(devices) == 1 else None
            ranks[str(r)] = {
                "file": str(rt.path),
                "truncated": rt.truncated,
                "events": int(rt.n_events),
                "gpu_activities": int(len(gpu)),
                "gpu_activities_in_steps": int((gpu["step"] >= 0).sum()),
                "gpu_activities_analysed": int(len(self.window(r))),
                "dropped_step": self.dropped_step(r),
                "streams": sorted(int(x) for x in gpu["stream"].unique()),
                "steps": [{"step": int(row.step), "dur_us": _r(row.dur_us), "gpu_busy_us": _r(row.gpu_busy_us),
                           "gpu_activities": int(row.gpu_activities), "analysed": bool(row.analysed)}
                          for row in s.itertuples()],
                "kernel_time_us": {row.kclass: _r(row.total_us) for row in k.itertuples()},
                "top_kernels": [{"name": row.name, "class": row.kclass, "count": int(row.count),
                                 "total_us": _r(row.total_us)} for row in t.itertuples()],
                # rank-level figures only where the rank drove one device; otherwise read "devices"
                "temporal": one["temporal"] if one else None,
                "comm_comp_overlap": one["comm_comp_overlap"] if one else None,
                "devices": devices,
                "launch_delays": launch_delay_summary(launch_table(self.window(r))),
                "warnings": [_many_devices(r, self.devices(r))] if len(devices) > 1 else [],
            }
        return {"ranks": ranks, "straggler": self.get_straggler(), "window": self.window_note()}

    def window_note(self) -> str:
        """One sentence on which steps the analyses counted, and how that compares with HTA."""
        if self.include_last_step:
            return ("every ProfilerStep counted, the last one too (HTA leaves the last step out unless "
                    "include_last_profiler_step=True)")
        return ("the last ProfilerStep of each rank left out, as HTA does (it is often cut short when the profiler "
                "stops); include_last_step=True (command line: --include-last-step) counts it")


def straggler_table(rows: list[dict], ranks: list[int]) -> pd.DataFrame:
    """Mean step and communication time per rank and its straggler count, from
    :meth:`TraceAnalyzer.straggler_rows` of every rank (they may come from separate processes)."""
    table = pd.DataFrame(rows, columns=["rank", "step", "dur_us", "comm_us"])
    counts = dict.fromkeys(ranks, 0)
    for _, g in table.groupby("step"):
        if len(g) < 2:
            continue
        if (g["comm_us"] > 0).all():
            counts[int(g.loc[g["comm_us"].idxmin(), "rank"])] += 1
        else:
            counts[int(g.loc[g["dur_us"].idxmax(), "rank"])] += 1
    agg = table.groupby("rank").agg(mean_step_us=("dur_us", "mean"), mean_comm_us=("comm_us", "mean"))
    agg = agg.reindex(ranks)
    agg["straggler_steps"] = [counts[r] for r in ranks]
    return agg.reset_index().rename(columns={"index": "rank"})


def straggler_of(table: pd.DataFrame) -> int | None:
    """The rank with the most straggler steps in a :func:`straggler_table`, or None."""
    if table.empty or table["straggler_steps"].max() == 0:
        return None
    return int(table.loc[table["straggler_steps"].idxmax(), "rank"])


def launch_delay_summary(launches: pd.DataFrame) -> dict:
    """Launch delays in a few numbers: median and p95 (µs), and how many are negative: the GPU work started
    before its host launch call ended, which on ROCm shows clock skew between host and GPU timestamps."""
    delay = launches["launch_delay"].to_numpy(dtype=float)
    if len(delay) == 0:
        return {"count": 0, "median_us": None, "p95_us": None, "negative": 0, "min_us": None}
    return {"count": int(len(delay)), "median_us": _r(np.median(delay)), "p95_us": _r(np.percentile(delay, 95)),
            "negative": int((delay < 0).sum()), "min_us": _r(delay.min())}


def _many_devices(rank: int, devices: list[int]) -> str:
    return (f"rank {rank}: one process drove {len(devices)} GPU devices {devices} (nn.DataParallel or several "
            f"GPUs per process); its times are measured per device, a union would hide an idle one. "
            f"DistributedDataParallel with one process per GCD is the layout LUMI expects")


def _by_device(gpu: pd.DataFrame, devices: list[int]):
    """(device, that device's rows) for every device the rank drove, even one with no row in ``gpu``."""
    dev = gpu["device"].to_numpy()
    for d in devices or [-1]:
        yield d, (gpu if len(devices) <= 1 else gpu[dev == d])


def _r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
