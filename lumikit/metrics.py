"""Per-rank metrics files in a run folder: their names and how to read them.

The course workloads write them (``lumikit.workloads``); the launcher and notebooks read them. Both sides import
this small module, so the launcher never imports the workloads (nor torch through them).
"""
from __future__ import annotations

import json
from pathlib import Path


def metrics_path(out_dir: Path, rank: int) -> Path:
    """``DIR/metrics.rank{R}.jsonl``: one JSON object per step and per epoch."""
    return Path(out_dir) / f"metrics.rank{rank}.jsonl"


def result_path(out_dir: Path, rank: int) -> Path:
    """``DIR/result.rank{R}.json``: the summary written when the run ends."""
    return Path(out_dir) / f"result.rank{rank}.json"


def read_metrics(path: Path) -> tuple[list[dict], list[dict]]:
    """Split a metrics file into its step rows and its epoch rows (for notebooks and tests)."""
    steps: list[dict] = []
    epochs: list[dict] = []
    with open(path) as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                (epochs if "epoch_end" in row else steps).append(row)
    return steps, epochs
