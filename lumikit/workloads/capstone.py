"""The capstone's workload: the course's language model, slower than it should be in one way chosen by a case.

``python -m lumikit.workloads.capstone --case TOKEN ...`` trains exactly like ``lumikit.workloads.lm`` (same
options, one rank or DDP), except that the case token (module 11 derives it from the learner's seed,
:func:`case_for`) picks one variant of the run, and each variant wastes time in its own way. Every variant pays a
fixed cost per step that is simulated (:data:`STEP_SETUP_S`, labelled ``step setup`` in the profile). Nothing here names
what a variant does: the learner finds it with the profiler, the trace tools and the step metrics, then fixes it
with the workload's ordinary options. The learner may not change the case (the check compares it with the first
run's); everything else is theirs to change.
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from typing import Any, Callable, Sequence

import torch

from .lm import build_task as build_lm_task
from .lm import parser as lm_parser
from .trainer import Setup, StepOutput, Task, main_for

#: The variants the case token picks from (module 11's check knows what each does; the names say nothing).
VARIANTS = ("a", "b", "c")
#: The batch size when the command line does not give one (variant "c" uses its own).
DEFAULT_BATCH = 16
#: Variant "a": the extra time to read one sample (seconds; sleeps, so the CPU is free meanwhile).
READ_DELAY_S = 0.004
#: Variant "c": the batch size when the command line does not give one.
SMALL_BATCH = 2
#: Every variant: a fixed cost per step (seconds), whatever the batch. SIMULATED: it stands for what a step costs on a
#: GCD besides its arithmetic (kernel launches, the host's Python, waits for the device), which a CPU running one
#: thread hardly has; the profiler shows it as ``step setup``.
STEP_SETUP_S = 0.015


def case_for(seed: str | None = None) -> str:
    """The learner's case token, from their seed (:func:`lumikit.checks.learner.seed_for`): six digits."""
    from ..checks.learner import seed_for

    return f"{seed_for('11.capstone', seed) % 1_000_000:06d}"


def variant(case: str) -> str:
    """The variant a case token picks (one of :data:`VARIANTS`)."""
    digest = hashlib.sha256(f"capstone\0{case}".encode()).digest()
    return VARIANTS[int.from_bytes(digest[:8], "big") % len(VARIANTS)]


class SlowInput(torch.utils.data.Dataset):
    """A data set whose every item takes ``delay_s`` longer to read (sleeps: the CPU is free meanwhile)."""

    def __init__(self, inner: torch.utils.data.Dataset, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.delay_s)
        return self.inner[index]


def _summary(model: torch.nn.Module, copy_out: bool) -> dict[str, float]:
    """The weights' summary the run logs every ``--log-every`` steps: the median and the standard deviation of their
    absolute values. With ``copy_out`` it is computed in Python from a copy of every weight (``tolist`` waits for
    the device and copies everything to the host); otherwise on the device, with two numbers copied back."""
    with torch.profiler.record_function("weights summary"):
        if copy_out:
            values = [abs(v) for p in model.parameters() for v in p.detach().reshape(-1).tolist()]
            return {"median_abs": statistics.median_low(values), "std_abs": statistics.pstdev(values)}
        flat = torch.cat([p.detach().abs().reshape(-1) for p in model.parameters()])
        return {"median_abs": float(flat.median().item()), "std_abs": float(flat.std(correction=0).item())}


def _logging_forward(forward: Callable[..., StepOutput], every: int, copy_out: bool,
                     log: dict[str, Any]) -> Callable[..., StepOutput]:
    """``forward`` after the step's fixed cost (:data:`STEP_SETUP_S`), computing the weights' summary every
    ``every`` steps (0: never) and keeping the latest in ``log["weights"]`` (the task's info: it goes
    to result.json)."""
    calls = [0]

    def run(model: torch.nn.Module, batch: Any, device: torch.device) -> StepOutput:
        calls[0] += 1
        with torch.profiler.record_function("step setup"):
            time.sleep(STEP_SETUP_S)
        if every and calls[0] % every == 0:
            log["weights"] = _summary(model, copy_out)
        return forward(model, batch, device)
    return run


def build_task(args: argparse.Namespace, setup: Setup) -> Task:
    """The lm task, as the case's variant runs it."""
    kind = variant(args.case)
    if args.batch_size is None:
        args.batch_size = SMALL_BATCH if kind == "c" else DEFAULT_BATCH
    task = build_lm_task(args, setup)
    if kind == "a":
        task.dataset = SlowInput(task.dataset, READ_DELAY_S)
    task.forward = _logging_forward(task.forward, args.log_every, copy_out=kind == "b", log=task.info)
    task.info.update(case=args.case, log_every=args.log_every)
    return task


def parser() -> argparse.ArgumentParser:
    """lm's command line plus the case and the summary's interval."""
    p = lm_parser()
    p.prog = "lumikit.workloads.capstone"
    p.description = "The capstone's language-model run: it trains like lumikit.workloads.lm, with the case's variant."
    p.set_defaults(batch_size=None)
    p.add_argument("--case", default="0", help="the learner's case token (module 11 gives each learner one)")
    p.add_argument("--log-every", type=int, default=1, metavar="N",
                   help="log the median and spread of the weights' absolute values every N steps (the latest goes to "
                        "result.json; 0: never)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Train as the case's variant does."""
    return main_for(build_task, parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
