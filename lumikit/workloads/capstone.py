"""The capstone's workload: the course's language model, slower than it should be in one way chosen by a case.

``python -m lumikit.workloads.capstone --case TOKEN ...`` trains exactly like ``lumikit.workloads.lm`` (same
options, one rank or DDP), except that the case token (module 11 derives it from the learner's seed,
:func:`case_for`) picks one variant of the run, and each variant wastes time in its own way. Every variant pays a
fixed cost per step that is simulated on a CPU (:data:`STEP_SETUP_S`, labelled ``step setup`` in the profile). Nothing here names
what a variant does: the learner finds it with the profiler, the trace tools and the step metrics, then fixes it
with the workload's ordinary options. The learner may not change the case (the check compares it with the first
run's); everything else is theirs to change.

Not every variant can be judged everywhere: one whose fix gains nothing measurable where the runs go (no bf16
speed-up on this CPU, a single core) is not dealt there (:func:`deal`), and :func:`case_for` draws among those
that are.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from ..errors import SpecError
from .capstone_case import VARIANTS, variant
from .common import print0
from .lm import SIZES, GPTConfig, TinyGPT
from .lm import build_task as build_lm_task
from .lm import parser as lm_parser
from .trainer import Setup, StepOutput, Task, main_for

#: The batch size when the command line does not give one (variant "c" uses its own).
DEFAULT_BATCH = 16
#: Variant "a": the extra time to read one sample (seconds; sleeps, so the CPU is free meanwhile).
READ_DELAY_S = 0.004
#: Variant "c": the batch size when the command line does not give one.
SMALL_BATCH = 2
#: Variant "d": the model's width on a CPU and on a GPU (the heads: one per 64), and its batch on a GPU.
WIDE_WIDTH = {"cpu": 384, "cuda": 1024}
WIDE_GPU_BATCH = 64
#: Variant "e": the worker processes when the command line does not give them, and the work of checking one sample
#: (sha256 rounds over the sample repeated: about 5 ms on this project's server core, 1.65 ms measured for 40
#: rounds), so that loading a batch of 16 takes longer than computing its step, unless the workers get cores of
#: their own.
CHECK_WORKERS = 2
CHECK_ROUNDS, CHECK_REPEAT = 120, 128
#: Every variant, on a CPU only: a fixed cost per step (seconds), whatever the batch. SIMULATED: it stands for what a
#: step costs on a GCD besides its arithmetic (kernel launches, the host's Python, waits for the device), which a
#: CPU running one thread hardly has; the profiler shows it as ``step setup``. Kept because without it the small
#: batch of variant "c" gains only about 1.4x from a right batch on a server CPU (3.7 ms a step at 2 samples, 20.5 ms
#: at 16, measured here), too close to module 11's least speed-up (1.3x) to judge on a busy machine. On a GPU the
#: real costs are there, so it is not added.
STEP_SETUP_S = 0.015
#: The least bf16 speed-up over fp32 (steps of variant "d"'s model, :data:`STEP_SETUP_S` included) a CPU must show
#: in :func:`bf16_gain` before variant "d" is dealt there: module 11's least speed-up (1.3x) with room for noise and
#: for what a run adds to a step (on this project's busy 2-core server the probe read about 1.5x and a profiled run
#: 1.38x, judged beyond noise once and not the time before: too close, so not dealt there).
DEAL_MIN_BF16_GAIN = 1.7
#: The least gain two threads of variant "e"'s checking work must show over one (:func:`parallel_gain`) before
#: variant "e" is dealt: cores that other work keeps busy cannot show what a right binding gains (the same room as
#: for bf16).
DEAL_MIN_PARALLEL_GAIN = 1.7


@dataclass(frozen=True)
class Deal:
    """The variants dealt where the runs go, and for each one that is not, why (one clause)."""

    variants: tuple[str, ...]
    not_here: dict[str, str] = field(default_factory=dict)


def case_for(seed: str | None = None, variants: Sequence[str] | None = None) -> str:
    """The learner's case token, from their seed (:func:`lumikit.checks.learner.seed_for`): six digits, whose
    variant is one of ``variants`` (default: those :func:`deal` deals here). The same seed and variants give the
    same token."""
    from ..checks.learner import seed_for

    pool = set(deal().variants if variants is None else variants)
    if not pool <= set(VARIANTS) or not pool:
        raise ValueError(f"variants must be some of {', '.join(VARIANTS)}, got {sorted(pool)}")
    start = seed_for("11.capstone", seed) % 1_000_000
    return next(f"{n % 1_000_000:06d}" for n in range(start, start + 1_000_000)
                if variant(f"{n % 1_000_000:06d}") in pool)


def _wide_config(size: str, device: torch.device) -> GPTConfig:
    """Variant "d"'s model: the size's layers and context, wider (its matrix products dominate the step)."""
    cfg = SIZES[size]
    width = max(cfg.width, WIDE_WIDTH["cuda" if device.type == "cuda" else "cpu"])
    return GPTConfig(layers=cfg.layers, width=width, heads=width // 64, context=cfg.context)


def bf16_gain(steps: int = 3, batch: int = DEFAULT_BATCH) -> float:
    """How many times faster variant "d"'s training steps are in bf16 autocast than in fp32 on this CPU, one
    thread, each step as the run takes it (with the weights' summary, and :data:`STEP_SETUP_S` added; medians of
    ``steps`` steps, the two precisions interleaved after one untimed step each): the probe :func:`deal` uses."""
    import torch.nn.functional as F

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        generator = torch.Generator().manual_seed(0)
        model = TinyGPT(_wide_config("tiny", torch.device("cpu")))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, 256, (batch, model.cfg.context + 1), generator=generator)
        times: dict[bool, list[float]] = {False: [], True: []}
        for i in range(steps + 1):
            for bf16 in (False, True):
                start = time.perf_counter()
                _summary(model, copy_out=False)
                optimizer.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    logits = model(ids[:, :-1])
                    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
                loss.backward()
                optimizer.step()
                if i:
                    times[bf16].append(time.perf_counter() - start + STEP_SETUP_S)
        return statistics.median(times[False]) / statistics.median(times[True])
    finally:
        torch.set_num_threads(threads)


def _check_work(items: int) -> None:
    """Variant "e"'s checking work for ``items`` samples (sha256 releases the GIL on data this large)."""
    data = bytes(range(256)) * (65 * 8 * CHECK_REPEAT // 256)
    for _ in range(items):
        digest = b""
        for _ in range(CHECK_ROUNDS):
            digest = hashlib.sha256(digest + data).digest()


def parallel_gain(items: int = 32, rounds: int = 3) -> float:
    """How many times faster two threads do variant "e"'s checking work than one on the cores this process may use
    (each thread half of ``items`` samples; the median of ``rounds``): the probe :func:`deal` uses. Near 1 where
    the cores are busy."""
    import threading

    gains = []
    for _ in range(rounds):
        start = time.perf_counter()
        _check_work(items)
        one = time.perf_counter() - start
        threads = [threading.Thread(target=_check_work, args=(items // 2,)) for _ in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        gains.append(one / (time.perf_counter() - start))
    return statistics.median(gains)


def deal(site: Any = None, *, probe: Callable[[], float] = bf16_gain,
         cores_probe: Callable[[], float] = parallel_gain) -> Deal:
    """The variants a learner can be dealt where the site's runs go. On a site whose jobs get GCDs (LUMI) every
    variant. On a CPU: variant "d" only when this CPU has native bf16 and ``probe`` (:func:`bf16_gain`) measures at
    least :data:`DEAL_MIN_BF16_GAIN`; variant "e" only when this process may use two cores or more and
    ``cores_probe`` (:func:`parallel_gain`) measures at least :data:`DEAL_MIN_PARALLEL_GAIN`. Where progress
    is recorded, the first deal is kept there (``capstone-deal.json``), so a restarted kernel keeps the case."""
    from ..course_jobs import scale_for
    from ..site import load_site

    s = load_site(site)
    kept = _kept_deal(s.name)
    if kept is not None:
        return kept
    if scale_for(s) == "full":
        return Deal(VARIANTS)
    not_here = {}
    from .knobs import precision_support

    why = precision_support("bf16", torch.device("cpu"))
    if why is None:
        gain = probe()
        if gain < DEAL_MIN_BF16_GAIN:
            why = (f"bf16 measured {gain:.2f}x the speed of fp32 on this CPU (under {DEAL_MIN_BF16_GAIN}x), so a fix "
                   "could not be judged on your own measurement here")
    if why:
        not_here["d"] = why
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if cores < 2:
        not_here["e"] = f"this process may use {cores} core, so no binding can give it more"
    else:
        gain = cores_probe()
        if gain < DEAL_MIN_PARALLEL_GAIN:
            not_here["e"] = (f"two threads measured {gain:.2f}x the speed of one on this machine's {cores} cores "
                             f"(under {DEAL_MIN_PARALLEL_GAIN}x: other work keeps them busy), so a fix could not be "
                             "judged on your own measurement here")
    result = Deal(tuple(v for v in VARIANTS if v not in not_here), not_here)
    _keep_deal(s.name, result)
    return result


DEAL_FILE = "capstone-deal.json"


def _kept_deal(site: str) -> Deal | None:
    """The deal kept in the progress folder for ``site``, if any and readable."""
    import json

    from ..checks.progress import progress_dir
    from ..files import read_text

    folder = progress_dir()
    path = None if folder is None else folder / DEAL_FILE
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(read_text(path, "the capstone's deal", limit=65536))
        variants = tuple(v for v in data["variants"] if v in VARIANTS)
        if data.get("site") != site or not variants:
            return None
        return Deal(variants, {str(k): str(v) for k, v in dict(data.get("not_here") or {}).items()})
    except (Exception,):  # noqa: BLE001 - an unreadable kept deal is dealt again
        return None


def _keep_deal(site: str, result: Deal) -> None:
    """Keep the deal in the progress folder (nothing when recording is off or the folder cannot be written)."""
    import json

    from ..checks.progress import progress_dir
    from ..files import write_atomic

    folder = progress_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / DEAL_FILE, json.dumps({"site": site, "variants": list(result.variants),
                                                     "not_here": result.not_here}) + "\n")
    except OSError:
        return


class SlowInput(torch.utils.data.Dataset):
    """A data set whose every item takes ``delay_s`` longer to read (sleeps: the CPU is free meanwhile)."""

    def __init__(self, inner: torch.utils.data.Dataset, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.delay_s)
        return self.inner[index]


class CheckedInput(torch.utils.data.Dataset):
    """A data set whose every item is checked before it is used: :data:`CHECK_ROUNDS` chained sha256 digests over
    the item's bytes repeated :data:`CHECK_REPEAT` times (CPU work in the process that reads it)."""

    def __init__(self, inner: torch.utils.data.Dataset) -> None:
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        item = self.inner[index]
        data = item[0].numpy().tobytes() * CHECK_REPEAT
        digest = b""
        for _ in range(CHECK_ROUNDS):
            digest = hashlib.sha256(digest + data).digest()
        return item


def parse_cpus(text: str, allowed: set[int]) -> set[int]:
    """``--cpus``: ``all`` (the cores this process was given) or a list such as ``0-3,8``, within them."""
    if text.strip() == "all":
        return set(allowed)
    cores: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            cores.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise SpecError("--cpus", f"cannot read {text!r}", "give all, or cores such as 0-3,8") from None
    if not cores or not cores <= allowed:
        raise SpecError("--cpus", f"{text} is not within the cores this run was given ({_ranges(allowed)})",
                        f"give all, or cores among {_ranges(allowed)}")
    return cores


def _ranges(cores: set[int]) -> str:
    """{0, 1, 2, 5} -> '0-2,5'."""
    out: list[str] = []
    for c in sorted(cores):
        if out and int(out[-1].split("-")[-1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def _bind(args: argparse.Namespace, kind: str, setup: Setup) -> dict[str, Any]:
    """Set the cores this process (and the worker processes it starts, which inherit them) runs on, as ``--cpus``
    says (variant "e": the first of the cores it was given, when the command line does not say); one log line;
    what it set, for result.json."""
    if not hasattr(os, "sched_setaffinity"):
        return {"cpus": args.cpus or "all"}
    allowed = set(os.sched_getaffinity(0))
    if args.cpus is None:
        args.cpus = str(min(allowed)) if kind == "e" else "all"
    cores = parse_cpus(args.cpus, allowed)
    os.sched_setaffinity(0, cores)
    print0(setup.env, f"cpus: runs on {_ranges(cores)} ({len(cores)} of the {len(allowed)} cores it was given)")
    return {"cpus": args.cpus, "cpu_cores": len(cores), "cores_given": len(allowed)}


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
    """``forward`` after the step's fixed cost (:data:`STEP_SETUP_S`, on a CPU), computing the weights' summary every
    ``every`` steps (0: never) and keeping the latest in ``log["weights"]`` (the task's info: it goes
    to result.json)."""
    calls = [0]

    def run(model: torch.nn.Module, batch: Any, device: torch.device) -> StepOutput:
        calls[0] += 1
        with torch.profiler.record_function("step setup"):
            if device.type == "cpu":
                time.sleep(STEP_SETUP_S)
        if every and calls[0] % every == 0:
            log["weights"] = _summary(model, copy_out)
        return forward(model, batch, device)
    return run


def build_task(args: argparse.Namespace, setup: Setup) -> Task:
    """The lm task, as the case's variant runs it."""
    kind = variant(args.case)
    if args.batch_size is None:
        args.batch_size = {"c": SMALL_BATCH, "d": WIDE_GPU_BATCH if setup.device.type == "cuda" else DEFAULT_BATCH
                           }.get(kind, DEFAULT_BATCH)
    task = build_lm_task(args, setup)
    if kind == "a":
        task.dataset = SlowInput(task.dataset, READ_DELAY_S)
    if kind == "d":
        task.model = TinyGPT(_wide_config(args.model_size, setup.device))
    if kind == "e":
        task.dataset = CheckedInput(task.dataset)
    bound = _bind(args, kind, setup)
    task.forward = _logging_forward(task.forward, args.log_every, copy_out=kind == "b", log=task.info)
    task.info.update(case=args.case, log_every=args.log_every, **bound)
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
    p.add_argument("--cpus", default=None, metavar="LIST",
                   help="the CPU cores this run and the processes it starts run on: all (every core the job gave "
                        "it) or a list such as 0-3,8")
    return p


def case_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the case's worker processes when it names none (variant "e": :data:`CHECK_WORKERS`)."""
    argv = list(argv)
    args, _ = parser().parse_known_args(argv)
    named = any(a == "--workers" or a.startswith("--workers=") for a in argv)
    if variant(args.case) == "e" and not named:
        argv += ["--workers", str(CHECK_WORKERS)]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Train as the case's variant does."""
    return main_for(build_task, parser(), case_argv(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
