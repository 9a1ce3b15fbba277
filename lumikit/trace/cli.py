"""``lumikit trace summary|collectives|memory|idle|critical-path|diff|check|slice``: the trace wing on the command
line (a thin edge over the analyses)."""
from __future__ import annotations

import argparse
import sys

from ..errors import TraceError
from ..json_output import print_json
from ..text import printable


def _steps(text: str) -> tuple[int, int]:
    try:
        first, _, last = text.partition("-")
        return int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--steps {text!r}: write a step or a range, e.g. 3 or 3-5") from None


def _ranks(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ranks {text!r}: write rank numbers separated by commas") from None


def _instance(text: str) -> int | tuple[int, int]:
    try:
        first, _, last = text.partition("-")
        return int(first) if not last else (int(first), int(last))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--instance {text!r}: write K or K-L, e.g. 0 or 1-3") from None


def _rank_map(text: str | None) -> dict[int, str] | None:
    if not text:
        return None
    try:
        return {int(k): v for k, v in (item.split("=", 1) for item in text.split(","))}
    except ValueError:
        raise TraceError(f"--rank-map {text!r}: write RANK=FILE pairs separated by commas") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``lumikit trace ...`` to the main command."""
    trace = subparsers.add_parser("trace", help="summarise or slice PyTorch profiler (Kineto) traces")
    sub = trace.add_subparsers(dest="trace_command", required=True, metavar="ACTION")

    summary = sub.add_parser("summary", help="step times, kernel time by class, top kernels, idle/compute")
    summary.add_argument("path", help="a trace file (.json/.json.gz) or a folder of per-rank traces")
    summary.add_argument("--json", action="store_true", help="print JSON instead of text")
    summary.add_argument("--top", type=int, default=10, help="how many top kernels per rank (default 10)")
    summary.add_argument("--salvage", action="store_true", help="keep the complete events of a truncated file")
    summary.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    summary.add_argument("--include-last-step", action="store_true",
                         help="count the last ProfilerStep too (HTA and lumikit leave it out by default)")
    summary.add_argument("--via", choices=("here", "slurm"), default="here",
                         help="summarise the ranks here, one at a time (default), or as a Slurm job array")
    summary.add_argument("--tasks", type=int, help="array tasks for --via slurm (default: one per rank)")
    summary.set_defaults(func=run_summary)

    comms = sub.add_parser("collectives", help="RCCL/NCCL collectives: sizes, bus bandwidth against LUMI's links")
    comms.add_argument("path", help="a trace file (.json/.json.gz) or a folder of per-rank traces")
    comms.add_argument("--site", default="lumi", help="site profile whose link speeds to compare with (default lumi)")
    comms.add_argument("--json", action="store_true", help="print JSON instead of text")
    comms.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    comms.add_argument("--via", choices=("here", "slurm"), default="here",
                       help="read the ranks here, one at a time (default), or as a Slurm job array")
    comms.add_argument("--tasks", type=int, help="array tasks for --via slurm (default: one per rank)")
    comms.add_argument("--salvage", action="store_true", help="keep the complete events of a truncated file")
    comms.set_defaults(func=run_collectives)

    memory = sub.add_parser("memory", help="memory peak, timeline by category and the largest live allocations")
    memory.add_argument("path", help="a Kineto trace recorded with profile_memory=True, or a torch.cuda.memory "
                                     "snapshot (.pickle)")
    memory.add_argument("--device", type=int, help="device to show (default: the one with the highest peak)")
    memory.add_argument("--top", type=int, default=10, help="how many live allocations at the peak (default 10)")
    memory.add_argument("--json", action="store_true", help="print JSON instead of text")
    memory.set_defaults(func=run_memory)

    path = sub.add_parser("critical-path", help="the step's critical path: what it waited on, and what-ifs")
    path.add_argument("path", help="a trace file (.json/.json.gz), a folder of per-rank traces, or a rocprofv3 "
                                   "database (.db) or a folder of them (one rank per process)")
    path.add_argument("--rank", type=int, help="rank to analyse (default: the lowest)")
    path.add_argument("--annotation", help="analyse the host annotation whose name contains NAME (as HTA's "
                                           "annotation), instead of the profiler steps of the default window")
    path.add_argument("--instance", type=_instance, help="which instance of --annotation: K or K-L (default 0)")
    path.add_argument("--what-if", action="append", default=[], metavar="REGEX=FACTOR",
                      help="divide the time of the kernels and CPU ops matching REGEX by FACTOR and re-run the "
                           "path (repeatable)")
    path.add_argument("--include-last-step", action="store_true", help="count the last ProfilerStep too")
    path.add_argument("--no-untraced-host", action="store_true",
                      help="give host time that no op covers no weight, as HTA does (to compare with HTA)")
    path.add_argument("--top", type=int, default=20, help="how many path events to list (default 20)")
    path.add_argument("--json", action="store_true", help="print JSON instead of text")
    path.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    path.add_argument("--salvage", action="store_true", help="keep the complete events of a truncated file")
    path.add_argument("--across-ranks", action="store_true",
                      help="a folder of rank traces: follow each collective's wait to the rank that arrived last "
                           "and on along its path; --what-if RANK:REGEX=FACTOR acts on one rank")
    path.set_defaults(func=run_critical_path)
    idle = sub.add_parser("idle", help="why the GPU waited: each idle gap with its cause (sync drain, starved)")
    idle.add_argument("path", help="a trace file (.json/.json.gz), a folder of per-rank traces, or a rocprofv3 "
                                   "database (.db) or a folder of them (one rank per process)")
    idle.add_argument("--rank", type=int, help="only this rank (default: every rank)")
    idle.add_argument("--top", type=int, default=10, help="how many causes and gaps to list (default 10)")
    idle.add_argument("--json", action="store_true", help="print JSON (idle_us, causes, kinds, every gap)")
    idle.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    idle.add_argument("--include-last-step", action="store_true", help="count the last ProfilerStep too")
    idle.set_defaults(func=run_idle)

    diff = sub.add_parser("diff", help="before and after: step time, GPU time, top changes, idle causes, critical path")
    diff.add_argument("before", help="trace file or folder A (before)")
    diff.add_argument("after", help="trace file or folder B (after)")
    diff.add_argument("--rank", type=int, help="rank to compare in both (default: the lowest rank of each)")
    diff.add_argument("--top", type=int, help="rows of the 'changed most' tables (default 10)")
    diff.add_argument("--json", action="store_true", help="print JSON instead of text")
    diff.add_argument("--include-last-step", action="store_true", help="count the last ProfilerStep too")
    diff.set_defaults(func=run_diff)

    check = sub.add_parser("check", help="is the trace whole? lost kernels, missing steps, clocks, shapes")
    check.add_argument("path", help="a trace file (.json/.json.gz) or a folder of per-rank traces")
    check.add_argument("--json", action="store_true", help="print JSON (every finding: kind, severity, count, "
                                                            "evidence, what to do)")
    check.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    check.add_argument("--salvage", action="store_true", help="keep the complete events of a truncated file")
    check.set_defaults(func=run_check)

    cut = sub.add_parser("slice", help="write a smaller trace (steps, ranks, window) for Perfetto")
    cut.add_argument("path", help="a trace file or a folder of per-rank traces")
    cut.add_argument("--steps", type=_steps, help="ProfilerStep range, e.g. 3-4")
    cut.add_argument("--ranks", type=_ranks, help="ranks to keep, e.g. 0,3")
    cut.add_argument("--start-us", type=float, help="window start (trace µs)")
    cut.add_argument("--end-us", type=float, help="window end (trace µs)")
    cut.add_argument("-o", "--output", required=True, help="output .json.gz (one rank) or folder")
    cut.add_argument("--force", action="store_true", help="overwrite existing output")
    cut.add_argument("--rank-map", help="explicit RANK=FILE,RANK=FILE mapping")
    cut.set_defaults(func=run_slice)


def run_summary(args: argparse.Namespace) -> int:
    from .scale import reduce_summaries, summarise_ranks, summarise_via_slurm

    rank_map = _rank_map(args.rank_map)
    if args.via == "slurm":
        summary = summarise_via_slurm(args.path, rank_map=rank_map, top=args.top, tasks=args.tasks,
                                      include_last_step=args.include_last_step)
        if not args.json:
            for rank, info in summary["ranks"].items():
                _print_rank(rank, info)
    else:  # one rank in memory at a time; text output streams rank by rank
        per_rank = {}
        for rank, info in summarise_ranks(args.path, rank_map=rank_map, top=args.top, salvage=args.salvage,
                                          include_last_step=args.include_last_step, progress=sys.stderr.isatty()):
            per_rank[rank] = info
            if not args.json:
                _print_rank(str(rank), info)
                sys.stdout.flush()
        summary = reduce_summaries(per_rank, args.include_last_step)
    checks = [info["check"] for info in summary["ranks"].values() if info.get("check")]
    if checks:
        print(checks[0] + (f" ({len(checks) - 1} more ranks warn too)" if len(checks) > 1 else ""), file=sys.stderr)
    if args.json:
        print_json(summary)
        return 0
    if summary["straggler"] is not None:
        print(f"straggler: rank {summary['straggler']}")
    print(f"window: {summary['window']}")
    return 0


def _ms(us: float | None, digits: int = 2) -> str:
    """Microseconds as milliseconds; "?" where the summary has no number (a damaged time)."""
    return "?" if us is None else f"{us / 1000:.{digits}f}"


def _pct(fraction: float | None) -> str:
    return "?" if fraction is None else f"{fraction:.1%}"


def _print_rank(rank: str, info: dict) -> None:
    print(f"rank {printable(rank)}: {printable(info['file'])}")
    print("  steps: " + (", ".join(f"#{s['step']} {_ms(s['dur_us'])} ms" for s in info["steps"])
                          or "none (no ProfilerStep annotations)"))
    if info.get("coverage"):
        from .coverage import describe_coverage

        print(f"  {describe_coverage(info['coverage'])}")
    kt = info["kernel_time_us"]
    no_gpu = info.get("gpu_activities") == 0
    if no_gpu:
        print("  GPU: no GPU events in this trace (no kernels, copies or memsets): a CPU-only run, or one profiled "
              "without ProfilerActivity.CUDA (the activity that records ROCm GPUs too)")
    else:
        print(f"  GPU time: compute {_ms(kt['compute'])} ms, communication {_ms(kt['communication'])} ms, "
              f"memory {_ms(kt['memory'])} ms on streams {printable(info['streams'])}")
    for device, d in () if no_gpu else info["devices"].items():
        t = d["temporal"]
        where = f"device {device} " if len(info["devices"]) > 1 else ""
        overlap = "" if d["comm_comp_overlap"] is None else \
            f"; communication overlapped by compute {d['comm_comp_overlap']:.1%}"
        print(f"  {where}GPU span {_ms(t['span_us'])} ms: idle {_pct(t['idle'])}, compute {_pct(t['compute'])}, "
              f"non-compute {_pct(t['non_compute'])}{overlap}")
    ld = info["launch_delays"]
    if ld["negative"]:
        print(f"  launch delays: {ld['negative']} of {ld['count']} negative (down to {ld['min_us']} µs): the GPU "
              f"started the work before its launch call returned (a long or synchronous call, such as a blocking "
              f"copy)")
        if ld.get("before_call"):
            print(f"  {ld['before_call']} of them started before their call even began: host and GPU clocks "
                  f"disagree in this trace")
    for text in info["warnings"]:
        print(f"  warning: {printable(text)}")
    if (info.get("left_out_unlaunched") or {}).get("count"):
        lo = info["left_out_unlaunched"]
        print(f"  left out: {lo['count']} GPU activities ({_ms(lo['us'], 3)} ms) whose launch call is not in the "
              f"trace (as HTA does)")
    if info.get("vs_hta"):
        print(f"  vs HTA: {printable(info['vs_hta'])}")
    for k in info["top_kernels"][:5]:
        print(f"    {_ms(k['total_us'], 3):>9} ms  {k['count']:6d}x  {k['class']:<13} {printable(k['name'][:70])}")


def run_collectives(args: argparse.Namespace) -> int:
    from ..site import load_site
    from .analyses import TraceAnalyzer
    from .comms import collective_summary, collective_table, describe_collectives
    from .loader import find_trace_files, load_trace
    from .matched import calls_table, describe_matched, hosts_from_run, match_collectives, rank_calls
    from .scale import calls_via_slurm

    links = load_site(args.site).links
    rank_map = _rank_map(args.rank_map)
    files = find_trace_files(args.path, rank_map)
    if args.via == "slurm":
        per_rank = calls_via_slurm(args.path, rank_map=rank_map, tasks=args.tasks)
    else:  # one rank in memory at a time, its communication events only
        per_rank = {r: rank_calls(r, f, salvage=args.salvage) for r, f in files.items()}
    tables = []
    for r, f in files.items():
        t = calls_table(per_rank[r])  # a call without a size needs the whole rank (its launches) to find one
        tables.append(t if t is not None else collective_table(load_trace(f, rank_map={r: f}, salvage=args.salvage)))
    table = _concat(tables)
    if len(files) == 1:  # one rank: the trace check's line, as the other commands print it
        (r, f), = files.items()
        _health(TraceAnalyzer(load_trace(f, rank_map={r: f}, salvage=args.salvage)), args.path)
    summary = collective_summary(table, links)
    matched = None
    if len(files) > 1:
        matched = match_collectives(per_rank, hosts=hosts_from_run(args.path), links=links)
    if args.json:
        out = {"per_rank": summary.to_dict(orient="records")}
        if matched is not None:
            out.update(matched)
        print_json(out)
        return 0
    if table.empty:
        print(f"{printable(args.path)}: no RCCL/NCCL kernels in this trace (one process, or no torch.distributed "
              f"calls)")
        return 0
    unsized = int(table["bytes"].isna().sum())
    for line in describe_collectives(summary, links):
        print(printable(line))
    if unsized:
        print(f"{unsized} of {len(table)} communication kernels carry no message size (no record_param_comms "
              f"args); they are left out of the bandwidths")
    print("bus bandwidth by nccl-tests' definitions; kernel time includes waiting for the other ranks, so the "
          "best call of a kind is the fairest figure against a link's peak (GB/s per direction)")
    if matched is not None:
        print("across ranks:")
        for line in describe_matched(matched):
            print("  " + printable(line))
    return 0


def _concat(tables: list) -> "object":
    """Per-rank collective tables as one (the empty table's columns when there is none)."""
    import pandas as pd

    from .comms import COLUMNS

    kept = [t for t in tables if not t.empty]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=COLUMNS)


def run_memory(args: argparse.Namespace) -> int:
    from .memory import load_memory

    view = load_memory(args.path)
    report = view.report(device=args.device, top=args.top)
    if args.json:
        print_json(report)
        return 0
    for line in view.describe(device=args.device, top=args.top).split("\n"):
        print(printable(line))
    return 0


def run_idle(args: argparse.Namespace) -> int:
    from ..rocprof.rocpd_events import rocpd_databases, rocpd_note, rocpd_trace
    from .analyses import TraceAnalyzer
    from .idle import KINDS, idle_report

    ranks = None if args.rank is None else [args.rank]
    databases = rocpd_databases(args.path)
    if databases:
        analyzer = TraceAnalyzer(rocpd_trace(databases, ranks=ranks), include_last_step=args.include_last_step)
    else:
        analyzer = TraceAnalyzer.from_path(args.path, ranks=ranks, rank_map=_rank_map(args.rank_map),
                                           include_last_step=args.include_last_step)
        _health(analyzer, args.path)
    report = idle_report(analyzer)
    if databases:
        report["window"] = rocpd_note(analyzer.trace)
    if args.json:
        print_json(report)
        return 0
    for rank, devices in report["ranks"].items():
        for device, d in devices.items():
            span, idle = d["span_us"], d["idle_us"]
            if not span:
                print(f"rank {rank}: no GPU work in the analysed window (a CPU-only run, or one profiled without "
                      f"ProfilerActivity.CUDA, the activity that records ROCm GPUs too)")
                continue
            share = f" ({idle / span:.1%})" if span else ""
            lead = d.get("before_gpu_us") or 0.0
            before = f", {_ms(lead, 3)} ms of it before the first GPU work" if lead else ""
            if d.get("window_us"):
                before += f", in a {_ms(d['window_us'], 3)} ms window"
            print(f"rank {rank} device {device}: GPU idle {_ms(idle)} ms of a {_ms(span)} ms span{share}{before}, "
                  f"{len(d['gaps'])} gaps")
            if not idle:
                continue
            print("  " + ", ".join(f"{k} {_ms(d['kinds'][k])} ms ({d['kinds'][k] / idle:.1%})" for k in KINDS))
            counts: dict[str, int] = {}
            for gap in d["gaps"]:
                counts[gap["cause"]] = counts.get(gap["cause"], 0) + 1
            print(f"  {'ms':>9}  {'share':>6}  {'gaps':>5}  cause")
            for cause, us in list(d["causes"].items())[:args.top]:
                print(f"  {_ms(us, 3):>9}  {us / idle:6.1%}  {counts[cause]:5d}  {printable(cause[:90])}")
            largest = sorted(d["gaps"], key=lambda g: -g["dur_us"])[:min(args.top, 5)]
            t0 = _window_start(analyzer, int(rank))
            print("  largest gaps:")
            for gap in largest:
                where = f"step {gap['step']} +{_ms(gap['since_step_us'], 3)} ms" if gap["step"] >= 0 else \
                    f"at +{_ms(gap['start_us'] - t0, 3)} ms in the window"
                print(f"    {where}: {_ms(gap['dur_us'], 3)} ms {printable(gap['cause'][:60])}, "
                      f"then {printable(gap['next'][:50])}")
    print(f"window: {report['window']}")
    return 0


def _window_start(analyzer, rank: int) -> float:
    """Where a rank's analysed window starts (its first step, or its first GPU work): gap positions print from it."""
    steps, gpu = analyzer.step_columns(rank), analyzer.window_columns(rank)
    starts = [float(steps["start"].min())] if len(steps) else []
    return min(starts + ([float(gpu["ts"].min())] if len(gpu) else []), default=0.0)


def run_diff(args: argparse.Namespace) -> int:
    from .analyses import TraceAnalyzer
    from .diff import describe_diff, trace_diff

    ranks = None if args.rank is None else [args.rank]
    a, b = (TraceAnalyzer.from_path(p, ranks=ranks, include_last_step=args.include_last_step)
            for p in (args.before, args.after))
    _health(a, args.before)
    _health(b, args.after)
    diff = trace_diff(a, b, args.rank, args.rank, top=args.top)
    if args.json:
        print_json(diff)
        return 0
    for line in describe_diff(diff):
        print(printable(line))
    print(f"window: {diff['window']}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from .health import check_trace, describe_check
    from .loader import load_trace

    report = check_trace(load_trace(args.path, rank_map=_rank_map(args.rank_map), salvage=args.salvage))
    report["path"] = str(args.path)
    if args.json:
        print_json(report)
        return 0
    for line in describe_check(report):
        print(printable(line))
    return 0


def _health(analyzer, path: object) -> None:
    """One line on stderr when the trace check warns (see :mod:`lumikit.trace.health`)."""
    from .health import warning_line

    line = warning_line(analyzer, path)
    if line:
        print(line, file=sys.stderr)


def run_slice(args: argparse.Namespace) -> int:
    from .slicing import slice_trace

    written = slice_trace(args.path, args.output, steps=args.steps, ranks=args.ranks, start_us=args.start_us,
                          end_us=args.end_us, force=args.force, rank_map=_rank_map(args.rank_map))
    for path in written:
        print(printable(path))
    return 0


def run_critical_path(args: argparse.Namespace) -> int:
    from ..rocprof.rocpd_events import rocpd_databases, rocpd_trace
    from .analyses import TraceAnalyzer
    from .critical_path import WhatIf, critical_path, describe
    from .loader import load_trace

    what_if = [WhatIf.parse(w) for w in args.what_if]  # a bad pattern fails before the trace is read
    if args.across_ranks:
        from .cross_path import RankWhatIf, cross_rank_path, describe_cross

        cross = cross_rank_path(args.path, args.rank, what_if=[RankWhatIf.parse(w) for w in args.what_if],
                                rank_map=_rank_map(args.rank_map), include_last_step=args.include_last_step,
                                top=args.top)
        if args.json:
            print_json(cross)
            return 0
        for line in describe_cross(cross, top=args.top):
            print(printable(line))
        return 0
    if args.instance is not None and not args.annotation:
        raise TraceError("--instance picks an instance of --annotation NAME; give the annotation too")
    databases = rocpd_databases(args.path)
    if databases:
        trace = rocpd_trace(databases, ranks=None if args.rank is None else [args.rank], host_calls=True)
    else:
        trace = load_trace(args.path, ranks=None if args.rank is None else [args.rank],
                           rank_map=_rank_map(args.rank_map), salvage=args.salvage)
        _health(TraceAnalyzer(trace), args.path)
    rank = trace.rank_ids[0] if args.rank is None else args.rank
    result = {"rank": rank, **critical_path(trace[rank].columns, annotation=args.annotation,
                                            instance=args.instance, what_if=what_if,
                                            include_last_step=args.include_last_step, top=args.top,
                                            count_untraced_host=not args.no_untraced_host)}
    if args.json:
        print_json(result)
        return 0
    print(f"rank {rank}: {printable(trace[rank].path)}")
    for line in describe(result, top=args.top):
        print(line)
    return 0
