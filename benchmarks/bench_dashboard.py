"""The run-record dashboard's CPU share in a Jupyter kernel: ``GpuDashboard(run=...)`` following a growing 2-node
record (8 GCDs per node, a sample per node every 2 s, GENERATED readings written by a separate process as the
job-side recorder writes them), refreshing every 2 s. Prints numbers; asserts nothing.

The dashboard runs in a real IPython kernel (jupyter_client; its widgets send their comm messages as in a
notebook, with no browser attached); the kernel's CPU time (user + system, every thread) is read from /proc over
a window, after an idle window of the same kernel as the baseline.

    .venv/bin/python benchmarks/bench_dashboard.py                 # 30 s idle, 180 s following
    .venv/bin/python benchmarks/bench_dashboard.py --seconds 60    # shorter
    .venv/bin/python benchmarks/bench_dashboard.py --json benchmarks/results/dashboard.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TICK = os.sysconf("SC_CLK_TCK")

WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from lumikit.testing.records import GeneratedRecord
    rec = GeneratedRecord({run!r}, nodes=2, gcds=8, interval_s={interval!r}).add(3)
    print("ready", flush=True)
    k = 3
    while k < 9000:
        time.sleep({interval!r})
        rec.add(1)
        k += 1
""")

KERNEL_SETUP = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, {repo!r})
    from lumikit.widgets.gpu_dashboard import GpuDashboard
    dash = GpuDashboard(run={run!r}, detail_every={detail_every!r})
    print(type(dash).__name__, dash.running, dash.nodes, dash.interval)
""")

KERNEL_REPORT = textwrap.dedent("""
    import json
    print(json.dumps({"refreshes": dash.refreshes, "detail_renders": dash.detail_renders,
                      "samples": {n: len(dash.tail.frames(n)) for n in dash.nodes},
                      "grid_cells": dash.grid.value.count("lumikit-gcd-cell'"),
                      "last_refresh_s": dash.last_render_s, "running": dash.running}))
    dash.stop()
""")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run_code(client, code: str, timeout: float = 120.0) -> str:
    """Execute ``code`` in the kernel and return what it printed (raises on an error)."""
    msg_id = client.execute(code)
    out = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            out.append(msg["content"]["text"])
        elif kind == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def measure(seconds: float, idle_seconds: float, detail_every: float, interval: float) -> dict:
    from jupyter_client.manager import start_new_kernel

    work = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    run = work / "runs" / "20251125-120000-bench-abc123"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    km, kc = start_new_kernel(kernel_name="python3", env=env)
    writer = None
    try:
        pid = km.provisioner.process.pid
        run_code(kc, "import ipywidgets, lumikit")  # the kernel as a notebook has it: libraries loaded
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(idle_seconds)
        idle = (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
        writer = subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO), run=str(run),
                                                                       interval=interval)],
                                  stdout=subprocess.PIPE, text=True, env=env)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        t_setup = time.monotonic()
        c_setup = cpu_seconds(pid)
        print(run_code(kc, KERNEL_SETUP.format(repo=str(REPO), run=str(run), detail_every=detail_every)).strip())
        setup_cpu = cpu_seconds(pid) - c_setup
        setup_wall = time.monotonic() - t_setup
        time.sleep(2 * interval)  # let the first refreshes pass
        c1, w1 = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        busy = (cpu_seconds(pid) - c1) / (time.monotonic() - w1)
        report = json.loads(run_code(kc, KERNEL_REPORT).strip().splitlines()[-1])
    finally:
        if writer is not None:
            writer.kill()
            writer.wait()
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {"idle_kernel_cpu_pct": 100 * idle, "following_cpu_pct": 100 * busy,
            "dashboard_cpu_pct": 100 * (busy - idle), "setup_cpu_s": setup_cpu, "setup_wall_s": setup_wall,
            "window_s": seconds, "idle_window_s": idle_seconds, "detail_every_s": detail_every,
            "refresh_interval_s": interval, **report}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=180.0, help="the measured window while following")
    ap.add_argument("--idle-seconds", type=float, default=30.0, help="the idle-kernel baseline window")
    ap.add_argument("--detail-every", type=float, default=60.0,
                    help="the dashboard's detail_every (seconds between redraws of the selected node's plots)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}")
    r = measure(args.seconds, args.idle_seconds, args.detail_every, 2.0)
    print(f"2-node x 8-GCD record growing by a sample per node every 2 s; GpuDashboard(run=...) refreshing every "
          f"{r['refresh_interval_s']:g} s, the selected node's plots redrawn at most every {r['detail_every_s']:g} s")
    print(f"  idle kernel (baseline, {r['idle_window_s']:.0f} s):        {r['idle_kernel_cpu_pct']:6.2f} % of one core")
    print(f"  kernel following the record ({r['window_s']:.0f} s):  {r['following_cpu_pct']:6.2f} % of one core")
    print(f"  the dashboard's share (difference):     {r['dashboard_cpu_pct']:6.2f} % of one core (target: <= 1 %)")
    print(f"  opening the dashboard: {r['setup_cpu_s']:.2f} s CPU ({r['setup_wall_s']:.2f} s wall)")
    print(f"  in the window: {r['refreshes']} refreshes in all, {r['detail_renders']} detail redraws, "
          f"samples per node {r['samples']}, grid cells {r['grid_cells']}, last refresh {r['last_refresh_s']:.4f} s")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
