"""GPU-view benchmark: parse time per 8-device snapshot (each format), the sampler's own CPU cost at 1 Hz with a
replay source, and the dashboard's refresh time per frame. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/bench_smi.py              # 20 s of sampling
    .venv/bin/python benchmarks/bench_smi.py --seconds 5  # shorter
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.smi import synth  # noqa: E402
from lumikit.smi.parse import parse_smi  # noqa: E402
from lumikit.smi.sampler import ReplaySource, Sampler  # noqa: E402

SHARED = REPO.parent / "shared" / "fixtures" / "smi"


def eight_gcd_texts() -> dict[str, str]:
    """One 8-device output per format: written by the session generator, plus real ones where ../shared exists."""
    busy = synth.Step(0.0, (synth.COMPUTE,) * 8, (60,) * 8)
    gcds = synth._node(__import__("random").Random(0), busy, [45.0] * 8)
    amd_rows = "".join(f"{i:>3}  {g.power_w or 0:.0f} W     45 \u00b0C     50 \u00b0C     {g.busy} %   "
                       f"{g.sclk} MHz      30 %   1600 MHz   40000 MB   65536 MB\n" for i, g in enumerate(gcds))
    texts = {
        "rocm-smi concise (ROCm 5)": synth.concise_rocm5(gcds, warning=True),
        "rocm-smi concise (ROCm 6)": synth.concise_rocm6(gcds),
        "rocm-smi --json": synth.rocm_json(gcds),
        "amd-smi monitor": "GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL  GFX_CLOCK  MEM_UTIL  MEM_CLOCK  VRAM_USED  "
                           "VRAM_TOTAL\n" + amd_rows,
        "nvidia-smi csv": "index, name, temperature.gpu, power.draw [W], utilization.gpu [%], memory.used [MiB], "
                          "memory.total [MiB]\n" + "".join(f"{i}, NVIDIA H100, 50, 500.00 W, 97 %, 40000 MiB, "
                                                           "81559 MiB\n" for i in range(8)),
    }
    for name in ("rocm-smi_concise_rocm5_lumi-mi250x_8gcd_with-warning.txt",
                 "rocm-smi_concise_rocm6_lumi-mi250x_srun-label-sorted.txt",
                 "amd-smi_default-view_rocm7.0_mi300x_8gpu.txt"):
        if (SHARED / name).exists():
            texts[f"fixture {name}"] = (SHARED / name).read_text()
    return texts


def bench_parse() -> None:
    print("parse one 8-device snapshot (CPU time of this process, median of 7 runs of 200):")
    for label, text in eight_gcd_texts().items():
        assert len(parse_smi(text).devices) >= 8
        n = 200
        runs = timeit.repeat(lambda: parse_smi(text), number=n, repeat=7, timer=time.process_time)
        print(f"  {label:70s} {statistics.median(runs) / n * 1e6:8.1f} us")


def bench_sampler(seconds: float) -> None:
    src = ReplaySource("ddp-8gcd-starved", speed=1.0, loop=True)
    sampler = Sampler(src, interval=1.0)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(f"sampler at 1 Hz, replay source, {wall:.1f} s: {sampler.samples} samples, "
          f"{cpu * 1e3:.1f} ms CPU = {100 * cpu / wall:.3f} % of one core")


def bench_dashboard(frames: int) -> None:
    from lumikit.smi.sessions import load_session
    from lumikit.widgets.gpu_dashboard import GpuDashboard

    dash = GpuDashboard(session="ddp-8gcd-starved")
    snaps = load_session("ddp-8gcd-starved")
    dash.render(snaps[:5])  # warm up fonts and caches
    wall, cpu = [], []
    for k in range(frames):
        c0 = time.process_time()
        wall.append(dash.render(snaps[: 10 + 2 * k]))
        cpu.append(time.process_time() - c0)
    print(f"dashboard refresh (timeline + node map + findings, PNG), {frames} frames: median "
          f"{statistics.median(wall) * 1e3:.0f} ms wall, {statistics.median(cpu) * 1e3:.0f} ms CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="how long to run the 1 Hz sampler (default 20)")
    ap.add_argument("--frames", type=int, default=10, help="dashboard frames to draw (default 10)")
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load:.1f} (wall times grow with load; CPU times much less)")
    bench_parse()
    bench_sampler(args.seconds)
    bench_dashboard(args.frames)


if __name__ == "__main__":
    main()
