"""Print which torch build a venv holds and its size on disk, for the last line of set-up (``make venv``)."""
from __future__ import annotations

import importlib.metadata as metadata
import os
from pathlib import Path


def build_line() -> str:
    """'torch 2.13.0 (CPU-only build, 0.9 GB)', 'torch ... (CUDA 12.8 build, 4.3 GB: ...)', or why it is missing."""
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return "no torch installed"
    version = dist.version
    files = dist.files or []
    size = sum(os.path.getsize(p) for f in files if (p := Path(dist.locate_file(f))).is_file())
    for extra in metadata.distributions():  # the CUDA build's libraries come as nvidia-* packages (and triton)
        name = (extra.metadata["Name"] or "").lower()
        if name.startswith("nvidia-") or name == "triton":
            size += sum(os.path.getsize(p) for f in extra.files or [] if (p := Path(extra.locate_file(f))).is_file())
    if "+cpu" in version:
        kind = "CPU-only build"
    elif "+rocm" in version:
        kind = f"ROCm build ({version.split('+rocm')[1]})"
    elif any(r.startswith("nvidia-") for r in (dist.requires or [])):
        kind = "CUDA build: it runs on the CPU too, only larger; 'make clean-venv' then 'make venv TORCH=cpu' for the small one"
    else:
        kind = "default build"
    return f"torch {version} ({kind}, {size / 1e9:.1f} GB with its CUDA libraries)" if "CUDA" in kind else \
        f"torch {version} ({kind}, {size / 1e9:.1f} GB)"


if __name__ == "__main__":
    print(build_line())
