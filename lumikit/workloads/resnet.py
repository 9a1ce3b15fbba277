"""A ResNet on CIFAR-100: the CSC summer school's single-GPU / DataParallel / DDP comparison, made runnable offline.

The network is written here (no torchvision needed): a CIFAR-style stem (3x3 convolution, no max-pool) and four
stages of basic or bottleneck blocks. ``tiny`` runs on a laptop CPU; ``resnet18``, ``resnet50`` and ``resnet152``
have the classic block counts for the seed's questions on model size and speed.

    python -m lumikit.workloads.resnet --steps 20
    python -m lumikit.workloads.resnet --mode dp --model-size resnet50 --epochs 2      # one process, all GPUs
    srun ... python -m lumikit.workloads.resnet --mode ddp --epochs 2                  # one process per GCD
"""
from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .cifar import CLASSES, load_cifar100
from .common import base_parser
from .trainer import Setup, StepOutput, Task, main_for


@dataclass(frozen=True)
class ResNetConfig:
    """Block kind, blocks per stage and the width of the first stage (later stages double it)."""

    block: str  # "basic" or "bottleneck"
    blocks: tuple[int, ...]
    width: int


SIZES: dict[str, ResNetConfig] = {
    "tiny": ResNetConfig("basic", (1, 1, 1), 16),
    "small": ResNetConfig("basic", (2, 2, 2), 32),
    "resnet18": ResNetConfig("basic", (2, 2, 2, 2), 64),
    "resnet50": ResNetConfig("bottleneck", (3, 4, 6, 3), 64),
    "resnet152": ResNetConfig("bottleneck", (3, 8, 36, 3), 64),
}


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut (ResNet-18/34)."""

    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.shortcut = _shortcut(cin, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand by 4, with a shortcut (ResNet-50/101/152)."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.shortcut = _shortcut(cin, out, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + self.shortcut(x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    """ResNet for 32x32 inputs with ``classes`` outputs."""

    def __init__(self, cfg: ResNetConfig, classes: int = CLASSES) -> None:
        super().__init__()
        block = BasicBlock if cfg.block == "basic" else Bottleneck
        self.stem = nn.Sequential(nn.Conv2d(3, cfg.width, 3, 1, 1, bias=False), nn.BatchNorm2d(cfg.width), nn.ReLU())
        layers: list[nn.Module] = []
        cin = cfg.width
        for stage, count in enumerate(cfg.blocks):
            width = cfg.width * 2 ** stage
            for i in range(count):
                layers.append(block(cin, width, 2 if (i == 0 and stage > 0) else 1))
                cin = width * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_model(size: str, classes: int = CLASSES) -> ResNet:
    """The ResNet of a ``--model-size`` name."""
    return ResNet(SIZES[size], classes)


def _forward(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor], device: torch.device, *,
             memory_format: torch.memory_format = torch.contiguous_format) -> StepOutput:
    images, labels = (t.to(device, non_blocking=True) for t in batch)
    images = images.contiguous(memory_format=memory_format)
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    correct = int((logits.argmax(dim=1) == labels).sum().item())
    return StepOutput(loss=loss, samples=images.shape[0], correct=correct)


def build_task(args: argparse.Namespace, setup: Setup) -> Task:
    """The CIFAR-100 task for the trainer."""
    dataset = load_cifar100(args.data, samples=args.samples)
    model = build_model(args.model_size)
    return Task(name="resnet", model=model, dataset=dataset,
                make_optimizer=lambda params, lr, **options: torch.optim.SGD(params, lr=lr, momentum=0.9,
                                                                             weight_decay=5e-4, **options),
                forward=functools.partial(_forward, memory_format=torch.channels_last if getattr(args, "channels_last", False)
                                          else torch.contiguous_format),
                info={"dataset": dataset.source, "dataset_size": len(dataset)}, convolutional=True)


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m lumikit.workloads.resnet``."""
    p = base_parser("lumikit.workloads.resnet", "Train a ResNet on CIFAR-100 (or its generated stand-in).",
                    sizes=list(SIZES), lr=0.05, batch_size=16)
    p.add_argument("--data", default=None,
                   help="the cifar-100-python folder (default: $LUMIKIT_CIFAR100, else a generated stand-in)")
    p.add_argument("--samples", type=int, default=None, metavar="N", help="use only the first N training images")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Train the ResNet as the command line says."""
    return main_for(build_task, parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
