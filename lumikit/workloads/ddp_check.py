"""A few DDP steps of a tiny model over gloo on the CPU: the smallest proof that a multi-rank launch is wired right.

Every rank prints where it runs, then ``FINAL loss=<value>``; the value is averaged over ranks, so all ranks of a
correct launch print the same line. The Slurm integration tests run it as 2 nodes x 2 tasks.

    srun -N2 --ntasks-per-node=2 python -m lumikit.workloads.ddp_check
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import socket
import sys
from typing import Sequence

from ..errors import LumikitError
from .common import DEFAULT_MASTER_PORT, dist_env


def run(steps: int = 5, seed: int = 0, timeout_s: float = 60.0) -> float:
    """Train a 16-to-1 linear model for ``steps`` steps with DDP on gloo; returns the rank-averaged final loss."""
    import torch
    import torch.distributed as dist

    env = dist_env()
    if env.source == "default":
        raise LumikitError("ddp_check needs a launcher's environment (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS); "
                           "start it with srun, torchrun or lumikit's local backend")
    if not env.master_addr:
        raise LumikitError("MASTER_ADDR is not set; export it before srun, e.g. "
                           "MASTER_ADDR=$(scontrol show hostname \"$SLURM_NODELIST\" | head -n1)")
    os.environ.setdefault("MASTER_PORT", env.master_port or DEFAULT_MASTER_PORT)
    os.environ.setdefault("MASTER_ADDR", env.master_addr)
    torch.set_num_threads(1)
    print(f"rank {env.rank}/{env.world_size} local {env.local_rank} on {socket.gethostname()} "
          f"(master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']})", flush=True)
    dist.init_process_group("gloo", init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        loss = _train(steps, seed, env.rank)
        total = loss.detach().to(torch.float64).clone()
        dist.all_reduce(total)
        return total.item() / env.world_size
    finally:
        # DDP modules sit in reference cycles; left to the collector at interpreter exit, the gloo work they hold
        # aborts the process ("terminate called without an active exception", about 1 run in 10 here)
        gc.collect()
        dist.destroy_process_group()


def _train(steps: int, seed: int, rank: int) -> "torch.Tensor":  # noqa: F821
    """The DDP steps; the model lives only in here, so it can be collected before the group is destroyed."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(seed + 1 + rank)  # each rank its own shard
    weights = torch.linspace(-1, 1, 16)
    loss = torch.zeros(())
    for _ in range(steps):
        x = torch.randn(32, 16, generator=data)
        y = (x @ weights).unsqueeze(1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.detach()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check and print ``FINAL loss=...`` (exit 2 with the reason where the launch is not set up)."""
    parser = argparse.ArgumentParser(prog="lumikit.workloads.ddp_check", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        loss = run(steps=args.steps, seed=args.seed)
    except LumikitError as exc:
        print(f"ddp_check: error: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"FINAL loss={loss:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
