"""``lumikit rocprof stats``: the ranked kernel table of a rocprof output file or run folder."""
from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from ..json_output import print_json
from ..text import printable
from .names import short_kernel_name
from .outputs import rocprof_kernels
from .stats import GPU_KINDS, class_totals


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``rocprof stats`` to the ``lumikit`` command."""
    rocprof = subparsers.add_parser("rocprof", help="read rocprof / rocprofv3 outputs",
                                    description="Read rocprof (v1) and rocprofv3 outputs. Why the GPU waited and the critical "
                                                "path of a rocprofv3 database: `lumikit trace idle RUN.db`, "
                                                "`lumikit trace critical-path RUN.db`.")
    sub = rocprof.add_subparsers(dest="rocprof_command", required=True, metavar="SUBCOMMAND")
    stats = sub.add_parser(
        "stats", help="kernels ranked by GPU time, with their class",
        description="Rank the kernels of a rocprof output by total GPU time and split the time into compute, "
                    "communication and memory. PATH is results.stats.csv, *_kernel_stats.csv, "
                    "*_kernel_trace.csv, results.json, or a run folder that holds them.")
    stats.add_argument("path", metavar="PATH", help="a rocprof output file or a run folder")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.add_argument("--top", type=int, default=20, metavar="N",
                       help="show the N largest kernels (0: all; default 20)")
    stats.set_defaults(func=_stats)
    summary = sub.add_parser(
        "summary", help="kernels, memory copies and API calls of a rocprofv3 database or Perfetto trace",
        description="Summarise a rocprofv3 output: time and count of kernels, memory copies and API calls, the "
                    "processes and nodes, and the largest of each. PATH is a *_results.db (rocpd, ROCm 7's "
                    "default), a *.pftrace, or a run folder that holds them; CSV outputs give the kernel part.")
    summary.add_argument("path", metavar="PATH", help="a rocprofv3 .db or .pftrace, or a run folder")
    summary.add_argument("--json", action="store_true", help="print JSON instead of text")
    summary.add_argument("--top", type=int, default=5, metavar="N", help="the N largest of each kind (default 5)")
    summary.set_defaults(func=_summary)
    counters = sub.add_parser(
        "counters", help="hardware counters (rocprofv3 --pmc) per kernel",
        description="Add up the hardware counters of a rocprofv3 --pmc run per kernel. PATH is a "
                    "*_counter_collection.csv or a rocpd *_results.db. With SQ_WAVES, also the waves per compute "
                    "unit: below 1, most of the GCD had nothing to run even while GPU% read 100.")
    counters.add_argument("path", metavar="PATH", help="a *_counter_collection.csv or a rocpd .db")
    counters.add_argument("--json", action="store_true", help="print JSON instead of a table")
    counters.add_argument("--top", type=int, default=10, metavar="N", help="the N longest kernels (default 10)")
    counters.set_defaults(func=_counters)
    roof = sub.add_parser(
        "roofline", help="a roofline per kernel from rocprofv3 counters (MI250X)",
        description="FLOPs per precision, HBM bytes, arithmetic intensity, achieved FLOP/s and bandwidth, and the "
                    "roof that bounds each kernel, with rocprof-compute's gfx90a formulas. PATH is a "
                    "*_counter_collection.csv, a rocpd .db, or the folder of a run profiled with --profile roofline "
                    "(its pass_N/ folders are joined by dispatch); or a torch profiler trace (.json, .json.gz) "
                    "recorded with record_shapes=True: FLOPs and bytes from operator shapes, no counters.")
    roof.add_argument("path", metavar="PATH", help="a counter CSV, a rocpd .db, or a roofline run's folder")
    roof.add_argument("--json", action="store_true", help="print JSON instead of a table")
    roof.add_argument("--top", type=int, default=15, metavar="N", help="the N longest kernels (0: all; default 15)")
    roof.add_argument("--dispatches", action="store_true", help="also one row per dispatch (JSON: 'dispatches')")
    roof.add_argument("--csv", metavar="OUT", help="also write the per-kernel table to OUT (a new file)")
    roof.add_argument("--plot", metavar="OUT.png", help="also draw the roofline to OUT.png (a new file)")
    roof.set_defaults(func=_roofline)


def _finite(value: float | None) -> float | None:
    """``value`` as a float, or None for a missing, NaN or infinite one (a JSON-ready value carries neither)."""
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _class(value: object) -> str | None:
    """The kernel class, or None for host API rows (HIP/HSA statistics)."""
    return value if isinstance(value, str) else None


def stats_report(table: pd.DataFrame, top: int = 20) -> dict:
    """The JSON-ready summary of a ranked kernel table (what ``lumikit rocprof stats --json`` prints)."""
    rows = table if top <= 0 else table.head(top)
    totals = class_totals(table)
    return {
        "source": table.attrs.get("source"),
        "notes": list(table.attrs.get("notes", [])),
        "generation": table.attrs.get("generation"),
        "kernels_total": int(len(table)),
        "total_ns": _finite(table["total_ns"].sum()),
        "classes": {c: {"total_ns": _finite(r["total_ns"]), "calls": int(r["calls"]), "share": _finite(r["share"])}
                    for c, r in totals.iterrows()},
        "kernels": [
            {"rank": int(r["rank"]), "name": r["name"], "class": _class(r["kernel_class"]), "calls": int(r["calls"]),
             "total_ns": _finite(r["total_ns"]), "average_ns": _finite(r["average_ns"]),
             "percent": _finite(r["percent"])}
            for _, r in rows.iterrows()
        ],
    }


def _copies(path: str, table: pd.DataFrame) -> dict | None:
    """The memory copies (DMA transfers, not kernels) beside a kernel table read from rocpd databases or Perfetto
    traces: ``count``, ``total_ns``, ``bytes``; None where the kernel table came from files without them."""
    generation = str(table.attrs.get("generation", ""))
    if generation.endswith("rocpd"):
        from .rocpd import rocpd_stats

        copies = rocpd_stats(_databases(path), kind="copy")
    elif generation.endswith("pftrace"):
        from .outputs import activities

        acts = activities(path)
        copies = acts.copy_stats()
        copies["bytes"] = float(acts.copies["size_bytes"].sum()) if "size_bytes" in acts.copies else np.nan
    else:
        return None
    nbytes = _finite(copies["bytes"].sum()) if "bytes" in copies else None
    return {"count": int(copies["calls"].sum()), "total_ns": _finite(copies["total_ns"].sum()), "bytes": nbytes}


def _stats(args: argparse.Namespace) -> int:
    table = rocprof_kernels(args.path)
    copies = _copies(args.path, table)
    if args.json:
        report = stats_report(table, args.top)
        if copies is not None:
            report["copies"] = copies
        print_json(report)
        return 0
    total_ms = table["total_ns"].sum() / 1e6
    gpu = table.attrs.get("kind", "kernel") in GPU_KINDS
    what = f"{len(table)} kernels, {total_ms:.3f} ms of GPU time" if gpu else \
        f"{len(table)} {table.attrs.get('kind')} functions, {total_ms:.3f} ms of host time"
    source, generation = printable(table.attrs.get("source")), table.attrs.get("generation", "?")
    print(f"{source} (rocprof {generation}): {printable(what)}")
    if gpu:
        shares = "   ".join(f"{c} {100 * r['share']:.1f} %" for c, r in class_totals(table).iterrows())
        if copies is None:
            print("  " + shares)
        else:  # "memory" counts fill/copy kernels; the DMA copies are beside them, not in the shares
            size = f", {copies['bytes'] / 2**20:.1f} MiB" if copies["bytes"] is not None else ""
            print(f"  {shares} (memory: copy kernels only)\n  memory copies: {copies['count']}, "
                  f"{(copies['total_ns'] or 0) / 1e6:.3f} ms{size} (DMA transfers, not in the kernel time)")
    rows = table if args.top <= 0 else table.head(args.top)
    print(f"{'#':>3}  {'class':<13} {'total ms':>10} {'calls':>7} {'avg us':>9} {'%':>6}  name")
    for _, r in rows.iterrows():
        print(f"{r['rank']:>3}  {_class(r['kernel_class']) or 'api':<13} {r['total_ns'] / 1e6:>10.3f} {r['calls']:>7} "
              f"{r['average_ns'] / 1e3:>9.2f} {r['percent']:>6.2f}  {printable(short_kernel_name(r['name'], 70))}")
    if len(rows) < len(table):
        print(f"  ... {len(table) - len(rows)} more (--top 0 shows all)")
    for note in table.attrs.get("notes", []):
        print(f"note: {printable(note)}")
    return 0


def _has_activities(path: str) -> bool:
    """Whether PATH is (or holds, with no CSV kernel outputs beside) a rocpd database or a Perfetto trace."""
    from pathlib import Path

    from .outputs import find_outputs

    p = Path(path)
    if p.is_dir():
        o = find_outputs(p)
        return bool(o.databases or o.perfetto_traces) and not (o.kernel_stats or o.kernel_traces or o.json_traces)
    return p.name.lower().endswith((".db", ".rpd", ".sqlite", ".pftrace"))


def _databases(path: str) -> list:
    """The rocpd databases PATH is or holds (a folder's databases win over its Perfetto traces), else []."""
    from pathlib import Path

    from .outputs import find_outputs

    p = Path(path)
    if p.is_dir():
        return list(find_outputs(p).databases)
    return [p] if p.name.lower().endswith((".db", ".rpd", ".sqlite")) else []


def _summary(args: argparse.Namespace) -> int:
    from .outputs import activities

    if not _has_activities(args.path):
        if not args.json:  # --json prints JSON only
            print("(CSV or v1 outputs: kernels only; copies and API calls are in the rocpd database or .pftrace)")
        return _stats(args)
    databases = _databases(args.path)
    if databases:  # added up inside SQLite: millions of rows never enter pandas
        from .rocpd import rocpd_summary

        report, tables = rocpd_summary(databases)
        source, generation = report["source"], report["generation"]
    else:
        acts = activities(args.path)
        tables = {"kernels": acts.kernel_stats(), "copies": acts.copy_stats(), "api": acts.api_stats()}
        report = acts.summary()
        source, generation = acts.source, acts.generation
    if args.json:
        report["top"] = {k: [{"name": r["name"], "calls": int(r["calls"]), "total_ns": _finite(r["total_ns"])}
                             for _, r in t.head(args.top).iterrows()] for k, t in tables.items()}
        print_json(report)
        return 0
    nodes = report.get("nodes") or []
    print(f"{printable(source)} (rocprof {generation}): {report['processes']} processes"
          + (f" on {len(nodes)} nodes ({printable(', '.join(map(str, nodes)))})" if nodes else ""))
    titles = {"kernels": "kernels", "copies": "memory copies", "api": "API calls"}
    for key, table in tables.items():
        part = report[key]
        extra = f", {part['bytes'] / 2**20:.1f} MiB" if key == "copies" else ""
        print(f"\n{titles[key]}: {part['count']} in {len(table)} names, {part['total_ns'] / 1e6:.3f} ms{extra}")
        for _, r in table.head(args.top).iterrows():
            print(f"  {r['total_ns'] / 1e6:>10.3f} ms {r['calls']:>7}x  {printable(short_kernel_name(r['name'], 70))}")
    for note in report.get("notes", []):
        print(f"note: {printable(note)}")
    return 0


def _ms(duration_ns: object, missing: str = "no timestamps") -> str:
    """A duration in ns as milliseconds, or ``missing`` where it is unknown (a counter file without timestamps)."""
    return missing if duration_ns is None or pd.isna(duration_ns) else f"{float(duration_ns) / 1e6:.3f}"


def _counters(args: argparse.Namespace) -> int:
    from .counters import MI250X_GCD_CUS, counters_per_kernel, read_counters

    counters = read_counters(args.path)
    table = counters_per_kernel(counters).head(args.top if args.top > 0 else None)
    names = [c for c in table.columns if c not in ("kernel", "dispatches", "duration_ns")]
    if "SQ_WAVES" in table:
        table["waves_per_cu_per_dispatch"] = table["SQ_WAVES"] / table["dispatches"] / MI250X_GCD_CUS
    notes = list(counters.attrs.get("notes", []))
    if not counters.attrs.get("timestamps", True):
        notes.append(f"{args.path}: no start and end timestamps in this file: kernel times are unknown (null)")
    if args.json:
        print_json({"source": str(args.path), "counters": names, "notes": notes,
                    "kernels": [{k: (None if v is None or (not isinstance(v, str) and pd.isna(v)) else v)
                                 for k, v in r.items()} for r in table.to_dict("records")]})
        return 0
    print(f"{printable(str(args.path))}: counters {printable(', '.join(names))}")
    extra = "  waves/CU" if "SQ_WAVES" in table else ""
    widths = {n: max(12, len(printable(n))) for n in names}  # whole names: cut ones would look alike
    print(f"{'ms':>13} {'calls':>7}  " + "  ".join(f"{printable(n):>{widths[n]}}" for n in names) + extra
          + "  kernel")
    for _, r in table.iterrows():
        cells = "  ".join(f"{r[n]:>{widths[n]}.6g}" for n in names)
        waves = f"  {r['waves_per_cu_per_dispatch']:>8.2f}" if extra else ""
        print(f"{_ms(r['duration_ns']):>13} {int(r['dispatches']):>7}  {cells}{waves}  "
              f"{printable(short_kernel_name(str(r['kernel']), 60))}")
    for note in notes:
        print(f"note: {printable(note)}")
    return 0


def _si(value: object, unit: str) -> str:
    """A number with an SI prefix (``1.23 T``), or ``-`` when unknown."""
    if value is None or pd.isna(value):
        return "-"
    v = float(value)
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def _roofline(args: argparse.Namespace) -> int:
    from ..files import write_new
    from .roofline import read_roofline, roofline_report

    if str(args.path).endswith((".json", ".json.gz")):  # a torch profiler trace: from shapes, no counters
        from .shape_roofline import shape_roofline

        rl = shape_roofline(args.path)
    else:
        rl = read_roofline(args.path)
    if args.csv:
        write_new(args.csv, rl.table().to_csv(index=False))
    if args.plot:
        from ..plotting import figure_png
        from .plots import plot_roofline

        write_new(args.plot, figure_png(plot_roofline(rl, top=args.top if args.top > 0 else 50)))
    if args.json:
        print_json(roofline_report(rl, args.top, per_dispatch=args.dispatches))
        return 0
    print(f"{printable(rl.source)}: roofline of {len(rl.kernels)} "
          + (f"kernels from {rl.passes} counter pass(es) (rocprof-compute's MI200 formulas)" if rl.passes else
             "operators from their shapes (no counters; see the cache assumption below)"))
    head = f"{'ms':>13} {'calls':>6} {'FLOPs':>10} {'HBM bytes':>10} {'FLOP/B':>8} {'FLOP/s':>10} {'HBM B/s':>10}" \
           f"  {'bound':<8} {'% roof':>6}  kernel"

    def rows(table: pd.DataFrame) -> None:
        print(head)
        for _, r in table.iterrows():
            ai = "-" if pd.isna(r["arithmetic_intensity"]) else f"{r['arithmetic_intensity']:.3g}"
            pct = "-" if pd.isna(r["pct_of_roof"]) else f"{r['pct_of_roof']:.0f}"
            bound = r["bound"] if isinstance(r["bound"], str) else "-"
            print(f"{_ms(r['duration_ns'], '-' if not rl.passes else 'no timestamps'):>13} "
                  f"{int(r.get('dispatches', 1)):>6} {_si(r['flops'], ''):>10} "
                  f"{_si(r['hbm_bytes'], 'B'):>10} {ai:>8} {_si(r['flops_per_s'], ''):>10} "
                  f"{_si(r['hbm_bytes_per_s'], 'B/s'):>10}  {bound:<8} {pct:>6}  "
                  f"{printable(short_kernel_name(str(r['kernel']), 50))}"
                  + (f" [{r['roof']}]" if isinstance(r["roof"], str) else ""))

    rows(rl.kernels if args.top <= 0 else rl.kernels.head(args.top))
    if len(rl.kernels) > args.top > 0:
        print(f"  ... {len(rl.kernels) - args.top} more (--top 0 shows all)")
    if args.dispatches:
        print("\nper dispatch:")
        rows(rl.dispatches.assign(dispatches=1))
    print("\nroofs (per device as PyTorch sees it; an MI250X GCD is one):" if rl.roofs else "\nroofs: none")
    sources: dict[str, int] = {}
    for r in rl.roofs:
        unit = "TB/s" if r.kind == "bandwidth" else "TFLOP/s"
        print(f"  {r.name:<32} {r.value / 1e12:>8.2f} {unit:<7} [{sources.setdefault(r.source, len(sources) + 1)}]")
    for source, n in sources.items():
        print(f"  [{n}] {printable(source)}")
    print("bound: memory when intensity x HBM peak < the compute peak of the kernel's main FLOP kind, else compute; "
          "% roof: achieved / that attainable rate")
    for note in rl.notes:
        print(f"note: {printable(note)}")
    return 0
