"""Traces at scale: ``lumikit trace summary DIR`` over many generated ROCm-style ranks (default 64 x 50 MB), one
rank in memory at a time, against HTA loading the same folder (capped: the run is stopped when its processes
pass ``--hta-cap-gb`` of memory, which is where it would run a shared machine out of memory). Files are
generated into /tmp and deleted afterwards. Saves ``benchmarks/results/trace_scale.json`` and ``.md``.

    .venv/bin/python benchmarks/bench_trace_scale.py                       # 64 x 50 MB (3.2 GB on /tmp)
    .venv/bin/python benchmarks/bench_trace_scale.py --ranks 4 --mb 5      # a small run

It also times ``lumikit trace collectives DIR --json`` on the same folder (every collective matched across the
ranks, one rank read at a time) against the summary's peak memory: the budget the matching must stay within.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_bench_common import REPO, copy_as_ranks, generate_rocm_rank, run_measured  # noqa: E402

HTA_CODE = ("import sys; from lumikit.trace.hta_bridge import trace_analysis; "
            "ta = trace_analysis(sys.argv[1]); ta.get_temporal_breakdown(visualize=False)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--mb", type=float, default=50.0, help="size of each rank's file")
    ap.add_argument("--hta-cap-gb", type=float, default=8.0, help="stop HTA when its processes pass this")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--hta-from", help="take HTA's figures from an earlier results JSON of the same set (HTA takes "
                                       "many minutes; the generated set is deterministic)")
    args = ap.parse_args(argv)
    py = sys.executable
    full = args.ranks == 64 and args.mb == 50.0
    with tempfile.TemporaryDirectory(prefix="lumikit-bench-scale-", dir="/tmp") as tmp:
        template, layers = generate_rocm_rank(Path(tmp) / "template", args.mb)
        folder = Path(tmp) / "ranks"
        files = copy_as_ranks(template, folder, args.ranks)
        total_mb = sum(f.stat().st_size for f in files) / 1e6
        print(f"generated {args.ranks} ranks x {files[0].stat().st_size / 1e6:.1f} MB = {total_mb:.0f} MB in {folder}")
        ours = run_measured([py, "-m", "lumikit", "trace", "summary", "--json", str(folder)], timeout=args.timeout)
        assert ours["returncode"] == 0, ours["stderr"]
        summary = json.loads(ours["stdout"])
        assert len(summary["ranks"]) == args.ranks
        print(f"lumikit: {ours['seconds']:.1f} s, peak {ours['peak_pss_mb']:.0f} MB")
        matched = run_measured([py, "-m", "lumikit", "trace", "collectives", "--json", str(folder)],
                               timeout=args.timeout)
        assert matched["returncode"] == 0, matched["stderr"]
        collectives = json.loads(matched["stdout"])
        assert len(collectives["ranks"]) == args.ranks and collectives["matched"], "nothing matched"
        print(f"lumikit collectives (matched {len(collectives['matched'])} across {args.ranks} ranks): "
              f"{matched['seconds']:.1f} s, peak {matched['peak_pss_mb']:.0f} MB")
        hta = None
        if args.hta_from:
            earlier = json.loads(Path(args.hta_from).read_text())
            assert (earlier["ranks"], earlier["mb_per_rank"]) == (args.ranks, args.mb), "not the same set"
            hta = {"earlier": {**earlier["hta"], "timed_out": earlier["hta"].get(
                "timed_out", not earlier["hta"]["finished"] and earlier["hta"]["seconds"] >= 0.99 * args.timeout)}}
        elif not args.no_hta:
            hta = run_measured([py, "-c", HTA_CODE, str(folder)], cap_mb=args.hta_cap_gb * 1024,
                               timeout=args.timeout)
            state = ("stopped at the memory cap" if hta["capped"] else "finished" if hta["returncode"] == 0
                     else f"failed ({hta['returncode']}): {hta['stderr'][-300:]}")
            print(f"HTA: {state} after {hta['seconds']:.1f} s, peak {hta['peak_pss_mb']:.0f} MB")
    report = {
        "machine": {"cpus_usable": len(os.sched_getaffinity(0)), "memory_gb": round(os.sysconf("SC_PAGE_SIZE") *
                    os.sysconf("SC_PHYS_PAGES") / 2**30, 1), "python": platform.python_version(),
                    "load_average_1min": os.getloadavg()[0]},
        "ranks": args.ranks, "mb_per_rank": args.mb, "total_mb": round(total_mb), "layers_per_step": layers,
        "lumikit": {"seconds": round(ours["seconds"], 1), "peak_pss_mb": round(ours["peak_pss_mb"]),
                    "mb_per_s": round(total_mb / ours["seconds"], 1)},
        "matched": {"seconds": round(matched["seconds"], 1), "peak_pss_mb": round(matched["peak_pss_mb"]),
                    "collectives": len(collectives["matched"]), "mb_per_s": round(total_mb / matched["seconds"], 1),
                    "within_summary_peak": matched["peak_pss_mb"] <= 1.1 * ours["peak_pss_mb"]},
        "hta": None if hta is None else hta["earlier"] if "earlier" in hta else {
            "seconds": round(hta["seconds"], 1), "peak_pss_mb": round(hta["peak_pss_mb"]),
            "capped_at_gb": args.hta_cap_gb if hta["capped"] else None,
            "finished": hta["returncode"] == 0 and not hta["capped"],
            "timed_out": hta["seconds"] >= 0.99 * args.timeout, "timeout_s": args.timeout,
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
        "hta_from_earlier_run": bool(args.hta_from),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(json.dumps(report, indent=2))
    if full:
        out = REPO / "benchmarks" / "results"
        (out / "trace_scale.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / "trace_scale.md").write_text(_markdown(report))
    return 0


def _markdown(r: dict) -> str:
    h = r["hta"]
    lines = ["# Many ranks: `lumikit trace summary DIR` against HTA", "",
             f"{r['ranks']} generated ROCm-style ranks x {r['mb_per_rank']} MB ({r['total_mb']} MB) on "
             f"{r['machine']['cpus_usable']} usable CPUs and {r['machine']['memory_gb']} GB of memory, shared with "
             f"other work (1-minute load average {r['machine']['load_average_1min']:.1f} at the end). Peak: "
             f"proportional memory (PSS) of the whole process tree, sampled every 50 ms.", "",
             "| contender | seconds | peak PSS (MB) | note |", "|---|---|---|---|",
             f"| lumikit (one rank at a time) | {r['lumikit']['seconds']} | {r['lumikit']['peak_pss_mb']} | "
             f"{r['lumikit']['mb_per_s']} MB/s |"]
    if r.get("matched"):
        m = r["matched"]
        later = ""
        if m.get("summary_same_run"):
            later = (f"; a later run ({m['measured_at']}, load {m['load_average_1min']:.1f}), whose summary took "
                     f"{m['summary_same_run']['seconds']} s at {m['summary_same_run']['peak_pss_mb']} MB")
        lines.append(f"| lumikit trace collectives (matched across ranks) | {m['seconds']} | {m['peak_pss_mb']} | "
                     f"{m['collectives']} collectives matched, {m['mb_per_s']} MB/s{later} |")
    if h:
        note = (f"stopped when its processes passed {h['capped_at_gb']} GB: it would not fit beside other work"
                if h["capped_at_gb"] else "finished" if h["finished"] else
                f"not finished after {h['seconds']:.0f} s: stopped at the time limit" if h.get("timed_out")
                else "failed")
        when = (" (from an earlier run on the same generated set"
                + (f", {h['measured_at']})" if h.get("measured_at") else ")")) if r.get("hta_from_earlier_run") else ""
        lines.append(f"| HTA TraceAnalysis + temporal breakdown | {h['seconds']} | {h['peak_pss_mb']} | {note}{when} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
