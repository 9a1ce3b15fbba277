"""Where a launched run keeps its GPU record (``RUN/gpu/<node>.jsonl``): the one place the recorder
(:mod:`lumikit.record`) and the live views (:mod:`lumikit.smi.record_tail`) both take the layout from."""
from __future__ import annotations

from pathlib import Path
from typing import Any

GPU_DIR = "gpu"


def run_folder(run_or_path: Any) -> Path:
    """A run handle (``.path``), a run folder, or a folder's ``gpu/`` subfolder -> the run folder."""
    p = Path(getattr(run_or_path, "path", run_or_path))
    if p.name == GPU_DIR and not (p / GPU_DIR).is_dir():
        p = p.parent
    return p


def record_files(run_or_path: Any, *, not_regular: bool = False) -> list[Path]:
    """The record files of a run (``RUN/gpu/*.jsonl``), sorted by name; with ``not_regular``, every entry but a
    folder (a FIFO or a device too), for a reader that refuses those by name (lumikit.files) rather than skip
    them in silence (a live view skips them: it must never block)."""
    folder = run_folder(run_or_path) / GPU_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if (not p.is_dir() if not_regular else p.is_file()))


__all__ = ["GPU_DIR", "record_files", "run_folder"]
