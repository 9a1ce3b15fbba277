"""The long fuzz run: thousands of mutated inputs per reader family, with the counts per family.

The same seeded mutations as ``tests/test_fuzz.py`` (byte flips, token insertion, line deletion and duplication,
number changes, truncation, structural JSON edits) over the project's generated data and the real outputs in
``../shared/fixtures`` (when present), each input through ``lumikit ... --json`` in forked worker processes.
Counts as failures: an exception other than LumikitError, an input over 2 s (or still running at 20 s), output
that is not standard JSON, NaN or infinity in what the Python API returned, a worker killed by a signal. A fresh
seed each run unless ``--seed`` (printed; every failing case names the chunk seed that replays it). Prints a table
and saves ``benchmarks/results/fuzz.json`` and ``fuzz.md``; exit status 1 when a failure was found.

    .venv/bin/python benchmarks/bench_fuzz.py                  # 2,500 inputs per family, every family
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
    for f in failures[:10]:
        print("  " + f)
    report = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "seed": args.seed, "workers": args.workers, "fixtures": str(fixtures) if fixtures else None,
              "seconds": round(total, 1), "families": [r.as_dict() | {"slowest_case": r.slowest_case}
                                                      for r in results], "failures": failures[:100]}
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
    md += ["", f"Total: {inputs} inputs, {len(failures)} failures, {total:.0f} s with {args.workers} workers."]
    (args.results / f"{stem}.md").write_text("\n".join(md) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
