"""This device's two measured ceilings: a large bf16 matrix product (FLOP/s) and a device-to-device copy (bytes/s).

    python benchmarks/gpu_evidence/ceilings.py [--json FILE]

Both timed with device events after warm-up, the median of 10, on random data (zeros can run faster). Counted as
usual: 2*n^3 FLOPs per product; a copy moves its bytes twice (read and write). On a CPU the sizes shrink and the
numbers say "CPU". Used by gpu_evidence.sh so the ladder's MFU can be read against what the card really reaches.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def timed(fn, repeats: int = 10, warmup: int = 3) -> float:
    """Median seconds of ``fn()`` over ``repeats`` runs (device events on a GPU)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    args = p.parse_args()
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    n = 8192 if gpu else 512
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    mm = timed(lambda: a @ b)
    a32, b32 = a.float(), b.float()
    mm32 = timed(lambda: a32 @ b32)
    nbytes = (2 << 30) if gpu else (64 << 20)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    cp = timed(lambda: dst.copy_(src))
    out = {"device": torch.cuda.get_device_name(0) if gpu else "CPU", "torch": torch.__version__,
           "matmul_n": n, "bf16_matmul_tflops": 2 * n ** 3 / mm / 1e12,
           "fp32_matmul_tflops": 2 * n ** 3 / mm32 / 1e12,
           "tf32_allowed": bool(torch.backends.cuda.matmul.allow_tf32) if gpu else None,
           "copy_bytes": nbytes, "copy_tb_per_s_read_plus_write": 2 * nbytes / cp / 1e12}
    print(f"ceilings on {out['device']}: bf16 matmul {out['bf16_matmul_tflops']:.1f} TFLOP/s, fp32 matmul "
          f"{out['fp32_matmul_tflops']:.1f} TFLOP/s (n={n}), copy {out['copy_tb_per_s_read_plus_write']:.2f} TB/s "
          "(read + write)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
