"""Before and after: the same numbers of two traces side by side (``lumikit trace diff A B``).

Each block of the comparison is a :class:`Section`: a title, a unit and a function that measures one rank of
one trace as named numbers. Times are per analysed step (the steps of the default window, the last one left out
as HTA does), so two runs profiled for a different number of steps compare. A block measured step by step (the
CPU operators: a host's scheduling moves them a lot from one step to the next) shows medians over the steps and
calls a change within the steps' own spread noise. :data:`SECTIONS` is the list the
command shows; another analysis adds its block with :func:`add_section`. Kernels and CPU ops carry their calls per
step beside their time, and have blocks of their own ranked by the change in calls: a copy that went from 15 to 3,840
calls is the story even when each call is short. The last two blocks are the critical path's length and categories
(:mod:`lumikit.trace.critical_path`): per step in µs, and as shares of the path.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .analyses import median, quantile

if TYPE_CHECKING:
    import pandas as pd

    from .analyses import TraceAnalyzer

#: A measure: named numbers of one rank of one trace.
Measure = Callable[["TraceAnalyzer", int], dict[str, float]]


@dataclass(frozen=True)
class Section:
    """One block of the side-by-side table; ``top`` keeps only the rows that changed most (by absolute change);
    ``calls`` (another measure, calls per name) puts each row's call counts beside its time."""

    title: str
    unit: str
    measure: Measure
    top: int | None = None
    calls: Measure | None = None
    #: The same numbers for each analysed step: then a row gives the medians over the steps, each side's range, and
    #: calls a change within the two ranges noise (the steps of one trace differ by that much among themselves).
    per_step: Callable[["TraceAnalyzer", int], list[dict[str, float]]] | None = None


def analysed_steps(analyzer: "TraceAnalyzer", rank: int) -> int:
    """How many steps the window counts (at least 1, so a trace without steps is one "step")."""
    return max(1, int(analyzer.step_times(rank)["analysed"].sum()))


def step_time(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """Host step durations of the analysed steps: median and the spread (p25 to p75, min, max)."""
    times = analyzer.step_times(rank)
    dur = np.sort(times["dur_us"][times["analysed"]].astype(float))
    if len(dur) == 0:
        return {}
    return {"median": median(dur), "p25": quantile(dur, 0.25), "p75": quantile(dur, 0.75), "min": float(dur[0]),
            "max": float(dur[-1])}


def kernel_time_by_class(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """GPU time per class (compute, communication, memory; summed durations) per analysed step."""
    n = analysed_steps(analyzer, rank)
    return {k: t / n for k, (t, _) in analyzer.kernel_breakdown(rank).items()}


def kernel_time_by_name(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """GPU time per kernel (or copy) name per analysed step."""
    gpu = analyzer.window_columns(rank)
    n = analysed_steps(analyzer, rank)
    sums = np.bincount(gpu["name"], weights=gpu["dur"], minlength=len(gpu.labels["name"]))
    return {gpu.labels["name"][i]: float(sums[i]) / n for i in np.flatnonzero(sums)}


def kernel_calls_by_name(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """GPU activities (kernel launches, copies, memsets) per name per analysed step: a copy that went from 15 to
    3,840 calls shows here even when each call is short."""
    gpu = analyzer.window_columns(rank)
    n = analysed_steps(analyzer, rank)
    counts = np.bincount(gpu["name"], minlength=len(gpu.labels["name"]))
    return {gpu.labels["name"][i]: float(counts[i]) / n for i in np.flatnonzero(counts)}


_OPS: "weakref.WeakKeyDictionary[TraceAnalyzer, dict[int, pd.DataFrame]]" = weakref.WeakKeyDictionary()


def _op_table(analyzer: "TraceAnalyzer", rank: int) -> "pd.DataFrame":
    """:func:`lumikit.trace.host_ops.op_summary` of a rank's analysed steps, computed once for time and calls."""
    from .host_ops import host_ops, op_summary

    per_rank = _OPS.setdefault(analyzer, {})
    if rank not in per_rank:
        steps = analyzer.step_times(rank)
        analysed = steps["step"][steps["analysed"]].tolist()
        per_rank[rank] = op_summary(host_ops(analyzer.trace[rank].events), steps=analysed or None)
    return per_rank[rank]


def cpu_op_self_time(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """Host self time per CPU op name (:func:`lumikit.trace.host_ops.op_summary`) per analysed step."""
    table = _op_table(analyzer, rank)
    n = analysed_steps(analyzer, rank)
    return {str(name): float(us) / n for name, us in zip(table["name"], table["self_us"])}


def cpu_op_calls(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """Calls per CPU op name per analysed step."""
    table = _op_table(analyzer, rank)
    n = analysed_steps(analyzer, rank)
    return {str(name): float(c) / n for name, c in zip(table["name"], table["calls"])}


def cpu_op_self_time_per_step(analyzer: "TraceAnalyzer", rank: int) -> list[dict[str, float]]:
    """Host self time per CPU op name in each analysed step (one dict a step; an op absent from a step is 0)."""
    from .host_ops import host_ops, op_summary

    steps = analyzer.step_times(rank)
    analysed = steps["step"][steps["analysed"]].tolist()
    ops = host_ops(analyzer.trace[rank].events)
    if not analysed:
        return [cpu_op_self_time(analyzer, rank)]
    return [{str(n): float(us) for n, us in zip(t["name"], t["self_us"])}
            for t in (op_summary(ops, steps=[step]) for step in analysed)]


def idle_by_kind(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """GPU idle time per analysed step, in all and by kind of cause (sync drain, starved, queued), over the
    rank's devices."""
    from .idle import KINDS, idle_causes

    n = analysed_steps(analyzer, rank)
    out = dict.fromkeys(("idle", *KINDS), 0.0)
    for report in idle_causes(analyzer, rank):
        out["idle"] += report.idle_us / n
        for kind, us in report.kinds.items():
            out[kind] += us / n
    return out


def idle_by_cause(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """GPU idle time per cause (see :mod:`lumikit.trace.idle`) per analysed step."""
    from .idle import idle_causes

    n = analysed_steps(analyzer, rank)
    out: dict[str, float] = {}
    for report in idle_causes(analyzer, rank):
        for cause, us in report.causes.items():
            out[cause] = out.get(cause, 0.0) + us / n
    return out


_PATHS: "weakref.WeakKeyDictionary[TraceAnalyzer, dict[int, dict]]" = weakref.WeakKeyDictionary()


def _critical_path(analyzer: "TraceAnalyzer", rank: int) -> dict:
    """The critical path of a rank's window (:func:`lumikit.trace.critical_path.analyzer_critical_path`), computed
    once per analyzer and rank for the two sections that show it."""
    from .critical_path import analyzer_critical_path

    per_rank = _PATHS.setdefault(analyzer, {})
    if rank not in per_rank:
        per_rank[rank] = analyzer_critical_path(analyzer, rank)
    return per_rank[rank]


def critical_path_per_step(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """The critical path's length (``path``) and its time per category (``bound_by_us``), per analysed step."""
    result = _critical_path(analyzer, rank)
    n = analysed_steps(analyzer, rank)
    return {"path": result["path_us"] / n, **{c: us / n for c, us in result["bound_by_us"].items()}}


def critical_path_shares(analyzer: "TraceAnalyzer", rank: int) -> dict[str, float]:
    """The share of the critical path per category (``bound_by``), in percent."""
    return {c: 100 * share for c, share in _critical_path(analyzer, rank)["bound_by"].items()}


#: The blocks ``lumikit trace diff`` shows, in order. Append a :class:`Section` to add one (:func:`add_section`).
SECTIONS: list[Section] = [
    Section("step time", "µs", step_time),
    Section("GPU time by class, per step", "µs", kernel_time_by_class),
    Section("kernels that changed most, per step", "µs", kernel_time_by_name, top=10, calls=kernel_calls_by_name),
    Section("kernels whose calls changed most, per step", "calls", kernel_calls_by_name, top=10),
    Section("CPU ops (self time) that changed most, per step", "µs", cpu_op_self_time, top=10, calls=cpu_op_calls,
            per_step=cpu_op_self_time_per_step),
    Section("CPU ops whose calls changed most, per step", "calls", cpu_op_calls, top=10),
    Section("GPU idle by kind of cause, per step", "µs", idle_by_kind),
    Section("GPU idle by cause, per step", "µs", idle_by_cause, top=10),
    Section("critical path and its categories, per step", "µs", critical_path_per_step),
    Section("critical path bound by (share of the path)", "%", critical_path_shares),
]


def add_section(section: Section, before: str | None = None) -> None:
    """Add a block to :data:`SECTIONS` (for example the critical path's share per category), at the end or
    before the block titled ``before``; a block with the same title is replaced."""
    SECTIONS[:] = [s for s in SECTIONS if s.title != section.title]
    titles = [s.title for s in SECTIONS]
    SECTIONS.insert(titles.index(before) if before in titles else len(SECTIONS), section)


def _rows(a: dict[str, float], b: dict[str, float], top: int | None) -> list[dict]:
    names = list(dict.fromkeys([*a, *b]))
    rows = []
    for name in names:
        va, vb = a.get(name, 0.0), b.get(name, 0.0)
        change = vb - va
        rows.append({"name": name, "a": _r(va), "b": _r(vb), "change": _r(change),
                     "change_pct": _r(100 * change / va, 1) if va else None})
    if top is not None:
        rows = sorted(rows, key=lambda r: -abs(r["change"]))[:top]
    return rows


def _step_rows(a: list[dict[str, float]], b: list[dict[str, float]], top: int | None) -> list[dict]:
    """Rows of medians over each side's steps, with each side's range (min to max over its steps) and a
    ``verdict``: "noise" where the two ranges overlap (one trace's own steps differ by as much as the change),
    "changed" where they are apart, "one step: spread unknown" where a side has a single step. Ranked by the change
    beyond noise first, then by size."""
    names = list(dict.fromkeys([n for step in (*a, *b) for n in step]))
    rows = []
    for name in names:
        sa = sorted(step.get(name, 0.0) for step in a)
        sb = sorted(step.get(name, 0.0) for step in b)
        va, vb = median(np.array(sa)), median(np.array(sb))
        change = vb - va
        if min(len(sa), len(sb)) < 2:
            verdict = "one step: spread unknown"
        else:
            verdict = "noise" if sa[0] <= sb[-1] and sb[0] <= sa[-1] else "changed"
        rows.append({"name": name, "a": _r(va), "b": _r(vb), "change": _r(change),
                     "change_pct": _r(100 * change / va, 1) if va else None,
                     "a_range": [_r(sa[0]), _r(sa[-1])], "b_range": [_r(sb[0]), _r(sb[-1])], "verdict": verdict})
    if top is not None:
        rows = sorted(rows, key=lambda r: (r["verdict"] == "noise", -abs(r["change"])))[:top]
    return rows


def trace_diff(a: "TraceAnalyzer", b: "TraceAnalyzer", rank_a: int | None = None, rank_b: int | None = None,
               sections: list[Section] | None = None, top: int | None = None) -> dict:
    """JSON-ready comparison of one rank of ``a`` (before) with one rank of ``b`` (after), section by section:
    each row gives ``a``, ``b``, ``change`` (b - a) and ``change_pct`` (of a; None where a is 0). ``top``
    overrides the row limit of the sections that have one."""
    ra = a.ranks[0] if rank_a is None else rank_a
    rb = b.ranks[0] if rank_b is None else rank_b
    out = []
    for section in SECTIONS if sections is None else sections:
        limit = section.top if top is None or section.top is None else top
        rows = (_step_rows(section.per_step(a, ra), section.per_step(b, rb), limit) if section.per_step else
                _rows(section.measure(a, ra), section.measure(b, rb), limit))
        if section.calls is not None:
            ca, cb = section.calls(a, ra), section.calls(b, rb)
            for row in rows:
                row["calls_a"], row["calls_b"] = _r(ca.get(row["name"], 0.0)), _r(cb.get(row["name"], 0.0))
        out.append({"title": section.title, "unit": section.unit, "rows": rows,
                    **({"per_step": True} if section.per_step else {})})
    return {"a": {"file": str(a.trace[ra].path), "rank": ra, "steps": analysed_steps(a, ra)},
            "b": {"file": str(b.trace[rb].path), "rank": rb, "steps": analysed_steps(b, rb)},
            "sections": out, "window": a.window_note()}


def section_table(diff: dict, title: str) -> "pd.DataFrame":
    """One block of a :func:`trace_diff` result as a table (``name``, ``a``, ``b``, ``change``, ``change_pct``)."""
    import pandas as pd

    for section in diff["sections"]:
        if section["title"] == title:
            columns = ["name", "a", "b", "change", "change_pct"]
            if section.get("per_step"):
                columns += ["a_range", "b_range", "verdict"]
            return pd.DataFrame(section["rows"], columns=columns)
    raise KeyError(f"no block titled {title!r}; the blocks are: {', '.join(s['title'] for s in diff['sections'])}")


def describe_diff(diff: dict, width: int = 56) -> list[str]:
    """The comparison as text lines: one table per section (names cut to ``width`` characters)."""
    lines = [f"A: {diff['a']['file']} (rank {diff['a']['rank']}, {diff['a']['steps']} steps analysed)",
             f"B: {diff['b']['file']} (rank {diff['b']['rank']}, {diff['b']['steps']} steps analysed)"]
    for section in diff["sections"]:
        lines.append("")
        head = f"{section['title']} ({section['unit']})"  # A, B and change over the columns of the rows below
        lines.append(f"{head}{'':<{max(0, width + 3 - len(head))}}{'A':>12} {'B':>12} {'change':>12}")
        if not section["rows"]:
            lines.append("  (nothing to compare)")
        for row in section["rows"]:
            pct = "" if row["change_pct"] is None else f" ({row['change_pct']:+.1f} %)"
            pct += f"  {row['verdict']}" if row.get("verdict") else ""
            name = row["name"] if len(row["name"]) <= width else row["name"][:width - 1] + "…"
            calls = f"  [{row['calls_a']:,g} -> {row['calls_b']:,g} calls]" if "calls_a" in row else ""
            lines.append(f"  {name:<{width}} {row['a']:>12.1f} {row['b']:>12.1f} {row['change']:>+12.1f}{pct}{calls}")
    return lines


def _r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)
