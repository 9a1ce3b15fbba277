"""Shared helpers of the trace benchmarks: generated ROCm-style traces, and a fresh process measured from outside
(wall time, and the peak proportional memory (PSS) of its whole process tree, optionally capped)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def tree(pid: int) -> list[int]:
    """A process and all its descendants."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            children = []
        todo.extend(int(c) for c in children)
    return pids


def pss_kb(pid: int) -> int:
    """Proportional set size of one process (kB), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(argv: list[str], *, sample: bool = True, cap_mb: float | None = None, env: dict | None = None,
                 timeout: float = 3600) -> dict:
    """Run ``argv`` fresh: wall seconds, exit status, peak PSS of the tree (MB, sampled every 50 ms), and whether
    it was stopped for passing ``cap_mb`` (then the tree is killed: the point where it would run out)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, start_new_session=True)
    peak, capped, done = 0, False, threading.Event()

    def watch() -> None:
        nonlocal peak, capped
        while not done.is_set():
            now = sum(pss_kb(p) for p in tree(proc.pid))
            peak = max(peak, now)
            if cap_mb and now / 1024 > cap_mb:
                capped = True
                os.killpg(proc.pid, 9)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    if sample or cap_mb:
        watcher.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    if watcher.is_alive():
        watcher.join()
    return {"seconds": seconds, "returncode": proc.returncode, "peak_pss_mb": peak / 1024, "capped": capped,
            "stdout": out, "stderr": err[-2000:]}


def generate_rocm_rank(folder: Path, target_mb: float, steps: int = 8) -> Path:
    """One generated ROCm-style rank (kernels on stream 0, HIP launch names) of about ``target_mb`` MB."""
    from lumikit.trace.synth import SynthSpec, layers_for_size, write_synthetic

    base = SynthSpec(ranks=1, steps=steps, layers=1, vendor="rocm")
    layers = layers_for_size(target_mb, base)
    probe = write_synthetic(folder / "probe", SynthSpec(**{**base.__dict__, "layers": max(1, layers // 20)}),
                            force=True)[0]
    per_layer = probe.stat().st_size / max(1, layers // 20)
    shutil.rmtree(folder / "probe")
    layers = max(1, round(target_mb * 1e6 / per_layer))
    return write_synthetic(folder, SynthSpec(**{**base.__dict__, "layers": layers}), force=True)[0], layers


def copy_as_ranks(template: Path, folder: Path, ranks: int) -> list[Path]:
    """``ranks`` files made from one generated rank, each with its own ``distributedInfo.rank`` (fast to write)."""
    data = template.read_bytes()
    head, body = data[:4096], data[4096:]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(ranks):
        path = folder / f"rank{r}.pt.trace.json"
        path.write_bytes(head.replace(b'"rank": 0,', f'"rank": {r},'.encode(), 1)
                         .replace(b'"world_size": 1', f'"world_size": {ranks}'.encode(), 1) + body)
        paths.append(path)
    return paths
