"""How long a hung SMI tool holds a local run's end, and whether anything of it outlives the job.

A generated stand-in ``amd-smi`` on PATH starts a child that sleeps and then sleeps itself (a wedged driver);
a local job asks for a GPU, so the supervisor starts the GPU recorder, whose first sample hangs. Prints, per
repeat, the seconds from the rank's last line to the manifest's final state, the record interval, and how many
processes of the stand-in are left afterwards (target: at most one interval, and 0).

    .venv/bin/python benchmarks/bench_job_end.py [--repeats 1] [--interval 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.jobs import spec  # noqa: E402
from lumikit.launch import launch  # noqa: E402
from lumikit.launch.states import FINAL  # noqa: E402
from lumikit.testing.hung_tool import hung_smi_tool  # noqa: E402
from lumikit.testing.processes import processes_with  # noqa: E402


def once(tmp: Path, interval: float) -> tuple[float, int, str]:
    marker = f"lumikit-hung-smi-{uuid.uuid4().hex[:12]}"
    bin_dir = tmp / marker
    hung_smi_tool(bin_dir, marker)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    job = "import time; time.sleep(4); print(repr(time.time()), flush=True)"
    run = launch(spec([sys.executable, "-c", job], gpus_per_node=1), site="laptop", backend="local",
                 runs_dir=tmp / "runs", gpu_record_interval=interval)
    while run.manifest.get("state") not in FINAL:
        time.sleep(0.02)
    held = time.time() - float(run.stdout().strip() or "nan")
    time.sleep(0.5)
    return held, len(processes_with(marker)), run.manifest.get("note", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--interval", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lumikit-job-end-") as tmp:
        for i in range(args.repeats):
            held, left, note = once(Path(tmp), args.interval)
            print(f"repeat {i}: job end held {held:.2f} s (interval {args.interval:g} s); "
                  f"stand-in processes left: {left}; note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
