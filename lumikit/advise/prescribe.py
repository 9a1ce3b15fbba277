"""``advise(PATH)``: read what a run folder, a trace (or folder of traces) or a rocpd database holds, run every
rule of :mod:`lumikit.advise.rules` over it and rank the findings."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import LumikitError, TraceError
from .evidence import rank_evidence
from .findings import MIN_GAIN_PCT, PRIORITIES, Advice, Finding
from .rules import (RANK_RULES, health_findings, log_findings, rank_wait_us, record_findings, roofline_evidence,
                    rule_comm_overlap, rule_memory_bound, rule_mismatch, rule_roofline_memory, rule_straggler)


def _looks_traced(f: Path) -> bool:
    return f.is_file() and (f.name.endswith((".pt.trace.json", ".pt.trace.json.gz", ".db"))
                            or "trace" in f.name and f.name.endswith((".json", ".json.gz")))


def _trace_source(path: Path, run_folder: bool) -> tuple[Path, str, dict | None] | None:
    """Where the traces are: (folder or file, what it holds, {rank: file} for Kineto files or None for rocpd
    databases); a run folder's traces may sit one or two folders down. None: no trace there."""
    from ..rocprof.rocpd_events import rocpd_databases
    from ..trace.loader import find_trace_files

    candidates = [path]
    if run_folder:
        subs = sorted(d for d in path.iterdir() if d.is_dir())[:100]
        candidates += subs + sorted(d for s in subs for d in s.iterdir() if d.is_dir())[:200]
    for where in candidates:
        if run_folder and where is path and not any(_looks_traced(f) for f in path.iterdir()):
            continue  # the run folder's own files (manifest, logs) are no traces
        if rocpd_databases(where):
            return where, "rocpd database", None
        try:
            files = find_trace_files(where)
        except TraceError:
            if where is path and not run_folder:
                raise
            continue
        return where, f"{len(files)} Kineto trace file{'s' if len(files) > 1 else ''}", files
    return None


def advise(path: str | os.PathLike[str], *, rank: int | None = None, site: str = "lumi",
           salvage: bool = False) -> Advice:
    """The ranked prescription for a run folder, a trace file or folder of traces, or a rocpd database (only the
    analysed rank is loaded whole; the other ranks' collectives are read one file at a time)."""
    from ..rocprof.rocpd_events import rocpd_databases, rocpd_trace
    from ..site import load_site
    from ..trace.analyses import TraceAnalyzer
    from ..trace.loader import load_trace
    from ..trace.synth import is_generated

    p = Path(path)
    if not p.exists():
        raise TraceError(f"{path}: no such file or folder; give a run folder, a trace or a folder of traces")
    findings: list[Finding] = []
    inputs: list[str] = []
    notes: list[str] = []
    run_folder = p.is_dir() and ((p / "manifest.json").is_file() or (p / "gpu").is_dir())
    if run_folder:
        got, where = record_findings(p)
        findings += got
        inputs.append(where or "GPU record card")
        findings += log_findings(p)
        inputs.append("logs (doctor)")
    roof = roofline_evidence(p) if p.is_dir() else None
    if roof is not None:
        inputs.append("roofline (rocprofv3 counters)")
    try:
        source = _trace_source(p, run_folder or roof is not None)
    except TraceError:
        if p.is_dir():
            raise TraceError(f"{path}: neither a run folder nor a trace (.json/.json.gz), a folder of traces or a "
                             f"rocpd database (.db); give one of those") from None
        raise
    generated, gpu_seen = False, True
    if source is not None:
        where, what, files = source
        inputs.append(what)
        if files is None:
            databases = rocpd_databases(where)
            trace = rocpd_trace(databases, ranks=None if rank is None else [rank], host_calls=True)
            ranks = trace.rank_ids
        else:
            ranks = sorted(files)
            chosen = ranks[0] if rank is None else rank
            if chosen not in files:
                raise TraceError(f"rank {chosen} is not in {where} (ranks: {ranks})")
            trace = load_trace(files[chosen], rank_map={chosen: files[chosen]}, salvage=salvage)
        generated = is_generated(trace)
        analyzer = TraceAnalyzer(trace)
        r = analyzer.ranks[0] if rank is None else rank
        e = rank_evidence(analyzer, r)
        inputs.append(f"rank {r}: critical path ({e.path_us / 1000:.2f} ms), idle causes, kernels")
        if e.kernels == 0:
            gpu_seen = False
            notes.append(f"rank {r}: no GPU kernels in the analysed steps (a CPU-only run, or one profiled without "
                         f"the CUDA activity): only the host-side rules had anything to read")
        matched = None
        if files is not None and len(files) > 1:
            from ..trace.matched import collect_calls, hosts_from_run, match_collectives

            matched = match_collectives(collect_calls(where, salvage=salvage), hosts=hosts_from_run(where),
                                        links=load_site(site).links)
            inputs.append(f"collectives matched across {len(files)} ranks")
        waits = 0.0
        if matched is not None:
            waits = rank_wait_us(matched, e)
            for f in (rule_straggler(matched, e), rule_mismatch(matched)):
                if f:
                    findings.append(f)
                    if f.rule == "straggler":
                        f.evidence.append(_across(where, files, r, matched))
        for rule in RANK_RULES:
            if roof is not None and rule is rule_memory_bound:
                continue  # measured below, not guessed from names
            f = rule(e)
            if f:
                findings.append(f)
        f = rule_comm_overlap(e, waits)
        if f:
            findings.append(f)
        got, note = health_findings(trace)
        findings += got
        if note:
            notes.append(note)
    if roof is not None:
        f = rule_roofline_memory(roof, e if source is not None else None)
        if f:
            findings.append(f)
    if source is None and not run_folder and roof is None:
        raise TraceError(f"{path}: neither a run folder nor a trace (.json/.json.gz), a folder of traces or a "
                         f"rocpd database (.db); give one of those")
    if source is None and (run_folder or roof is not None):
        notes.append("no profiler trace here: rerun with --profile torch for the step's findings")
    findings = [f for f in findings if f.gain_pct is None or f.gain_pct >= MIN_GAIN_PCT]  # worth nothing: noise
    findings.sort(key=lambda f: (PRIORITIES.index(f.priority), not f.first, -(f.gain_pct or 0.0)))
    return Advice(str(path), findings, inputs, notes, generated, gpu_seen)


def _across(where: Path, files: dict, rank: int, matched: dict) -> str:
    """One line of evidence from the critical path across ranks: how much of ``rank``'s path is the straggler's
    own work, and its heaviest event there."""
    from ..trace.cross_path import cross_rank_path

    last = matched["stragglers"][0]["rank"]
    try:
        cross = cross_rank_path(where, rank, rank_map=files, top=5)
    except LumikitError as exc:
        return f"critical path across ranks: not computed ({exc})"
    share = cross["by_rank"].get(last, 0.0)
    heavy = next((x for x in cross["path_events"] if x["rank"] == last), None)
    return (f"critical path across ranks: rank {last}'s own work is {100 * share:.1f} % of rank {rank}'s path"
            + (f", most of it {heavy['name'][:60]} ({heavy['category']})" if heavy else "")
            + f"; `lumikit trace critical-path DIR --across-ranks --what-if '{last}:REGEX=FACTOR'` weighs a fix")


def main_advise(args: Any) -> int:
    """``lumikit advise PATH [--rank R] [--json]``."""
    from ..json_output import print_json
    from ..text import printable

    advice = advise(args.path, rank=args.rank, site=args.site, salvage=args.salvage)
    if args.json:
        print_json(advice.to_dict())
        return 0
    for line in advice.text().splitlines():
        print(printable(line))
    return 0
