"""Job side of a rehearsal: write what this rank sees, then become the module's own command.

``python -m lumikit.rehearse.probe -- CMD ...`` writes ``probe.rank<N>.json`` into the run folder (rank, host,
the GPUs PyTorch sees, the CPUs this process may run on, the GPU variables Slurm set) and then ``exec``s ``CMD``
with the same environment, so the module's job runs exactly as the notebook launches it.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Sequence

#: The GPU variables Slurm and ROCm set for a task (which GCDs it may use).
GPU_VARIABLES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
                 "SLURM_JOB_GPUS")


def _gpus_visible() -> tuple[int | None, str]:
    """(``torch.cuda.device_count()``, the device's name or why it could not be counted)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed here"
    try:
        n = torch.cuda.device_count()
        return n, torch.cuda.get_device_name(0) if n else "no GPU (torch.cuda.device_count() is 0)"
    except RuntimeError as exc:
        return 0, f"torch.cuda failed: {exc}"


def _slurm_gcds(env: dict[str, str]) -> list[str]:
    """The GCDs Slurm gave this task, from the first GPU variable it set (``ROCR_VISIBLE_DEVICES=0,1``)."""
    for name in GPU_VARIABLES:
        if env.get(name):
            return [g.strip() for g in env[name].split(",") if g.strip()]
    return []


def observe(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """What this process sees: rank and local rank, host, GPUs (PyTorch's count, and the GCDs Slurm gave it, from
    which the device ``LOCAL_RANK`` names is the one in use), allowed CPUs, the GPU variables, its Python and the
    container it runs in (``SINGULARITY_CONTAINER``; None on the bare host), as a plain dict."""
    env = dict(os.environ if environ is None else environ)
    gpus, device = _gpus_visible()
    rank = env.get("RANK") or env.get("SLURM_PROCID") or "0"
    local = env.get("LOCAL_RANK") or env.get("SLURM_LOCALID") or "0"
    return {"rank": int(rank) if rank.isdigit() else 0, "host": socket.gethostname(),
            "node": env.get("SLURMD_NODENAME") or socket.gethostname(), "gpus_visible": gpus, "device": device,
            "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "local_rank": int(local) if local.isdigit() else 0, "gcds": _slurm_gcds(env),
            "gpu_env": {k: env[k] for k in GPU_VARIABLES if k in env}, "job_id": env.get("SLURM_JOB_ID"),
            "python": sys.executable, "container": env.get("SINGULARITY_CONTAINER") or env.get("APPTAINER_CONTAINER")}


def main(argv: Sequence[str] | None = None) -> int:
    """Write this rank's observation into ``$LUMIKIT_RUN_DIR`` (or the cwd), then exec the command after ``--``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m lumikit.rehearse.probe -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    seen = observe()
    folder = Path(os.environ.get("LUMIKIT_RUN_DIR") or ".")
    path = folder / f"probe.rank{seen['rank']}.json"
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(seen) + "\n")
    os.replace(tmp, path)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(args[0], args)
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
