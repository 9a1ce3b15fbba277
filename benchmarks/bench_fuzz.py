"""The long fuzz run: thousands of mutated inputs per reader family, with the counts per family.

The same seeded mutations as ``tests/test_fuzz.py`` (byte flips, token insertion, line deletion and duplication,
number changes, truncation, structural JSON edits) over the project's generated data and the real outputs in
``../shared/fixtures`` (when present), each input through ``lumikit ... --json`` in forked worker processes.
Counts as failures: an exception other than LumikitError, an input over 2 s (or still running at 20 s), output
that is not standard JSON, NaN or infinity in what the Python API returned, a worker killed by a signal. A fresh
seed each run unless ``--seed`` (printed; every failing case names the chunk seed that replays it). Then the archive
bombs (gzip traces and sessions that inflate a thousandfold, flight-recorder dumps of shared references), each in a
forked process: the target is one line within 10 s and 500 MB of memory growth. Prints tables and saves
``benchmarks/results/fuzz.json`` and ``fuzz.md``; exit status 1 when a failure was found.

    .venv/bin/python benchmarks/bench_fuzz.py                  # 2,500 inputs per family, every family, the bombs
    .venv/bin/python benchmarks/bench_fuzz.py --inputs 200     # quicker
    .venv/bin/python benchmarks/bench_fuzz.py --families flightrec rccltests manifest markers  # issue 31's readers
    .venv/bin/python benchmarks/bench_fuzz.py --families record omnistat progress  # the GPU record, Omnistat, progress
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.testing.fuzz import FAMILIES, FamilyResult, fresh_seed, fuzz_parallel  # noqa: E402

SHARED = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=2500, help="mutated inputs per family (default 2500)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a fresh one, printed)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    args.seed = fresh_seed() if args.seed is None else args.seed
    fixtures = SHARED if SHARED.is_dir() else None
    print(f"fixtures: {fixtures or 'not found (generated seeds only)'}; seed {args.seed}", flush=True)
    warnings.simplefilter("ignore")  # salvaged traces and recordings warn by design
    started = time.perf_counter()

    def progress(r: FamilyResult) -> None:
        print(f"  {r.family}: {r.inputs} inputs, {len(r.unhandled)} unhandled, {len(r.hangs)} hangs, "
              f"{len(r.invalid_json)} invalid JSON", flush=True)
    results = fuzz_parallel(args.inputs, seed=args.seed, families=tuple(args.families), fixtures=fixtures,
                            workers=args.workers, on_progress=progress)
    total = time.perf_counter() - started
    head = f"{'family':<8} {'inputs':>7} {'accepted':>8} {'refused':>8} {'unhandled':>9} {'hangs':>6} " \
           f"{'bad JSON':>8} {'slowest s':>9} {'seconds':>8}"
    print(head)
    for r in results:
        d = r.as_dict()
        print(f"{d['family']:<8} {d['inputs']:>7} {d['accepted']:>8} {d['refused']:>8} {d['unhandled']:>9} "
              f"{d['hangs']:>6} {d['invalid_json']:>8} {d['slowest_s']:>9.3f} {d['seconds']:>8.1f}")
    inputs = sum(r.inputs for r in results)
    failures = [f for r in results for f in r.unhandled + r.hangs + r.invalid_json]
    print(f"total: {inputs} inputs in {total:.0f} s, {len(failures)} failures")
    bomb_rows = bombs()
    failures += [f"bomb {r['bomb']}: {r['problem']}" for r in bomb_rows if r["problem"]]
    for f in failures[:10]:
        print("  " + f)
    report = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "seed": args.seed, "workers": args.workers, "fixtures": str(fixtures) if fixtures else None,
              "seconds": round(total, 1), "families": [r.as_dict() | {"slowest_case": r.slowest_case}
                                                      for r in results], "bombs": bomb_rows, "failures": failures[:100]}
    args.results.mkdir(parents=True, exist_ok=True)
    stem = "fuzz" if args.inputs >= 2500 and set(args.families) == set(FAMILIES) else "fuzz_partial"
    (args.results / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    md = [f"# Mutation fuzzing of the readers (seed {args.seed}, {inputs} inputs)", "",
          f"{report['machine']}, Python {report['python']}, {report['cpus']} cores, load average "
          f"{report['load_average'][0]:.1f} (machine shared while measured); seeds: generated data"
          + (" and the real outputs in ../shared/fixtures" if fixtures else " only") + ".", "",
          "| family | inputs | accepted | refused (LumikitError) | unhandled | hangs (> 2 s) | invalid JSON | "
          "slowest input (s) |", "|---|---|---|---|---|---|---|---|"]
    md += [f"| {d['family']} | {d['inputs']} | {d['accepted']} | {d['refused']} | {d['unhandled']} | {d['hangs']} | "
           f"{d['invalid_json']} | {d['slowest_s']:.3f} |" for d in report["families"]]
    md += ["", f"Total: {inputs} inputs, {len(failures)} failures, {total:.0f} s with {args.workers} workers.", "",
           "| archive bomb | file bytes | exit | seconds | memory growth (MB) | one line |", "|---|---|---|---|---|---|"]
    md += [f"| {r['bomb']} | {r['bytes']:,} | {r['status']} | {r['seconds']:.2f} | {r['grew_mb']:.0f} | "
           f"{not r['problem']} |" for r in bomb_rows]
    (args.results / f"{stem}.md").write_text("\n".join(md) + "\n")
    return 1 if failures else 0


BOMB_LIMIT_S, BOMB_LIMIT_MB = 10.0, 500.0


def bombs() -> list[dict]:
    """The archive bombs, each through the command that reads it (forked: start-up not counted): a table row each."""
    import gzip
    import pickle
    import tempfile
    import zlib

    from lumikit.testing.cli_walk import run_case

    rows = []
    with tempfile.TemporaryDirectory(prefix="lumikit-bombs-") as tmp:
        root = Path(tmp)
        tiny = b'{"ph":"X","name":"k","ts":1,"dur":1,"pid":1,"tid":1}'
        same = root / "same.pt.trace.json.gz"  # 50 million identical tiny events, 2.6 GB in ~7.7 MB
        with gzip.open(same, "wb", compresslevel=9) as fh:
            fh.write(b'{"traceEvents":[' + tiny)
            block = (b"," + tiny) * 100_000
            for _ in range(500):
                fh.write(block)
            fh.write(b"]}")
        varied = root / "varied.pt.trace.json.gz"  # tiny events with real timestamps: ~17x, like a real trace
        with gzip.open(varied, "wb", compresslevel=6) as fh:
            fh.write(b'{"traceEvents":[')
            fh.write(b",".join(b'{"ph":"X","name":"k","ts":%d,"dur":%d,"pid":1,"tid":1}' % (i * 3, i % 7)
                               for i in range(4_000_000)))
            fh.write(b"]}")
        session = root / "session.jsonl.gz"  # 4 MB that inflates past 1 GB
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        line = z.compress(b'{"t": 1.0, "raw": "' + b"x" * 4000 + b'"}\n')
        with open(session, "wb") as fh:
            fh.write(z.compress(b'{"format": "lumikit-smi-session", "name": "bomb", "interval_s": 1}\n') + line)
            for _ in range(300_000):
                fh.write(z.compress(b'{"t": 1.0, "raw": "' + b"x" * 4000 + b'"}\n'))
            fh.write(z.flush())
        shared: list = ["x" * 64]
        for _ in range(4):
            shared = [shared] * 60  # 13 million values once followed
        dumps = root / "dumps"
        dumps.mkdir()
        for rank in range(8):
            (dumps / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(
                {"entries": [{"record_id": 0, "frames": shared}], "pg_config": {}, "version": "2.4"}, protocol=4))
        cases = (("gzip trace, identical tiny events", same, ["trace", "summary", str(same)]),
                 ("gzip trace, varied tiny events", varied, ["trace", "summary", str(varied)]),
                 ("gzip session", session, ["smi", "watch", "--replay", str(session), "--count", "1"]),
                 ("8 dumps of shared references", dumps / "nccl_trace_rank_0", ["doctor", str(dumps)]))
        print(f"\n{'archive bomb':<36} {'bytes':>11} {'exit':>5} {'seconds':>8} {'grew MB':>8}  problem")
        for name, path, argv in cases:
            case = run_case(name, "bomb", argv, timeout=120)
            problem = case.problem(BOMB_LIMIT_S, BOMB_LIMIT_MB) or ("accepted" if case.status == 0 else "")
            rows.append({"bomb": name, "bytes": path.stat().st_size, "status": case.status,
                         "seconds": round(case.seconds, 2), "grew_mb": round(case.grew_mb, 1), "problem": problem,
                         "stderr": case.stderr.strip()[:300]})
            print(f"{name:<36} {path.stat().st_size:>11,} {str(case.status):>5} {case.seconds:>8.2f} "
                  f"{case.grew_mb:>8.0f}  {problem.split(': ', 2)[1] if ': ' in problem else problem}", flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
