"""The capstone's workload: the course's language model with a planted input bottleneck on one rank.

``python -m lumikit.workloads.capstone --case N ...`` trains exactly like ``lumikit.workloads.lm`` (same options),
except that on one rank, chosen by the case number, every sample takes ``--input-ms`` longer to load, as when one
node reads its shard from slow storage. The storage is not yours to change: the fix is in how the rank loads
(``--workers``), and the capstone's check requires the delay still to be there after the fix.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Sequence

import torch

from .lm import build_task as build_lm_task
from .lm import parser as lm_parser
from .trainer import Setup, Task, main_for


def case_for(user: str | None = None) -> int:
    """The learner's case number, from the user name (so neighbours get different slow ranks and numbers)."""
    import getpass
    import zlib

    return zlib.crc32((user or getpass.getuser()).encode()) % 97


def slow_rank(case: int, world_size: int) -> int:
    """The rank that loads slowly in case ``case``."""
    return case % max(1, world_size)


class SlowInput(torch.utils.data.Dataset):
    """A data set whose every item takes ``delay_s`` longer to read (sleeps: the CPU is free meanwhile)."""

    def __init__(self, inner: torch.utils.data.Dataset, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.delay_s)
        return self.inner[index]


def build_task(args: argparse.Namespace, setup: Setup) -> Task:
    """The lm task; on the case's slow rank its data set loads slowly."""
    task = build_lm_task(args, setup)
    slow = slow_rank(args.case, setup.env.world_size)
    task.info.update(case=args.case, input_ms=args.input_ms, slow_input=setup.env.rank == slow)
    if setup.env.rank == slow and args.input_ms > 0:
        task.dataset = SlowInput(task.dataset, args.input_ms / 1000)
    return task


def parser() -> argparse.ArgumentParser:
    """lm's command line plus the planted bottleneck's two options."""
    p = lm_parser()
    p.prog = "lumikit.workloads.capstone"
    p.add_argument("--case", type=int, default=0, help="which rank loads slowly (the capstone gives each learner one)")
    p.add_argument("--input-ms", type=float, default=25.0, help="extra milliseconds to load one sample on that rank")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Train with the planted bottleneck."""
    return main_for(build_task, parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
