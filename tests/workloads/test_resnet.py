"""The ResNet workload: the real CIFAR-100 pickle format, the stand-in, epochs with accuracy, model sizes."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from lumikit.errors import SpecError
from lumikit.workloads import resnet
from lumikit.workloads.cifar import find_cifar100, load_cifar100, read_split, stand_in
from lumikit.workloads.common import read_metrics


def write_fake_cifar100(parent, n_train=40, n_test=10):
    """A tiny folder in the real CIFAR-100 layout: pickled dicts with bytes keys, N x 3072 uint8 rows."""
    folder = parent / "cifar-100-python"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("test", n_test)):
        entry = {b"filenames": [f"img_{i}.png".encode() for i in range(n)], b"batch_label": split.encode(),
                 b"fine_labels": [i % 100 for i in range(n)], b"coarse_labels": [i % 20 for i in range(n)],
                 b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)}
        with open(folder / split, "wb") as handle:
            pickle.dump(entry, handle, protocol=2)
    with open(folder / "meta", "wb") as handle:
        pickle.dump({b"fine_label_names": [f"c{i}".encode() for i in range(100)]}, handle)
    return folder


def test_the_pickle_loader_reads_the_real_layout(tmp_path):
    folder = write_fake_cifar100(tmp_path)
    images, labels = read_split(folder, "train")
    assert images.shape == (40, 3, 32, 32) and images.dtype == torch.uint8
    assert labels.tolist()[:3] == [0, 1, 2]
    with open(folder / "train", "rb") as handle:
        raw = pickle.load(handle, encoding="bytes")[b"data"]
    # Row layout: 1024 red values, then 1024 green, then 1024 blue, each row by row.
    assert images[5, 1, 2, 3].item() == raw[5, 1024 + 2 * 32 + 3]


def test_the_data_is_found_from_the_environment_or_the_option(tmp_path):
    folder = write_fake_cifar100(tmp_path)
    assert find_cifar100(environ={"LUMIKIT_CIFAR100": str(tmp_path)}) == folder
    assert find_cifar100(str(folder), environ={}) == folder
    assert find_cifar100(environ={}) is None
    data = load_cifar100(environ={"LUMIKIT_CIFAR100": str(folder)}, split="test")
    assert len(data) == 10 and "cifar-100 test" in data.source


def test_a_folder_without_the_data_names_the_fix(tmp_path):
    with pytest.raises(SpecError, match="cifar-100-python") as info:
        find_cifar100(str(tmp_path), environ={})
    assert info.value.field == "--data"


def test_cifar10_pickles_are_refused(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    with open(folder / "train", "wb") as handle:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 1]}, handle)
    with pytest.raises(SpecError, match="fine_labels"):
        read_split(folder)


def test_the_stand_in_has_cifar100_shape_and_is_the_same_every_time():
    images, labels = stand_in(size=300)
    assert images.shape == (300, 3, 32, 32) and images.dtype == torch.uint8
    assert labels.min().item() == 0 and labels.max().item() == 99 and len(set(labels.tolist())) == 100
    again, _ = stand_in(size=300)
    assert torch.equal(images, again)
    item, label = load_cifar100(samples=300, environ={})[0]
    assert item.dtype == torch.float32 and item.shape == (3, 32, 32) and -3 < item.mean().item() < 3


def test_classic_model_sizes_have_the_classic_parameter_counts():
    counts = {size: sum(p.numel() for p in resnet.build_model(size).parameters())
              for size in ("resnet18", "resnet50", "resnet152")}
    # CIFAR-style ResNets with 100 classes: 11.2 M, 23.7 M and 58.3 M parameters.
    assert counts == {"resnet18": 11_220_132, "resnet50": 23_705_252, "resnet152": 58_341_028}
    assert resnet.build_model("tiny")(torch.zeros(2, 3, 32, 32)).shape == (2, 100)


def test_two_epochs_on_the_real_format_give_loss_and_accuracy_per_epoch(tmp_path, capsys):
    folder = write_fake_cifar100(tmp_path)
    status = resnet.main(["--no-progress", "--data", str(folder), "--epochs", "2", "--batch-size", "8",
                          "--out", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert status == 0
    steps, epochs = read_metrics(tmp_path / "run" / "metrics.rank0.jsonl")
    assert len(steps) == 10  # 40 images / 8 per step, twice
    assert [e["epoch_end"] for e in epochs] == [0, 1] and all(e["complete"] for e in epochs)
    assert all(0 <= e["accuracy"] <= 1 and e["epoch_time_s"] > 0 for e in epochs)
    assert "epoch 1: loss" in out and "accuracy" in out
    summary = json.loads((tmp_path / "run" / "result.rank0.json").read_text())
    assert summary["epochs_completed"] == 2 and summary["stopped_by"] == "epochs"
    assert summary["dataset"].startswith("cifar-100 train")


def test_a_batch_larger_than_the_data_names_the_option(tmp_path, capsys):
    status = resnet.main(["--no-progress", "--samples", "10", "--batch-size", "16", "--out", str(tmp_path)])
    assert status == 2 and "--batch-size" in capsys.readouterr().err


def test_resume_of_the_resnet_matches_an_uninterrupted_run(tmp_path, capsys):
    base = ["--no-progress", "--samples", "64", "--batch-size", "8"]
    resnet.main([*base, "--steps", "6", "--out", str(tmp_path / "whole")])
    ckpt = str(tmp_path / "c.pt")
    resnet.main([*base, "--steps", "3", "--checkpoint", ckpt, "--out", str(tmp_path / "parts")])
    resnet.main([*base, "--steps", "6", "--checkpoint", ckpt, "--resume", "--out", str(tmp_path / "parts")])
    capsys.readouterr()
    whole = json.loads((tmp_path / "whole" / "result.rank0.json").read_text())
    parts = json.loads((tmp_path / "parts" / "result.rank0.json").read_text())
    assert parts["loss_curve"] == whole["loss_curve"] and len(whole["loss_curve"]) == 6
