"""The trace analyses, per rank and across ranks, behind one facade object with ``get_*`` methods (like HTA's).

``TraceAnalyzer(load_trace(path))`` answers: step times, kernel time by class and top kernels, temporal and
idle-time breakdowns, communication/computation overlap, kernel launch delays and the straggler rank. Every
``get_*`` method returns a pandas table; ``summary()`` gathers the headline numbers as plain JSON-ready values.
The analyses compute on numpy columns (:mod:`lumikit.trace.columns`) and import pandas only to hand a table out,
so ``summary()`` (and ``lumikit trace summary``) runs without it.

Two choices follow HTA so the numbers compare: by default the last ProfilerStep (often cut short when the profiler
stops) is left out of the analyses (``include_last_step=True`` keeps it), and a step's GPU work is the work its
host launched. Unlike HTA, time is measured per (rank, device): one process driving several GPUs
(``nn.DataParallel``) gets one row per device, and a warning, instead of a union that hides an idle device.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import numpy as np

from ..kernels import CLASSES
from .columns import Columns
from .loader import Trace, load_trace
from .metrics import comm_comp_overlap, idle_breakdown, temporal_breakdown, union_length
from .health import health_summary
from .tables import gpu_columns, gpu_frame, launch_delays, launch_table, started_before_call, step_columns

if TYPE_CHECKING:
    import pandas as pd

class TraceAnalyzer:
    """Analyses over a loaded :class:`~lumikit.trace.loader.Trace` (tables are derived once per rank)."""

    def __init__(self, trace: Trace, *, include_last_step: bool = False) -> None:
        self.trace = trace
        self.include_last_step = include_last_step
        self._gpu_cols: dict[int, Columns] = {}
        self._window_cols: dict[int, Columns] = {}
        self._step_cols: dict[int, Columns] = {}
        self._devices: dict[int, list[int]] = {}
        self._frames: dict[tuple[str, int], "pd.DataFrame"] = {}
        self._warned: set[int] = set()

    @classmethod
    def from_path(cls, path: Path | str, *, include_last_step: bool = False, **load_options) -> "TraceAnalyzer":
        """Load ``path`` (file or folder) with :func:`load_trace` and analyse it."""
        return cls(load_trace(path, **load_options), include_last_step=include_last_step)

    @property
    def ranks(self) -> list[int]:
        """The ranks of the trace, in increasing order."""
        return self.trace.rank_ids

    # -- per-rank tables (numpy columns, and the same in pandas) ---------------------------------------
    def gpu_columns(self, rank: int) -> Columns:
        """The GPU activities of a rank as numpy columns (see :func:`lumikit.trace.tables.gpu_columns`)."""
        if rank not in self._gpu_cols:
            self._gpu_cols[rank] = gpu_columns(self.trace[rank].columns, self.step_columns(rank))
            devices = self.devices(rank)
            if len(devices) > 1 and rank not in self._warned:
                self._warned.add(rank)
                warnings.warn(_many_devices(rank, devices), stacklevel=3)
        return self._gpu_cols[rank]

    def gpu(self, rank: int) -> "pd.DataFrame":
        """The GPU activity table of a rank, every activity (see :func:`lumikit.trace.tables.gpu_table`)."""
        return self._frame("gpu", rank, lambda: gpu_frame(self.gpu_columns(rank)))

    def devices(self, rank: int) -> list[int]:
        """The GPU devices (trace pids) that a rank's process drove, in increasing order."""
        if rank not in self._devices:
            table = self._gpu_cols.get(rank)
            if table is None:
                table = self.gpu_columns(rank)
            self._devices[rank] = distinct(table["device"])
        return self._devices[rank]

    def step_columns(self, rank: int) -> Columns:
        """The host-side profiler steps of a rank as numpy columns."""
        if rank not in self._step_cols:
            self._step_cols[rank] = step_columns(self.trace[rank].columns)
        return self._step_cols[rank]

    def steps(self, rank: int) -> "pd.DataFrame":
        """The host-side profiler steps of a rank."""
        return self._frame("steps", rank, lambda: self.step_columns(rank).to_frame())

    def dropped_step(self, rank: int) -> int | None:
        """The step left out of the analyses (the last one, as HTA does), or None when every step counts
        (``include_last_step=True``, or fewer than two steps)."""
        steps = self.step_columns(rank)
        if self.include_last_step or len(steps) < 2:
            return None
        return int(steps["step"][int(np.argmax(steps["start"]))])

    def _window_mask(self, rank: int) -> np.ndarray | None:
        """Which GPU activities the analyses count (None: all), as HTA's window: work launched from the host before
        the last ProfilerStep began (before it ended with ``include_last_step``). Work whose launch is not in the
        trace (kernels still running from before the profiler started, or a launch the profiler lost) does not
        count, wherever it runs: HTA keeps only GPU work whose correlation id matches a host call in the window."""
        steps = self.step_columns(rank)
        if len(steps) < 2:  # HTA filters nothing with fewer than two steps
            return None
        launch = self.gpu_columns(rank)["launch_ts"]
        end = float(steps["end"].max()) if self.include_last_step else float(steps["start"].max())
        mask = launch <= end if self.include_last_step else launch < end  # NaN (no launch) compares False
        return None if mask.all() else mask

    def analysed_window(self, rank: int) -> tuple[float, float] | None:
        """The host time the analyses count (trace µs): from the first analysed ProfilerStep's start to the last
        one's end; None without ProfilerSteps."""
        steps = self.step_columns(rank)
        dropped = self.dropped_step(rank)
        keep = steps["step"] != (dropped if dropped is not None else -1)
        if not keep.any():
            return None
        return float(steps["start"][keep].min()), float(steps["end"][keep].max())

    def coverage(self, rank: int) -> dict:
        """How much of the analysed window no traced op covers, and the time before its first GPU work
        (:func:`lumikit.trace.coverage.window_coverage`; the whole trace without ProfilerSteps)."""
        from .coverage import window_coverage

        ev = self.trace[rank].columns
        span = self.analysed_window(rank)
        if span is None:
            ts = ev["ts"]
            ok = np.isfinite(ts)
            span = (float(ts[ok].min()), float((ts + ev["dur"])[ok].max())) if ok.any() else (0.0, 0.0)
        return window_coverage(ev, *span)

    def window_columns(self, rank: int) -> Columns:
        """The GPU activities the analyses count, as numpy columns (see :meth:`window`)."""
        if rank not in self._window_cols:
            mask = self._window_mask(rank)
            gpu = self.gpu_columns(rank)
            self._window_cols[rank] = gpu if mask is None else gpu.take(mask)
        return self._window_cols[rank]

    def window(self, rank: int) -> "pd.DataFrame":
        """The GPU activities the analyses count: HTA's window (see :meth:`_window_mask`): without the last step's
        work unless ``include_last_step``, and without work whose launch is not in the trace."""
        def build() -> "pd.DataFrame":
            mask = self._window_mask(rank)
            return self.gpu(rank) if mask is None else self.gpu(rank)[mask]
        return self._frame("window", rank, build)

    def _frame(self, kind: str, rank: int, build) -> "pd.DataFrame":
        if (kind, rank) not in self._frames:
            self._frames[(kind, rank)] = build()
        return self._frames[(kind, rank)]

    def _selected(self, rank: int, steps: Iterable[int] | None) -> Columns:
        if steps is None:
            return self.window_columns(rank)
        gpu = self.gpu_columns(rank)
        return gpu.take(np.isin(gpu["step"], list(steps)))

    # -- steps -----------------------------------------------------------------------------------------
    def get_profiler_steps(self) -> list[int]:
        """Every ProfilerStep number seen on any rank."""
        found: set[int] = set()
        for r in self.ranks:
            found.update(int(s) for s in self.step_columns(r)["step"])
        return sorted(found)

    def step_times(self, rank: int) -> dict[str, np.ndarray]:
        """One rank's :meth:`get_step_times` as numpy columns."""
        steps = self.step_columns(rank)
        gpu = self.gpu_columns(rank)
        step, ts, end = gpu["step"], gpu["ts"], gpu["end"]
        numbers = steps["step"]
        masks = [step == s for s in numbers]
        dropped = self.dropped_step(rank)
        return {"step": numbers, "start_us": steps["start"], "dur_us": steps["dur"],
                "gpu_busy_us": np.array([union_length(ts[m], end[m]) for m in masks], dtype=float),
                "gpu_activities": np.array([int(m.sum()) for m in masks], dtype=np.int64),
                "analysed": numbers != (dropped if dropped is not None else -1)}

    def get_step_times(self) -> "pd.DataFrame":
        """Per rank and step: host start and duration (µs), GPU busy time and GPU activity count in the step."""
        import pandas as pd

        frames = [pd.DataFrame({"rank": r, **self.step_times(r)}) for r in self.ranks]
        return _concat(frames, ["rank", "step", "start_us", "dur_us", "gpu_busy_us", "gpu_activities", "analysed"])

    # -- kernels ---------------------------------------------------------------------------------------
    def kernel_breakdown(self, rank: int, steps: Iterable[int] | None = None) -> dict[str, tuple[float, int]]:
        """One rank's time (µs, summed durations) and count per class (compute / communication / memory)."""
        gpu = self._selected(rank, steps)
        dur, codes = gpu["dur"], gpu["kclass"].astype(np.intp)
        totals = np.bincount(codes, weights=dur, minlength=len(CLASSES))
        counts = np.bincount(codes, minlength=len(CLASSES))
        return {k: (float(totals[i]), int(counts[i])) for i, k in enumerate(CLASSES)}

    def get_kernel_breakdown(self, steps: Iterable[int] | None = None) -> "pd.DataFrame":
        """Per rank and class (compute / communication / memory): total time (µs, summed durations), count, share."""
        import pandas as pd

        rows = []
        for r in self.ranks:
            by_class = self.kernel_breakdown(r, steps)
            total = float(self._selected(r, steps)["dur"].sum())
            for k, (t, n) in by_class.items():
                rows.append({"rank": r, "kclass": k, "total_us": t, "count": n, "fraction": t / total if total else 0.0})
        return pd.DataFrame(rows, columns=["rank", "kclass", "total_us", "count", "fraction"])

    def top_kernels(self, rank: int, n: int = 10, steps: Iterable[int] | None = None) -> dict[str, np.ndarray]:
        """One rank's :meth:`get_top_kernels` as numpy columns (name, kclass, count, total_us, mean_us, fraction)."""
        gpu = self._selected(rank, steps)
        dur = gpu["dur"]
        names = gpu.labels["name"]
        key = gpu["name"].astype(np.int64) * len(CLASSES) + gpu["kclass"]
        sums = np.bincount(key, weights=dur)
        counts = np.bincount(key)
        present = np.flatnonzero(counts)
        best = present[np.argsort(-sums[present], kind="stable")][:n]
        total = float(dur.sum())
        return {"name": np.array([str(names[k // len(CLASSES)]) for k in best], dtype=object),
                "kclass": np.array([CLASSES[k % len(CLASSES)] for k in best], dtype=object),
                "count": counts[best], "total_us": sums[best], "mean_us": sums[best] / counts[best],
                "fraction": sums[best] / total if total else np.zeros(len(best))}

    def get_top_kernels(self, n: int = 10, steps: Iterable[int] | None = None) -> "pd.DataFrame":
        """The ``n`` GPU activities with the most total time on each rank."""
        import pandas as pd

        frames = [pd.DataFrame({"rank": r, **self.top_kernels(r, n, steps)}) for r in self.ranks]
        return _concat(frames, ["rank", "name", "kclass", "count", "total_us", "mean_us", "fraction"])

    # -- time breakdowns -------------------------------------------------------------------------------
    def temporal(self, rank: int, steps: Iterable[int] | None = None) -> list[dict]:
        """One rank's :meth:`get_temporal_breakdown` rows, one per device."""
        rows = []
        for device, gpu in _by_device(self._selected(rank, steps), self.devices(rank)):
            t = temporal_breakdown(gpu)
            span = t["span_us"]
            rows.append({"rank": rank, "device": device, **t,
                         **{f"{k}_fraction": (t[f"{k}_us"] / span if span else 0.0)
                            for k in ("idle", "compute", "non_compute")}})
        return rows

    def get_temporal_breakdown(self, steps: Iterable[int] | None = None) -> "pd.DataFrame":
        """Per rank and device: span, idle, compute and non-compute time (µs) and their fractions of the span."""
        import pandas as pd

        rows = [row for r in self.ranks for row in self.temporal(r, steps)]
        return pd.DataFrame(rows, columns=["rank", "device", "span_us", "idle_us", "compute_us", "non_compute_us",
                                           "idle_fraction", "compute_fraction", "non_compute_fraction"])

    def get_idle_time_breakdown(self, steps: Iterable[int] | None = None,
                                consecutive_kernel_delay: float = 30.0) -> "pd.DataFrame":
        """Per rank, device and stream: idle time waiting for the host, between kernels, and other (µs)."""
        frames = []
        for r in self.ranks:
            table = idle_breakdown(self._selected(r, steps), consecutive_kernel_delay)
            table.insert(0, "rank", r)
            frames.append(table)
        return _concat(frames, ["rank", "device", "stream", "host_wait_us", "kernel_wait_us", "other_us"])

    def get_idle_causes(self) -> "pd.DataFrame":
        """Per rank, device and cause: GPU idle time (µs) of the window and its share of the idle time; why the GPU
        waited (see :mod:`lumikit.trace.idle`)."""
        import pandas as pd

        from .idle import idle_causes, kind_of

        rows = [{"rank": r, "device": rep.device, "kind": kind_of(cause), "cause": cause, "idle_us": us,
                 "fraction": us / rep.idle_us if rep.idle_us else 0.0}
                for r in self.ranks for rep in idle_causes(self, r) for cause, us in rep.causes.items()]
        return pd.DataFrame(rows, columns=["rank", "device", "kind", "cause", "idle_us", "fraction"])

    def overlap(self, rank: int, steps: Iterable[int] | None = None) -> dict[int, float]:
        """One rank's communication/computation overlap per device (NaN without communication)."""
        return {d: comm_comp_overlap(g) for d, g in _by_device(self._selected(rank, steps), self.devices(rank))}

    def get_comm_comp_overlap(self, steps: Iterable[int] | None = None) -> "pd.DataFrame":
        """Per rank and device: the share of communication time overlapped by computation (NaN without
        communication)."""
        import pandas as pd

        return pd.DataFrame([{"rank": r, "device": d, "overlap": v} for r in self.ranks
                             for d, v in self.overlap(r, steps).items()], columns=["rank", "device", "overlap"])

    # -- launches and stragglers -----------------------------------------------------------------------
    def get_kernel_launch_delays(self, steps: Iterable[int] | None = None) -> "pd.DataFrame":
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
        gpu = self.gpu_columns(rank)
        comm = gpu.label_mask("kclass", ("communication",))
        step, dur = gpu["step"], gpu["dur"]
        steps = self.step_columns(rank)
        return [{"rank": rank, "step": s, "dur_us": float(d), "comm_us": float(dur[comm & (step == s)].sum())}
                for s, d in zip(steps["step"].tolist(), steps["dur"].tolist())]

    def get_stragglers(self) -> "pd.DataFrame":
        """Per rank: mean step time, mean communication time per step, and how often it was the straggler.

        In a synchronous job every rank waits in the collectives for the slowest one, so the straggler of a
        step is the rank that spent the least time in communication kernels (it arrived last and waited least);
        without communication, the rank with the longest step.
        """
        return straggler_table([row for r in self.ranks for row in self.straggler_rows(r)], self.ranks)

    def get_straggler(self) -> int | None:
        """The rank most often found to be the straggler, or None (one rank, or no step on several ranks)."""
        return straggler_rank([row for r in self.ranks for row in self.straggler_rows(r)], self.ranks)

    # -- collectives and memory ----------------------------------------------------------------------
    def get_collectives(self) -> "pd.DataFrame":
        """One row per RCCL/NCCL kernel: collective, bytes, group size, algorithm and bus bandwidth (GB/s)
        (see :mod:`lumikit.trace.comms`; reads the files again for the communication args)."""
        from .comms import collective_table

        return collective_table(self.trace)

    def get_collective_bandwidth(self, site=None) -> "pd.DataFrame":
        """Per rank and collective: calls, bytes, time and bus bandwidth, as a share of each link speed of the
        site profile (``site``: a name, a :class:`~lumikit.site.Site`, or None for LUMI's figures)."""
        from ..site import load_site
        from .comms import collective_summary

        return collective_summary(self.get_collectives(), load_site(site or "lumi").links)

    # -- headline numbers ------------------------------------------------------------------------------
    def rank_summary(self, rank: int, top: int = 10) -> dict:
        """One rank's headline numbers (an entry of :meth:`summary`'s ``ranks``), from numpy columns only."""
        rt = self.trace[rank]
        gpu = self.gpu_columns(rank)
        window = self.window_columns(rank)
        steps = self.step_times(rank)
        kinds = self.kernel_breakdown(rank)
        tops = self.top_kernels(rank, top)
        overlap = self.overlap(rank)
        devices = {}
        for tb in self.temporal(rank):
            ov = overlap[tb["device"]]
            devices[str(tb["device"])] = {
                "temporal": {"span_us": _r(tb["span_us"]), "idle": _r(tb["idle_fraction"], 4),
                             "compute": _r(tb["compute_fraction"], 4),
                             "non_compute": _r(tb["non_compute_fraction"], 4)},
                "comm_comp_overlap": None if math.isnan(ov) else _r(ov, 4),
            }
        one = next(iter(devices.values())) if len(devices) == 1 else None
        coverage = self.coverage(rank)
        return {
            "window_us": coverage["window_us"],
            "coverage": coverage,
            "file": str(rt.path),
            "truncated": rt.truncated,
            "events": int(rt.n_events),
            "gpu_activities": int(len(gpu)),
            "gpu_activities_in_steps": int((gpu["step"] >= 0).sum()),
            "gpu_activities_analysed": int(len(window)),
            "gpu_activities_unlaunched": int(np.isnan(gpu["launch_ts"]).sum()),  # out of a window of 2+ steps
            "dropped_step": self.dropped_step(rank),
            "streams": distinct(gpu["stream"]),
            "steps": [{"step": int(s), "dur_us": _r(d), "gpu_busy_us": _r(b), "gpu_activities": int(n),
                       "analysed": bool(a)}
                      for s, d, b, n, a in zip(steps["step"], steps["dur_us"], steps["gpu_busy_us"],
                                               steps["gpu_activities"], steps["analysed"])],
            "kernel_time_us": {k: _r(t) for k, (t, _) in kinds.items()},
            "top_kernels": [{"name": name, "class": kclass, "count": int(count), "total_us": _r(total)}
                            for name, kclass, count, total in zip(tops["name"], tops["kclass"], tops["count"],
                                                                  tops["total_us"])],
            # rank-level figures only where the rank drove one device; otherwise read "devices"
            "temporal": one["temporal"] if one else None,
            "comm_comp_overlap": one["comm_comp_overlap"] if one else None,
            "devices": devices,
            "launch_delays": launch_delay_summary(launch_delays(window), int(started_before_call(window).sum())),
            "warnings": [_many_devices(rank, self.devices(rank))] if len(devices) > 1 else [],
            "vs_hta": hta_difference(int(rt.columns.label_mask("cat", ("cuda_sync",)).sum())),
            **health_summary(self, rank),  # left_out_unlaunched, and the trace check's one line (or None)
        }

    def summary(self, top: int = 10) -> dict:
        """JSON-ready headline numbers per rank: step times, kernel totals by class (µs), top kernels, the
        idle / compute / non-compute fractions and overlap per device, launch delays; plus the straggler rank
        and a ``window`` sentence that says which steps were counted."""
        ranks = {str(r): self.rank_summary(r, top) for r in self.ranks}
        return {"ranks": ranks, "straggler": self.get_straggler(), "window": self.window_note()}

    def window_note(self) -> str:
        """One sentence on which steps the analyses counted, and how that compares with HTA."""
        return window_note(self.include_last_step, max((len(self.step_columns(r)) for r in self.ranks), default=0))


def distinct(values: np.ndarray) -> list[int]:
    """The distinct integers of an id column (devices, streams), in increasing order."""
    if len(values) == 0:
        return []
    low = int(values.min())
    if int(values.max()) - low < 1 << 16:  # small ids: count them (no sort)
        return (np.flatnonzero(np.bincount(values - low)) + low).tolist()
    return sorted(set(values.tolist()))


def window_note(include_last_step: bool, steps: int | None = None) -> str:
    """One sentence on which steps the analyses counted, and how that compares with HTA; ``steps`` (the most
    ProfilerSteps of any rank) under two: nothing is left out, and the sentence says so."""
    if steps is not None and steps < 2:
        return (f"{'one ProfilerStep' if steps else 'no ProfilerStep'}: the whole trace is analysed, nothing left "
                "out (no last step, and GPU work whose launch call is not in the trace counts too, as HTA filters "
                "nothing with fewer than two steps)")
    before = ("; GPU work whose launch call is not in the trace (still running from before the profiler started, "
              "or its launch lost) is left out wherever it runs, as HTA does")
    if include_last_step:
        return ("every ProfilerStep counted, the last one too (HTA leaves the last step out unless "
                "include_last_profiler_step=True)" + before)
    return ("the last ProfilerStep of each rank left out, as HTA does (it is often cut short when the profiler "
            "stops); include_last_step=True (command line: --include-last-step) counts it" + before)


def hta_difference(cuda_sync_rows: int) -> str | None:
    """The one sentence on where the default window's idle share differs from HTA's temporal breakdown, and why;
    None where it does not (the window is HTA's)."""
    if cuda_sync_rows == 0:
        return None
    return (f"HTA's temporal breakdown counts this trace's {cuda_sync_rows} cuda_sync rows (the host waiting in a "
            f"synchronize, drawn on a GPU stream) as GPU time and lumikit does not, so HTA's span can be longer "
            f"and its idle share lower")


def straggler_counts(rows: list[dict], ranks: list[int]) -> dict[int, int]:
    """How many steps each rank was the straggler of, from :meth:`TraceAnalyzer.straggler_rows` of every rank
    (they may come from separate processes). Steps seen on one rank only do not count."""
    by_step: dict[object, list[dict]] = {}
    for row in rows:
        by_step.setdefault(row["step"], []).append(row)
    counts = dict.fromkeys(ranks, 0)
    for group in by_step.values():
        if len(group) < 2:
            continue
        if all(g["comm_us"] > 0 for g in group):
            pick = min(group, key=lambda g: _or(g["comm_us"], math.inf))
        else:
            pick = max(group, key=lambda g: _or(g["dur_us"], -math.inf))
        counts[int(pick["rank"])] += 1
    return counts


def straggler_rank(rows: list[dict], ranks: list[int]) -> int | None:
    """The rank most often the straggler (the lowest such rank on a tie), or None when no step has one."""
    counts = straggler_counts(rows, ranks)
    best = max(counts.values(), default=0)
    return None if best == 0 else next(r for r in ranks if counts[r] == best)


def straggler_table(rows: list[dict], ranks: list[int]) -> "pd.DataFrame":
    """Mean step and communication time per rank and its straggler count, from
    :meth:`TraceAnalyzer.straggler_rows` of every rank (they may come from separate processes)."""
    import pandas as pd

    table = pd.DataFrame(rows, columns=["rank", "step", "dur_us", "comm_us"])
    counts = straggler_counts(rows, ranks)
    agg = table.groupby("rank").agg(mean_step_us=("dur_us", "mean"), mean_comm_us=("comm_us", "mean"))
    agg = agg.reindex(ranks)
    agg["straggler_steps"] = [counts[r] for r in ranks]
    return agg.reset_index().rename(columns={"index": "rank"})


def straggler_of(table: "pd.DataFrame") -> int | None:
    """The rank with the most straggler steps in a :func:`straggler_table`, or None."""
    if table.empty or table["straggler_steps"].max() == 0:
        return None
    return int(table.loc[table["straggler_steps"].idxmax(), "rank"])


def launch_delay_summary(delays: np.ndarray, before_call: int = 0) -> dict:
    """Launch delays (µs, see :func:`lumikit.trace.tables.launch_delays`) in a few numbers: median and p95, how
    many are negative and how many of those started even before their call began (``before_call``, from
    :func:`lumikit.trace.tables.started_before_call`).

    A negative delay is GPU work that started before its host call returned: a long or synchronous call (a
    blocking ``hipMemcpy``/``cudaMemcpy``, ``hipMemcpyWithStream``, a launch that waited for a queue slot) whose
    GPU work began while it was still running. That is not clock skew; only work that started before its call
    *began* would be (none did on the real traces we checked)."""
    delay = np.sort(np.asarray(delays, dtype=float))
    delay = delay[np.isfinite(delay)]  # a launch or a kernel without a usable time has no delay
    if len(delay) == 0:
        return {"count": 0, "median_us": None, "p95_us": None, "negative": 0, "min_us": None,
                "before_call": int(before_call)}
    return {"count": int(len(delay)), "median_us": _r(median(delay)), "p95_us": _r(quantile(delay, 0.95)),
            "negative": int((delay < 0).sum()), "min_us": _r(delay.min()), "before_call": int(before_call)}


def quantile(ordered: np.ndarray, q: float) -> float:
    """``np.quantile(ordered, q)`` of sorted values (linear interpolation, the same float result), without
    importing ``numpy.ma`` as ``np.percentile`` does on first use (a tenth of a fresh summary's import time)."""
    if len(ordered) == 0 or np.isnan(ordered[-1]):
        return float("nan")
    index = (len(ordered) - 1) * q
    lo = int(np.floor(index))
    hi = min(lo + 1, len(ordered) - 1)
    gamma = index - lo
    a, b = ordered[lo], ordered[hi]
    return float(b - (b - a) * (1 - gamma) if gamma >= 0.5 else a + (b - a) * gamma)


def median(ordered: np.ndarray) -> float:
    """``np.median`` of sorted values (the mean of the middle two for an even count)."""
    n = len(ordered)
    if n == 0 or np.isnan(ordered[-1]):
        return float("nan")
    return float(ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)


def _many_devices(rank: int, devices: list[int]) -> str:
    return (f"rank {rank}: one process drove {len(devices)} GPU devices {devices} (nn.DataParallel or several "
            f"GPUs per process); its times are measured per device, a union would hide an idle one. "
            f"DistributedDataParallel with one process per GCD is the layout LUMI expects")


def _by_device(gpu: Columns, devices: list[int]):
    """(device, that device's rows) for every device the rank drove, even one with no row in ``gpu``."""
    dev = gpu["device"]
    for d in devices or [-1]:
        yield d, (gpu if len(devices) <= 1 else gpu.take(dev == d))


def _r(value: float, digits: int = 3) -> float | None:
    """``value`` rounded for a JSON-ready summary; None where it is NaN or infinite (a damaged time)."""
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def _or(value: float, default: float) -> float:
    return default if value != value else value  # NaN sorts as the default


def _concat(frames: list["pd.DataFrame"], columns: list[str]) -> "pd.DataFrame":
    import pandas as pd

    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
