"""The torch profiling helper the course's training scripts call once per step.

The job builder switches it on for the profiled ranks only, through the environment: ``LUMIKIT_PROFILE=torch``,
``LUMIKIT_PROFILE_DIR`` (default ``$LUMIKIT_RUN_DIR/profile``), ``LUMIKIT_PROFILE_SCHEDULE="wait,warmup,active,repeat"``
(default ``1,1,3,1``) and ``LUMIKIT_MAX_STEPS`` (the step limit of a profiled run). A script's ``--profile`` flag does
the same by hand. Traces go through ``tensorboard_trace_handler`` as one file per rank, ``rank{R}.<id>.pt.trace.json``;
once torch.distributed is initialised, torch writes ``distributedInfo.rank`` into each trace.

    with profile_steps(rank=rank) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from .errors import SpecError
from .gpu import torch_sees_gpu

DEFAULT_SCHEDULE = (1, 1, 3, 1)
PROFILE_MODE = "torch"


@dataclass(frozen=True)
class ProfileSchedule:
    """torch.profiler's schedule: skip ``wait`` steps, warm up for ``warmup``, record ``active``, ``repeat`` times."""

    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1

    @property
    def steps_needed(self) -> int:
        """Steps a run must take for every recording window to complete (0 repeat means "until the end")."""
        return (self.wait + self.warmup + self.active) * max(1, self.repeat)


@dataclass(frozen=True)
class ProfileConfig:
    """Whether to profile, where the traces go and on which schedule."""

    enabled: bool
    out_dir: Path
    schedule: ProfileSchedule
    max_steps: int | None = None


def parse_schedule(text: str, source: str = "LUMIKIT_PROFILE_SCHEDULE") -> ProfileSchedule:
    """Read ``"wait,warmup,active,repeat"`` (four non-negative integers, active at least 1)."""
    parts = [part.strip() for part in text.split(",")]
    fix = 'give four integers "wait,warmup,active,repeat", e.g. "1,1,3,1"'
    if len(parts) != 4 or not all(part.isdigit() for part in parts):
        raise SpecError(source, f"cannot read schedule {text!r}", fix)
    wait, warmup, active, repeat = (int(part) for part in parts)
    if active < 1:
        raise SpecError(source, f"active must be at least 1 in {text!r}", fix)
    return ProfileSchedule(wait, warmup, active, repeat)


def parse_max_steps(environ: Mapping[str, str] | None = None) -> int | None:
    """``LUMIKIT_MAX_STEPS`` as an integer, or None where it is unset or empty."""
    env = os.environ if environ is None else environ
    text = env.get("LUMIKIT_MAX_STEPS", "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise SpecError("LUMIKIT_MAX_STEPS", f"must be a positive integer, got {text!r}", "unset it or give e.g. 10")
    return int(text)


def profile_config(*, enabled: bool | None = None, out_dir: Path | str | None = None,
                   schedule: ProfileSchedule | str | None = None,
                   environ: Mapping[str, str] | None = None) -> ProfileConfig:
    """Merge explicit arguments with the environment the job builder sets (arguments win)."""
    env = os.environ if environ is None else environ
    mode = env.get("LUMIKIT_PROFILE", "").strip()
    if enabled is None:
        enabled = mode == PROFILE_MODE
    if out_dir is None:
        if env.get("LUMIKIT_PROFILE_DIR"):
            out_dir = env["LUMIKIT_PROFILE_DIR"]
        else:
            out_dir = Path(env.get("LUMIKIT_RUN_DIR") or ".") / "profile"
    if schedule is None:
        text = env.get("LUMIKIT_PROFILE_SCHEDULE", "").strip()
        schedule = parse_schedule(text) if text else ProfileSchedule(*DEFAULT_SCHEDULE)
    elif isinstance(schedule, str):
        schedule = parse_schedule(schedule, source="schedule")
    return ProfileConfig(enabled=enabled, out_dir=Path(out_dir), schedule=schedule, max_steps=parse_max_steps(env))


def _current_rank(environ: Mapping[str, str]) -> int:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except ImportError:  # pragma: no cover - torch without distributed
        pass
    for name in ("RANK", "SLURM_PROCID"):
        if environ.get(name, "").isdigit():
            return int(environ[name])
    return 0


class _NoProfiler:
    """Stands in for the profiler when profiling is off, so the training loop calls ``step()`` either way."""

    enabled = False
    trace_dir = None

    def step(self) -> None:
        return None


class _StepProfiler:
    """The running torch profiler, with the folder its traces land in."""

    enabled = True

    def __init__(self, prof: object, trace_dir: Path) -> None:
        self._prof = prof
        self.trace_dir = trace_dir

    def step(self) -> None:
        with _without_kineto_noise():  # a step that starts or stops recording makes Kineto print
            self._prof.step()


def _kineto_noise(line: bytes) -> bool:
    """A line Kineto, the profiler's C++ side, writes straight to the process's stderr that is no news to a learner:
    its ``USDT:<time> <pid>:<tid> ...] profiler_start`` (and ``profiler_stop``) notices at each start and stop, and on
    PyTorch's CUDA build without an NVIDIA driver, ``ERROR:<time> ... DeviceProperties.cpp:50] gpuGetDeviceCount
    failed with code 35`` at the first stop in a process (the workbook then simply profiles the CPU)."""
    return line.startswith(b"USDT:") or (line.startswith(b"ERROR:") and b"] gpuGetDeviceCount failed" in line)


@contextlib.contextmanager
def _without_kineto_noise() -> Iterator[None]:
    """Drop :func:`_kineto_noise` lines, which a notebook shows as pink error boxes (``KINETO_LOG_LEVEL`` hides
    Kineto's errors with them). While the profiler starts, steps or stops, file descriptor 2 goes to a temporary
    file; every other line is passed on unchanged afterwards."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = b"".join(line for line in tmp.read().splitlines(keepends=True) if not _kineto_noise(line))
            while kept:
                kept = kept[os.write(2, kept):]


@contextlib.contextmanager
def profile_steps(*, enabled: bool | None = None, rank: int | None = None, out_dir: Path | str | None = None,
                  schedule: ProfileSchedule | str | None = None, record_shapes: bool = False,
                  profile_memory: bool = False, with_stack: bool = False,
                  environ: Mapping[str, str] | None = None) -> Iterator[_NoProfiler | _StepProfiler]:
    """Profile a training loop with torch.profiler when asked (argument or environment); call ``.step()`` per step.

    Records CPU activity, plus GPU activity where torch sees a GPU (ROCm builds report it as CUDA). A window cut
    short by the end of the loop is still written. Yields an object whose ``trace_dir`` names the output folder.
    """
    env = os.environ if environ is None else environ
    config = profile_config(enabled=enabled, out_dir=out_dir, schedule=schedule, environ=env)
    if not config.enabled:
        yield _NoProfiler()
        return
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule as torch_schedule, tensorboard_trace_handler

    rank = _current_rank(env) if rank is None else rank
    # LUMIKIT_PROFILE_MEMORY=1 adds the allocator's [memory] events (lumikit.trace.memory reads them)
    profile_memory = profile_memory or env.get("LUMIKIT_PROFILE_MEMORY", "").strip() in ("1", "true", "yes")
    config.out_dir.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if torch_sees_gpu():
        activities.append(ProfilerActivity.CUDA)
        _teardown_cupti_after(torch, env)
    plan = config.schedule
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
        prof = profile(activities=activities,
                       schedule=torch_schedule(wait=plan.wait, warmup=plan.warmup, active=plan.active,
                                               repeat=plan.repeat),
                       on_trace_ready=tensorboard_trace_handler(str(config.out_dir), worker_name=f"rank{rank}"),
                       record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                       **_sync_events(torch, env))
        with _without_kineto_noise():
            prof.__enter__()
        try:
            yield _StepProfiler(prof, config.out_dir)
        finally:
            with _without_kineto_noise():
                prof.__exit__(None, None, None)


def _teardown_cupti_after(torch: object, env: Mapping[str, str]) -> None:
    """On CUDA builds, have Kineto finalise CUPTI when the profiled window ends. Left set up, CUPTI slows every later
    step: 16-20 % on the ResNet on an H100 (benchmarks/bench_profiler_overhead.py, 2026-11-26), as pytorch/pytorch
    #144455 reports (10-20 %). Kineto reads ``TEARDOWN_CUPTI``; an explicit setting (or
    ``LUMIKIT_PROFILE_TEARDOWN=0``) wins, and CUDA-graph runs keep PyTorch's own choice (its teardown crash fix)."""
    if getattr(getattr(torch, "version", None), "hip", None):
        return
    if env.get("LUMIKIT_PROFILE_TEARDOWN", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    os.environ.setdefault("TEARDOWN_CUPTI", "1")


def _sync_events(torch: object, env: Mapping[str, str]) -> dict[str, object]:
    """Ask Kineto for its ``cuda_sync`` events (the GPU-to-CPU edges HTA's critical path needs) on CUDA builds that
    take the option; ROCm builds emit none either way (see docs/critical-path.md), so nothing is asked there.
    ``LUMIKIT_PROFILE_SYNC_EVENTS=0`` leaves them out (benchmarks/bench_profiler_overhead.py weighs their cost)."""
    if env.get("LUMIKIT_PROFILE_SYNC_EVENTS", "1").strip().lower() in ("0", "false", "no", "off"):
        return {}
    if getattr(getattr(torch, "version", None), "hip", None) or not torch_sees_gpu():
        return {}
    try:
        from torch._C._profiler import _ExperimentalConfig

        return {"experimental_config": _ExperimentalConfig(enable_cuda_sync_events=True)}
    except (ImportError, TypeError):  # an older torch without the option: the trace simply has no sync events
        return {}


def trace_files(folder: Path | str, rank: int | None = None) -> list[Path]:
    """The trace files written into ``folder`` (for one rank if given), oldest first."""
    pattern = f"rank{rank}.*.pt.trace.json*" if rank is not None else "*.pt.trace.json*"
    return sorted(Path(folder).glob(pattern), key=lambda path: path.stat().st_mtime_ns)
