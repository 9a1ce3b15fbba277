"""Checkpoints of a training run: model, optimizer, step count and loss curve in one file, written atomically.

A resumed run must continue exactly where the first one stopped, so the file also records the settings that fix
the data order (seed, world size, batch size, model size); a mismatch is refused rather than silently mixed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..errors import SpecError
from ..files import atomic_path

FORMAT = "lumikit-workload-checkpoint/1"
# Settings that must match between the run that saved and the run that resumes.
MUST_MATCH = ("workload", "model_size", "seed", "world_size", "batch_size", "process_batch", "dataset_size")


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` (torch-serialisable) to ``path`` via a temporary file and a rename."""
    import torch

    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, **state}, tmp)


def load_checkpoint(path: Path, map_location: str | None = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`; other files are refused with the reason."""
    import torch

    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many kinds for a damaged or foreign file
        raise SpecError("--checkpoint", f"{path} cannot be read as a checkpoint ({type(exc).__name__}: {exc})",
                        "point --checkpoint at a file written by a lumikit workload, or drop --resume") from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise SpecError("--checkpoint", f"{path} is not a lumikit workload checkpoint",
                        "point --checkpoint at a file written by a lumikit workload, or drop --resume")
    return state


def check_compatible(saved: Mapping[str, Any], current: Mapping[str, Any], path: Path) -> None:
    """Refuse to resume with settings that change the model or the data order."""
    for key in MUST_MATCH:
        if key in saved and key in current and saved[key] != current[key]:
            raise SpecError("--resume", f"{path} was saved with {key}={saved[key]!r}, this run has {current[key]!r}",
                            f"resume with the same {key} as the first run, or start afresh with another --checkpoint")
