"""The live class view's refresh time on a GENERATED class (lumikit.testing.class_folder): 100 learners x 90
exercises, one progress record each (9,000 files). Prints numbers; asserts nothing. Target: a refresh within 1 s.

- cold: a new ClassReader (every record parsed; the files are in the page cache, as after the first refresh);
- warm: nothing changed (each record only stat-ed);
- warm, N changed: one record per learner rewritten since the last refresh (a busy 10 s in the room);
- the widget's table (HTML of every cell) and the --json text, built from one refresh.

    .venv/bin/python benchmarks/bench_class_view.py                  # 100 x 90
    .venv/bin/python benchmarks/bench_class_view.py --quick          # 20 x 20
    .venv/bin/python benchmarks/bench_class_view.py --json benchmarks/results/class_view.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.checks.instructor.classview import ClassReader, _epoch_of  # noqa: E402
from lumikit.json_output import to_json  # noqa: E402
from lumikit.testing.class_folder import record_json, write_class  # noqa: E402

NOW = 1_790_000_000.0


class Timed:
    """Wall and CPU times of repeated runs (on a shared machine the wall time includes waiting for a core)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def run(self, fn):  # noqa: ANN001, ANN201 - any callable, its result
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fn()
        self.wall.append(time.perf_counter() - started)
        self.cpu.append(time.process_time() - started_cpu)
        return result

    def line(self, label: str) -> str:
        return (f"  {label:<36} wall median {statistics.median(self.wall):.3f} s, min {min(self.wall):.3f} s, max "
                f"{max(self.wall):.3f} s, CPU median {statistics.median(self.cpu):.3f} s ({len(self.wall)} runs)")


def _repeat(fn, repeat: int) -> tuple[Timed, object]:  # noqa: ANN001
    timed = Timed()
    result = None
    for _ in range(repeat):
        result = timed.run(fn)
    return timed, result


def _add_evidence(made, kb: float) -> None:  # noqa: ANN001 - a GeneratedClass
    """Give every record GENERATED step times as its evidence and passed evidence, about ``kb`` kB in all."""
    steps = [round(0.25 + 0.001 * (k % 97), 6) for k in range(max(1, int(kb * 1024 / 2 / 9)))]
    evidence = {"step_times": {"__array__": steps, "dtype": "float64"}}
    for path in made.root.glob("*/progress/*.json"):
        data = json.loads(path.read_text())
        data.update(evidence=evidence, passed_evidence=evidence if data.get("first_passed") else None)
        stat = path.stat()
        path.write_text(json.dumps(data, indent=1) + "\n")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--exercises", type=int, default=90)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20 learners x 20 exercises, 2 runs")
    parser.add_argument("--evidence-kb", type=float, default=0.0, metavar="KB",
                        help="give each record KB kilobytes of recorded evidence (step times), as real records "
                             "keep the check's inputs; default: none (the generated records are about 0.5 kB)")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the numbers to FILE")
    args = parser.parse_args()
    if args.quick:
        args.learners, args.exercises, args.repeat = 20, 20, 2
    print(f"python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs; load average "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="lumikit-class-") as tmp:
        started = time.perf_counter()
        made = write_class(Path(tmp) / "class", learners=args.learners, exercises=args.exercises, now=NOW,
                           without_progress=False)
        if args.evidence_kb > 0:
            _add_evidence(made, args.evidence_kb)
        print(f"generated class: {args.learners} learners x {args.exercises} exercises "
              f"({time.perf_counter() - started:.1f} s to write; evidence {args.evidence_kb:g} kB per record)")
        def cold_refresh():  # noqa: ANN202 - a new reader in a fresh process: no time string parsed yet
            _epoch_of.cache_clear()
            return ClassReader(made.root).refresh(NOW)

        cold, state = _repeat(cold_refresh, args.repeat)
        reader = ClassReader(made.root)
        reader.refresh(NOW)
        warm, unchanged = _repeat(lambda: reader.refresh(NOW), args.repeat)

        changed_times = Timed()
        for k in range(1, args.repeat + 1):  # one record per learner rewritten, then one refresh
            for name in made.learners:
                path = made.root / name / "progress" / f"{made.exercises[0]}.json"
                path.write_text(record_json(made.exercises[0], name, [(NOW - k, "passed", "")]))
                os.utime(path, ns=(int((NOW + k) * 1e9),) * 2)
            changed = changed_times.run(lambda: reader.refresh(NOW))
        try:
            from lumikit.widgets.class_view import grid_html
            grid, page = _repeat(lambda: grid_html(state), args.repeat)  # type: ignore[arg-type]
        except ImportError:
            grid, page = None, ""
        as_json, text = _repeat(lambda: to_json(state.to_dict())[0], args.repeat)  # type: ignore[union-attr]
    print(f"records: {state.records} ({state.parsed} parsed cold), stuck {len(state.stuck)}, exercises with a "
          f"common mistake {len(state.mistakes)}")
    print(cold.line("refresh, cold (new reader)"))
    print(warm.line("refresh, warm (nothing changed)") + f", parsed {unchanged.parsed}")
    print(changed_times.line(f"refresh, warm, {args.learners} records changed") + f", parsed {changed.parsed}")
    if grid is not None:
        print(grid.line("widget table HTML") + f", {len(page) / 1e3:.0f} kB")
    print(as_json.line("--json text") + f", {len(text) / 1e3:.0f} kB")
    verdict = {name: "met" if statistics.median(t.wall) <= 1 else "NOT met" for name, t in
               (("cold", cold), ("warm", changed_times))}
    print(f"target: a refresh within 1 s (wall): cold {verdict['cold']}, warm (records changed) {verdict['warm']}")
    if args.json is not None:
        report = {"learners": args.learners, "exercises": args.exercises, "records": state.records,
                  "load_average": os.getloadavg()[0], **{f"{name}_{kind}_s": getattr(t, kind) for name, t in (
                      ("cold", cold), ("warm", warm), ("changed", changed_times), ("json", as_json),
                      *((("grid_html", grid),) if grid is not None else ())) for kind in ("wall", "cpu")}}
        args.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
