"""The training loop both course workloads share: sharded deterministic batches, single/DataParallel/DDP,
per-step and per-epoch timings, checkpoint and resume, a wall-time limit, tqdm progress and the profiler hook.

A workload supplies a :class:`Task` (model, data set, optimiser, how one batch gives a loss); everything a learner
measures or resumes is handled here once.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist
from torch import nn

from .. import profiler
from ..errors import SpecError
from .checkpoint import check_compatible, load_checkpoint, save_checkpoint
from .knobs import Applied, Knobs, apply_knobs, make_optimizer, unwrap_compiled
from .common import (DistEnv, MetricsWriter, check_common_args, default_out_dir, dist_env,
                     init_distributed, limit_cpu_threads, loader_start_method, metrics_path, pick_device, print0,
                     result_path, write_json_atomic)


@dataclass
class StepOutput:
    """What one batch gives: the loss to minimise, and for classifiers the number of correct predictions."""

    loss: torch.Tensor
    samples: int
    correct: int | None = None


@dataclass
class Task:
    """A workload as the loop sees it."""

    name: str
    model: nn.Module
    dataset: torch.utils.data.Dataset
    make_optimizer: Callable[..., torch.optim.Optimizer]  # (params, lr, **options such as fused=True)
    forward: Callable[[nn.Module, Any, torch.device], StepOutput]
    collate: Callable | None = None
    info: dict[str, Any] = field(default_factory=dict)  # extra facts for result.json (data source, sizes...)
    convolutional: bool = False  # whether --channels-last can change anything


@dataclass
class RunResult:
    """The end of a run, as written to ``result.rank{R}.json``."""

    final_loss: float
    steps: int
    stopped_by: str
    summary: dict[str, Any]


@dataclass
class Setup:
    """Where this process runs: its rank, its device and the collective backend (None outside DDP)."""

    env: DistEnv
    device: torch.device
    backend: str | None
    threads: int


def setup_process(args: argparse.Namespace) -> Setup:
    """Check the options, find this rank and its device, join the process group in DDP mode, share CPU threads."""
    check_common_args(args)
    env = dist_env()
    if args.mode != "ddp" and env.world_size > 1:
        raise SpecError("--mode", f"{args.mode} was started as {env.world_size} ranks ({env.source} environment)",
                        "use --mode ddp for one process per rank, or launch a single task (srun -n1 / no torchrun)")
    if args.mode != "ddp":
        env = DistEnv()
    device = pick_device(env.local_rank, args.device)
    backend = init_distributed(env, device) if args.mode == "ddp" else None
    threads = limit_cpu_threads(env, device)
    return Setup(env=env, device=device, backend=backend, threads=threads)


def epoch_batches(n: int, *, seed: int, epoch: int, rank: int, world: int, batch: int) -> list[list[int]]:
    """This rank's batches for one epoch: one shuffle per (seed, epoch) shared by all ranks, dealt round-robin.

    The tail that does not fill a batch on every rank is dropped, so every rank takes the same number of steps.
    """
    steps = n // (batch * world)
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    order = torch.randperm(n, generator=generator)[: steps * batch * world]
    mine = order[rank::world].tolist()
    return [mine[i * batch:(i + 1) * batch] for i in range(steps)]


def _unwrap(model: nn.Module) -> nn.Module:
    model = unwrap_compiled(model)
    return model.module if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)) else model


def train_step(task: Task, model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, device: torch.device,
               applied: Applied) -> StepOutput:
    """One optimizer step on ``batch``, in the precision the knobs set (the training loop and the ladder share it)."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    with applied.autocast():
        out = task.forward(model, batch, device)
    applied.backward_and_step(out.loss, optimizer)
    return out


def prepare_model(task: Task, args: argparse.Namespace, setup: Setup, out_dir: Path,
                  say: Callable[[str], None] | None = None) -> tuple[nn.Module, torch.optim.Optimizer, Applied]:
    """The task's model on the device with the knobs applied (after DataParallel/DDP wrapping, as torch.compile
    wants), and its optimizer; one line per knob that cannot work here (printed on rank 0, or given to ``say``)."""
    model = task.model.to(setup.device)
    if say is None:
        say = lambda line: print0(setup.env, line)  # noqa: E731
    if args.mode == "dp":
        model = nn.DataParallel(model)
    elif args.mode == "ddp":
        device = setup.device
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    model, applied = apply_knobs(Knobs.from_args(args), model, setup.device, out_dir=out_dir,
                                 convolutional=task.convolutional, say=say)
    optimizer = make_optimizer(task.make_optimizer, model.parameters(), args.lr, applied, say=say)
    return model, optimizer, applied


class _StopFlag:
    """Set by SIGUSR1/SIGTERM (e.g. Slurm's --signal before the time limit): finish the step, checkpoint, stop."""

    def __init__(self) -> None:
        self.raised = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "_StopFlag":
        for sig in (signal.SIGUSR1, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (e.g. called from a notebook thread)
                pass
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self.raised = True

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def run_training(task: Task, args: argparse.Namespace, setup: Setup, clock_start: float | None = None) -> RunResult:
    """Train ``task`` as ``args`` say and write metrics, checkpoints and the result file; returns the result.

    ``--max-time`` counts from ``clock_start`` (a ``time.perf_counter()`` value; default: now), so a script can
    include its own set-up time.
    """
    env, device = setup.env, setup.device
    out_dir = Path(args.out) if args.out is not None else default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    profile_dir = None if os.environ.get("LUMIKIT_PROFILE_DIR") else out_dir / "profile"
    prof_config = profiler.profile_config(enabled=True if args.profile else None, out_dir=profile_dir)

    # How far to go.
    limit_steps = args.steps
    if prof_config.max_steps is not None:
        limit_steps = prof_config.max_steps if limit_steps is None else min(limit_steps, prof_config.max_steps)
    limit_epochs = args.epochs if args.epochs is not None else (None if limit_steps is not None else 1)

    # Batches: per device, times the GPUs DataParallel spreads one batch over, times the ranks.
    dp_devices = torch.cuda.device_count() if (args.mode == "dp" and device.type == "cuda") else 1
    process_batch = args.batch_size * dp_devices
    global_batch = process_batch * env.world_size
    n = len(task.dataset)
    steps_per_epoch = n // global_batch
    if steps_per_epoch < 1:
        raise SpecError("--batch-size", f"a global batch of {global_batch} samples is larger than the data set "
                        f"({n} samples)", "use a smaller --batch-size (or more --samples)")
    total_steps = limit_steps if limit_steps is not None else limit_epochs * steps_per_epoch
    if limit_epochs is not None:
        total_steps = min(total_steps, limit_epochs * steps_per_epoch)

    model, optimizer, applied = prepare_model(task, args, setup, out_dir)
    meta = {"workload": task.name, "model_size": args.model_size, "seed": args.seed, "world_size": env.world_size,
            "batch_size": args.batch_size, "process_batch": process_batch, "dataset_size": n}

    # Resume, or refuse to overwrite an earlier run's files.
    step, curve, epoch_acc, resumed_from = 0, [], {"correct": 0, "samples": 0, "time": 0.0}, None
    ckpt = Path(args.checkpoint) if args.checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        if not args.resume and not args.overwrite:
            raise SpecError("--checkpoint", f"{ckpt} already exists", "add --resume to continue from it, "
                            "--overwrite to start afresh, or choose another --checkpoint path")
        if args.resume:
            state = load_checkpoint(ckpt)
            check_compatible(state["meta"], meta, ckpt)
            _unwrap(model).load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            torch.set_rng_state(state["rng"])
            step, curve, epoch_acc = state["step"], list(state["loss_curve"]), dict(state["epoch_acc"])
            resumed_from = step
            print0(env, f"resumed from {ckpt} at step {step}")
    elif args.resume:
        print0(env, f"no checkpoint at {ckpt} yet: starting from step 0")
    metrics_file = metrics_path(out_dir, env.rank)
    if metrics_file.exists() and resumed_from is None:
        if not args.overwrite:
            raise SpecError("--out", f"{metrics_file} is left from an earlier run",
                            "use a new --out folder, --resume to continue that run, or --overwrite")
        metrics_file.unlink()

    parameters = sum(p.numel() for p in _unwrap(model).parameters())
    print0(env, f"{task.name}: model {args.model_size} ({parameters:,} parameters), mode {args.mode}, "
                f"{env.world_size} rank(s), device {device}, batch {args.batch_size}/device = {global_batch} global, "
                f"{steps_per_epoch} steps/epoch, {total_steps} steps, precision {applied.precision}")
    if prof_config.enabled and total_steps - step < prof_config.schedule.steps_needed:
        print0(env, f"note: the profiler schedule {prof_config.schedule} needs {prof_config.schedule.steps_needed} "
                    f"steps, this run takes {total_steps - step}: the last window will be cut short")

    from tqdm.auto import tqdm

    bar = tqdm(total=total_steps, initial=step, desc=task.name, unit="step", file=sys.stderr,
               disable=args.no_progress or not env.is_main, dynamic_ncols=False)
    started = time.perf_counter()
    clock_start = started if clock_start is None else clock_start
    step_times: list[float] = []
    save_times = [0.0]
    if limit_steps is not None and total_steps == limit_steps:
        stopped_by = "max_steps" if limit_steps != args.steps else "steps"
    else:
        stopped_by = "epochs"
    has_accuracy = False
    reduce_buffer_device = device if setup.backend == "nccl" else torch.device("cpu")

    def save(at_step: int) -> None:
        if ckpt is None or not env.is_main:
            return
        begun = time.perf_counter()
        save_checkpoint(ckpt, {"meta": meta, "model": _unwrap(model).state_dict(), "optimizer": optimizer.state_dict(),
                               "rng": torch.get_rng_state(), "step": at_step, "loss_curve": curve,
                               "epoch_acc": epoch_acc})
        save_times.append(time.perf_counter() - begun)

    start_method = loader_start_method(env, args.workers)  # spawn across nodes, as the course's multi-node runs
    with MetricsWriter(metrics_file, append=resumed_from is not None) as metrics, _StopFlag() as stop, \
            profiler.profile_steps(enabled=prof_config.enabled, rank=env.rank, out_dir=prof_config.out_dir,
                                   schedule=prof_config.schedule) as prof:
        while step < total_steps:
            epoch, position = divmod(step, steps_per_epoch)
            batches = epoch_batches(n, seed=args.seed, epoch=epoch, rank=env.rank, world=env.world_size,
                                    batch=process_batch)[position:]
            batches = batches[: total_steps - step]
            loader = torch.utils.data.DataLoader(task.dataset, batch_sampler=batches, num_workers=args.workers,
                                                 collate_fn=task.collate, pin_memory=device.type == "cuda",
                                                 multiprocessing_context=start_method)
            epoch_started = time.perf_counter()
            tick = time.perf_counter()
            halt = False
            for batch in loader:
                data_time = time.perf_counter() - tick
                out = train_step(task, model, optimizer, batch, device, applied)
                # One small all-reduce: the mean loss over ranks, the stop votes, the correct predictions.
                want_stop = stop.raised
                if args.max_time is not None and step_times:
                    # Room for two more slow steps and a checkpoint (with a 1 s floor) before the limit.
                    reserve = 2 * max(step_times[-5:]) + max(1.0, 1.5 * max(save_times))
                    want_stop = want_stop or time.perf_counter() - clock_start + reserve > args.max_time
                values = torch.tensor([out.loss.item(), float(want_stop), float(out.correct or 0), float(out.samples)],
                                      dtype=torch.float64, device=reduce_buffer_device)
                if setup.backend is not None:
                    dist.all_reduce(values)
                loss = values[0].item() / env.world_size
                step += 1
                now = time.perf_counter()
                step_time = now - tick
                tick = now
                step_times.append(step_time)
                curve.append(loss)
                has_accuracy = has_accuracy or out.correct is not None
                epoch_acc["correct"] += int(values[2].item())
                epoch_acc["samples"] += int(values[3].item())
                metrics.write({"step": step, "epoch": epoch, "loss": loss, "rank_loss": out.loss.item(),
                               "step_time_s": step_time, "data_time_s": data_time, "samples": out.samples,
                               "samples_per_s": out.samples / step_time, "rank": env.rank,
                               "world_size": env.world_size, "time": time.time()})
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
                prof.step()
                if step % args.checkpoint_every == 0 and step < total_steps:
                    save(step)
                if values[1].item() > 0:
                    stopped_by = "signal" if stop.raised else "max_time"
                    halt = True
                    break
            epoch_acc["time"] += time.perf_counter() - epoch_started
            finished_epoch = step % steps_per_epoch == 0
            if finished_epoch or step >= total_steps or halt:
                first = epoch * steps_per_epoch
                epoch_losses = curve[first:step]
                row = {"epoch_end": epoch, "complete": finished_epoch, "steps": len(epoch_losses),
                       "epoch_time_s": epoch_acc["time"], "loss": sum(epoch_losses) / len(epoch_losses),
                       "rank": env.rank, "world_size": env.world_size, "time": time.time()}
                if has_accuracy and epoch_acc["samples"]:
                    row["accuracy"] = epoch_acc["correct"] / epoch_acc["samples"]
                if finished_epoch or not halt:
                    metrics.write(row)
                    text = f"epoch {epoch}: loss {row['loss']:.4f}"
                    if "accuracy" in row:
                        text += f", accuracy {row['accuracy']:.4f}"
                    print0(env, f"{text}, epoch time {row['epoch_time_s']:.2f}s"
                                + ("" if finished_epoch else f" (partial: {row['steps']} steps)"))
                if finished_epoch:
                    epoch_acc = {"correct": 0, "samples": 0, "time": 0.0}
            if halt:
                break
        bar.close()
    save(step)
    if setup.backend is not None:
        dist.barrier()

    elapsed = time.perf_counter() - started
    final_loss = curve[-1] if curve else math.nan
    steady = step_times[1:] or step_times
    mean_step = sum(steady) / len(steady) if steady else math.nan
    summary = {
        "workload": task.name, "final_loss": final_loss, "steps": step, "stopped_by": stopped_by,
        "resumed_from_step": resumed_from, "epochs_completed": step // steps_per_epoch,
        "steps_per_epoch": steps_per_epoch, "mode": args.mode, "rank": env.rank, "world_size": env.world_size,
        "launcher": env.source, "device": str(device), "backend": setup.backend, "cpu_threads": setup.threads,
        "model_size": args.model_size, "parameters": parameters, "batch_size": args.batch_size,
        "global_batch_size": global_batch, "workers": args.workers,
        "loader_start_method": start_method or "default", "lr": args.lr, "seed": args.seed,
        "elapsed_s": elapsed, "mean_step_time_s": mean_step,
        "step_times_s": steady,  # the warm steps' times: their spread says what is noise (lumikit.measure)
        "samples_per_s": process_batch / mean_step if steady else math.nan,  # this process
        "global_samples_per_s": global_batch / mean_step if steady else math.nan,  # all ranks together
        # what the caching allocator handed out at most (compare with lumikit.model_estimate); none on a CPU
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "checkpoint": str(ckpt) if ckpt else None,
        "profile_dir": str(prof_config.out_dir) if prof_config.enabled else None,
        "knobs": applied.to_dict(),
        "loss_curve": curve, **task.info,
    }
    write_json_atomic(result_path(out_dir, env.rank), summary)
    print(f"FINAL loss={final_loss:.6f}", flush=True)
    return RunResult(final_loss=final_loss, steps=step, stopped_by=stopped_by, summary=summary)


def finish(setup: Setup) -> None:
    """Leave the process group cleanly (DDP)."""
    if setup.backend is not None and dist.is_initialized():
        dist.destroy_process_group()


def main_for(build: Callable[[argparse.Namespace, Setup], Task], parser: argparse.ArgumentParser,
             argv: Sequence[str] | None = None,
             after: Callable[[Task, argparse.Namespace, Setup], None] | None = None) -> int:
    """Parse ``argv``, build the task on this rank, train, then call ``after``; lumikit errors become a message
    and exit status 2."""
    from ..errors import LumikitError

    clock_start = time.perf_counter()
    args = parser.parse_args(argv)
    setup = None
    try:
        setup = setup_process(args)
        torch.manual_seed(args.seed)
        task = build(args, setup)
        run_training(task, args, setup, clock_start)
        if after is not None:
            after(task, args, setup)
    except LumikitError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        if setup is not None:
            finish(setup)
    return 0
