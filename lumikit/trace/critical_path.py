"""The critical path of a step, ROCm-correct, with what-ifs: which work the step's time waited on, and what a
faster kernel or CPU op would save.

The step's dependency graph is built once from the loader's columns: two nodes per event (start, end), and edges

* along each CPU thread, through nested ops (an op's self time is ``cpu_bound``; the time inside a blocking call
  carries no weight where the call waited for GPU work, as in HTA). The step's launching threads are the window's
  annotations' thread, else every thread of the process that launched the most GPU work that launched any (a
  rocpd database or an unannotated trace: forward and backward often launch from two threads). The time in which
  none of them is in a traced op (a gap between top-level ops that no other launching thread's op covers, the
  time from the window's first event to their first op) and the own time of the window's annotations
  (``ProfilerStep#N``: Python between operators, work recorded only as ``python_function``, or nothing at all) are
  ``host_untraced``: time the step spent on the host that no op accounts for (HTA gives it no weight;
  ``count_untraced_host=False`` does the same). Other gaps weigh nothing (a forward thread while the autograd
  thread runs, an autograd thread between backward passes, a loader thread: waiting);
* from a launch call to its GPU work (matched by correlation id, else External id). Whether the stream was idle at
  the launch is decided against every GPU activity of that (device, stream) in the whole trace, not only the
  window's. Idle: ``gpu_kernel_launch_overhead``, the time from the call to the work, up to HTA's 1.5 ms. Busy with
  work on the graph: the gap after it (``gpu_kernel_kernel_overhead``, up to 1.5 ms). Busy with work that is not
  on the graph (launched before the window, or whose launch is not in the trace): ``gpu_queue_wait`` from the call
  to the work, labelled. A longer wait is looked up on the device's other streams: work that ended just before
  (within 1.5 ms) gives a zero-weight edge (inferred, labelled "waited on GPU work on another stream"), or
  ``gpu_queue_wait`` where that work is not on the graph; with nothing to explain it, the wait is
  ``unexplained_wait`` (labelled, never launch overhead). Every launched activity also has a zero-weight edge from
  its launch call (HTA's), so no what-if lets work start before its launch. The GPU work itself is
  ``gpu_compute_bound`` or ``gpu_communication_bound``;
* from GPU work to the host call that waited for it (device, stream and event syncs, blocking copies) and from GPU
  work to GPU work on another stream (stream-wait-event), all of zero weight: the path runs through the GPU work
  a sync waited for. Kineto's ``cuda_sync`` events give these edges on CUDA traces (as HTA reads them); ROCm
  traces have none, and their sync calls carry no stream or event, so the stream of a ``hipStreamSynchronize`` is
  the launching thread's last stream and the event of a ``hipStreamWaitEvent`` its last ``hipEventRecord``: such
  edges are counted and labelled as inferred.

The longest path runs over the nodes in topological order (time order; a general topological sort only where
clock skew puts an edge backwards in time). A what-if divides the weight of the matching kernels' or CPU ops'
edges and runs the longest path again on the same graph.
"""
from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import TraceError
from ..kernels import classify_kernel
from . import runtime_names as rn
from .columns import Columns
from .coverage import DATA_LOADING as COVERAGE_DATA_LOADING, describe_coverage, window_coverage
from .tables import (GPU_CATEGORIES, HOST_STEP_CATEGORIES, RUNTIME_CATEGORIES, _first_match, _link_by_external_id,
                     step_columns, step_number)

if TYPE_CHECKING:
    import pandas as pd

    from .analyses import TraceAnalyzer

#: Edge categories, with HTA's names where they mean the same (the first six); ``gpu_queue_wait`` (GPU work waited
#: for GPU work the graph does not hold), ``unexplained_wait`` (GPU work waited on nothing the trace shows) and
#: ``host_untraced`` (host time in which no launching thread of the step is in a traced op) are lumikit's; the last
#: two carry no weight.
CATEGORIES = ("cpu_bound", "data_loading", "gpu_compute_bound", "gpu_communication_bound",
              "gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead", "gpu_queue_wait", "unexplained_wait",
              "host_untraced", "dependency", "sync")
(CPU, DATA, COMPUTE, COMM, LAUNCH_OH, KK_OH, QUEUE_WAIT, UNEXPLAINED, HOST_UNTRACED, DEPENDENCY,
 SYNC) = range(len(CATEGORIES))
BOUND_BY = CATEGORIES[:9]
CPU_CATEGORIES = ("cpu_op",) + RUNTIME_CATEGORIES
#: Host annotations that count as data loading (their self time is ``data_loading``, not ``cpu_bound``).
DATA_LOADING = COVERAGE_DATA_LOADING
#: A longer gap after the previous activity on a busy stream, or from an idle stream's launch to its work, is a
#: dependency the trace does not show (HTA's threshold, µs): no kernel-kernel or launch-overhead edge is drawn
#: across it.
KERNEL_KERNEL_MAX_GAP_US = 1500.0
#: Work that starts this long (µs) after both its launch returned and its stream was free waited for something else:
#: the device's other streams are searched for work that ended at most this long before it started.
LATE_START_US = 50.0
#: Labels of the waits on GPU work that the graph does not hold (``gpu_queue_wait``, ``unexplained_wait``).
QUEUED_BEFORE_WINDOW = "queued behind GPU work launched before the window"
QUEUED_UNLAUNCHED = "queued behind GPU work whose launch is not in the trace"
OTHER_STREAM_OFF_GRAPH = "waited on GPU work on another stream, outside the window"
OTHER_STREAM = "waited on GPU work on another stream (no event wait read)"
UNEXPLAINED_LABEL = ("waited over 1.5 ms on nothing the trace shows (its stream was free and no work on another "
                     "stream ended just before it)")
GRAPH_WAIT_LABEL = "work of a graph launch waited over 1.5 ms on a dependency inside the graph"


@dataclass
class StepGraph:
    """The dependency graph of one window: nodes 2i (start) and 2i+1 (end) of event i, and edges as arrays."""

    rows: np.ndarray  # event i -> row of the rank's table
    node_ts: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    category: np.ndarray  # index into CATEGORIES
    event: np.ndarray  # the event an edge's time belongs to (-1: none)
    scalable: np.ndarray  # weight is an event's own time (what a what-if divides)
    parent: np.ndarray  # the enclosing CPU op of each event (-1: none; GPU work has none)
    sync_edges: int = 0
    inferred_edges: int = 0
    inferred: Counter = field(default_factory=Counter)
    mode: str = ""
    order: np.ndarray | None = None  # edges in topological order of their destination
    wait_labels: list[str] = field(default_factory=list)  # the labels of gpu_queue_wait / unexplained_wait edges
    wait_label: np.ndarray | None = None  # per edge: index into wait_labels (-1: not a labelled wait)

    def longest_path(self, weight: np.ndarray | None = None) -> tuple[float, list[int]]:
        """The length (µs) and the edges (in order) of the longest path, with ``weight`` in place of the
        graph's own weights."""
        w = self.weight if weight is None else weight
        if self.order is None:
            self.order = _topological_edges(self.src, self.dst, self.node_ts, len(self.node_ts)).astype(
                index_dtype(len(self.src)), copy=False)
        order = self.order
        n = len(self.node_ts)
        dist = array("d", bytes(8 * n))  # compact: one machine double per node, not a Python float
        pred = array("q", b"\xff" * (8 * n))  # -1
        for lo in range(0, len(order), _CHUNK):  # edges a slice at a time: no full copies of the edge columns
            part = order[lo:lo + _CHUNK]
            for e, s, d, x in zip(_ints(part), _ints(self.src[part]), _ints(self.dst[part]), _floats(w[part])):
                c = dist[s] + x
                if c > dist[d]:
                    dist[d] = c
                    pred[d] = e
        if not n:
            return 0.0, []
        node = int(np.argmax(np.frombuffer(dist, dtype=np.float64)))
        length = dist[node]
        path = []
        while pred[node] >= 0:
            e = pred[node]
            path.append(e)
            node = int(self.src[e])
        path.reverse()
        return float(length), path


#: Edges per slice of the longest-path loop.
_CHUNK = 1 << 16


def index_dtype(largest: int) -> type:
    """The integer type of the graph's node and edge indices: int32 while they fit (half the memory of a graph of
    millions of edges), int64 beyond; times and weights stay float64."""
    return np.int32 if largest < 2**31 - 1 else np.int64


def _ints(values: np.ndarray) -> array:
    """A numpy int64 array as a stdlib array (iterates as fast as a list, at 8 bytes an item)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def _floats(values: np.ndarray) -> array:
    """A numpy float64 array as a stdlib array (see :func:`_ints`)."""
    out = array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def _topological_edges(src: np.ndarray, dst: np.ndarray, node_ts: np.ndarray, n: int) -> np.ndarray:
    """Edge indices sorted by the topological position of their destination: time order (end before start at
    equal times, then node number), or a general topological sort where an edge runs backwards in that order."""
    end_first = np.tile(np.array([1, 0], dtype=np.int8), n // 2 + 1)[:n]  # node 2i+1 (an end) sorts first
    pos = np.empty(n, dtype=index_dtype(n))
    pos[np.lexsort((end_first, node_ts))] = np.arange(n, dtype=pos.dtype)  # lexsort is stable: node number last
    if len(src) and not (pos[src] < pos[dst]).all():
        pos = _kahn(src, dst, n, pos)
    return np.argsort(pos[dst], kind="stable")


def _kahn(src: np.ndarray, dst: np.ndarray, n: int, hint: np.ndarray) -> np.ndarray:
    """Topological positions by Kahn's algorithm (ties in ``hint`` order); a cycle is a trace we cannot use."""
    import heapq

    indeg = np.bincount(dst, minlength=n).tolist()
    order = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    outs = dst[order].tolist()
    h = hint.tolist()
    heap = [(h[v], v) for v in range(n) if indeg[v] == 0]
    heapq.heapify(heap)
    pos = np.full(n, -1, dtype=np.int64)
    k = 0
    while heap:
        _, v = heapq.heappop(heap)
        pos[v] = k
        k += 1
        for d in outs[starts[v]:starts[v + 1]]:
            indeg[d] -= 1
            if indeg[d] == 0:
                heapq.heappush(heap, (h[d], d))
    if k < n:
        raise TraceError(f"the step's dependency graph has a cycle ({n - k} events in it): the trace's timestamps "
                         f"contradict its launches and syncs; record the trace again")
    return pos


@dataclass(frozen=True)
class Window:
    """The time window analysed (trace µs, inclusive), what chose it, and the rows of the annotations that define
    it (``ProfilerStep#N`` or the chosen annotation; none for the whole trace)."""

    start: float
    end: float
    label: str
    rows: tuple[int, ...] = ()


def choose_window(ev: Columns, annotation: str | None = None, instance: int | tuple[int, int] | None = None,
                  include_last_step: bool = False) -> Window:
    """The window: instance ``instance`` (or a range) of the host annotations whose name contains ``annotation``
    (as HTA's ``annotation``/``instance_id``), else the profiler steps of the default window (the last step left
    out, as HTA and ``trace summary`` do), else the whole trace."""
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    if ev.empty or not np.isfinite(ts).any():
        raise TraceError("no complete events (ph \"X\") with a time in this trace: nothing to put on a path; "
                         "profile at least one step with torch.profiler")
    if annotation:
        rows = np.flatnonzero(ev.label_mask("cat", ("user_annotation", "cpu_op"))
                              & ev.label_mask("name", lambda s: annotation in s))
        if len(rows) == 0:
            raise TraceError(f"no annotation containing {annotation!r} in this trace; give a name from the "
                             f"trace's user annotations (ProfilerStep, record_function blocks)")
        first, last = (0, 0) if instance is None else (instance if isinstance(instance, tuple) else
                                                        (instance, instance))
        if not 0 <= first <= last < len(rows):
            raise TraceError(f"annotation {annotation!r}: instance {first if first == last else (first, last)} "
                             f"is not in the trace (instances 0 to {len(rows) - 1})")
        chosen = rows[first:last + 1]
        return Window(float(ts[chosen].min()), float(end[chosen].max()),
                      f"{annotation!r} instance {first}" + (f"-{last}" if last != first else ""),
                      tuple(chosen.tolist()))
    steps = step_columns(ev)
    if len(steps) == 0:
        return Window(float(np.nanmin(ts)), float(np.nanmax(end)), "the whole trace (no ProfilerStep)")
    order = np.argsort(steps["start"], kind="stable")
    if len(order) > 1 and not include_last_step:
        order = order[:-1]
    numbers = steps["step"][order]
    label = f"ProfilerStep#{numbers[0]}" + (f"-#{numbers[-1]}" if len(numbers) > 1 else "")
    start, stop = float(steps["start"][order].min()), float(steps["end"][order].max())
    wanted = set(numbers.tolist())
    rows = np.flatnonzero(ev.label_mask("cat", HOST_STEP_CATEGORIES)
                          & ev.label_mask("name", lambda s: step_number(s) in wanted)
                          & (ts >= start) & (end <= stop))
    return Window(start, stop, label, tuple(rows.tolist()))


def _backward_thread_map(ev: Columns, cpu: np.ndarray) -> dict[tuple[int, int], tuple[int, int]]:
    """HTA's thread merge: when exactly one thread has ``forward`` ops and exactly one other ``autograd`` ops,
    the backward thread's ops join the forward thread's chain (backward runs while forward waits)."""
    def threads(word: str) -> set[tuple[int, int]]:
        rows = cpu[ev.label_mask("name", lambda s: word in s)[cpu]]
        return set(zip(ev["pid"][rows].tolist(), ev["tid"][rows].tolist()))
    fwd, bwd = threads("forward"), threads("autograd")
    if len(fwd) == 1 and len(bwd) == 1 and fwd != bwd:
        return {next(iter(bwd)): next(iter(fwd))}
    return {}


class _Builder:
    """Collects edges as lists while the graph is built (one append per edge)."""

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.cat: list[int] = []
        self.event: list[int] = []
        self.zero: list[bool] = []

    def add(self, s: int, d: int, cat: int, event: int = -1, zero: bool = False) -> None:
        self.src.append(s)
        self.dst.append(d)
        self.cat.append(cat)
        self.event.append(event)
        self.zero.append(zero)


def build_graph(ev: Columns, window: Window, data_loading: re.Pattern = DATA_LOADING, *,
                count_untraced_host: bool = True) -> StepGraph:
    """The dependency graph of ``window`` from a rank's event table (see the module docstring);
    ``count_untraced_host=False`` gives untraced host time no weight, as HTA does."""
    names = ev.labels["name"]
    ts, dur = ev["ts"], ev["dur"]
    kinds = np.append(rn.kind_codes(names), np.int8(rn.OTHER))[ev["name"]]
    in_window = (ts >= window.start) & (ts <= window.end) & (dur > 0)
    is_rt = ev.label_mask("cat", RUNTIME_CATEGORIES)
    is_data = ev.label_mask("cat", ("user_annotation",)) & ev.label_mask("name", data_loading.search)
    cpu_rows = np.flatnonzero((ev.label_mask("cat", CPU_CATEGORIES) | is_data) & in_window)
    if len(cpu_rows) == 0:
        raise TraceError(f"no CPU ops or runtime calls in the window ({window.label}); pick another window "
                         f"(--annotation NAME --instance K)")
    notes = np.array(window.rows, dtype=np.int64)  # the window's annotations: their own time is untraced host time
    notes = notes[(dur[notes] > 0) & np.isfinite(ts[notes])] if count_untraced_host else notes[:0]
    cpu_rows = np.union1d(cpu_rows, notes)

    # GPU work whose launch call is in the window (HTA's window), joined by correlation, else External id
    gidx = np.flatnonzero(ev.label_mask("cat", GPU_CATEGORIES))
    ridx = np.flatnonzero(is_rt & (ev["correlation"] >= 0))
    if len(ridx) and len(gidx):
        where, found = _first_match(ev["correlation"][ridx], ev["correlation"][gidx])
        launch = ridx[where]
    else:
        found, launch = np.zeros(len(gidx), bool), np.zeros(len(gidx), np.int64)
    found, launch = _link_by_external_id(ev, gidx, found, launch)
    selected = np.zeros(len(ts), dtype=bool)
    selected[cpu_rows] = True
    gpu_keep = found & selected[launch]
    gpu_rows, launch_rows = gidx[gpu_keep], launch[gpu_keep]

    rows = np.concatenate([cpu_rows, gpu_rows])
    n_cpu, n_gpu = len(cpu_rows), len(gpu_rows)
    local = np.full(len(ts), -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    start_ts = ts[rows].astype(np.float64)
    end_ts = start_ts + dur[rows]
    b = _Builder()
    blocking = np.isin(kinds[cpu_rows], list(rn.BLOCKING_KINDS)) & is_rt[cpu_rows]

    # -- CPU threads: nested ops, one chain per thread ---------------------------------------------------------
    remap = _backward_thread_map(ev, cpu_rows)
    pid, tid = ev["pid"][cpu_rows].copy(), ev["tid"][cpu_rows].copy()
    for (p0, t0), (p1, t1) in remap.items():
        moved = (pid == p0) & (tid == t0)
        pid[moved], tid[moved] = p1, t1
    order = np.lexsort((-dur[cpu_rows], start_ts[:n_cpu], tid, pid))
    new_thread = np.ones(n_cpu, dtype=bool)
    new_thread[1:] = (pid[order][1:] != pid[order][:-1]) | (tid[order][1:] != tid[order][:-1])
    seq, attr, parent, en = _thread_chains(order, new_thread, start_ts[:n_cpu], end_ts[:n_cpu], len(rows))
    end_ts[:n_cpu] = en
    c_src, c_dst, c_attr = seq[:-1], seq[1:], attr[1:]
    first = _first_nodes(seq, order, new_thread)
    keep = ~first[1:]
    c_src, c_dst, c_attr = c_src[keep], c_dst[keep], c_attr[keep]
    data = _inherit(np.append(is_data[cpu_rows], np.zeros(n_gpu, dtype=bool)), parent)
    note = np.zeros(len(rows), dtype=bool)
    note[local[notes]] = True
    # a gap in which none of the step's launching threads is in a traced op is untraced host time; a gap on one of
    # them while another is busy (forward waiting for an autograd thread) and a gap on any other thread (a
    # data-loader thread) is waiting and weighs nothing
    thread_key = pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)
    launching = np.isin(thread_key, _main_threads(thread_key, local[notes], local[launch_rows])) \
        if count_untraced_host else np.zeros(n_cpu, dtype=bool)
    u_src, u_dst = _untraced_gaps(launching, parent[:n_cpu], start_ts[:n_cpu], end_ts[:n_cpu])
    n_nodes = 2 * len(rows)
    gap_cat = np.where(np.isin(c_src * n_nodes + c_dst, u_src * n_nodes + u_dst), HOST_UNTRACED, DEPENDENCY)
    attr = np.maximum(c_attr, 0)
    c_cat = np.where(c_attr < 0, gap_cat, np.where(note[attr], HOST_UNTRACED,
                                                   np.where(data[attr], DATA, CPU))).astype(np.int8)
    into_end = (c_dst & 1) == 1
    c_zero = (c_attr < 0) & (gap_cat == DEPENDENCY)
    # the time inside a blocking call weighs nothing where the call waited for GPU work (a sync edge leads into its
    # end, below): the path runs through that work instead, as in HTA
    c_blocking_end = into_end & np.append(blocking, np.zeros(n_gpu, dtype=bool))[c_dst // 2]
    # the time from the window's first event to the launching threads' first op is untraced host time too, and so
    # is a gap that one launching thread ends and another begins (from the op that ended last to the next one)
    openers = order[new_thread]
    if count_untraced_host and len(openers) > 1:
        origin = int(openers[np.argmin(start_ts[openers])])
        late_threads = openers[launching[openers]]
        late_threads = late_threads[np.argsort(start_ts[late_threads], kind="stable")[:1]]  # the first to start
        late_threads = late_threads[late_threads != origin]
        across = thread_key[u_src // 2] != thread_key[u_dst // 2]
        c_src = np.concatenate([c_src, np.full(len(late_threads), 2 * origin), u_src[across]])
        c_dst = np.concatenate([c_dst, 2 * late_threads, u_dst[across]])
        added = len(c_src) - len(c_attr)
        c_attr = np.append(c_attr, np.full(added, -1))
        c_cat = np.append(c_cat, np.full(added, HOST_UNTRACED)).astype(np.int8)
        c_zero = np.append(c_zero, np.zeros(added, dtype=bool))
        c_blocking_end = np.append(c_blocking_end, np.zeros(added, dtype=bool))

    # the thread walk's intermediates are not needed any more (a few arrays of two items per op each)
    del seq, attr, en, first, keep, order, new_thread, thread_key, launching, data, note, pid, tid, into_end, gap_cat
    del selected, in_window, is_data

    # -- GPU streams: each activity, its launch or the gap after the previous one ---------------------------
    g = np.arange(n_cpu, n_cpu + n_gpu)
    g_dev, g_stream = ev["pid"][gpu_rows], ev["stream"][gpu_rows]
    g_start, g_end = start_ts[n_cpu:], end_ts[n_cpu:]
    g_launch = local[launch_rows]
    g_launch_ts = start_ts[g_launch]
    # the activity before each one on its (device, stream) in the whole trace, wherever (or whether) it was launched
    before = _previous_on_stream(ev, gidx)[gpu_keep]
    has_before = before >= 0
    safe = np.maximum(before, 0)
    prev_end = np.where(has_before, ts[safe] + dur[safe], -np.inf)
    prev = np.where(has_before, local[safe] - n_cpu, -1)  # on the graph: its index among the GPU work, else -1
    prev[prev < 0] = -1
    launched = np.zeros(len(ts), dtype=bool)
    launched[gidx[found]] = True
    prev_launched = has_before & launched[safe]

    graph = StepGraph(rows=rows, node_ts=np.empty(0), src=np.empty(0, np.int64), dst=np.empty(0, np.int64),
                      weight=np.empty(0), category=np.empty(0, np.int8), event=np.empty(0, np.int64),
                      scalable=np.empty(0, bool), parent=parent)
    streams = _Streams(g_dev, g_stream, g_launch_ts, g_start, g_end, ev["pid"][launch_rows],
                       ev["tid"][launch_rows])
    kernel_sync = np.full(n_gpu, -1, dtype=np.int64)  # GPU activity -> the activity it waits for (other stream)
    _sync_edges(ev, b, graph, streams, kinds, local, n_cpu, cpu_rows, gpu_rows, launch_rows, kernel_sync, is_rt)
    del streams  # its stdlib copies of the GPU columns and groups (tens of MB at a million activities)
    if n_gpu == 0:
        graph.mode = "no GPU work in the window: CPU ops only"
    waited_ends = np.array(b.dst, dtype=np.int64)[np.array(b.cat, dtype=np.int8) == SYNC]
    c_zero = c_zero | (c_blocking_end & np.isin(c_dst, waited_ends))

    codes = ev["name"][gpu_rows]
    comm_name = np.zeros(len(names) + 1, dtype=bool)
    for c in np.unique(codes[codes >= 0]).tolist():
        comm_name[c] = classify_kernel(names[c]) == "communication"
    comm = comm_name[codes]
    cap = KERNEL_KERNEL_MAX_GAP_US
    sync_end = np.where(kernel_sync >= 0, g_end[np.maximum(kernel_sync, 0)], -np.inf)
    synced = (kernel_sync >= 0) & (sync_end >= g_launch_ts) & (sync_end >= prev_end)  # a stream wait explains it
    busy = ~synced & (prev_end >= g_launch_ts)  # its stream was still running earlier work at the launch
    # work that began well after both its launch returned and its stream was free waited for something: look on
    # the device's other streams first
    late = ~synced & (g_start - np.maximum(end_ts[g_launch], prev_end) > LATE_START_US)
    launch_ok = ~synced & ~busy & ~late & (g_start - g_launch_ts <= cap)
    kk_ok = busy & ~late & (prev >= 0) & (g_start - prev_end <= cap)
    queued_off = busy & ~late & (prev < 0) & (g_start - prev_end <= cap)  # behind work the graph does not hold
    kk_from = n_cpu + prev[kk_ok]
    waits = _Waits(graph)
    waits.add_many(2 * g_launch[queued_off], 2 * g[queued_off], QUEUE_WAIT, g[queued_off],
                   np.where(prev_launched[queued_off], QUEUED_BEFORE_WINDOW, QUEUED_UNLAUNCHED))
    need = np.flatnonzero(late)  # (a launch call that itself took long: its zero-weight edge below is enough)
    if len(need):
        other = _LastEnded(ev, gidx)
        for i in need.tolist():
            k = n_cpu + i
            ready = max(float(end_ts[g_launch[i]]), float(prev_end[i]))
            on_graph_prev = bool(busy[i] and prev[i] >= 0)
            src_node = 2 * (n_cpu + int(prev[i])) + 1 if on_graph_prev else 2 * int(g_launch[i])
            gap = float(g_start[i]) - (float(prev_end[i]) if busy[i] else float(g_launch_ts[i]))
            j = other.before(int(g_dev[i]), int(g_stream[i]), ready, float(g_start[i]), LATE_START_US)
            if j >= 0 and local[j] >= 0:  # the work on another stream that ended just before: follow it
                b.add(2 * int(local[j]) + 1, 2 * k, SYNC)
                graph.inferred_edges += 1
                graph.inferred[OTHER_STREAM] += 1
            elif j >= 0:
                waits.add(src_node, 2 * k, QUEUE_WAIT, k, OTHER_STREAM_OFF_GRAPH)
            elif gap <= cap and on_graph_prev:
                b.add(src_node, 2 * k, KK_OH, n_cpu + int(prev[i]))
            elif gap <= cap and busy[i]:
                waits.add(src_node, 2 * k, QUEUE_WAIT, k,
                          QUEUED_BEFORE_WINDOW if prev_launched[i] else QUEUED_UNLAUNCHED)
            elif gap <= cap:
                b.add(src_node, 2 * k, LAUNCH_OH, k)
            else:
                in_graph = "GraphLaunch" in names[ev["name"][launch_rows[i]]]
                waits.add(src_node, 2 * k, UNEXPLAINED, k, GRAPH_WAIT_LABEL if in_graph else UNEXPLAINED_LABEL)
    # every launched activity waits for its launch call (zero weight; from the call's end where the work began
    # after it): no what-if moves work before its launch
    after_call = end_ts[g_launch] <= g_start
    launch_src = np.where(after_call, 2 * g_launch + 1, 2 * g_launch)
    # the per-activity questions are answered: let their arrays go before the edge columns are joined
    del local, launched, before, has_before, safe, prev_end, prev, prev_launched, kernel_sync, sync_end, synced
    del busy, late, queued_off, after_call, g_dev, g_stream, g_launch_ts, codes
    parts = [  # (src, dst, category, event, zero weight, wait label)
        (c_src, c_dst, c_cat, c_attr, c_zero, None),
        (2 * g, 2 * g + 1, np.where(comm, COMM, COMPUTE), g, np.zeros(n_gpu, dtype=bool), None),
        (2 * g_launch[launch_ok], 2 * g[launch_ok], np.full(int(launch_ok.sum()), LAUNCH_OH), g[launch_ok],
         np.zeros(int(launch_ok.sum()), dtype=bool), None),
        (2 * kk_from + 1, 2 * g[kk_ok], np.full(len(kk_from), KK_OH), kk_from, np.zeros(len(kk_from), dtype=bool),
         None),
        (launch_src, 2 * g, np.full(n_gpu, DEPENDENCY), np.full(n_gpu, -1), np.ones(n_gpu, dtype=bool), None),
        (np.array(b.src, dtype=np.int64), np.array(b.dst, dtype=np.int64), np.array(b.cat, dtype=np.int8),
         np.array(b.event, dtype=np.int64), np.array(b.zero, dtype=bool), None),
        (np.array(waits.src, dtype=np.int64), np.array(waits.dst, dtype=np.int64),
         np.array(waits.cat, dtype=np.int8), np.array(waits.event, dtype=np.int64),
         np.zeros(len(waits.src), dtype=bool), np.array(waits.label, dtype=np.int64)),
    ]
    del c_src, c_dst, c_cat, c_attr, c_zero, b, waits
    wait_label = [np.full(len(p[0]), -1, dtype=np.int64) if p[5] is None else p[5] for p in parts]
    columns = [list(col) for col in zip(*(p[:5] for p in parts))]
    del parts
    # each column joined, then its pieces let go (not every piece and every joined column held at once)
    idx = index_dtype(max(2 * len(rows), sum(len(p) for p in columns[0])))
    joined = []
    for pieces, dtype in zip(columns, (idx, idx, np.int8, idx, bool)):
        joined.append(np.concatenate([p.astype(dtype, copy=False) for p in pieces]))
        pieces.clear()
    src, dst, cat, event, zero = joined
    del joined, columns
    graph.wait_label = np.concatenate([p.astype(idx, copy=False) for p in wait_label])
    del wait_label
    node_ts = np.empty(2 * len(rows))
    node_ts[0::2], node_ts[1::2] = start_ts, end_ts
    weight = node_ts[dst] - node_ts[src]
    weight[zero | (cat >= DEPENDENCY)] = 0.0
    weight[weight < 0] = 0.0  # clock skew (GPU work timed before its launch): keep the order, not the time
    graph.node_ts, graph.src, graph.dst, graph.weight, graph.category = node_ts, src, dst, weight, cat
    graph.event = event
    graph.scalable = np.isin(cat, (CPU, DATA, COMPUTE, COMM)) & ~zero
    return graph


def _main_threads(thread_key: np.ndarray, notes: np.ndarray, launches: np.ndarray) -> np.ndarray:
    """The keys of the step's launching threads: the thread(s) of the window's annotations, else every thread
    that launched GPU work in the process that launched the most (a database or an unannotated trace cannot say
    which thread is the step's; forward and backward often launch from two); none without launches."""
    if len(notes):
        return np.unique(thread_key[notes])
    if not len(launches):
        return np.zeros(0, dtype=np.int64)
    keys, counts = np.unique(thread_key[launches], return_counts=True)
    procs = keys >> 32
    return keys[procs == procs[np.argmax(counts)]]


def _untraced_gaps(launching: np.ndarray, parent: np.ndarray, start: np.ndarray, end: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The gaps in which no launching thread is in a traced op, as (end node, start node) pairs: for each
    top-level op of a launching thread that starts once every earlier one has ended, the op that ended last
    before it and the op itself (on one thread: every gap between its top-level ops)."""
    top = np.flatnonzero(launching & (parent < 0))
    top = top[np.lexsort((start[top] - end[top], start[top]))]  # by start, the longest first
    ends = end[top]
    reach = np.maximum.accumulate(ends) if len(top) else ends
    last = np.maximum.accumulate(np.where(ends >= reach, np.arange(len(top)), 0)) if len(top) else top
    gap = start[top][1:] >= reach[:-1]
    return 2 * top[last[:-1][gap]] + 1, 2 * top[1:][gap]


def _previous_on_stream(ev: Columns, gidx: np.ndarray) -> np.ndarray:
    """For each GPU activity ``gidx[i]``, the row of the activity before it on its (device, stream) in the whole
    trace (by start time), -1: none."""
    order = np.lexsort((gidx, ev["ts"][gidx], ev["stream"][gidx], ev["pid"][gidx]))
    dev, stream = ev["pid"][gidx][order], ev["stream"][gidx][order]
    same = (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])
    out = np.full(len(gidx), -1, dtype=np.int64)
    out[order[1:][same]] = gidx[order[:-1][same]]
    return out


class _LastEnded:
    """The GPU activities of the whole trace by device, sorted by end, for "which work on another stream ended
    last before t" questions."""

    def __init__(self, ev: Columns, gidx: np.ndarray) -> None:
        end = ev["ts"][gidx] + ev["dur"][gidx]
        ok = np.isfinite(end)
        rows, end = gidx[ok], end[ok]
        dev = ev["pid"][rows]
        self.stream = ev["stream"]
        self.by_device: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for d in np.unique(dev).tolist():
            mine = np.flatnonzero(dev == d)
            order = mine[np.argsort(end[mine], kind="stable")]
            self.by_device[d] = (end[order], rows[order])

    def before(self, device: int, stream: int, t0: float, t: float, within: float) -> int:
        """The row of the work on another stream of ``device`` that ended last in (t0, t] and at most ``within``
        µs before ``t``; -1: none."""
        ends, rows = self.by_device.get(device, (None, None))
        if ends is None:
            return -1
        i = int(np.searchsorted(ends, t, side="right")) - 1
        while i >= 0 and ends[i] > t0 and t - ends[i] <= within:
            if self.stream[rows[i]] != stream:
                return int(rows[i])
            i -= 1
        return -1


class _Waits(_Builder):
    """Wait edges on GPU work the graph does not hold, each with a label (counted on the graph)."""

    def __init__(self, graph: StepGraph) -> None:
        super().__init__()
        self.graph = graph
        self.label: list[int] = []

    def _code(self, label: str) -> int:
        labels = self.graph.wait_labels
        if label not in labels:
            labels.append(label)
        return labels.index(label)

    def add(self, s: int, d: int, cat: int, event: int = -1, label: str = "", zero: bool = False) -> None:
        super().add(s, d, cat, event, zero)
        self.label.append(self._code(label))

    def add_many(self, src: np.ndarray, dst: np.ndarray, cat: int, event: np.ndarray, labels: np.ndarray) -> None:
        for s, d, e, lab in zip(src.tolist(), dst.tolist(), event.tolist(), labels.tolist()):
            self.add(s, d, cat, e, lab)


def _thread_chains(order: np.ndarray, new_thread: np.ndarray, start: np.ndarray, end: np.ndarray, n_events: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walk each thread's ops (``order``: by thread, start, longest first) with a stack: the sequence of nodes
    along the threads, for each node the op whose time leads into it (-1 between top-level ops), each op's
    enclosing op, and the ends (an op overlapping its parent's end is clipped to it)."""
    seq, attr = array("q"), array("q")
    put_node, put_attr = seq.append, attr.append
    parent = [-1] * n_events
    st, en = start.tolist(), end.tolist()
    stack: list[int] = []
    push, pop = stack.append, stack.pop
    for i, new in zip(order.tolist(), new_thread.tolist()):
        if new:
            while stack:
                top = pop()
                put_node(2 * top + 1)
                put_attr(top)
        s = st[i]
        while stack and en[stack[-1]] <= s:
            top = pop()
            put_node(2 * top + 1)
            put_attr(top)
        if stack:
            top = stack[-1]
            if en[i] > en[top]:
                en[i] = en[top]
            parent[i] = top
            put_attr(top)
        else:
            put_attr(-1)
        put_node(2 * i)
        push(i)
    while stack:
        top = pop()
        put_node(2 * top + 1)
        put_attr(top)
    return (np.frombuffer(seq, dtype=np.int64), np.frombuffer(attr, dtype=np.int64),
            np.array(parent, dtype=np.int64), np.array(en, dtype=np.float64))


def _first_nodes(seq: np.ndarray, order: np.ndarray, new_thread: np.ndarray) -> np.ndarray:
    """Which nodes of the chain sequence open a thread (no edge leads into them): the start nodes of the ops
    that begin a thread."""
    opens = np.zeros(2 * (int(order.max()) + 1) if len(order) else 0, dtype=bool)
    opens[2 * order[new_thread]] = True
    return opens[seq] if len(seq) else np.zeros(0, dtype=bool)


def _inherit(flags: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``flags`` passed down the nesting: an op is flagged when it or any op enclosing it is."""
    out = flags.copy()
    inner = np.flatnonzero(parent >= 0)
    while len(inner):
        passed = out[inner] | out[parent[inner]]
        changed = passed != out[inner]
        if not changed.any():
            break
        out[inner] = passed
        inner = inner[changed]  # only a changed op can change its children next pass
    return out


class _Streams:
    """The window's GPU activities by (device, stream) and by launching thread, for "the last activity launched
    before time t" questions (asked once per sync call: answered by ``bisect`` on lists, not numpy calls)."""

    def __init__(self, dev, stream, launch_ts, start, end, launch_pid, launch_tid) -> None:
        self.dev, self.stream, self.launch_ts = dev, stream, launch_ts
        self.start, self.end = start, end
        # the same columns as stdlib arrays (8 bytes an item, as numpy's), for the questions' scalar reads
        self.dev_l, self.stream_l, self.launch_l = _ints(dev), _ints(stream), _floats(launch_ts)
        self.start_l, self.end_l = _floats(start), _floats(end)
        self.by_stream, self.stream_ts = _group_members(np.lexsort((launch_ts, stream, dev)), launch_ts, dev, stream)
        self.by_thread, self.thread_ts = _group_members(np.lexsort((launch_ts, launch_tid, launch_pid)), launch_ts,
                                                        launch_pid, launch_tid)
        self.keys_of: dict[int, list[tuple[int, int]]] = {}  # stream id -> its (device, stream) keys
        for key in self.by_stream:
            self.keys_of.setdefault(key[1], []).append(key)

    def last_on_stream(self, key: tuple[int, int], t: float) -> int:
        """The last activity on a stream launched before ``t`` (-1: none)."""
        ks = self.by_stream.get(key)
        if ks is None:
            return -1
        i = bisect_left(self.stream_ts[key], t) - 1
        return ks[i] if i >= 0 else -1

    def streams_of(self, stream: int) -> list[tuple[int, int]]:
        """The (device, stream) keys of a stream id (a trace's stream ids are per device)."""
        return self.keys_of.get(stream, [])

    def last_launched_by(self, thread: tuple[int, int], t: float, not_stream: int | None = None) -> int:
        """The last activity launched from a thread before ``t`` (on another stream than ``not_stream``)."""
        ks = self.by_thread.get(thread)
        if ks is None:
            return -1
        i = bisect_left(self.thread_ts[thread], t) - 1
        while i >= 0 and not_stream is not None and self.stream_l[ks[i]] == not_stream:
            i -= 1
        return ks[i] if i >= 0 else -1

    def next_on_stream(self, stream: int, t: float) -> int:
        """The first activity launched on a stream id (any device) at or after ``t`` (-1: none)."""
        best = -1
        for key in self.streams_of(stream):
            ks = self.by_stream[key]
            i = bisect_left(self.stream_ts[key], t)
            if i < len(ks) and (best < 0 or self.launch_l[ks[i]] < self.launch_l[best]):
                best = ks[i]
        return best

    def next_launched_by(self, thread: tuple[int, int], t: float) -> int:
        """The first activity launched from a thread after ``t`` (-1: none)."""
        ks = self.by_thread.get(thread)
        if ks is None:
            return -1
        i = bisect_right(self.thread_ts[thread], t)
        return ks[i] if i < len(ks) else -1


def _group_members(order: np.ndarray, times: np.ndarray, *columns: np.ndarray
                   ) -> tuple[dict[tuple, array], dict[tuple, array]]:
    """The indices ``order`` (sorted by ``columns``, then time) split by their values in ``columns`` (keys in that
    order), and each group's times, as stdlib arrays (``bisect`` searches them)."""
    members, group_times = {}, {}
    if not len(order):
        return members, group_times
    sorted_cols = [c[order] for c in columns]
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for c in sorted_cols:
        new[1:] |= c[1:] != c[:-1]
    bounds = np.append(np.flatnonzero(new), len(order)).tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        key = tuple(int(c[a]) for c in sorted_cols)
        members[key] = _ints(order[a:b])
        group_times[key] = _floats(times[order[a:b]])
    return members, group_times


def _sync_edges(ev: Columns, b: _Builder, graph: StepGraph, streams: _Streams, kinds: np.ndarray,
                local: np.ndarray, n_cpu: int, cpu_rows: np.ndarray, gpu_rows: np.ndarray,
                launch_rows: np.ndarray, kernel_sync: np.ndarray, is_rt: np.ndarray) -> None:
    """GPU -> host edges (the host waited in a sync or copy call) and GPU -> GPU edges (a stream waited for an
    event), read from ``cuda_sync`` events where the trace has them, else from the runtime calls by name."""
    names = ev.labels["name"]
    ts, dur, stream_col = ev["ts"], ev["dur"], ev["stream"]
    requests: list[tuple[int, int, int]] = []  # (row of the host call, kind, stream or -1)
    sync_rows = np.flatnonzero(ev.label_mask("cat", ("cuda_sync",)))
    if len(sync_rows):
        graph.mode = "cuda_sync events"
        ridx = np.flatnonzero(is_rt & (ev["correlation"] >= 0))
        where, found = _first_match(ev["correlation"][ridx], ev["correlation"][sync_rows])
        for s, w, ok in zip(sync_rows.tolist(), where.tolist(), found.tolist()):
            kind = rn.CUDA_SYNC_EVENTS.get(names[ev["name"][s]], rn.OTHER)
            if ok and kind != rn.OTHER and local[ridx[w]] >= 0:
                stream = int(stream_col[s]) if kind == rn.STREAM_SYNC else -1
                requests.append((int(ridx[w]), kind, stream))
    else:
        graph.mode = "runtime calls by name" + (" and their stream/event arguments" if "event" in ev else "")
        wanted = (rn.DEVICE_SYNC, rn.STREAM_SYNC, rn.EVENT_SYNC, rn.EVENT_QUERY, rn.STREAM_WAIT_EVENT)
        for r in cpu_rows[np.isin(kinds[cpu_rows], wanted) & is_rt[cpu_rows]].tolist():
            kind = int(kinds[r])
            requests.append((r, rn.EVENT_SYNC if kind == rn.EVENT_QUERY else kind,
                             int(stream_col[r]) if kind == rn.STREAM_SYNC else -1))
    records = np.flatnonzero((kinds == rn.EVENT_RECORD) & is_rt)
    records = records[np.argsort(ts[records], kind="stable")]
    pid_col, tid_col = ev["pid"], ev["tid"]
    event_col = ev["event"] if "event" in ev else None  # an event handle per call (rocpd_arg), -1: none
    by_event = _groups(records[event_col[records] >= 0], ts, event_col, pid_col) if event_col is not None else {}
    by_thread, by_process = _groups(records, ts, pid_col, tid_col), _groups(records, ts, pid_col)

    def last_record(groups: dict[tuple, tuple[list[int], list[float], int]], key: tuple, t: float) -> int:
        rows, times, finite = groups.get(key, (None, None, 0))
        i = -1 if rows is None else bisect_right(times, t, 0, finite) - 1  # (t is a call's time: a number)
        return rows[i] if i >= 0 else -1

    def record_of_event(r: int) -> int:
        """The last record of the same event handle before ``r`` in this process, -1: no handle or record."""
        if event_col is None or event_col[r] < 0:
            return -1
        return last_record(by_event, (int(event_col[r]), int(pid_col[r])), ts[r])

    def gpu_to_host(k: int, r_end: float, r_local: int, label: str | None) -> None:  # label None: read
        if k < 0 or streams.end_l[k] > r_end:
            return
        b.add(2 * (n_cpu + k) + 1, 2 * r_local + 1, SYNC)
        if label is None:
            graph.sync_edges += 1
        else:
            graph.inferred_edges += 1
            graph.inferred[label] += 1

    def event_source(r: int, r_ts: float, p: int, t: int) -> tuple[int, str | None]:
        """The activity an event waited on: the last one launched on the recording stream before the matching
        event record: the record of the same event handle where the trace has handles (how: None, read), else
        the last record before ``r`` (at ``r_ts``, thread ``(p, t)``) in this process, its thread's preferred."""
        exact = record_of_event(r)
        if exact >= 0 and stream_col[exact] >= 0:
            keys = streams.streams_of(int(stream_col[exact]))
            return (streams.last_on_stream(keys[0], ts[exact]) if keys else -1), None
        rec = last_record(by_thread, (p, t), r_ts)
        if rec < 0:
            rec = last_record(by_process, (p,), r_ts)
        if rec >= 0:
            rs = int(stream_col[rec])
            if rs >= 0:
                keys = streams.streams_of(rs)
                return (streams.last_on_stream(keys[0], ts[rec]) if keys else -1), "record's stream"
            k = streams.last_launched_by((int(ev["pid"][rec]), int(ev["tid"][rec])), ts[rec])
            return k, "the matching event record, its thread's last stream"
        return -1, ""

    # each request's columns read once, as Python numbers (not one numpy read per use)
    req = np.array([q[0] for q in requests], dtype=np.int64)
    columns = (ts[req], ts[req] + dur[req], pid_col[req], tid_col[req], ev["name"][req], local[req], stream_col[req])
    for (r, kind, stream), r_ts, r_end, pid, tid, code, r_local, r_stream in zip(
            requests, *(c.tolist() for c in columns)):
        call = names[code]
        thread = (pid, tid)
        if kind == rn.DEVICE_SYNC:
            for key in streams.by_stream:
                gpu_to_host(streams.last_on_stream(key, r_ts), r_end, r_local, None)
        elif kind == rn.STREAM_SYNC:
            if stream >= 0:
                for key in streams.streams_of(stream):
                    gpu_to_host(streams.last_on_stream(key, r_ts), r_end, r_local, None)
            else:
                k = streams.last_launched_by(thread, r_ts)
                if k >= 0:
                    key = (streams.dev_l[k], streams.stream_l[k])
                    gpu_to_host(streams.last_on_stream(key, r_ts), r_end, r_local,
                                f"{call}: stream = the launching thread's last stream")
        elif kind == rn.EVENT_SYNC:
            k, how = event_source(r, r_ts, pid, tid)
            if k < 0:
                k, how = streams.last_launched_by(thread, r_ts), "no event record: the thread's last stream"
            gpu_to_host(k, r_end, r_local, None if how is None else f"{call}: event = {how}")
        elif kind == rn.STREAM_WAIT_EVENT:
            waiting = r_stream  # the waiting stream, where the call carries one the GPU work uses
            if waiting >= 0 and not streams.streams_of(waiting):
                waiting = -1
            d = streams.next_on_stream(waiting, r_end) if waiting >= 0 else streams.next_launched_by(thread, r_end)
            if d < 0:
                continue
            k, how = event_source(r, r_ts, pid, tid)
            if k < 0 or streams.stream_l[k] == streams.stream_l[d]:
                k = streams.last_launched_by(thread, r_ts, not_stream=streams.stream_l[d])
                how = "no event record: the thread's last other stream"
            if k < 0 or streams.end_l[k] > streams.start_l[d]:
                continue
            if kernel_sync[d] < 0 or streams.end_l[k] > streams.end_l[kernel_sync[d]]:
                kernel_sync[d] = k
            b.add(2 * (n_cpu + k) + 1, 2 * (n_cpu + d), SYNC)
            if how is None and waiting >= 0:
                graph.sync_edges += 1
            else:
                graph.inferred_edges += 1
                graph.inferred[f"{call}: event = {how or 'its event argument'}"
                               + (", waiting stream = its stream argument" if waiting >= 0 else "")] += 1

    # copies: the host call that launched a copy and returned after it ended waited for it
    copy = np.isin(kinds[launch_rows], (rn.BLOCKING_COPY, rn.ASYNC_COPY))
    for k in np.flatnonzero(copy).tolist():
        r = int(launch_rows[k])
        if streams.end_l[k] <= ts[r] + dur[r] and local[r] >= 0:
            b.add(2 * (n_cpu + k) + 1, 2 * int(local[r]) + 1, SYNC)
            graph.sync_edges += 1


def _groups(rows: np.ndarray, ts: np.ndarray, *columns: np.ndarray) -> dict[tuple, tuple[list[int], list[float], int]]:
    """``rows`` (in time order, those without a time last) grouped by their values in ``columns``, each group with
    its times and how many of them are numbers, for "the last one before t" lookups (``bisect`` on the numbers)."""
    out: dict[tuple, list[int]] = {}
    for row, key in zip(rows.tolist(), zip(*(c[rows].tolist() for c in columns))):
        out.setdefault(key, []).append(row)
    groups = {}
    for k, v in out.items():
        times = ts[v]
        groups[k] = (v, times.tolist(), int(np.isfinite(times).sum()))
    return groups


@dataclass(frozen=True)
class WhatIf:
    """One ``REGEX=FACTOR`` what-if: the matching kernels and CPU ops made ``factor`` times faster."""

    pattern: str
    factor: float

    @classmethod
    def parse(cls, text: str) -> "WhatIf":
        """``'gemm=2'`` -> WhatIf('gemm', 2.0); the factor after the last ``=``."""
        pattern, sep, factor = text.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = float("nan")
        if not sep or not pattern or not value > 0 or value == float("inf"):
            raise TraceError(f"--what-if {text!r}: write REGEX=FACTOR with a factor above 0, e.g. 'gemm=2' "
                             f"(the matching kernels twice as fast)")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TraceError(f"--what-if {text!r}: {pattern!r} is not a regular expression ({exc})") from None
        return cls(pattern, value)


def critical_path(ev: Columns, *, annotation: str | None = None, instance: int | tuple[int, int] | None = None,
                  what_if: Sequence[WhatIf | str] = (), include_last_step: bool = False, top: int = 20,
                  count_untraced_host: bool = True) -> dict:
    """The critical path of a rank's window as JSON-ready numbers: ``window_us`` (the window's wall time) and
    ``coverage`` (:func:`lumikit.trace.coverage.window_coverage`: how much of it no traced op covers), ``path_us``,
    ``bound_by`` (share per category), ``waits`` (µs on the path per labelled wait on GPU work the graph does not
    hold), ``sync_edges``, ``inferred_edges`` (and their labels), the ranked path events and, per what-if pattern,
    ``path_us_after`` and ``speedup_pct``. ``count_untraced_host=False`` weighs untraced host time as HTA does
    (nothing)."""
    window = choose_window(ev, annotation, instance, include_last_step)
    graph = build_graph(ev, window, count_untraced_host=count_untraced_host)
    length, path = graph.longest_path()
    path_arr = np.array(path, dtype=np.int64)
    by_cat = np.bincount(graph.category[path_arr], weights=graph.weight[path_arr], minlength=len(CATEGORIES))
    bound_by = {c: (float(by_cat[i]) / length if length > 0 else 0.0) for i, c in enumerate(BOUND_BY)}
    names = ev.labels["name"]
    results = []
    for w in what_if:
        w = WhatIf.parse(w) if isinstance(w, str) else w
        results.append(_what_if(graph, ev, w, length))
    coverage = window_coverage(ev, window.start, window.end)
    return {
        "window": {"label": window.label, "start_us": window.start, "end_us": window.end},
        "window_us": coverage["window_us"],
        "span_us": round(float(graph.node_ts.max()) - window.start, 3) if len(graph.node_ts) else 0.0,
        "coverage": coverage,
        "mode": graph.mode,
        "path_us": round(length, 3),
        "waits": _path_waits(graph, path_arr),
        "bound_by": {k: round(v, 6) for k, v in bound_by.items()},
        "bound_by_us": {c: round(float(by_cat[i]), 3) for i, c in enumerate(BOUND_BY)},
        "sync_edges": graph.sync_edges,
        "inferred_edges": graph.inferred_edges,
        "inferred": dict(graph.inferred),
        "events": int(len(graph.rows)),
        "edges": int(len(graph.src)),
        "path_events": _ranked(graph, ev, path_arr, length, names, top),
        "what_if": results,
    }


def analyzer_critical_path(analyzer: "TraceAnalyzer", rank: int, **options) -> dict:
    """:func:`critical_path` of one rank of a :class:`~lumikit.trace.analyses.TraceAnalyzer`, on the same steps as
    its other analyses (its ``include_last_step``); ``options`` as for :func:`critical_path` (``what_if=...``)."""
    options.setdefault("include_last_step", analyzer.include_last_step)
    return critical_path(analyzer.trace[rank].columns, **options)


def bound_by_table(result: dict) -> "pd.DataFrame":
    """The path's categories of a :func:`critical_path` result as a table: ``category``, ``share`` (of the path)
    and ``path_us``, largest first."""
    import pandas as pd

    rows = [{"category": c, "share": result["bound_by"][c], "path_us": result["bound_by_us"][c]} for c in BOUND_BY]
    return pd.DataFrame(rows).sort_values("share", ascending=False, kind="stable").reset_index(drop=True)


def what_if_table(result: dict) -> "pd.DataFrame":
    """The what-ifs of a :func:`critical_path` result as a table: ``pattern``, ``factor``, ``matched_events``,
    ``path_us`` (before), ``path_us_after`` and ``speedup_pct``, in the order asked."""
    import pandas as pd

    rows = [{"pattern": w["pattern"], "factor": w["factor"], "matched_events": w["matched_events"],
             "path_us": result["path_us"], "path_us_after": w["path_us_after"], "speedup_pct": w["speedup_pct"]}
            for w in result["what_if"]]
    return pd.DataFrame(rows, columns=["pattern", "factor", "matched_events", "path_us", "path_us_after",
                                       "speedup_pct"])


def _path_waits(graph: StepGraph, path: np.ndarray) -> dict[str, float]:
    """µs on the path per labelled wait on GPU work the graph does not hold, largest first."""
    if graph.wait_label is None or not len(path):
        return {}
    lab = graph.wait_label[path]
    keep = lab >= 0
    sums = np.bincount(lab[keep], weights=graph.weight[path][keep], minlength=len(graph.wait_labels))
    out = {graph.wait_labels[i]: round(float(v), 3) for i, v in enumerate(sums.tolist()) if v > 0}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _ranked(graph: StepGraph, ev: Columns, path: np.ndarray, length: float, names: list[str],
            top: int) -> list[dict]:
    """The events on the path with the most path time (per event and category), largest first."""
    w = graph.weight[path]
    keep = (w > 0) & (graph.event[path] >= 0)
    ev_local, cats, w = graph.event[path][keep], graph.category[path][keep], w[keep]
    key = ev_local * len(CATEGORIES) + cats
    uniq, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse, weights=w)
    best = np.argsort(-sums, kind="stable")[:top]
    out = []
    for j in best.tolist():
        local, cat = divmod(int(uniq[j]), len(CATEGORIES))
        row = int(graph.rows[local])
        out.append({"name": names[ev["name"][row]], "category": CATEGORIES[cat], "path_us": round(float(sums[j]), 3),
                    "share": round(float(sums[j]) / length, 6) if length > 0 else 0.0,
                    "ts_us": float(ev["ts"][row]), "dur_us": float(ev["dur"][row])})
    return out


def _what_if(graph: StepGraph, ev: Columns, w: WhatIf, before: float) -> dict:
    """The path with the matching events' time divided by the factor (a CPU op's nested ops and launch calls
    too: they are part of its duration)."""
    names = ev.labels["name"]
    rx = re.compile(w.pattern)
    match_code = np.fromiter((bool(rx.search(n)) for n in names), dtype=bool, count=len(names))
    matches = np.append(match_code, False)[ev["name"][graph.rows]]
    direct = int(matches.sum())
    matches = _inherit(matches, graph.parent)
    edge_match = np.zeros(len(graph.src), dtype=bool)
    has = graph.event >= 0
    edge_match[has] = matches[graph.event[has]]
    scaled = graph.scalable & edge_match
    weight = np.where(scaled, graph.weight / w.factor, graph.weight)
    after, _ = graph.longest_path(weight)
    return {"pattern": w.pattern, "factor": w.factor, "matched_events": direct,
            "path_us_after": round(after, 3),
            "speedup_pct": round(100.0 * (before - after) / before, 4) if before > 0 else 0.0}


def describe(result: dict, top: int = 15) -> list[str]:
    """The critical path as lines of text for people (names escaped by the caller's printer)."""
    from ..text import printable

    lines = [f"window: {printable(result['window']['label'])}  ({result['mode']})",
             f"critical path: {result['path_us'] / 1000:.3f} ms over {result['events']} events",
             describe_coverage(result["coverage"], result["path_us"])]
    if result["span_us"] > result["window_us"] + 1e-6:
        lines.append(f"the window's work ends {result['span_us'] / 1000:.3f} ms after the window's start (GPU work it "
                     f"launched runs past its end)")
    inferred = result["inferred_edges"]
    lines.append(f"sync edges: {result['sync_edges']} read from the trace, {inferred} inferred")
    for label, n in result["inferred"].items():
        lines.append(f"  inferred {n}x: {printable(label)}")
    for label, us in result.get("waits", {}).items():
        lines.append(f"  wait on the path {us / 1000:.3f} ms: {label}")
    lines.append("bound by:")
    for cat, share in sorted(result["bound_by"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {cat:<28} {100 * share:6.1f} %  {result['bound_by_us'][cat] / 1000:10.3f} ms")
    lines.append("path events (most path time first):")
    for e in result["path_events"][:top]:
        lines.append(f"  {e['path_us'] / 1000:9.3f} ms {100 * e['share']:5.1f} %  {e['category']:<27} "
                     f"{printable(e['name'][:70])}")
    for w in result["what_if"]:
        lines.append(f"what if {printable(w['pattern'])} were {w['factor']:g}x faster ({w['matched_events']} "
                     f"events): path {w['path_us_after'] / 1000:.3f} ms, {w['speedup_pct']:.2f} % faster")
    return lines
