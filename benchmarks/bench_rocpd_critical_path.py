"""Idle causes and the critical path on a rocprofv3 database, as a learner runs them: ``lumikit trace critical-path``
and ``lumikit trace idle`` on the ``.db``, each in a fresh process whose wall time and peak memory (VmHWM) are
printed, per 100 MB of database, beside the same two commands on a Kineto trace of the same events. Prints the
numbers; asserts nothing (the target of issue 38: 3 s and 300 MB per 100 MB of database).

The database is generated (:mod:`lumikit.testing.rocpd_calls`), in one of two shapes:

* ``dense`` (default): the known step of 14 HIP calls with 3 syncs and 7 kernels, repeated (its path length is
  checked against its known value): a sync or an idle gap every few calls, the worst case for the analyses;
* ``training``: a step of one host-to-device copy, 200 kernel launches, an event record/wait, a collective on a
  second stream and one stream synchronize, repeated: the shape of a training step.

    .venv/bin/python benchmarks/bench_rocpd_critical_path.py                        # 2000 dense steps (a look)
    .venv/bin/python benchmarks/bench_rocpd_critical_path.py --steps 30000          # about 100 MB
    .venv/bin/python benchmarks/bench_rocpd_critical_path.py --shape training --steps 1500
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.rocprof.rocpd_events import rocpd_trace  # noqa: E402
from lumikit.testing.rocpd_calls import COMM, STEP, STEP_PATH_US, STREAM_A, STREAM_B, Call, write_calls_db  # noqa: E402

#: Each dense step's path up to its last launch, which leads into the next step (see the three-step test).
CARRIED_US = STEP_PATH_US - 85.0 - 10.0 + 5.0
#: Runs one lumikit command and prints, as JSON on the last line, its wall time and CPU time (the machine is shared:
#: the CPU time is the command's own) and the peak RSS of its process; ``cpu_total_s`` counts the imports too.
PROBE = ("import io, json, resource, sys, time, contextlib\n"
         "from lumikit.cli import main\n"
         "t0, c0 = time.perf_counter(), time.process_time()\n"
         "with contextlib.redirect_stdout(io.StringIO()):\n"
         "    rc = main(sys.argv[1:])\n"
         "u = resource.getrusage(resource.RUSAGE_SELF)\n"
         "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
         "peak = hwm[0] if hwm else u.ru_maxrss\n"
         "print(json.dumps({'rc': rc, 'wall_s': time.perf_counter() - t0, 'cpu_s': time.process_time() - c0,\n"
         "                  'cpu_total_s': u.ru_utime + u.ru_stime, 'peak_mb': peak / 1024}))\n")


def training_step() -> tuple[Call, ...]:
    """One training-shaped step (µs): a copy in, 200 launches of 9 µs kernels, an event wait, a collective, a sync."""
    calls = [Call(40000, "hipMemcpyAsync", 0, 8, {"stream": STREAM_A}, ("MEMORY_COPY_HOST_TO_DEVICE", STREAM_A, 10,
                                                                           60))]
    t, k = 10.0, 60.0
    for i in range(200):
        calls.append(Call(40000, "hipLaunchKernel", t, t + 4, {"stream": STREAM_A},
                          (f"kernel_{i % 25}", STREAM_A, max(k, t + 6), max(k, t + 6) + 9)))
        k = max(k, t + 6) + 9
        t += 5
    calls += [Call(40000, "hipEventRecord", t, t + 2, {"event": "0x5500e1", "stream": STREAM_A}),
              Call(40000, "hipStreamWaitEvent", t + 3, t + 5, {"stream": STREAM_B, "event": "0x5500e1"}),
              Call(40000, "hipLaunchKernel", t + 6, t + 10, {"stream": STREAM_B}, (COMM, STREAM_B, k + 5, k + 400)),
              Call(40000, "hipStreamSynchronize", t + 11, k + 405, {"stream": STREAM_B})]
    return tuple(calls)


def kineto_twin(db: Path, out: Path) -> Path:
    """The same events as a Kineto trace (runtime calls, kernels, copies with their correlation and stream)."""
    trace = rocpd_trace(db)
    cols = trace[0].columns
    names, cats = cols.labels["name"], cols.labels["cat"]
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 40000, "tid": 40000, "ts": 0.0,
               "dur": float((cols["ts"] + cols["dur"]).max()) + 1.0}]
    for i in range(len(cols)):
        cat = cats[cols["cat"][i]]
        host = cat in ("cuda_runtime", "cpu_op")
        args = {"correlation": int(cols["correlation"][i])}
        if not host:
            args.update(stream=int(cols["stream"][i]), device=int(cols["pid"][i]))
        elif cols["stream"][i] >= 0:
            args["stream"] = f"0x{int(cols['stream'][i]):x}"
        events.append({"ph": "X", "cat": cat, "name": names[cols["name"][i]], "pid": int(cols["pid"][i]),
                       "tid": int(cols["tid"][i]), "ts": float(cols["ts"][i]), "dur": float(cols["dur"][i]),
                       "args": args})
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 40000, "tid": 40000,
                   "ts": events[0]["dur"], "dur": 1.0})
    out.write_bytes(orjson.dumps({"schemaVersion": 1, "traceEvents": events}))
    return out


def probe(*argv: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="steps in the generated database (default 2000)")
    ap.add_argument("--shape", choices=("dense", "training"), default="dense")
    ap.add_argument("--no-kineto", action="store_true", help="leave out the Kineto twin")
    args = ap.parse_args()
    calls = STEP if args.shape == "dense" else training_step()
    step_us = 1500.0 if args.shape == "dense" else max(c.work[3] for c in calls if c.work) + 50
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        db = write_calls_db(Path(tmp) / "bench_results.db", steps=args.steps, calls=calls, step_us=step_us)
        write_s = time.perf_counter() - t0
        db_mb = db.stat().st_size / 1e6
        runs = {cmd: probe("trace", cmd, str(db), "--json") for cmd in ("critical-path", "idle")}
        # the same commands on one step: the interpreter, its imports and the fixed costs, to take off for the slope
        small = write_calls_db(Path(tmp) / "one_results.db", steps=1, calls=calls, step_us=step_us)
        small_mb = small.stat().st_size / 1e6
        base = {cmd: probe("trace", cmd, str(small), "--json") for cmd in ("critical-path", "idle")}
        # the known path counts untraced host time as HTA does (none): compare like with like
        path = json.loads(subprocess.run([sys.executable, "-m", "lumikit", "trace", "critical-path", str(db), "--json",
                                          "--no-untraced-host"], capture_output=True, text=True,
                                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout)["path_us"]
        kineto = {}
        if not args.no_kineto:
            twin = kineto_twin(db, Path(tmp) / "bench_twin.pt.trace.json")
            kineto = {"json_mb": round(twin.stat().st_size / 1e6, 1),
                      **{cmd: probe("trace", cmd, str(twin), "--json") for cmd in ("critical-path", "idle")}}
    expected = (args.steps - 1) * CARRIED_US + STEP_PATH_US if args.shape == "dense" else None
    per100 = 100.0 / db_mb
    report = {
        "generated": "lumikit.testing.rocpd_calls", "shape": args.shape, "steps": args.steps,
        "host_calls": args.steps * len(calls), "gpu_activities": args.steps * sum(1 for c in calls if c.work),
        "db_mb": round(db_mb, 1), "write_s": round(write_s, 1),
        "rocpd": {cmd: {**r, "wall_s_per_100mb": round(r["wall_s"] * per100, 2),
                        "peak_mb_per_100mb": round(r["peak_mb"] * per100),
                        "one_step": base[cmd],
                        "cpu_s_per_100mb": round(r["cpu_s"] * per100, 2),
                        "marginal_s_per_100mb": round((r["wall_s"] - base[cmd]["wall_s"]) * 100 / (db_mb - small_mb), 2),
                        "marginal_cpu_s_per_100mb": round((r["cpu_s"] - base[cmd]["cpu_s"]) * 100 / (db_mb - small_mb),
                                                          2),
                        "marginal_mb_per_100mb": round((r["peak_mb"] - base[cmd]["peak_mb"]) * 100 / (db_mb - small_mb))}
                  for cmd, r in runs.items()},
        "kineto_same_events": kineto, "path_us_hta_weighting": path, "path_us_expected": expected,
        "load_avg": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
    }
    print(json.dumps(report, indent=2))
    for cmd, r in runs.items():
        m = report["rocpd"][cmd]
        line = (f"rocpd {cmd}: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, peak {r['peak_mb']:.0f} MB for "
                f"{db_mb:.1f} MB ({r['wall_s'] * per100:.2f} s wall, {r['cpu_s'] * per100:.2f} s CPU and "
                f"{r['peak_mb'] * per100:.0f} MB per 100 MB; above the one-step run's {base[cmd]['cpu_s']:.2f} s CPU "
                f"and {base[cmd]['peak_mb']:.0f} MB: {m['marginal_cpu_s_per_100mb']:.2f} s CPU "
                f"({m['marginal_s_per_100mb']:.2f} s wall) and {m['marginal_mb_per_100mb']} MB per 100 MB)")
        if kineto:
            k = kineto[cmd]
            line += (f"; Kineto trace of the same events ({kineto['json_mb']} MB): {k['wall_s']:.2f} s wall, "
                     f"{k['cpu_s']:.2f} s CPU, {k['peak_mb']:.0f} MB")
        print(line)
    print(f"load average {report['load_avg'][0]:.1f} on {report['cpus']} CPUs; path {path:.1f} us weighed as HTA"
          + (f" (expected {expected:.1f})" if expected else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
