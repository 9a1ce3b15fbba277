"""The GPU record's costs: the recorder's CPU share of one core at 1 Hz (target: at most 1 % per node; issue 20) and
the record's size and the report card's time and peak memory on a long record (issue 29: a GENERATED 1-day 8-GCD
record at 2 s under 20 MB, its card within 2 s and 200 MB; a week under 100 MB).

Recorder: runs ``python -m lumikit.record sample --interval 1`` for ``--seconds`` per source (issue 29, item 2): the
amdsmi library in the recorder's own process (here the stand-in with amdsmi's API, ``lumikit.testing.fake_amdsmi``,
GENERATED values; on LUMI the real library), a stream (one tool process for the whole record: lumi-sim's stand-in
``lumikit.testing.fake_rocm_smi --stream``, in the job mode it has on lumi-sim, scanning /proc for the job's ranks
every reading), and the last resort, a tool started at every sample (the stand-in, a Python program like
``amd-smi``; and the real tool where this machine has one), whose cost per call is printed too. CPU time is the
recorder's plus its tool's (utime + stime from /proc), counted after a 5 s warm-up (the start-up, importing
Python, is reported apart).

Record: writes a GENERATED record (8 GCDs of 4 MI250X packages as amd-smi reports them: the package power and an
energy counter on the first GCD, 0 W and 0 J on the second; busy, clocks, temperature, VRAM varying) in the
recorder's format (:func:`lumikit.smi.readings.encode`, the recorder's own line writer), then runs ``lumikit
report`` on it in a fresh process and reports its wall time and peak memory (ru_maxrss).

``python benchmarks/bench_gpu_record.py [--quick] [--seconds 30] [--record-hours 24] [--skip-recorder]
[--skip-record]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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


def measure(command: list[str], stream: bool, kind: str, seconds: float, env: dict[str, str],
            library: str | None = None) -> dict[str, float]:
    """The recorder's CPU share of one core at 1 Hz with ``command`` (or ``library``, a module with amdsmi's API)."""
    run = tempfile.mkdtemp(prefix="bench-gpu-record-")
    how = ["--library", library] if library else [*(["--stream"] if stream else []), "--command", *command]
    argv = [sys.executable, "-m", "lumikit.record", "sample", "--run-dir", run, "--interval", "1", "--node", "bench",
            "--kind", kind, *how]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(5)
    c1, w1 = tree_cpu(proc.pid), time.monotonic()
    time.sleep(seconds)
    c2, w2 = tree_cpu(proc.pid), time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    with open(Path(run) / "gpu" / "bench.jsonl") as fh:
        head = json.loads(fh.readline())
        samples = sum(1 for _ in fh)
    return {"share_pct": 100 * (c2 - c1) / (w2 - w1), "startup_cpu_s": c1, "samples": samples,
            "wall_s": time.monotonic() - t0, "source": head.get("sampler", {}).get("how", "?"),
            "interval_s": head.get("interval_s")}


def per_call_cost(command: list[str], env: dict[str, str], calls: int = 5) -> dict[str, float]:
    """Wall and CPU seconds of one run of a tool started per sample (the mean of ``calls`` runs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    for _ in range(calls):
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    wall = (time.monotonic() - t0) / calls
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / calls
    return {"wall_s": wall, "cpu_s": cpu}


def generated_record(folder: Path, hours: float, interval: float = 2.0, gcds: int = 8) -> Path:
    """A GENERATED ``gpu/<node>.jsonl`` of ``hours`` at ``interval`` in the recorder's format; returns the file."""
    import json
    import math
    import random

    from lumikit.record.recorder import _write_line, header_line
    from lumikit.smi.model import DeviceReading
    from lumikit.smi.readings import FORMAT, encode
    from lumikit.smi.sessions import SessionHeader

    (folder / "gpu").mkdir(parents=True, exist_ok=True)
    path = folder / "gpu" / "nid005001.jsonl"
    started = 1_767_600_000.0
    header = SessionHeader(name="nid005001", kind="generated", interval_s=interval, started=started,
                           source="generated by benchmarks/bench_gpu_record.py", job_gpus=tuple(range(gcds)),
                           job_gpus_from="SLURM_JOB_GPUS", record_format=FORMAT,
                           description="GENERATED: a day of an 8-GCD training job for the record benchmark")
    rng = random.Random(29)
    energy = [0.0] * gcds
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_line(fd, header_line(header))
        for i in range(int(hours * 3600 / interval)):
            devices, counters = [], {}
            for g in range(gcds):
                busy = 100.0 if rng.random() > 0.05 else float(rng.randint(0, 40))
                power = float(round(480 + 40 * math.sin(i / 50 + g) + rng.uniform(-15, 15))) if g % 2 == 0 else 0.0
                energy[g] += power * interval
                counters[g] = energy[g]
                devices.append(DeviceReading(index=g, gpu_busy_pct=busy, power_w=power,
                                             sclk_mhz=float(rng.choice((1650, 1700))), mclk_mhz=1600.0,
                                             temp_c=float(rng.randint(45, 70)), vram_pct=round(rng.uniform(80, 96), 1),
                                             vram_used_bytes=int(rng.uniform(52000, 62000)) * 2**20))
            indices, rows = encode(devices, counters)
            line = {"t": round(i * interval + 0.4, 3), "r": rows}
            if i == 0:
                line["raw"] = json.dumps({"note": "the first sample's raw tool output is kept here (generated)"})
            _write_line(fd, line)
    finally:
        os.close(fd)
    return path


def measure_card(hours: float) -> dict[str, float]:
    """Size of a generated record of ``hours`` and the time and peak memory of ``lumikit report`` on it."""
    run = Path(tempfile.mkdtemp(prefix="bench-gpu-card-"))
    t0 = time.monotonic()
    path = generated_record(run, hours)
    made = time.monotonic() - t0
    code = ("import resource, sys, time; t0 = time.perf_counter(); from lumikit.record.card import card_of_run; "
            "t = time.perf_counter(); c0 = time.process_time(); "
            f"c = card_of_run({str(run)!r}); c.text(); "
            "print(time.perf_counter() - t, time.process_time() - c0, t - t0, "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, c.nodes['nid005001']['samples'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr)
    secs, cpu, imports, rss_kb, samples = out.stdout.split()
    size = path.stat().st_size
    return {"mb": size / 1e6, "samples": int(samples), "card_s": float(secs), "card_cpu_s": float(cpu),
            "import_s": float(imports), "peak_mb": int(rss_kb) / 1024,
            "generate_s": made, "week_mb": size / 1e6 * 24 * 7 / hours}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--record-hours", type=float, default=24.0, help="hours of the generated record (default 24)")
    p.add_argument("--skip-recorder", action="store_true", help="only the record size and card part")
    p.add_argument("--skip-record", action="store_true", help="only the recorder CPU part")
    p.add_argument("--quick", action="store_true", help="a smoke run: a 1-hour record and 5 s of recorder CPU")
    args = p.parse_args()
    if args.quick:
        args.record_hours, args.seconds = 1.0, 5.0
    if not args.skip_record:
        r = measure_card(args.record_hours)
        print(f"GENERATED record, 8 GCDs every 2 s for {args.record_hours:g} h ({r['samples']} samples): "
              f"{r['mb']:.1f} MB (a week at this rate: {r['week_mb']:.0f} MB; targets: 1 day under 20 MB, a week "
              f"under 100 MB); written in {r['generate_s']:.1f} s")
        print(f"  its report card: {r['card_s']:.2f} s wall, {r['card_cpu_s']:.2f} s CPU (after {r['import_s']:.2f} s "
              f"importing lumikit); peak memory {r['peak_mb']:.0f} MB of the whole process (targets: 2 s and 200 MB)")
    if args.skip_recorder:
        return
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    real = choose_tool()
    print(f"machine: {platform.node()} ({os.cpu_count()} CPUs, shared), Python {platform.python_version()}")
    cases = []
    # the stand-in as lumi-sim runs it: inside a job with 2 GCDs on this node (it scans /proc for the job's ranks)
    job_env = {**env, "SLURM_JOB_ID": "424242", "SLURM_JOB_GPUS": "0,1", "SLURMD_NODENAME": "bench"}
    stand_in = [sys.executable, "-m", "lumikit.testing.fake_rocm_smi"]
    cases.append(("library: amdsmi's API in the recorder's process (stand-in lumikit.testing.fake_amdsmi, generated, "
                  "8 GCDs)", [], False, "generated", "lumikit.testing.fake_amdsmi"))
    cases.append(("stream: stand-in (generated), one tool process for the record (lumi-sim's way)",
                  [*stand_in, "--stream", "1"], True, "generated", None))
    cases.append(("per-call (last resort): stand-in (generated), a Python tool started each sample", stand_in, False,
                  "generated", None))
    if real:
        cases.append((f"per-call (last resort): real tool {' '.join(real[:2])}", list(real), False, "recorded", None))
    print(f"interval 1 s, measured over {args.seconds:g} s after a 5 s warm-up; CPU = recorder + its tool")
    for label, command, stream, kind, library in cases:
        r = measure(command, stream, kind, args.seconds, job_env if kind == "generated" else env, library)
        target = "" if r["source"] == "per-call" else (
            f" ({'within' if r['share_pct'] <= 1.0 else 'ABOVE'} the 1 % target)")
        print(f"  {label}: {r['share_pct']:.2f} % of one core{target}; source in the header: {r['source']}, "
              f"every {r['interval_s']:g} s; start-up {r['startup_cpu_s']:.2f} CPU s; {r['samples']} samples in "
              f"{r['wall_s']:.0f} s")
        if r["source"] == "per-call" and command:
            c = per_call_cost(command, job_env if kind == "generated" else env)
            print(f"    per call: {c['wall_s'] * 1000:.0f} ms wall, {c['cpu_s'] * 1000:.0f} ms CPU (a new process "
                  f"each sample: {100 * c['cpu_s']:.1f} % of a core at 1 Hz for the tool alone)")


if __name__ == "__main__":
    main()
