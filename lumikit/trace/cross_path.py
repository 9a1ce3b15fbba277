"""The critical path across ranks: a rank's path that reaches a collective it waited in continues along the path
of the rank that arrived last, and what-ifs apply to any rank ("rank 2's backward 1.3x faster").

Built on :mod:`lumikit.trace.critical_path`: each rank's step graph as it is, joined at the collectives matched
across ranks (:mod:`lumikit.trace.matched`). In the joined graph a rank that waited spends only the collective's
true time inside it (its wait is no work), and an edge of that true time runs from the start of the last rank's
kernel to the end of its own: the longest path to the end of the chosen rank's window then runs through whichever
rank held the collective up. Ranks' clocks are set on the chosen rank's by aligning collective ends (ranks leave
a collective together); the edge weights are durations, each read on one rank's own clock. Only the chosen rank
and the ranks that arrived last somewhere are loaded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import TraceError
from .critical_path import CATEGORIES, StepGraph, WhatIf, build_graph, choose_window
from .loader import find_trace_files, load_trace
from .matched import collect_calls, match_collectives

COMM_CATEGORY = CATEGORIES.index("gpu_communication_bound")
#: Added to the edges into the end node so that the longest path ends on the chosen rank (taken off again).
_PIN = 1e12


@dataclass(frozen=True)
class RankWhatIf:
    """A what-if on one rank (or every rank: ``rank=None``): ``'2:backward=1.3'``."""

    rank: int | None
    what: WhatIf

    @classmethod
    def parse(cls, text: str) -> "RankWhatIf":
        head, sep, rest = text.partition(":")
        if sep and head.strip().isdigit():
            return cls(int(head), WhatIf.parse(rest))
        return cls(None, WhatIf.parse(text))


@dataclass
class _Part:
    rank: int
    graph: StepGraph
    names: list[str]
    name_codes: np.ndarray  # name code per local event
    node0: int
    event0: int


def _comm_events(part: _Part, ev_ts: np.ndarray, ev_dur: np.ndarray) -> dict[tuple[float, float], int]:
    """The rank's communication kernels on its graph: (start, duration) rounded to 0.01 µs -> local event."""
    g = part.graph
    edges = np.flatnonzero((g.category == COMM_CATEGORY) & (g.src + 1 == g.dst) & (g.src % 2 == 0))
    out = {}
    for e in edges.tolist():
        local = int(g.event[e])
        row = int(g.rows[local])
        out[(round(float(ev_ts[row]), 2), round(float(ev_dur[row]), 2))] = local
    return out


def cross_rank_path(path: Path | str, rank: int | None = None, *, what_if: Sequence[RankWhatIf | str] = (),
                    rank_map: Mapping[int, str | Path] | None = None, include_last_step: bool = False,
                    top: int = 20) -> dict:
    """The critical path of ``rank``'s window (default: the lowest rank) across the ranks under ``path``:
    ``path_us``, ``bound_by``, ``by_rank`` (share of the path each rank's work holds), ``path_events`` (each
    with its ``rank``), ``followed`` (collectives whose wait led to another rank) and the ``what_if`` results."""
    files = find_trace_files(path, rank_map)
    if rank is None:
        rank = min(files)
    if rank not in files:
        raise TraceError(f"rank {rank} is not in {path} (ranks: {sorted(files)})")
    matched = match_collectives(collect_calls(path, rank_map=rank_map), keep_calls=True) if len(files) > 1 else \
        {"matched": [], "clock_offset_us": {}}
    wanted = sorted({rank} | {m["last_rank"] for m in matched["matched"] if m["clear"]})
    offsets = matched["clock_offset_us"]
    parts: list[_Part] = []
    node0 = event0 = 0
    cols = {}
    for r in wanted:
        ev = load_trace(files[r], rank_map={r: files[r]})[r].columns
        cols[r] = ev
        graph = build_graph(ev, choose_window(ev, include_last_step=include_last_step))
        shift = offsets.get(r, 0.0) - offsets.get(rank, 0.0)
        graph.node_ts = graph.node_ts - shift  # on the chosen rank's clock
        parts.append(_Part(r, graph, ev.labels["name"], ev["name"][graph.rows], node0, event0))
        node0 += len(graph.node_ts)
        event0 += len(graph.rows)
    by_rank = {p.rank: p for p in parts}
    src = [p.graph.src.astype(np.int64) + p.node0 for p in parts]
    dst = [p.graph.dst.astype(np.int64) + p.node0 for p in parts]
    weight = [p.graph.weight.copy() for p in parts]
    cat = [p.graph.category for p in parts]
    event = [np.where(p.graph.event >= 0, p.graph.event.astype(np.int64) + p.event0, -1) for p in parts]
    scalable = [p.graph.scalable for p in parts]
    comm = {p.rank: _comm_events(p, cols[p.rank]["ts"], cols[p.rank]["dur"]) for p in parts}
    extra_src, extra_dst, extra_w, extra_event = [], [], [], []
    followed = []
    for m in matched["matched"]:
        last = m["last_rank"]
        if last not in by_rank:
            continue
        calls = {}
        for r in m["ranks"]:
            if r in by_rank:
                c = _find_call(per_rank_call(m, r), comm[r])
                if c is not None:
                    calls[r] = c
        if last not in calls:
            continue
        lp = by_rank[last]
        for r, local in calls.items():
            if r == last:
                continue
            p = by_rank[r]
            own = np.flatnonzero((p.graph.event == local) & (p.graph.category == COMM_CATEGORY))
            weight[parts.index(p)][own] = m["comm_us"]  # the wait is no work
            extra_src.append(2 * calls[last] + lp.node0)
            extra_dst.append(2 * local + 1 + p.node0)
            extra_w.append(m["comm_us"])
            extra_event.append(calls[last] + lp.event0)
            if r == rank:
                followed.append({"group": m["group"], "index": m["index"], "to_rank": last,
                                 "wait_us": m["wait_us"].get(r, 0.0)})
    n_nodes = node0 + 2
    sink = n_nodes - 1
    chosen = by_rank[rank]
    into_sink = np.arange(chosen.node0, chosen.node0 + len(chosen.graph.node_ts))
    all_src = np.concatenate(src + [np.array(extra_src, dtype=np.int64), into_sink]).astype(np.int64)
    all_dst = np.concatenate(dst + [np.array(extra_dst, dtype=np.int64),
                                    np.full(len(into_sink), sink)]).astype(np.int64)
    base_w = np.concatenate(weight + [np.array(extra_w, dtype=float), np.full(len(into_sink), _PIN)])
    all_cat = np.concatenate(cat + [np.full(len(extra_src), COMM_CATEGORY, np.int8),
                                    np.full(len(into_sink), CATEGORIES.index("dependency"), np.int8)])
    all_event = np.concatenate(event + [np.array(extra_event, dtype=np.int64),
                                        np.full(len(into_sink), -1, np.int64)])
    all_scalable = np.concatenate(scalable + [np.ones(len(extra_src), bool), np.zeros(len(into_sink), bool)])
    node_ts = np.concatenate([p.graph.node_ts for p in parts] + [np.array([np.inf, np.inf])])
    node_ts[-2:] = np.nanmax(node_ts[:-2]) + 1.0 if len(node_ts) > 2 else 0.0
    joined = StepGraph(rows=np.arange(event0), node_ts=node_ts, src=all_src, dst=all_dst, weight=base_w,
                       category=all_cat, event=all_event, scalable=all_scalable, parent=np.full(event0, -1))
    length, edges = joined.longest_path()
    length -= _PIN
    edges = [e for e in edges if all_dst[e] != sink]
    event_rank = np.concatenate([np.full(len(p.graph.rows), p.rank) for p in parts]) if parts else np.zeros(0, int)
    result = _summary(joined, edges, length, parts, event_rank, top)
    result.update({"rank": rank, "ranks_loaded": wanted, "followed": followed,
                   "clocks": "each rank's times set on rank %d's clock by aligning collective ends; weights are "
                             "durations on each rank's own clock" % rank})
    result["what_if"] = [_what_if(joined, parts, event_rank, RankWhatIf.parse(w) if isinstance(w, str) else w,
                                  length) for w in what_if]
    return result


def per_rank_call(m: dict, r: int) -> tuple[float, float] | None:
    """Where a matched collective sits on rank ``r``: (start, duration) on that rank's clock."""
    at = m.get("calls", {}).get(r)
    return tuple(at) if at else None


def _find_call(call: tuple[float, float] | None, comm: dict[tuple[float, float], int]) -> int | None:
    if call is None:
        return None
    return comm.get((round(call[0], 2), round(call[1], 2)))


def _summary(g: StepGraph, edges: list[int], length: float, parts: list[_Part], event_rank: np.ndarray,
             top: int) -> dict:
    path = np.array(edges, dtype=np.int64)
    w = g.weight[path] if len(path) else np.zeros(0)
    cats = np.bincount(g.category[path], weights=w, minlength=len(CATEGORIES)) if len(path) else \
        np.zeros(len(CATEGORIES))
    ev = g.event[path] if len(path) else np.zeros(0, np.int64)
    has = ev >= 0
    by_rank: dict[int, float] = {}
    for r, x in zip(event_rank[ev[has]].tolist(), w[has].tolist()):
        by_rank[r] = by_rank.get(r, 0.0) + x
    sums: dict[int, float] = {}
    for e, x in zip(ev[has].tolist(), w[has].tolist()):
        sums[e] = sums.get(e, 0.0) + x
    ranked = sorted(sums.items(), key=lambda kv: -kv[1])[:top]
    out_events = []
    for e, x in ranked:
        p = next(p for p in parts if p.event0 <= e < p.event0 + len(p.graph.rows))
        cat = int(g.category[path[has][ev[has] == e][0]])
        out_events.append({"rank": p.rank, "name": p.names[int(p.name_codes[e - p.event0])],
                           "category": CATEGORIES[cat], "path_us": round(x, 3),
                           "share": round(x / length, 6) if length > 0 else 0.0})
    return {"path_us": round(length, 3),
            "bound_by": {c: round(float(cats[i]) / length, 6) if length > 0 else 0.0
                         for i, c in enumerate(CATEGORIES) if cats[i] > 0},
            "by_rank": {r: round(x / length, 6) if length > 0 else 0.0 for r, x in sorted(by_rank.items())},
            "path_events": out_events}


def _what_if(g: StepGraph, parts: list[_Part], event_rank: np.ndarray, w: RankWhatIf, before: float) -> dict:
    rx = re.compile(w.what.pattern)
    match = np.zeros(len(event_rank), dtype=bool)
    for p in parts:
        if w.rank is not None and p.rank != w.rank:
            continue
        by_code = np.fromiter((bool(rx.search(n)) for n in p.names), dtype=bool, count=len(p.names))
        local = np.append(by_code, False)[p.name_codes]
        local = _inherit(local, p.graph.parent)
        match[p.event0:p.event0 + len(local)] = local
    has = g.event >= 0
    scaled = np.zeros(len(g.src), dtype=bool)
    scaled[has] = match[g.event[has]]
    scaled &= g.scalable
    after, _ = g.longest_path(np.where(scaled, g.weight / w.what.factor, g.weight))
    after -= _PIN
    who = "every rank" if w.rank is None else f"rank {w.rank}"
    return {"rank": w.rank, "pattern": w.what.pattern, "factor": w.what.factor, "matched_events": int(match.sum()),
            "path_us_after": round(after, 3),
            "speedup_pct": round(100.0 * (before - after) / before, 4) if before > 0 else 0.0,
            "text": f"{who}'s {w.what.pattern} {w.what.factor:g}x faster -> step "
                    f"{100.0 * (before - after) / before if before > 0 else 0.0:.1f} % faster"}


def _inherit(flags: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``flags`` passed down the nesting of CPU ops (an op inside a matching op matches too)."""
    out = flags.copy()
    inner = np.flatnonzero(parent >= 0)
    for _ in range(64):
        if not len(inner):
            break
        passed = out[inner] | out[parent[inner]]
        changed = passed != out[inner]
        if not changed.any():
            break
        out[inner] = passed
        inner = inner[changed]
    return out


def describe_cross(result: dict, top: int = 10) -> list[str]:
    """The cross-rank path in sentences."""
    lines = [f"rank {result['rank']}'s critical path across ranks: {result['path_us'] / 1000:.3f} ms "
             f"(ranks loaded: {', '.join(map(str, result['ranks_loaded']))})"]
    if result["followed"]:
        to = {}
        for f in result["followed"]:
            to.setdefault(f["to_rank"], []).append(f["wait_us"])
        for r, waits in to.items():
            lines.append(f"it waited in {len(waits)} collectives for rank {r} ({sum(waits) / 1000:.2f} ms in all); "
                         f"there the path follows rank {r}'s own work")
    lines.append("share of the path by rank: " + ", ".join(f"rank {r} {100 * s:.1f} %"
                                                          for r, s in result["by_rank"].items()))
    for e in result["path_events"][:top]:
        lines.append(f"  rank {e['rank']}: {e['path_us'] / 1000:9.3f} ms {100 * e['share']:5.1f} %  "
                     f"{e['category']:<26} {e['name'][:60]}")
    for w in result["what_if"]:
        lines.append(f"what if {w['text']}")
    lines.append(result["clocks"])
    return lines
