"""What every course workload shares: where this process sits in the job, which device it uses, the
command-line options, rank-0 printing and the JSON-lines timings that notebooks and tests read back.

The rank comes from the environment a launcher gives (torchrun: RANK/LOCAL_RANK/WORLD_SIZE; Slurm's srun:
SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS; lumikit's local backend sets both), so one script runs unchanged
under each of them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from ..files import write_atomic
from ..metrics import metrics_path, read_metrics, result_path  # noqa: F401 - the workloads' file names, re-exported
from ..errors import LaunchError, SpecError

MODES = ("single", "dp", "ddp")
DEFAULT_MASTER_PORT = "29500"


@dataclass(frozen=True)
class DistEnv:
    """This process's place in a (possibly one-process) job, as the launcher described it."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    master_addr: str | None = None
    master_port: str | None = None
    source: str = "default"  # "torchrun" (RANK & co.), "slurm" (SLURM_* fall-back) or "default"

    @property
    def is_main(self) -> bool:
        """True on the rank that prints, shows progress and writes checkpoints."""
        return self.rank == 0


def _int_var(environ: Mapping[str, str], name: str) -> int | None:
    value = environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise LaunchError(f"environment variable {name}={value!r} is not an integer; "
                          f"fix the launcher line that sets it (e.g. RANK=\\$SLURM_PROCID)") from None


def dist_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read rank, local rank and world size from torchrun-style variables, else from Slurm's, else one process.

    ``SLURM_NTASKS_PER_NODE`` may read ``"2(x2)"``; only its leading number is used.
    """
    env = os.environ if environ is None else environ
    rank = _int_var(env, "RANK")
    if rank is not None:
        source = "torchrun"
        world = _int_var(env, "WORLD_SIZE")
        if world is None:
            raise LaunchError("RANK is set but WORLD_SIZE is not; export WORLD_SIZE (e.g. WORLD_SIZE=$SLURM_NTASKS) "
                              "next to RANK")
        local = _int_var(env, "LOCAL_RANK")
        local = rank if local is None else local
        local_world = _int_var(env, "LOCAL_WORLD_SIZE")
    elif _int_var(env, "SLURM_PROCID") is not None:
        source = "slurm"
        rank = _int_var(env, "SLURM_PROCID") or 0
        world = _int_var(env, "SLURM_NTASKS") or _int_var(env, "SLURM_NPROCS") or 1
        local = _int_var(env, "SLURM_LOCALID") or 0
        per_node = env.get("SLURM_NTASKS_PER_NODE", "").split("(")[0].split(",")[0]
        local_world = int(per_node) if per_node.isdigit() else None
    else:
        return DistEnv(source="default", master_addr=env.get("MASTER_ADDR"), master_port=env.get("MASTER_PORT"))
    if not 0 <= rank < world:
        raise LaunchError(f"rank {rank} is outside the world size {world} ({source} environment); "
                          f"check RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS")
    # Unknown ranks per node: assume all on this one (only used to share CPU threads, where that is the safe guess).
    local_world = min(local_world or world, world)
    return DistEnv(rank=rank, local_rank=local, world_size=world, local_world_size=local_world,
                   master_addr=env.get("MASTER_ADDR"), master_port=env.get("MASTER_PORT"), source=source)


def loader_start_method(env: DistEnv, workers: int) -> str | None:
    """How DataLoader workers start: ``spawn`` when the job spans several nodes, else Python's default (fork).

    The course's multi-node runs set ``torch.multiprocessing.set_start_method('spawn')``: forking a process that
    has opened the Slingshot network (RCCL over libfabric/CXI) is not safe, and PyTorch's thread registration
    breaks in forked children (pytorch/pytorch#119845). One node keeps fork, which starts workers faster."""
    if workers <= 0 or env.world_size <= env.local_world_size:
        return None
    return "spawn"


def pick_device(local_rank: int = 0, requested: str = "auto") -> "torch.device":  # noqa: F821
    """The GPU for this local rank where torch sees one (ROCm builds answer through torch.cuda), else the CPU."""
    import torch

    from ..gpu import torch_sees_gpu

    if requested not in ("auto", "cpu", "cuda"):
        raise SpecError("--device", f"unknown device {requested!r}", "use auto, cpu or cuda")
    if requested == "cpu" or (requested == "auto" and not torch_sees_gpu()):
        return torch.device("cpu")
    if not torch_sees_gpu():
        raise SpecError("--device", "cuda was asked for but torch sees no GPU",
                        "run on a GPU node (LUMI: --gpus-per-node) or use --device auto")
    index = local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def device_name(device: "torch.device") -> str:  # noqa: F821
    """What the numbers were measured on: the GPU's name, or this CPU's model name."""
    import platform

    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def backend_for(device: "torch.device") -> str:  # noqa: F821
    """The collective backend: NCCL (RCCL on ROCm) for GPUs, gloo on the CPU."""
    return "nccl" if device.type == "cuda" else "gloo"


def init_distributed(env: DistEnv, device: "torch.device", timeout_s: float = 300.0) -> str:  # noqa: F821
    """Join the process group the launcher set up (``env://``); returns the backend name."""
    import datetime

    import torch.distributed as dist

    if env.source == "default":
        raise LaunchError("--mode ddp needs one process per rank started by srun, torchrun or lumikit's local "
                          "backend (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS are not set); "
                          "start it with `torchrun --nproc-per-node=N` or use --mode single")
    if not env.master_addr:
        raise LaunchError("MASTER_ADDR is not set; export it before srun, e.g. "
                          "MASTER_ADDR=$(scontrol show hostname \"$SLURM_NODELIST\" | head -n1)")
    os.environ.setdefault("MASTER_ADDR", env.master_addr)
    os.environ.setdefault("MASTER_PORT", env.master_port or DEFAULT_MASTER_PORT)
    backend = backend_for(device)
    kwargs: dict[str, Any] = {}
    if device.type == "cuda":
        kwargs["device_id"] = device
    dist.init_process_group(backend=backend, init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=datetime.timedelta(seconds=timeout_s), **kwargs)
    return backend


def limit_cpu_threads(env: DistEnv, device: "torch.device") -> int:  # noqa: F821
    """Share the CPU cores this process may use among the ranks on its node (unless OMP_NUM_THREADS says).

    Without this, N CPU ranks on one node each start as many threads as there are cores and slow each other down.
    """
    import torch

    if "OMP_NUM_THREADS" in os.environ or device.type != "cpu":
        return torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // max(1, env.local_world_size))
    torch.set_num_threads(threads)
    return threads


def print0(env: DistEnv, *values: Any, file: TextIO | None = None) -> None:
    """Print on rank 0 only (every other rank stays quiet), flushing so logs follow the run."""
    if env.is_main:
        print(*values, file=file or sys.stdout, flush=True)


def default_out_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$LUMIKIT_RUN_DIR`` (set by lumikit's launch backends), else the current folder."""
    env = os.environ if environ is None else environ
    return Path(env.get("LUMIKIT_RUN_DIR") or ".")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    write_atomic(path, json.dumps(data, indent=1) + "\n")


class MetricsWriter:
    """Appends one JSON object per line and flushes each, so a notebook can read a run that is still going."""

    def __init__(self, path: Path, *, append: bool) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a" if append else "x", buffering=1)

    def write(self, record: Mapping[str, Any]) -> None:
        self._handle.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "MetricsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def base_parser(prog: str, description: str, *, sizes: Sequence[str], lr: float,
                batch_size: int) -> argparse.ArgumentParser:
    """The options every workload takes (steps, epochs, batch, workers, mode, checkpoints, profiling...)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--steps", type=int, default=None,
                   help="stop after this many optimizer steps in total (default: run --epochs)")
    p.add_argument("--epochs", type=int, default=None, help="stop after this many epochs (default 1 without --steps)")
    p.add_argument("--batch-size", type=int, default=batch_size, help="samples per device and step")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes (0: load in the main process)")
    p.add_argument("--model-size", choices=list(sizes), default=sizes[0])
    p.add_argument("--mode", choices=MODES, default="single",
                   help="single device, dp (torch.nn.DataParallel in one process) or ddp (one process per rank)")
    p.add_argument("--lr", type=float, default=lr, help="learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="output folder (default: $LUMIKIT_RUN_DIR or .)")
    p.add_argument("--checkpoint", type=Path, default=None, help="checkpoint file, saved every K steps and at the end")
    p.add_argument("--checkpoint-every", type=int, default=50, metavar="K")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint when it exists")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh even where metrics or a checkpoint of an earlier run are in the way")
    p.add_argument("--max-time", type=float, default=None, metavar="SECONDS",
                   help="stop cleanly (and checkpoint) before this much wall time has passed")
    p.add_argument("--profile", action="store_true", help="profile steps with torch.profiler (lumikit.profiler)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    from .knobs import add_knob_options  # imports torch: only where a workload's parser is built

    add_knob_options(p)
    return p


def check_common_args(args: argparse.Namespace) -> None:
    """Reject option values no run could use, naming the option and the fix."""
    for name in ("steps", "epochs", "batch_size", "checkpoint_every"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SpecError(f"--{name.replace('_', '-')}", f"must be at least 1, got {value}", "give a positive number")
    if args.workers < 0:
        raise SpecError("--workers", f"must be 0 or more, got {args.workers}", "use 0 to load in the main process")
    if args.max_time is not None and args.max_time <= 0:
        raise SpecError("--max-time", f"must be positive, got {args.max_time}", "give the seconds the run may take")
    if args.resume and args.checkpoint is None:
        raise SpecError("--resume", "needs a checkpoint file", "add --checkpoint PATH (the same path as the first run)")
