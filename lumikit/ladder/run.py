"""The ladder inside its job: every rung in turn on one device, then ``ladder.json`` and the table.

Per rung: a fresh model (same seed) with the rung's knobs, ``--warmup`` steps that are not timed (a compile happens
there), ``--repeats`` timed blocks of ``--steps`` steps (samples/s per block: the spread is what separates a real
gain from noise), the peak memory, and a short torch-profiler trace in ``RUN/ladder/<rung>/trace`` that
``lumikit trace`` reads.

    python -m lumikit.ladder.run --model lm --rungs fp32,bf16,compile --steps 5 --repeats 5
"""
from __future__ import annotations

import argparse
import gc
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from .. import profiler
from ..errors import LumikitError
from ..measure import measured
from ..model_estimate import estimate_workload, gcd_peak_flops
from ..site import load_site
from ..workloads.common import default_out_dir, device_name, write_json_atomic
from ..workloads.trainer import Setup, Task, epoch_batches, prepare_model, setup_process, train_step
from .rungs import PEAK_FOR_PRECISION, cumulative_options, parse_rungs
from .table import LADDER_FILE, ladder_table

MODELS = ("lm", "resnet")


def workload_module(model: str) -> Any:
    """The workload module (its parser and build_task) of ``--model``."""
    if model == "lm":
        from ..workloads import lm
        return lm
    from ..workloads import resnet
    return resnet


def _batches(task: Task, setup: Setup, args: argparse.Namespace) -> Iterator[Any]:
    """Batches without end: the workload's deterministic epochs, one after another."""
    epoch = 0
    while True:
        order = epoch_batches(len(task.dataset), seed=args.seed, epoch=epoch, rank=0, world=1, batch=args.batch_size)
        if not order:
            raise LumikitError(f"a batch of {args.batch_size} is larger than the data set ({len(task.dataset)} "
                               "samples); use a smaller --batch-size")
        loader = torch.utils.data.DataLoader(task.dataset, batch_sampler=order, num_workers=args.workers,
                                             collate_fn=task.collate, pin_memory=setup.device.type == "cuda")
        yield from loader
        epoch += 1


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_name(precision: str, model: str, device: torch.device, site: str) -> str:
    """The site's peak a rung's work runs at. fp32 on an NVIDIA GPU may run on its TF32 tensor cores: PyTorch lets
    cuDNN's convolutions use TF32 by default (``torch.backends.cudnn.allow_tf32``) and matrix products when asked
    (``torch.backends.cuda.matmul.allow_tf32``); measured against the FP32 peak, such a rung's MFU would be far too
    high (the ResNet's fp32 rung on an H100 read 83 % of the FP32 peak, above the card's measured FP32 matmul rate)."""
    name = PEAK_FOR_PRECISION[precision]
    if precision != "fp32" or device.type != "cuda" or torch.version.hip:
        return name
    convolutions_tf32 = model == "resnet" and torch.backends.cudnn.allow_tf32
    if (convolutions_tf32 or torch.backends.cuda.matmul.allow_tf32) and "tf32" in \
            load_site(site).hardware.get("gcd_peak_tflops", {}):
        return "tf32"
    return name


def run_rung(name: str, options: list[str], args: argparse.Namespace, setup: Setup, out_dir: Path, bar: Any,
             steps_flops: int) -> dict[str, Any]:
    """One rung: warm up, time ``repeats`` blocks of ``steps`` steps, record a short trace; its row of ladder.json."""
    module = workload_module(args.model)
    rung_dir = out_dir / "ladder" / name
    rung_dir.mkdir(parents=True, exist_ok=True)
    wargs = module.parser().parse_args(["--model-size", args.size, "--batch-size", str(args.batch_size),
                                        "--workers", str(args.workers), "--seed", str(args.seed), "--device",
                                        args.device, "--out", str(rung_dir), *options, *args.workload_args])
    if "--compile" in options:
        torch._dynamo.reset()  # each compiled rung compiles its own model afresh (in its warm-up)
    torch.manual_seed(args.seed)
    task = module.build_task(wargs, setup)
    notes: list[str] = []
    said = lambda line: notes.append(line)  # noqa: E731 - collected, printed once under the rung's name
    if setup.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(setup.device)
    model, optimizer, applied = prepare_model(task, wargs, setup, rung_dir, say=said)
    batches = _batches(task, setup, args)
    bar.set_description(name)
    for _ in range(args.warmup):
        train_step(task, model, optimizer, next(batches), setup.device, applied)
        bar.update(1)
    _sync(setup.device)
    rates = []
    for _ in range(args.repeats):
        samples = 0
        start = time.perf_counter()
        for _ in range(args.steps):
            samples += train_step(task, model, optimizer, next(batches), setup.device, applied).samples
            bar.update(1)
        _sync(setup.device)
        rates.append(samples / (time.perf_counter() - start))
    peak_memory = torch.cuda.max_memory_allocated(setup.device) if setup.device.type == "cuda" else None
    trace_dir = rung_dir / "trace"
    schedule = profiler.ProfileSchedule(wait=0, warmup=1, active=args.profile_steps, repeat=1)
    with profiler.profile_steps(enabled=True, rank=0, out_dir=trace_dir, schedule=schedule) as prof:
        for _ in range(schedule.steps_needed):
            train_step(task, model, optimizer, next(batches), setup.device, applied)
            _sync(setup.device)
            prof.step()
            bar.update(1)
    batches.close()  # ends the loader (and its worker processes, if any)
    traces = profiler.trace_files(trace_dir, rank=0)
    m = measured(name, rates)
    precision = applied.precision
    peak_name = _peak_name(precision, args.model, setup.device, args.site)
    peak_flops = gcd_peak_flops(peak_name, args.site)
    achieved = steps_flops * m.median / args.batch_size
    del model, optimizer, task
    gc.collect()
    if setup.device.type == "cuda":
        torch.cuda.empty_cache()
    return {"rung": name, "options": options, "applied": applied.to_dict(), "precision": precision,
            "samples_per_s": {"median": m.median, "min": m.lo, "max": m.hi, "values": list(m.values)},
            "spread_pct": 100 * (m.hi - m.lo) / m.median if m.median else None,
            "achieved_tflops": achieved / 1e12, "peak_tflops": peak_flops / 1e12,
            "peak_name": peak_name, "mfu": achieved / peak_flops,
            "peak_memory_bytes": peak_memory,
            "process_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "trace": str(traces[-1].relative_to(out_dir)) if traces else None,
            "trace_dir": str(trace_dir.relative_to(out_dir)), "notes": notes}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lumikit.ladder.run", description="Run the optimisation ladder in this process.")
    p.add_argument("--model", choices=MODELS, default="lm")
    p.add_argument("--size", default="tiny", help="the workload's --model-size")
    p.add_argument("--rungs", default=None, help="comma-separated rungs, cumulative (default: all but fp16)")
    p.add_argument("--steps", type=int, default=10, help="steps per timed repeat")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats per rung")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before the repeats (compiling happens here)")
    p.add_argument("--profile-steps", type=int, default=3, help="steps in each rung's trace")
    p.add_argument("--batch-size", type=int, default=None, help="default: the workload's")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--site", default=None, help="the site whose GCD peaks the MFU is measured against")
    p.add_argument("--out", type=Path, default=None, help="default: $LUMIKIT_RUN_DIR or .")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("workload_args", nargs="*", help="more options for the workload (after --), e.g. --samples 256")
    return p


def check(args: argparse.Namespace) -> None:
    """Refuse counts no ladder can use, naming the option."""
    from ..errors import SpecError

    for name in ("steps", "repeats", "profile_steps"):
        if getattr(args, name) < 1:
            raise SpecError(f"--{name.replace('_', '-')}", f"must be at least 1, got {getattr(args, name)}",
                            "give a positive number")
    if args.warmup < 0 or args.workers < 0:
        raise SpecError("--warmup/--workers", "must be 0 or more", "give 0 or a positive number")


def run_ladder(args: argparse.Namespace) -> dict[str, Any]:
    """Every rung, then ladder.json in the output folder; returns what was written."""
    from tqdm.auto import tqdm

    check(args)
    rungs = cumulative_options(parse_rungs(args.rungs))
    site = load_site(args.site)
    args.site = site.ref
    module = workload_module(args.model)
    if args.batch_size is None:
        args.batch_size = module.parser().get_default("batch_size")
    out_dir = Path(args.out) if args.out is not None else default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    setup = setup_process(module.parser().parse_args(["--device", args.device, "--model-size", args.size]))
    estimate = estimate_workload(args.model, args.size, args.batch_size)
    kind = "GPU" if setup.device.type == "cuda" else "CPU"
    measured_on = f"this {kind} ({device_name(setup.device)})"
    print(f"ladder: {args.model} {args.size}, batch {args.batch_size}, {len(rungs)} rungs (cumulative), "
          f"{args.warmup} warm-up + {args.repeats} x {args.steps} timed steps each, on {measured_on}", flush=True)
    per_rung = args.warmup + args.repeats * args.steps + args.profile_steps + 1
    rows = []
    # in a job's log (no terminal) a line every 10 s is enough; `lumikit tail RUN` shows the latest
    with tqdm(total=per_rung * len(rungs), unit="step", file=sys.stderr, disable=args.no_progress,
              mininterval=0.1 if sys.stderr.isatty() else 10.0) as bar:
        for name, options in rungs:
            row = run_rung(name, options, args, setup, out_dir, bar, estimate.step_flops)
            for line in row["notes"]:
                print(f"{name}: {line}", flush=True)
            rows.append(row)
    base = rows[0]["samples_per_s"]["median"]
    for row in rows:
        row["speedup"] = row["samples_per_s"]["median"] / base
    data = {"generated_by": "lumikit ladder", "cumulative": True, "model": args.model, "size": args.size,
            "batch_size": args.batch_size, "warmup_steps": args.warmup, "steps_per_repeat": args.steps,
            "repeats": args.repeats, "device": f"{kind}: {device_name(setup.device)}",
            "device_type": setup.device.type, "measured_on": measured_on,
            "site": site.name, "peak_source": str(site.hardware.get("source", "")),
            "step_flops": estimate.step_flops, "torch": torch.__version__,
            "hip": torch.version.hip, "host": platform.node(), "time": time.time(), "rungs": rows}
    write_json_atomic(out_dir / LADDER_FILE, data)
    print(ladder_table(data), flush=True)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        run_ladder(args)
    except LumikitError as exc:
        print(f"lumikit.ladder.run: error: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
