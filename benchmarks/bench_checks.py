"""How long `lumikit verify` takes per notebook pair, with 1 and with 2 workers (kernel start-up dominates small runs).

Usage: python benchmarks/bench_checks.py [PAIRS]   (default 4 copies of the sample notebook of tests/checks/data)
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from lumikit.checks.instructor.generate import generate
from lumikit.checks.instructor.verify import verify

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "checks" / "data" / "good"


def main(pairs: int = 4) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(SAMPLE / "data", root / "data")
        (root / "solutions").mkdir()
        source = (SAMPLE / "solutions" / "00_sample.py").read_text()
        for index in range(pairs):
            (root / "solutions" / f"00_sample_{index}.py").write_text(source)
        started = time.perf_counter()
        generate(root / "solutions", root / "exercises")
        print(f"generate: {pairs} solution(s) in {time.perf_counter() - started:.2f} s")
        for workers in (1, 2):
            started = time.perf_counter()
            reports = verify(root / "solutions", root / "exercises", workers=workers, progress=False)
            wall = time.perf_counter() - started
            assert all(r.ok for r in reports), [r.problems for r in reports]
            notebooks = sum(r.seconds for r in reports)
            print(f"verify, {workers} worker(s): {2 * pairs} notebooks, {wall:.2f} s wall, "
                  f"{notebooks / (2 * pairs):.2f} s per notebook (kernel start included)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
