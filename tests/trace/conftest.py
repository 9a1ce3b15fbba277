"""Trace fixtures written by lumikit's own generator (never copied from ../shared/fixtures)."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.trace.synth import SynthSpec, write_synthetic


@pytest.fixture(scope="session")
def rocm_run(tmp_path_factory) -> Path:
    """Two ROCm ranks, 4 steps (10-13), 4 layers, rank 1 a straggler."""
    folder = tmp_path_factory.mktemp("rocm_run")
    write_synthetic(folder, SynthSpec(ranks=2, steps=4, layers=4, vendor="rocm", straggler=1))
    return folder


@pytest.fixture(scope="session")
def cuda_run(tmp_path_factory) -> Path:
    """One CUDA rank without GPU-side step annotations, gzip-compressed."""
    folder = tmp_path_factory.mktemp("cuda_run")
    write_synthetic(folder, SynthSpec(ranks=1, steps=3, layers=4, vendor="cuda", gpu_step_annotations=False,
                                      gzip=True))
    return folder
