"""Many small files against one file, measured: the image set module 09 writes and the timer it reads it with.

On Lustre every ``open()`` is a round trip to a metadata server, so a data set of many small files reads far
slower than the same bytes in one file; these helpers show the effect on any file system, in seconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import LumikitError
from .measure import Measured, interleaved, timed

#: One CIFAR image: 3 colour channels of 32 x 32 bytes.
CIFAR_IMAGE_BYTES = 3 * 32 * 32


@dataclass(frozen=True)
class ImageFiles:
    """The same images twice: one file each in ``small_files/``, and all of them in ``one_file`` (``.npy``)."""

    small_files: Path
    one_file: Path
    count: int
    image_bytes: int

    @property
    def megabytes(self) -> float:
        return self.count * self.image_bytes / 1e6


def write_image_files(folder: str | Path, count: int, *, image_bytes: int = CIFAR_IMAGE_BYTES,
                      seed: int = 0) -> ImageFiles:
    """Write ``count`` random images into a new ``folder/small-files`` and ``folder/images.npy``."""
    folder = Path(folder)
    small = folder / "small-files"
    if small.exists():
        raise LumikitError(f"{small} exists; pass a new folder (e.g. tempfile.mkdtemp(dir='runs'))")
    small.mkdir(parents=True)
    images = np.random.default_rng(seed).integers(0, 256, size=(count, image_bytes), dtype=np.uint8)
    for i, image in enumerate(images):
        (small / f"img{i:05d}.bin").write_bytes(image.tobytes())
    np.save(folder / "images.npy", images)
    return ImageFiles(small, folder / "images.npy", count, image_bytes)


def best_of(read: Callable[[], Any], repeat: int = 3) -> float:
    """The fastest of ``repeat`` timed calls of ``read()`` in seconds: the one least disturbed by other work."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_reads(files: ImageFiles, repeat: int = 5) -> dict[str, Measured]:
    """Seconds to read every image from the small files and from the one file, ``repeat`` times interleaved
    (small, one, small, one, ...), with their spread."""
    return interleaved({
        "many small files": timed(lambda: [p.read_bytes() for p in sorted(files.small_files.iterdir())]),
        "one .npy file": timed(lambda: np.load(files.one_file)),
    }, repeats=repeat)


def time_reads(files: ImageFiles, repeat: int = 3) -> dict[str, float]:
    """Seconds to read every image from the small files, and from the one file (the fastest of ``repeat``
    interleaved reads: the one least disturbed by other work)."""
    return {name: m.lo for name, m in measure_reads(files, repeat).items()}
