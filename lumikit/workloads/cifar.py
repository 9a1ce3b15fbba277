"""CIFAR-100 for the ResNet workload: the real data set where it is present, a generated stand-in otherwise.

The real loader reads the "python version" folder ``cifar-100-python/`` (pickled dicts with ``data``, an
N x 3072 uint8 array of 32x32 RGB images stored channel by channel, and ``fine_labels``), from ``--data`` or
``$LUMIKIT_CIFAR100``, without torchvision. The stand-in has the same shape (3x32x32 uint8, 100 classes) and is
the same on every machine: each class is a fixed smooth pattern plus noise, so a network can learn it.
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import torch

from ..errors import SpecError

CLASSES = 100
SHAPE = (3, 32, 32)
FOLDER = "cifar-100-python"
# Per-channel mean and standard deviation of the CIFAR-100 training images (0..1 scale).
MEAN = (0.5071, 0.4865, 0.4409)
STD = (0.2673, 0.2564, 0.2762)
STAND_IN_SEED = 100
STAND_IN_SIZE = 10_000


@dataclass
class ImageSet(torch.utils.data.Dataset):
    """Images as uint8 N x 3 x 32 x 32 and labels as int64; items come out normalised float32."""

    images: torch.Tensor
    labels: torch.Tensor
    source: str

    def __post_init__(self) -> None:
        self._mean = torch.tensor(MEAN).view(3, 1, 1) * 255
        self._std = torch.tensor(STD).view(3, 1, 1) * 255

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.images[i].float() - self._mean) / self._std, self.labels[i]


def find_cifar100(data: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The ``cifar-100-python`` folder named by ``data`` or ``$LUMIKIT_CIFAR100`` (the folder or its parent).

    Returns None when neither is given; a path that is given but holds no data set is an error with the fix.
    """
    env = os.environ if environ is None else environ
    given = data if data is not None else env.get("LUMIKIT_CIFAR100") or None
    if given is None:
        return None
    path = Path(given).expanduser()
    for candidate in (path, path / FOLDER):
        if (candidate / "train").is_file():
            return candidate
    source = "--data" if data is not None else "$LUMIKIT_CIFAR100"
    raise SpecError(source, f"no CIFAR-100 'train' file in {path} or {path / FOLDER}",
                    "point it at the extracted cifar-100-python folder (from cifar-100-python.tar.gz), "
                    "or leave it unset to use the generated stand-in")


def read_split(folder: Path, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """Read one split (``train`` or ``test``) of the pickled CIFAR-100 folder into uint8 images and fine labels."""
    path = Path(folder) / split
    try:
        with open(path, "rb") as handle:
            entry = pickle.load(handle, encoding="bytes")
    except (OSError, pickle.UnpicklingError, EOFError) as exc:
        raise SpecError("--data", f"cannot read {path}: {exc}",
                        "re-extract cifar-100-python.tar.gz; the files must be the original pickles") from exc
    if not isinstance(entry, dict):
        raise SpecError("--data", f"{path} holds a {type(entry).__name__}, not a CIFAR-100 batch dict",
                        "point --data at the original cifar-100-python folder")
    data = entry.get(b"data", entry.get("data"))
    labels = entry.get(b"fine_labels", entry.get("fine_labels"))
    if data is None or labels is None:
        raise SpecError("--data", f"{path} lacks the 'data' or 'fine_labels' entry (is it CIFAR-10?)",
                        "use the CIFAR-100 python version, which has fine_labels")
    array = np.asarray(data, dtype=np.uint8)
    if array.ndim != 2 or array.shape[1] != 3 * 32 * 32 or array.shape[0] != len(labels):
        raise SpecError("--data", f"{path}: data has shape {array.shape} for {len(labels)} labels, "
                        "expected N x 3072", "re-extract the original cifar-100-python folder")
    images = torch.from_numpy(array.reshape(-1, *SHAPE).copy())
    targets = torch.tensor(list(labels), dtype=torch.long)
    if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= CLASSES):
        raise SpecError("--data", f"{path}: labels outside 0..{CLASSES - 1}", "use the CIFAR-100 fine labels")
    return images, targets


def stand_in(size: int = STAND_IN_SIZE, seed: int = STAND_IN_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic CIFAR-100-shaped set: per class a smooth random pattern, per image noise and a shift."""
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(40, 215, size=(CLASSES, 3, 4, 4))
    patterns = coarse.repeat(8, axis=2).repeat(8, axis=3)  # 4x4 blocks blown up to 32x32
    labels = np.arange(size) % CLASSES
    rng.shuffle(labels)
    noise = rng.normal(0, 40, size=(size, *SHAPE))
    brightness = rng.normal(0, 15, size=(size, 1, 1, 1))
    images = np.clip(patterns[labels] + noise + brightness, 0, 255).astype(np.uint8)
    return torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64))


def load_cifar100(data: str | Path | None = None, *, split: str = "train", samples: int | None = None,
                  environ: Mapping[str, str] | None = None) -> ImageSet:
    """The real CIFAR-100 split where it is found, else the stand-in; ``samples`` keeps only the first N images."""
    folder = find_cifar100(data, environ)
    if folder is not None:
        images, labels = read_split(folder, split)
        source = f"cifar-100 {split} ({folder})"
    else:
        size = samples or STAND_IN_SIZE
        images, labels = stand_in(size=size, seed=STAND_IN_SEED + (split == "test"))
        source = "generated stand-in"
    if samples is not None:
        images, labels = images[:samples], labels[:samples]
    return ImageSet(images=images, labels=labels, source=source)
