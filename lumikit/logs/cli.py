"""``lumikit logs progress|hip|rccl|rccl-tests`` and ``lumikit doctor``: thin command-line edges over the log
readers."""
from __future__ import annotations

import argparse
import math
from dataclasses import asdict

import pandas as pd

from ..json_output import print_json
from ..rocprof.names import short_kernel_name
from ..text import printable
from .doctor import diagnose, problems
from .hip import hip_summary, read_hip_log
from .progress import progress_summary, read_progress
from .rccl import rccl_transport

DOCTOR_EPILOG = """exit status: 0 when no known problem was found (notes alone do not count), 1 when at least one
problem was found, 2 when a file could not be read."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``logs`` (progress, hip, rccl) and ``doctor`` to the ``lumikit`` command."""
    logs = subparsers.add_parser("logs", help="read training, HIP and RCCL logs",
                                 description="Read what jobs write: training progress, HIP runtime logs, RCCL logs.")
    sub = logs.add_subparsers(dest="logs_command", required=True, metavar="SUBCOMMAND")

    progress = sub.add_parser("progress", help="throughput and loss from a training log",
                              description="Throughput (tqdm it/s, images/sec) and loss/accuracy from a training log "
                                          "such as slurm-<jobid>.out.")
    progress.add_argument("file", metavar="FILE")
    progress.add_argument("--json", action="store_true", help="print the summary and every row as JSON")
    progress.set_defaults(func=_progress)

    hip = sub.add_parser("hip", help="kernel launches and copies from an AMD_LOG_LEVEL=4 log",
                         description="Count the kernel launches and memory copies of a HIP runtime log "
                                     "(AMD_LOG_LEVEL=3 or 4; ROCm 5, 6 and 7 layouts; hard-wrapped copies too).")
    hip.add_argument("file", metavar="FILE")
    hip.add_argument("--json", action="store_true", help="print the summary as JSON")
    hip.add_argument("--top", type=int, default=10, metavar="N", help="list the N most launched kernels (default 10)")
    hip.set_defaults(func=_hip)

    rccl = sub.add_parser("rccl", help="which network RCCL used (NCCL_DEBUG=INFO)",
                          description="Say whether RCCL used the aws-ofi-rccl plugin (Slingshot, provider cxi) or fell "
                                      "back to TCP sockets, from logs written with NCCL_DEBUG=INFO. Exit status 1 "
                                      "when a file shows the socket fall-back.")
    rccl.add_argument("files", nargs="+", metavar="FILE")
    rccl.add_argument("--json", action="store_true", help="print JSON")
    rccl.set_defaults(func=_rccl)

    bench = sub.add_parser("rccl-tests", help="bandwidth per size from rccl-tests / nccl-tests output",
                           description="Read the output of all_reduce_perf (or another rccl-tests / nccl-tests *_perf "
                                       "program): algorithm and bus bandwidth per message size, the ranks and their "
                                       "GCDs, and the peak bus bandwidth against the node link it crossed (the site "
                                       "profile's [hardware.links]). Exit status 1 when the output says the "
                                       "results were wrong (#wrong above 0, out-of-bounds values, or a FAILED "
                                       "average).")
    bench.add_argument("file", metavar="FILE")
    bench.add_argument("--site", default="lumi", help="site profile whose links and GCD bus ids to use (default lumi)")
    bench.add_argument("--json", action="store_true", help="print the rows, the ranks and the link verdict as JSON")
    bench.set_defaults(func=_rccl_tests)

    fr = sub.add_parser("flight-recorder", help="hangs and desyncs from PyTorch flight recorder dumps",
                        description="Read PyTorch flight recorder dumps (one per rank, pickle or JSON, named as torch "
                                    "writes them: nccl_trace_rank_<rank>) and name the ranks that never joined a "
                                    "collective and the ranks that called different collectives (or sizes) at the "
                                    "same point. Exit status 1 when a hang or a desync is found.")
    fr.add_argument("files", nargs="+", metavar="DUMP")
    fr.add_argument("--json", action="store_true", help="print the ranks, hangs and desyncs as JSON")
    fr.set_defaults(func=_flight_recorder)

    doctor = subparsers.add_parser(
        "doctor", help="recognise known LUMI failures in job logs", epilog=DOCTOR_EPILOG,
        description="Look for known LUMI failure signatures (container environment and binds, RCCL network "
                    "plugin, MIOpen locks, quotas, read-only caches, time limit, out of memory, ...) in job logs "
                    "and explain cause and fix. FILE may be a folder: its *.out, *.err, *.log and *.txt are read.")
    doctor.add_argument("files", nargs="+", metavar="FILE")
    doctor.add_argument("--json", action="store_true", help="print the diagnoses as JSON")
    doctor.set_defaults(func=_doctor)


def _clean(value: object) -> object:
    """JSON-safe cell values: NaN/NA -> None, numpy numbers -> Python numbers."""
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def _progress(args: argparse.Namespace) -> int:
    table = read_progress(args.file)
    summary = progress_summary(table)
    if args.json:
        rows = [{k: _clean(v) for k, v in row.items()} for row in table.to_dict("records")]
        print_json({"summary": summary, "rows": rows})
        return 0
    print(f"{printable(args.file)}: {len(table)} progress observations")
    if "training" in summary:
        t = summary["training"]
        rate = f"{t['median_it_per_s']:.2f} it/s median" if t["median_it_per_s"] else "no rate yet"
        elapsed = "?" if t["elapsed_s"] is None else f"{t['elapsed_s']:.0f}"
        print(f"  training: step {t['steps']} of {t['total']} after {elapsed} s, {rate}")
    for bar in summary["bars"]:
        if "training" not in summary or (bar["series"], bar["total"]) != (summary["training"]["series"],
                                                                          summary["training"]["total"]):
            print(f"  bar {printable(repr(bar['series']))}: {bar['steps']}/{bar['total']} ({bar['updates']} updates, "
                  f"{printable(bar['unit'])})")
    for key, value in summary.items():
        if key.startswith("last_"):
            shown = "not a number" if value is None else f"{value:.4g}"
            print(f"  {key.replace('_', ' ')}: {shown}")
    for tp in summary.get("throughput", []):
        epoch = f" epoch {tp['epoch']:.0f}" if tp["epoch"] is not None else ""
        rate = "?" if tp["rate"] is None else f"{tp['rate']:g}"
        print(f"  {printable(tp['series'])}{epoch}: {rate} {printable(tp['unit'])}")
    return 0


def _hip(args: argparse.Namespace) -> int:
    table = read_hip_log(args.file)
    summary = hip_summary(table, top=args.top)
    if args.json:
        print_json(summary)
        return 0
    layout = summary["layout"] or "not recognised"
    print(f"{printable(args.file)}: {summary['records']} HIP log records (layout {layout})")
    print(f"  {summary['launches']} kernel launches, {summary['copies']} copies, {summary['memsets']} memsets")
    for direction, d in summary["bytes_by_direction"].items():
        print(f"  {printable(direction)}: {d['calls']} calls, {d['bytes']} bytes")
    if summary["kernel_classes"]:
        print("  kernels by class: " + ", ".join(f"{printable(c)} {n}" for c, n in summary["kernel_classes"].items()))
    for k in summary["top_kernels"]:
        print(f"  {k['launches']:>7}  {printable(short_kernel_name(k['name'], 90))}")
    for f in summary["failed_calls"]:
        print(f"  line {f['log_line']}: {printable(f['api'])} returned {printable(f['status'])}")
    for e in summary["errors"]:
        print(f"  line {e['log_line']}: error: {printable(e['message'][:150])}")
    return 0


def _rccl(args: argparse.Namespace) -> int:
    results = [rccl_transport(f) for f in args.files]
    if args.json:
        print_json([{**asdict(r), "ok": r.ok} for r in results])
    else:
        for r in results:
            print(f"{printable(r.source)}: {printable(r.describe())}")
            for ev in r.evidence[:4]:
                print(f"    {ev.line_no}: {printable(ev.text[:160])}")
    return 1 if any(r.transport == "socket" for r in results) else 0


def _rccl_tests(args: argparse.Namespace) -> int:
    from .collbench import busbw_check_skipped, check_busbw, describe, link_for, read_collbench

    bench = read_collbench(args.file)
    if args.json:
        print_json({**bench.to_dict(), "link": asdict(link_for(bench, args.site)),
                    "inconsistent_rows": check_busbw(bench), "busbw_check_skipped": busbw_check_skipped(bench)})
        return 1 if bench.failed else 0
    print("\n".join(describe(bench, args.site)))
    in_place = bench.placement == "in-place"
    cpu = ", CPU time" if bench.time_column == "cputime" else ""
    print(f"  {'size (B)':>12}  {'time (us)':>10}  {'algbw':>7}  {'busbw':>7}  {'#wrong':>6}   "
          f"({'in-place' if in_place else 'out-of-place'}, GB/s{cpu})")
    for r in bench.rows:
        def cell(v: float | None, width: int) -> str:
            return f"{'N/A':>{width}}" if v is None else f"{v:>{width}g}"
        t, a, b, w = (r.in_time_us, r.in_algbw, r.in_busbw, r.in_wrong) if in_place else \
            (r.time_us, r.algbw, r.busbw, r.wrong)
        flag = "  <- wrong results" if r.wrong_values else ""
        print(f"  {r.size_bytes:>12}  {cell(t, 10)}  {cell(a, 7)}  {cell(b, 7)}  {cell(w, 6)}{flag}")
    for line in check_busbw(bench):
        print(f"  warning: {line}")
    return 1 if bench.failed else 0


def _flight_recorder(args: argparse.Namespace) -> int:
    from .flight_recorder import find_desyncs, find_hangs, read_flight_recorder

    records = [read_flight_recorder(f) for f in args.files]
    hangs, desyncs = find_hangs(records), find_desyncs(records)
    if args.json:
        print_json({"dumps": [{"path": str(r.path), "rank": r.rank, "version": r.version, "entries": len(r.entries),
                               "last_seq": r.last_seq()} for r in records],
                    "hangs": [{**asdict(h), "last_seen": {str(k): v for k, v in h.last_seen.items()},
                               "text": h.describe()} for h in hangs],
                    "desyncs": [{**asdict(d), "text": d.describe()} for d in desyncs]})
    else:
        for r in records:
            groups = ", ".join(f"{printable(g)}: {s}" for g, s in sorted(r.last_seq().items()))
            print(f"{printable(r.path)}: rank {'?' if r.rank is None else r.rank}, {len(r.entries)} entries; last "
                  f"collective per process group: {groups or 'none'}")
        for item in [*desyncs, *hangs]:
            print(f"  problem: {item.describe()}")
        if not hangs and not desyncs:
            print("No hang or desync: every rank reached the same collective of each process group, with the same "
                  "calls.")
    return 1 if hangs or desyncs else 0


def _doctor(args: argparse.Namespace) -> int:
    found = diagnose(args.files)
    if args.json:
        print_json([asdict(d) for d in found])
    else:
        for d in found:
            print(d.describe())
            print()
        bad = problems(found)
        notes = len(found) - len(bad)
        if found:
            print(f"{len(bad)} problem{'s' if len(bad) != 1 else ''}, {notes} note{'s' if notes != 1 else ''}.")
        else:
            print("No known problem recognised.")
    return 1 if problems(found) else 0
