"""The GPU recorder's CPU share of one core at 1 Hz (target: at most 1 % per node; issue 20).

Runs ``python -m lumikit.record sample --interval 1`` for ``--seconds`` with the tool found here, or, on a machine
without one, lumi-sim's stand-in (``lumikit.testing.fake_rocm_smi``, in the job mode it has on lumi-sim: it scans
/proc for the job's ranks every reading). Two ways to run a tool: a stream (one tool process for the whole record,
as lumi-sim does) and a tool started at every sample (what ``rocm-smi``/``amd-smi``/``nvidia-smi`` cost, since they
have no stream mode the recorder uses). CPU time is the recorder's plus its tool's (utime + stime from /proc),
counted after a 5 s warm-up (the start-up, importing Python, is reported apart).

``python benchmarks/bench_gpu_record.py [--seconds 30]``
"""
from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.record.recorder import choose_tool  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its living descendants (plus the children it has reaped)."""
    total = 0.0
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    todo = [pid]
    while todo:
        p = todo.pop()
        f = stats.get(p)
        if f is None:
            continue
        total += (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / TICK  # own + reaped children
        todo.extend(children.get(p, []))
    return total


def measure(command: list[str], stream: bool, kind: str, seconds: float, env: dict[str, str]) -> dict[str, float]:
    run = tempfile.mkdtemp(prefix="bench-gpu-record-")
    argv = [sys.executable, "-m", "lumikit.record", "sample", "--run-dir", run, "--interval", "1", "--node", "bench",
            "--kind", kind, *(["--stream"] if stream else []), "--command", *command]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(5)
    c1, w1 = tree_cpu(proc.pid), time.monotonic()
    time.sleep(seconds)
    c2, w2 = tree_cpu(proc.pid), time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    samples = sum(1 for _ in open(Path(run) / "gpu" / "bench.jsonl")) - 1
    return {"share_pct": 100 * (c2 - c1) / (w2 - w1), "startup_cpu_s": c1, "samples": samples,
            "wall_s": time.monotonic() - t0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0)
    args = p.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    real = choose_tool()
    print(f"machine: {platform.node()} ({os.cpu_count()} CPUs, shared), Python {platform.python_version()}")
    cases = []
    if real:
        cases.append((f"real tool, started each sample: {' '.join(real[:2])}", list(real), False, "recorded"))
    # the stand-in as lumi-sim runs it: inside a job with 2 GCDs on this node (it scans /proc for the job's ranks)
    job_env = {**env, "SLURM_JOB_ID": "424242", "SLURM_JOB_GPUS": "0,1", "SLURMD_NODENAME": "bench"}
    stand_in = [sys.executable, "-m", "lumikit.testing.fake_rocm_smi"]
    cases.append(("stand-in (generated), one stream for the record (lumi-sim's way)", [*stand_in, "--stream", "1"],
                  True, "generated"))
    cases.append(("stand-in (generated), a Python tool started each sample", stand_in, False, "generated"))
    print(f"interval 1 s, measured over {args.seconds:g} s after a 5 s warm-up; CPU = recorder + its tool")
    for label, command, stream, kind in cases:
        r = measure(command, stream, kind, args.seconds, job_env if kind == "generated" else env)
        verdict = "within" if r["share_pct"] <= 1.0 else "ABOVE"
        print(f"  {label}: {r['share_pct']:.2f} % of one core ({verdict} the 1 % target); start-up "
              f"{r['startup_cpu_s']:.2f} CPU s; {r['samples']} samples in {r['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
