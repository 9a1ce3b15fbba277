"""Why the GPU waited: every idle gap of the analysed window, with its cause.

The gaps are those of the temporal breakdown (:func:`lumikit.trace.metrics.temporal_breakdown`: the parts of
the GPU span with nothing running on the device), plus the time from the analysed window's start (its first
ProfilerStep) to the first GPU work (``before_gpu_us``: host work before any launch, such as preprocessing that
only ``python_function`` events record, is GPU idle time too). The causes add up to the temporal breakdown's idle
time plus that lead. Each gap gets one cause, decided in this order:

* **queued**: the work that ends the gap was launched before the gap began (its launch call had returned), so
  the host was not what the GPU waited for: a delay on the GPU side between kernels, or a wait on an event or
  another stream.
* **sync drain: CALL**: when the GPU ran out of work the host was inside a call that waits for the GPU (a
  device, stream or event synchronize, a blocking copy, or a copy between host and device), so it had queued
  nothing behind it: the queue ran dry. Removing the wait (``.item()``, ``.cpu()``, ``print(loss)`` in the loop)
  lets the host run ahead.
* **starved: ...**: the host was busy elsewhere and launched the next work late. Named after what took most
  of the gap on the host's threads (innermost event, its own time): *data loading* (inside a DataLoader
  iteration), *launch overhead* (in runtime launch calls), the CPU op itself (``aten::nonzero``), or *nothing
  traced* (no host event: Python between operators, or a thread the profiler did not record).

CUDA and HIP runtime names are read from the one table the trace analyses share
(:mod:`lumikit.trace.runtime_names`). Works on Kineto traces of either vendor, and on rocprofv3 databases read by
:func:`lumikit.rocprof.rocpd_events.rocpd_trace`; a trace without host events gives only *queued* and *starved:
nothing traced*.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import runtime_names as rn
from .columns import Columns
from .metrics import merge_intervals, temporal_breakdown
from .tables import RUNTIME_CATEGORIES, assign_steps, step_number

if TYPE_CHECKING:
    import pandas as pd

    from .analyses import TraceAnalyzer

#: The GPU side of a copy between host and device, as Kineto names it on CUDA and ROCm (and rocprofv3's
#: ``MEMORY_COPY_HOST_TO_DEVICE`` / ``MEMORY_COPY_DEVICE_TO_HOST`` in a rocpd database).
HOST_DEVICE_COPY = re.compile(r"HtoD|DtoH|Host\s*->\s*Device|Device\s*->\s*Host|Pinned|Pageable|"
                              r"HOST_TO_DEVICE|DEVICE_TO_HOST")
#: A DataLoader iteration, as torch.profiler records it, or a user annotation that says data loading.
DATA_LOADER = re.compile(r"^enumerate\(DataLoader\)|DataLoader.*__next__|(?i:\bdata[_ ]?load)")
#: Runtime calls in which the host waits for the GPU (an event query returns at once, so it is not one).
WAITING_KINDS = (rn.DEVICE_SYNC, rn.STREAM_SYNC, rn.EVENT_SYNC, rn.BLOCKING_COPY)
#: Runtime calls that put work on a stream: their time in a gap is launch overhead.
LAUNCHING_KINDS = (rn.LAUNCH, rn.ASYNC_COPY, rn.BLOCKING_COPY)

#: Host event categories whose time can explain a gap (``python_function`` stacks are left out: they nest
#: around the operators and would only repeat them).
HOST_CATEGORIES = ("cpu_op", "user_annotation") + RUNTIME_CATEGORIES
KINDS = ("sync drain", "starved", "queued")
QUEUED = "queued"
DATA_LOADING = "data loading"
LAUNCH_OVERHEAD = "launch overhead"
NOTHING_TRACED = "nothing traced"
#: Label codes of the host timeline shared by every trace; an op's own name gets a code after these.
_UNTRACED, _LOADING, _LAUNCH = 0, 1, 2


@dataclass
class IdleReport:
    """The idle gaps of one (rank, device) and their causes (µs); ``gaps`` start in trace µs."""

    rank: int
    device: int
    span_us: float
    idle_us: float
    causes: dict[str, float] = field(default_factory=dict)
    gaps: list[dict] = field(default_factory=list)
    before_gpu_us: float = 0.0  # from the window's start to the first GPU work (counted in span_us and idle_us)
    window_us: float | None = None  # the analysed steps' wall time (None without ProfilerSteps)

    @property
    def kinds(self) -> dict[str, float]:
        """Idle time (µs) per kind of cause: sync drain, starved, queued."""
        out = dict.fromkeys(KINDS, 0.0)
        for cause, us in self.causes.items():
            out[kind_of(cause)] += us
        return out

    def as_dict(self) -> dict:
        """JSON-ready: idle_us, span_us, causes (cause -> µs, largest first), kinds and the gaps."""
        return {"rank": self.rank, "device": self.device, "span_us": _r(self.span_us), "idle_us": _r(self.idle_us),
                "before_gpu_us": _r(self.before_gpu_us),
                "window_us": None if self.window_us is None else _r(self.window_us),
                "causes": {c: _r(v) for c, v in self.causes.items()},
                "kinds": {k: _r(v) for k, v in self.kinds.items()}, "gaps": self.gaps}


def kind_of(cause: str) -> str:
    """The kind of a cause: ``"sync drain: hipDeviceSynchronize"`` -> ``"sync drain"``."""
    return cause.split(":", 1)[0]


@dataclass
class _HostTimeline:
    """What the host was doing: per thread, disjoint segments with the label of their innermost event, and the
    calls that wait for the GPU (sorted by start)."""

    threads: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # (start, end, label code) per thread
    labels: list[str | None]  # None: nothing traced (a ProfilerStep's own time)
    wait_start: np.ndarray
    wait_end: np.ndarray
    wait_reach: np.ndarray  # running maximum of wait_end, to find the calls still running at a time
    wait_name: list[str]


def _host_device_correlations(gpu: Columns) -> np.ndarray:
    """Correlation ids of the GPU copies that go between host and device."""
    is_copy = gpu.label_mask("name", HOST_DEVICE_COPY.search)
    return np.unique(gpu["correlation"][is_copy & (gpu["correlation"] >= 0)])


def host_timeline(events: Columns, gpu: Columns, base: float) -> _HostTimeline:
    """The host side of a rank (times relative to ``base``), flattened to innermost events per thread."""
    names = events.labels["name"]
    host = np.flatnonzero(events.label_mask("cat", HOST_CATEGORIES))
    ts = events["ts"][host] - base
    end = ts + events["dur"][host]
    code = events["name"][host]
    kind = rn.kind_codes(names)  # per name code: what the runtime call does (rn.OTHER for any other event)
    # label codes per name, decided once per name
    loading = DATA_LOADER.search
    label_of: dict[int, int] = {}
    labels: list[str | None] = [None, DATA_LOADING, LAUNCH_OVERHEAD]  # by code: _UNTRACED, _LOADING, _LAUNCH
    loading_codes: set[int] = set()
    for c in np.unique(code).tolist():
        name = names[c]
        if loading(name):
            loading_codes.add(c)
        if step_number(name) is not None:  # a ProfilerStep's own time: Python between operators
            label_of[c] = _UNTRACED
        elif kind[c] in LAUNCHING_KINDS:
            label_of[c] = _LAUNCH
        else:
            label_of[c] = len(labels)
            labels.append(name)
    threads = []
    pid, tid = events["pid"][host], events["tid"][host]
    key = pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)
    for k in np.unique(key):
        rows = np.flatnonzero(key == k)
        order = rows[np.lexsort((-(end[rows] - ts[rows]), ts[rows]))]
        threads.append(_flatten(ts[order], end[order], code[order], label_of, loading_codes))

    # calls that wait for the GPU: synchronize, blocking copies, asynchronous copies between host and device
    waiting = np.isin(kind[code], WAITING_KINDS)
    async_copy = kind[code] == rn.ASYNC_COPY
    waiting |= async_copy & np.isin(events["correlation"][host], _host_device_correlations(gpu))
    waits = np.flatnonzero(waiting)
    order = waits[np.argsort(ts[waits], kind="stable")]
    w_start, w_end = ts[order], end[order]
    reach = np.maximum.accumulate(w_end) if len(w_end) else w_end
    return _HostTimeline(threads, labels, w_start, w_end, reach, [names[code[i]] for i in order.tolist()])


def _flatten(ts: np.ndarray, end: np.ndarray, code: np.ndarray, label_of: dict[int, int],
             loading_codes: set[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint segments of one thread's nested events (sorted by start, longest first), each labelled with its
    innermost event (``_LOADING`` anywhere inside a DataLoader iteration). A mis-nested event is cut at its
    parent's end."""
    seg_s: list[float] = []
    seg_e: list[float] = []
    seg_l: list[int] = []
    put_s, put_e, put_l = seg_s.append, seg_e.append, seg_l.append
    stack: list[tuple[float, int]] = []  # (end, label) of the open events, innermost last
    push, pop = stack.append, stack.pop
    t = -np.inf  # the time up to which segments are written
    for s, e, c in zip(ts.tolist(), end.tolist(), code.tolist()):
        while stack:  # close the events that ended by s, each writing its time up to its end
            top_end, top_label = stack[-1]
            if not top_end <= s:
                break
            if top_end > t:
                put_s(t)
                put_e(top_end)
                put_l(top_label)
                t = top_end
            pop()
        if stack:  # the enclosing event's time up to s
            top_end, top_label = stack[-1]
            if s > t:
                put_s(t)
                put_e(s)
                put_l(top_label)
            if top_end < e:
                e = top_end
            label = _LOADING if (c in loading_codes or top_label == _LOADING) else label_of[c]
        else:
            label = _LOADING if c in loading_codes else label_of[c]
        t = s
        push((e, label))
    while stack:
        top_end, top_label = pop()
        if top_end > t:
            put_s(t)
            put_e(top_end)
            put_l(top_label)
            t = top_end
    return np.array(seg_s), np.array(seg_e), np.array(seg_l, dtype=np.int64)


def _starved_label(host: _HostTimeline, g0: float, g1: float) -> str:
    """What took most of [g0, g1) on the host: the label with the most innermost time, or nothing traced."""
    totals: dict[int, float] = {}
    pieces_s, pieces_e = [], []
    for s, e, lab in host.threads:
        lo = int(np.searchsorted(e, g0, side="right"))
        hi = int(np.searchsorted(s, g1, side="left"))
        if hi <= lo:
            continue
        cs, ce = np.maximum(s[lo:hi], g0), np.minimum(e[lo:hi], g1)
        traced = lab[lo:hi] != _UNTRACED
        for code, length in zip(lab[lo:hi][traced].tolist(), (ce - cs)[traced].tolist()):
            totals[code] = totals.get(code, 0.0) + length
        pieces_s.append(cs[traced])
        pieces_e.append(ce[traced])
    covered = 0.0
    if pieces_s:
        ms, me = merge_intervals(np.concatenate(pieces_s), np.concatenate(pieces_e))
        covered = float((me - ms).sum())
    untraced = (g1 - g0) - covered
    if not totals or untraced >= max(totals.values()):
        return f"starved: {NOTHING_TRACED}"
    best = max(totals, key=lambda k: totals[k])
    return f"starved: {host.labels[best]}"


def _waiting_call(host: _HostTimeline, at: float) -> str | None:
    """The call that waits for the GPU and was running at ``at`` (the earliest begun), or None."""
    hi = int(np.searchsorted(host.wait_start, at, side="right"))  # begun by then
    lo = int(np.searchsorted(host.wait_reach, at, side="right"))  # earlier calls all ended by then
    for i in range(lo, hi):
        if host.wait_end[i] > at:
            return host.wait_name[i]
    return None


def _waiting_calls(host: _HostTimeline, at: np.ndarray) -> np.ndarray:
    """:func:`_waiting_call` for many times at once: the index (into ``host.wait_name``) of the call that waits
    for the GPU and was running at each time, -1: none. The first call not ended by then (``wait_reach``) is
    running, where it has begun: no loop, but for a call whose end is not a number (the loop, as before)."""
    out = np.full(len(at), -1, dtype=np.int64)
    if not len(host.wait_start) or not len(at):
        return out
    hi = np.searchsorted(host.wait_start, at, side="right")
    lo = np.searchsorted(host.wait_reach, at, side="right")
    begun = lo < hi
    running = begun & (host.wait_end[np.minimum(lo, len(host.wait_end) - 1)] > at)
    out[running] = lo[running]
    for i in np.flatnonzero(begun & ~running).tolist():  # a NaN end in reach: look call by call
        for j in range(int(lo[i]), int(hi[i])):
            if host.wait_end[j] > at[i]:
                out[i] = j
                break
    return out


def _starved_labels(host: _HostTimeline, g0: np.ndarray, g1: np.ndarray) -> list[str]:
    """:func:`_starved_label` for many gaps at once (sorted, disjoint), with the same answers: each label's
    innermost time per gap is summed in the same order (so ties go the same way); a gap whose traced and untraced
    time come within rounding of each other (or are not numbers) is decided by :func:`_starved_label` itself."""
    m = len(g0)
    if m == 0:
        return []
    gaps, codes, lows, highs = [], [], [], []
    for s, e, lab in host.threads:
        lo = np.searchsorted(e, g0, side="right")
        hi = np.searchsorted(s, g1, side="left")
        count = np.maximum(hi - lo, 0)
        total = int(count.sum())
        if not total:
            continue
        gap = np.repeat(np.arange(m), count)
        seg = np.arange(total) - np.repeat(np.cumsum(count) - count, count) + np.repeat(lo, count)
        traced = lab[seg] != _UNTRACED
        gap, seg = gap[traced], seg[traced]
        gaps.append(gap)
        codes.append(lab[seg])
        lows.append(np.maximum(s[seg], g0[gap]))
        highs.append(np.minimum(e[seg], g1[gap]))
    out = [f"starved: {NOTHING_TRACED}"] * m
    if not gaps:
        return out
    gap, code, cs, ce = (np.concatenate(x) for x in (gaps, codes, lows, highs))
    if not len(gap):
        return out
    # per (gap, label): the summed time (bincount adds in array order: thread by thread, as the loop does) and
    # where it first appeared (the loop's dict order, which breaks ties)
    key = gap * (len(host.labels) + 1) + code
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=ce - cs)
    u_gap, u_code = uniq // (len(host.labels) + 1), uniq % (len(host.labels) + 1)
    pick = np.lexsort((first, -sums, u_gap))
    head = np.ones(len(pick), dtype=bool)
    head[1:] = u_gap[pick][1:] != u_gap[pick][:-1]
    best_gap, best_code, best_sum = u_gap[pick][head], u_code[pick][head], sums[pick][head]
    # traced time of each gap: the union of its pieces over all threads (gaps are disjoint and sorted, so one
    # running maximum serves them all)
    order = np.lexsort((cs, gap))
    ps, pe, pg = cs[order], ce[order], gap[order]
    reach = np.maximum.accumulate(pe)
    new = np.ones(len(ps), dtype=bool)
    new[1:] = (ps[1:] > reach[:-1]) | (pg[1:] != pg[:-1])
    firsts = np.flatnonzero(new)
    lasts = np.append(firsts[1:] - 1, len(ps) - 1)
    covered = np.bincount(pg[firsts], weights=reach[lasts] - ps[firsts], minlength=m)
    length = g1[best_gap] - g0[best_gap]
    untraced = length - covered[best_gap]
    sure = np.abs(untraced - best_sum) > 1e-9 * np.abs(length) + 1e-12  # False for NaN too
    monotone = bool((g0[1:] >= g1[:-1]).all()) if m > 1 else True
    for j, (i, c) in enumerate(zip(best_gap.tolist(), best_code.tolist())):
        if not (monotone and sure[j]):
            out[i] = _starved_label(host, float(g0[i]), float(g1[i]))
        elif untraced[j] < best_sum[j]:
            out[i] = f"starved: {host.labels[c]}"
    return out


def idle_causes(analyzer: "TraceAnalyzer", rank: int) -> list[IdleReport]:
    """The idle gaps of a rank's analysed window (:meth:`TraceAnalyzer.window_columns`), one report per device,
    each gap with its cause (see the module docstring)."""
    window = analyzer.window_columns(rank)
    events = analyzer.trace[rank].columns
    steps = analyzer.step_columns(rank)
    devices = analyzer.devices(rank) or [-1]
    span = analyzer.analysed_window(rank)
    reports = []
    for device in devices:
        gpu = window if len(devices) <= 1 else window.take(window["device"] == device)
        report = _device_report(rank, device, gpu, events, steps, None if span is None else span[0])
        report.window_us = None if span is None else span[1] - span[0]
        reports.append(report)
    return reports


def _device_report(rank: int, device: int, gpu: Columns, events: Columns, steps: Columns,
                   window_start: float | None = None) -> IdleReport:
    """The gaps of one device; with ``window_start``, the time from it to the first GPU work is a gap too."""
    t = temporal_breakdown(gpu)
    report = IdleReport(rank, device, t["span_us"], t["idle_us"])
    if gpu.empty:
        return report
    base = float(gpu["ts"].min())  # the same base as the temporal breakdown: gaps add up to its idle time
    start = gpu["ts"] - base
    end = start + gpu["dur"]
    s, e = merge_intervals(start, end)
    g0, g1 = e[:-1], s[1:]
    lead = 0.0 if window_start is None else max(0.0, base - window_start)
    if lead > 0:  # the window's start to the first GPU work: idle too (the host had launched nothing yet)
        g0, g1 = np.append(-lead, g0), np.append(0.0, g1)
        report.before_gpu_us = lead
        report.span_us += lead
        report.idle_us += lead
    keep = g1 > g0
    g0, g1 = g0[keep], g1[keep]
    if len(g0) == 0:
        return report
    order = np.argsort(start, kind="stable")
    nxt = order[np.minimum(np.searchsorted(start[order], g1, side="left"), len(order) - 1)]  # the work ending it
    launch_end = gpu["launch_ts"][nxt] + gpu["launch_dur"][nxt] - base
    host = host_timeline(events, gpu, base)
    names = gpu.labels["name"]
    step = assign_steps(g0 + base, steps["start"], steps["end"], steps["step"])
    step_start = dict(zip(steps["step"].tolist(), steps["start"].tolist()))
    until = g1.copy()  # how far the host's doing is looked at: the gap's end, or the first launch for the lead gap
    if lead > 0:  # before the first GPU work: what the host did until it launched it
        launched = float(gpu["launch_ts"][nxt[0]]) - base
        until[0] = launched if g0[0] < launched < g1[0] else g1[0]
    queued = launch_end <= g0  # NaN (no launch) compares False
    call = _waiting_calls(host, g0)
    starved = np.flatnonzero(~queued & (call < 0))
    cause_of = np.array([QUEUED] * len(g0), dtype=object)
    drained = ~queued & (call >= 0)
    cause_of[drained] = [f"sync drain: {host.wait_name[c]}" for c in call[drained].tolist()]
    cause_of[starved] = _starved_labels(host, g0[starved], until[starved])
    causes: dict[str, float] = {}
    at, dur = g0 + base, g1 - g0
    for cause, d in zip(cause_of.tolist(), dur.tolist()):
        causes[cause] = causes.get(cause, 0.0) + d
    # the gaps' numbers rounded all at once (as _r rounds each), the time since each gap's step began where known
    steps_of, where = np.unique(step, return_inverse=True)
    known = np.array([int(k) in step_start for k in steps_of.tolist()], dtype=bool)[where.ravel()]
    begun = np.array([step_start.get(int(k), 0.0) for k in steps_of.tolist()], dtype=np.float64)[where.ravel()]
    since = _round3(at - begun)
    following = [names[c] for c in gpu["name"][nxt].tolist()]
    for i, (a, d, k, cause, nx, sn, kn) in enumerate(zip(_round3(at), _round3(dur), step.tolist(), cause_of.tolist(),
                                                         following, since, known.tolist())):
        report.gaps.append({"start_us": a, "dur_us": d, "step": int(k), "since_step_us": sn if kn else None,
                            "cause": cause, "next": nx, "before_first_gpu": bool(lead > 0 and i == 0)})
    report.causes = dict(sorted(causes.items(), key=lambda kv: -kv[1]))
    return report


def idle_report(analyzer: "TraceAnalyzer", ranks: list[int] | None = None) -> dict:
    """JSON-ready idle causes of every (or the given) rank: per rank and device, ``idle_us``, ``causes``
    (cause -> µs), ``kinds`` and ``gaps``; plus the window sentence."""
    chosen = analyzer.ranks if ranks is None else ranks
    return {"ranks": {str(r): {str(rep.device): rep.as_dict() for rep in idle_causes(analyzer, r)} for r in chosen},
            "window": analyzer.window_note()}


def idle_causes_table(analyzer: "TraceAnalyzer", ranks: list[int] | None = None) -> "pd.DataFrame":
    """One row per (rank, device, cause): ``kind``, ``idle_us``, ``share`` (of that device's idle time) and
    ``gaps`` (how many), largest first per device; the table a lesson shows."""
    import pandas as pd

    rows = []
    for rank in analyzer.ranks if ranks is None else ranks:
        for report in idle_causes(analyzer, rank):
            counts: dict[str, int] = {}
            for gap in report.gaps:
                counts[gap["cause"]] = counts.get(gap["cause"], 0) + 1
            for cause, us in report.causes.items():
                rows.append({"rank": rank, "device": report.device, "cause": cause, "kind": kind_of(cause),
                             "idle_us": _r(us), "share": _r(us / report.idle_us, 4) if report.idle_us else 0.0,
                             "gaps": counts.get(cause, 0)})
    return pd.DataFrame(rows, columns=["rank", "device", "cause", "kind", "idle_us", "share", "gaps"])


def _r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def _round3(values: np.ndarray) -> list[float]:
    """``[_r(v) for v in values]``, fast: a value that numpy's rounding leaves unchanged is already the double
    nearest a number of three decimals (below 1e12 in size), which Python's ``round`` returns as it is; the others
    go through ``round``."""
    values = np.asarray(values, dtype=np.float64)
    out = values.tolist()
    with np.errstate(invalid="ignore"):
        same = (np.round(values, 3) == values) & (np.abs(values) < 1e12)
    for i in np.flatnonzero(~same).tolist():
        out[i] = round(out[i], 3)
    return out
