"""Is this trace whole enough to analyse? ``lumikit trace check``: what a trace lacks or holds wrongly, before an
analysis reads it as complete.

Each finding has a ``kind``, a ``severity`` (``warning``: an analysis of this trace can mislead; ``note``: a limit
of what it can tell), a ``count``, the ``evidence`` in numbers and what to do. The checks that need only the loaded
columns (:func:`rank_findings`) are cheap, so every trace command runs them and prints one line
(:func:`warning_line`) when one warns; ``trace check`` adds the ones that read the file again (operator shapes).

Why this exists: ROCm 7.2.1's ROCTracer can lose some or all kernel records (ROCm 7.2.2 release notes: "In ROCm
7.2.1, applications using ROCTracer failed to receive some or all kernel operation events"; ROCm/legacy-rocm-build
issue 6102), and Kineto writes no count of what it lost: a trace whose launches lost their kernels reads as a
GPU that idled.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np

from .columns import Columns
from .runtime_names import LAUNCH, kind_codes
from .tables import GPU_CATEGORIES, RUNTIME_CATEGORIES, launched

if TYPE_CHECKING:
    from .analyses import TraceAnalyzer
    from .loader import Trace

#: GPU tracers known to lose kernel records, each with the release that fixed it and where that is written.
DROPPING_TRACERS = (
    {"stack": "ROCm 7.2.1", "tracer": "ROCTracer", "fixed_in": "ROCm 7.2.2",
     "source": "ROCm 7.2.2 release notes (ROCm/legacy-rocm-build, release rocm-7.2.2): 'In ROCm 7.2.1, "
               "applications using ROCTracer failed to receive some or all kernel operation events'; "
               "issue ROCm/legacy-rocm-build#6102"},
)
#: A GPU activity that starts this many µs before its launch call began shows the clocks disagree (Kineto rounds
#: to the µs or the ns; less than this is rounding).
CLOCK_TOLERANCE_US = 1.0
#: A step with fewer GPU activities than this share of the median step's is starved of kernels.
STARVED_SHARE = 0.25
#: Lost launches up to this share of all kernel launches are a note, above it a warning.
LOST_WARNING_SHARE = 0.01


@dataclass(frozen=True)
class Finding:
    """One thing the check found in one rank's trace."""

    kind: str
    severity: str  # "warning" or "note"
    count: int
    evidence: str
    fix: str
    rank: int | None = None
    numbers: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready."""
        return asdict(self)


def _launch_rows(columns: Columns, kinds: np.ndarray) -> np.ndarray:
    """Indices of the host calls that launch a kernel (or a graph of kernels): runtime/driver events of the launch
    kind, memsets left out (they enqueue no kernel)."""
    names = columns.labels["name"]
    is_kernel_launch = (kinds == LAUNCH) & np.fromiter(("Memset" not in n for n in names), dtype=bool,
                                                       count=len(names))
    ok = np.append(is_kernel_launch, False)[columns["name"]]
    return np.flatnonzero(ok & columns.label_mask("cat", RUNTIME_CATEGORIES))


def lost_kernels(columns: Columns) -> dict | None:
    """The kernel launches of a rank whose GPU work never appears in the trace: ``count`` of ``launches``, the host
    time of those calls (``launch_call_us``) and when they ran (``first_us``, ``last_us`` from the trace's first
    event); None where launches and GPU work share no id to match them by."""
    if len(columns) == 0:
        return None
    kinds = kind_codes(columns.labels["name"])
    rows = _launch_rows(columns, kinds)
    if len(rows) == 0:
        return {"launches": 0, "count": 0, "launch_call_us": 0.0, "first_us": None, "last_us": None}
    gpu = np.flatnonzero(columns.label_mask("cat", GPU_CATEGORIES))
    for key in ("correlation", "external_id"):
        gpu_ids = columns[key][gpu]
        gpu_ids = gpu_ids[gpu_ids >= 0]
        ids = columns[key][rows]
        if (ids >= 0).any() and (len(gpu_ids) or len(gpu) == 0):
            lost = rows[(ids >= 0) & ~np.isin(ids, gpu_ids)]
            break
    else:
        return None
    t0 = float(np.nanmin(columns["ts"]))
    ts = columns["ts"][lost]
    return {"launches": int(len(rows)), "count": int(len(lost)),
            "launch_call_us": float(np.nansum(columns["dur"][lost])),
            "first_us": float(ts.min() - t0) if len(lost) else None,
            "last_us": float(ts.max() - t0) if len(lost) else None}


def left_out_unlaunched(analyzer: "TraceAnalyzer", rank: int) -> dict:
    """The GPU work the analyses of a rank leave out because its launch call is not in the trace (HTA's window,
    :meth:`~lumikit.trace.analyses.TraceAnalyzer.window`): ``count`` and ``us`` (summed durations); 0 where the
    window keeps everything (fewer than two steps)."""
    if len(analyzer.step_columns(rank)) < 2:
        return {"count": 0, "us": 0.0}
    gpu = analyzer.gpu_columns(rank)
    out = ~launched(gpu)
    return {"count": int(out.sum()), "us": round(float(np.nansum(gpu["dur"][out])), 3)}


def health_summary(analyzer: "TraceAnalyzer", rank: int) -> dict:
    """What a rank's summary adds from the check: ``left_out_unlaunched`` and ``check`` (the warning line or None)."""
    return {"left_out_unlaunched": left_out_unlaunched(analyzer, rank),
            "check": warning_line(analyzer, analyzer.trace[rank].path, [rank])}


def _fmt_ms(us: float) -> str:
    return f"{us / 1000:.3g} ms" if us >= 1000 else f"{us:.3g} µs"


def rank_findings(analyzer: "TraceAnalyzer", rank: int) -> list[Finding]:
    """The findings that need only a rank's loaded columns (cheap: what every trace command runs)."""
    columns = analyzer.trace[rank].columns
    out: list[Finding] = []
    if analyzer.trace[rank].truncated:
        out.append(Finding(
            "truncated", "warning", 0,
            "the file ends mid-event (a job killed while writing it): only its complete events were kept, so the "
            "last steps may lack their GPU work or their end",
            "record again and let the profiler finish (prof.stop() or leaving the `with` block before the job's "
            "time limit)", rank))
    names = columns.labels["name"]
    lost = lost_kernels(columns)
    if lost is None:
        out.append(Finding(
            "unmatched_launches", "note", 0,
            "kernel launches and GPU work share no correlation or External id here, so whether the tracer lost "
            "kernel records cannot be told",
            "record with a torch profiler that writes correlation ids (every recent PyTorch does)", rank))
    elif lost["count"]:
        share = lost["count"] / lost["launches"]
        rocm = any(n.startswith("hip") for n in names)
        known = "; ".join(f"{t['stack']}'s {t['tracer']} (fixed in {t['fixed_in']}; {t['source']})"
                          for t in DROPPING_TRACERS) if rocm else ""
        out.append(Finding(
            "lost_kernels", "warning" if share > LOST_WARNING_SHARE else "note", lost["count"],
            f"{lost['count']:,} of {lost['launches']:,} kernel launches ({share:.1%}) have no GPU work in the trace "
            f"(their calls took {_fmt_ms(lost['launch_call_us'])} of host time, from +{_fmt_ms(lost['first_us'])} "
            f"to +{_fmt_ms(lost['last_us'])} after the trace's start): the GPU tracer lost their records, so the "
            "GPU looks idle where it ran them" + (f". Known to do this: {known}" if known else ""),
            "record again with a GPU tracer that keeps every record (on ROCm 7.2.1, move to ROCm 7.2.2 or later); "
            "until then read GPU busy and idle times of this trace as lower and upper bounds",
            rank, {**lost, "share": round(share, 4), "known_dropping_tracers": [dict(t) for t in DROPPING_TRACERS]}))
    steps = analyzer.step_columns(rank)
    gpu = analyzer.gpu_columns(rank)
    if len(steps) == 0:
        out.append(Finding(
            "no_profiler_step", "warning", 0,
            "no ProfilerStep#N annotation: the analyses read the whole trace as one window (warm-up included) and "
            "have no step time",
            "call prof.step() once per training step inside torch.profiler.profile(schedule=...)", rank))
    elif len(steps) == 1:
        out.append(Finding(
            "single_step", "note", 1,
            f"one ProfilerStep (#{int(steps['step'][0])}): it is analysed whole (no last step is left out), and "
            "one step shows no step-to-step spread",
            "profile a few steps (schedule(wait=1, warmup=1, active=3)) to see whether this one is typical", rank))
    else:
        numbers = steps["step"]
        dropped = analyzer.dropped_step(rank)
        analysed = numbers != (dropped if dropped is not None else -1)
        known, per_step = np.unique(gpu["step"], return_counts=True)  # one pass, not one mask per step
        at = np.minimum(np.searchsorted(known, numbers), max(len(known) - 1, 0))
        activities = np.where((len(known) > 0) & (known[at] == numbers), per_step[at], 0) if len(known) else \
            np.zeros(len(numbers), dtype=np.int64)
        typical = float(np.median(activities[analysed])) if analysed.any() else 0.0
        starved = analysed & (activities < STARVED_SHARE * typical)
        if typical > 0 and starved.any():
            which = [int(s) for s in numbers[starved]]
            out.append(Finding(
                "starved_steps", "warning", len(which),
                f"{len(which)} of {int(analysed.sum())} analysed steps ({', '.join(f'#{s}' for s in which[:8])}"
                f"{', ...' if len(which) > 8 else ''}) hold fewer than {STARVED_SHARE:.0%} of the median step's "
                f"{typical:g} GPU activities: their GPU work is missing or the step did something else",
                "read those steps' timelines (trace slice --steps N) before averaging; if their launches lost their "
                "kernels, see lost_kernels", rank, {"steps": which, "median_activities": typical}))
    if len(gpu):
        ok = launched(gpu)
        early = gpu["ts"][ok] < gpu["launch_ts"][ok] - CLOCK_TOLERANCE_US
        if early.any():
            worst = float((gpu["launch_ts"][ok] - gpu["ts"][ok])[early].max())
            out.append(Finding(
                "clock_disagreement", "warning", int(early.sum()),
                f"{int(early.sum()):,} GPU activities start before their launch call began (by up to "
                f"{_fmt_ms(worst)}): host and GPU clocks disagree, so launch delays and waits are off by as much",
                "record host and GPU on one clock (a newer PyTorch/Kineto); compare times within one side only",
                rank, {"worst_us": round(worst, 3)}))
        missing = ~ok
        if missing.any():
            us = float(np.nansum(gpu["dur"][missing]))
            first_step = float(steps["start"].min()) if len(steps) else -math.inf
            inside = int((gpu["ts"][missing] >= first_step).sum())
            left_out = len(steps) >= 2
            out.append(Finding(
                "unlaunched_gpu_work", "warning" if inside and left_out else "note", int(missing.sum()),
                f"{int(missing.sum()):,} GPU activities ({_fmt_ms(us)}) have no launch call in the trace"
                + (f"; {inside:,} of them run inside the profiled steps (a launch the profiler lost)" if inside
                   else " (all before the first step: work still running from before the profiler started)")
                + ("; the analyses leave them out, as HTA does" if left_out else "; the analyses count them"),
                "nothing to do for work from before the profiler started; for lost launches, record again",
                rank, {"us": round(us, 3), "inside_steps": inside, "left_out": left_out}))
    runtime = columns.label_mask("cat", RUNTIME_CATEGORIES)
    graph = runtime & columns.label_mask("name", lambda n: n.endswith("GraphLaunch"))
    if graph.any():
        out.append(Finding(
            "graph_launches", "note", int(graph.sum()),
            f"{int(graph.sum()):,} graph launches: each starts many kernels from one host call, so their kernels "
            "have no launch of their own and launch overhead per kernel does not apply to them",
            "read the kernels of a graph together (by the graph launch's correlation id)", rank))
    cuda = any(n.startswith("cuda") for n in names)
    if cuda and not columns.label_mask("cat", ("cuda_sync",)).any():
        out.append(Finding(
            "no_cuda_sync", "note", 0,
            "a CUDA trace without cuda_sync events: which stream or event a synchronize waited on is inferred "
            "from the call names, not read from the trace",
            "record with a PyTorch whose Kineto writes cuda_sync events (recent releases do)", rank))
    return out


def has_shapes(path: Path | str, limit: int = 1 << 30) -> bool | None:
    """Whether the trace file holds operator shapes (``"Input Dims"``), read in blocks up to ``limit`` bytes; None
    when the file could not be read."""
    from .reader import open_bytes

    needle, tail = b'"Input Dims"', b""
    try:
        with open_bytes(Path(path)) as fh:
            read = 0
            while read < limit:
                block = fh.read(8 << 20)
                if not block:
                    return False
                if needle in tail + block:
                    return True
                tail, read = block[-len(needle):], read + len(block)
    except (OSError, EOFError, ValueError):
        return None
    return False


def file_findings(path: Path | str, rank: int | None = None) -> list[Finding]:
    """The findings that read the file again: whether the profiler kept operator shapes."""
    if has_shapes(path) is False:
        return [Finding("no_shapes", "note", 0,
                        "no operator shapes (Input Dims): a roofline from shapes is impossible for this trace",
                        "record with torch.profiler.profile(..., record_shapes=True), or profile counters with "
                        "rocprofv3 (--profile roofline)", rank)]
    return []


def check_trace(trace: "Trace", *, files: bool = True) -> dict:
    """Every finding of every rank of a loaded trace, JSON-ready: ``findings`` (each with its rank), and how many
    are ``warnings`` and ``notes``."""
    from .analyses import TraceAnalyzer

    analyzer = TraceAnalyzer(trace)
    findings: list[Finding] = []
    for rank in analyzer.ranks:
        findings += rank_findings(analyzer, rank)
        if files:
            findings += file_findings(trace[rank].path, rank)
    return {"files": {str(r): str(trace[r].path) for r in trace.rank_ids},
            "findings": [f.as_dict() for f in findings],
            "warnings": sum(f.severity == "warning" for f in findings),
            "notes": sum(f.severity == "note" for f in findings)}


def describe_check(report: Mapping) -> list[str]:
    """The check as text lines, warnings first."""
    found = sorted(report["findings"], key=lambda f: (f["severity"] != "warning", f["rank"] or 0))
    if not found:
        return ["no findings: every kernel launch has its GPU work, the steps are marked, clocks agree"]
    lines = [f"{report['warnings']} warning(s), {report['notes']} note(s)"]
    for f in found:
        lines.append(f"rank {f['rank']} {f['severity']}: {f['kind']}: {f['evidence']}")
        lines.append(f"  what to do: {f['fix']}")
    return lines


def warning_line(analyzer: "TraceAnalyzer", path: object, ranks: list[int] | None = None) -> str | None:
    """One line for the top of any trace command's output when the cheap checks of ``ranks`` (default: every
    rank) warn, else None."""
    from ..text import printable

    warn = [(r, f) for r in (analyzer.ranks if ranks is None else ranks) for f in rank_findings(analyzer, r)
            if f.severity == "warning"]
    if not warn:
        return None
    what = "; ".join(f"rank {r}: {f.kind}" + (f" ({f.count:,})" if f.count else "") for r, f in warn[:4])
    what += ", ..." if len(warn) > 4 else ""
    return (f"warning: this trace may mislead the analysis ({what}); run `lumikit trace check "
            f"{printable(str(path))}` for the evidence and what to do")
