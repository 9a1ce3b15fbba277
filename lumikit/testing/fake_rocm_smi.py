"""A stand-in for ``rocm-smi --json`` on nodes without a GPU (lumi-sim's): GENERATED readings in the real format.

lumi-sim's site profile names it as the command a job watch streams (``[slurm] watch_command``) and as the tool the
GPU record streams (``[slurm] record_command``, whose ``record_kind = "generated"`` labels the record), so the watch
and the record run end to end there. Nothing here is a reading of real hardware:

- outside a Slurm job with GPUs it prints an idle LUMI-G node (8 GCDs, ~800 MHz, package power on the even GCD;
  the file next to it, written by :func:`reading`, which a test compares with it);
- inside one it prints the job's GCDs on this node (``SLURM_JOB_GPUS``, numbered from 0 as a job's cgroup shows
  them), each ``compute`` while the job's rank driving it uses a fifth of a CPU core or more and ``idle`` otherwise,
  rendered through :func:`lumikit.smi.synth._node` (calibrated on real LUMI outputs: ~90 W idle package, ~300 W
  with one GCD computing, near the 500 W cap with both; 800 / 1650 MHz); VRAM % is the rank's resident memory
  as a share of the GCD's 64 GiB.

``python -m lumikit.testing.fake_rocm_smi [--write | --stream SECONDS]``: ``--stream`` prints a reading and the
line ``@@lumikit-sample 0`` every SECONDS until killed (one process for a whole record: its import cost is paid
once, see benchmarks/bench_gpu_record.py).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Sequence

READING = Path(__file__).with_name("fake_rocm_smi.json")
#: A rank using a fifth of a core or more since the last look counts as computing (lumi-sim's nodes share 2 cores).
BUSY_CPU_SHARE = 0.2
FRAME_END = "@@lumikit-sample"  # as lumikit.smi.sampler.FRAME_END (not imported: the plain call stays light)


def reading(gcds: int = 8) -> str:
    """One generated ``rocm-smi --json`` line for an idle node with ``gcds`` GCDs."""
    from ..smi.synth import IDLE_SCLK, Gcd, rocm_json

    return rocm_json([Gcd(index=i, temp_c=40.0 + i % 3, power_w=None if i % 2 else 90.0,
                          cap_w=0.0 if i % 2 else 500.0, sclk=IDLE_SCLK, busy=0, vram_pct=0) for i in range(gcds)])


def job_gcds(env: dict[str, str] | os._Environ = os.environ) -> int:
    """How many GCDs the enclosing job has on this node (0 outside a job with GPUs)."""
    listed = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS") or ""
    return len([g for g in listed.split(",") if g.strip()])


def _rank_usage(job_id: str, own_step: str | None) -> dict[int, tuple[float, int]]:
    """Local rank -> (CPU seconds so far, resident bytes) of the job's rank processes on this node (Linux /proc),
    summed over each rank's processes; the recorder's own step is left out."""
    out: dict[int, tuple[float, int]] = {}
    uid, tick, page = os.getuid(), os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                env = dict(kv.split(b"=", 1) for kv in fh.read().split(b"\0") if b"=" in kv)
            if env.get(b"SLURM_JOB_ID", b"").decode() != job_id or b"SLURM_LOCALID" not in env:
                continue
            if own_step is not None and env.get(b"SLURM_STEP_ID", b"").decode() == own_step:
                continue
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / tick
            rss = int(fields[21]) * page
            local = int(env[b"SLURM_LOCALID"])
        except (OSError, ValueError, IndexError):
            continue
        c, r = out.get(local, (0.0, 0))
        out[local] = (c + cpu, r + rss)
    return out


class JobStory:
    """The generated readings of one job's GCDs on this node, sample after sample."""

    def __init__(self, gcds: int, env: dict[str, str] | os._Environ = os.environ, seed: int | None = None) -> None:
        import random
        import zlib

        self.gcds = gcds
        self.job = env.get("SLURM_JOB_ID", "")
        self.step = env.get("SLURM_STEP_ID")
        node = env.get("SLURMD_NODENAME")
        self.rng = random.Random(seed if seed is not None else zlib.crc32(f"{self.job}/{node}".encode()))
        self.temps = [40.0 + i % 3 for i in range(gcds)]
        self.last: dict[int, float] | None = None  # CPU seconds per local rank at the last look (None: no look yet)
        self.last_at = time.monotonic()

    def states(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Each GCD's state (compute / idle) and VRAM % from its rank's CPU use since the last reading."""
        now = time.monotonic()
        usage = _rank_usage(self.job, self.step) if self.job else {}
        span = max(now - self.last_at, 1e-3)
        ranks = max(usage) + 1 if usage else 1
        per_rank = max(1, self.gcds // ranks)
        states, vram = ["idle"] * self.gcds, [0] * self.gcds
        for local, (cpu, rss) in usage.items():
            # a rank that started since the last look used all its CPU time within the span
            share = 0.0 if self.last is None else (cpu - self.last.get(local, 0.0)) / span
            for g in range(local * per_rank, min(self.gcds, (local + 1) * per_rank)):
                states[g] = "compute" if share >= BUSY_CPU_SHARE else "idle"
                vram[g] = min(99, round(100 * rss / (64 * 2**30)))
        self.last = {k: c for k, (c, _) in usage.items()}
        self.last_at = now
        return tuple(states), tuple(vram)

    def reading(self) -> str:
        from ..smi.synth import Step, _node, rocm_json

        states, vram = self.states()
        return rocm_json(_node(self.rng, Step(0.0, states, vram), self.temps))


def main(argv: Sequence[str] | None = None) -> int:
    """Print a reading (rocm-smi's own options are accepted and ignored); ``--write`` regenerates the idle file;
    ``--stream SECONDS`` prints one reading per interval until killed."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--write" in args:
        READING.write_text(reading())
        return 0
    gcds = job_gcds()
    if "--stream" in args:
        i = args.index("--stream")
        interval = float(args[i + 1]) if i + 1 < len(args) else 2.0
        story = JobStory(gcds) if gcds else None
        while True:
            sys.stdout.write((story.reading() if story else READING.read_text()) + f"{FRAME_END} 0\n")
            sys.stdout.flush()
            time.sleep(interval)
    if gcds:
        sys.stdout.write(JobStory(gcds).reading())
        return 0
    sys.stdout.write(READING.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
