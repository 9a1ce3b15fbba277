"""lumikit.gpu: asking whether torch sees a GPU never shows the CUDA build's driver warning."""
from __future__ import annotations

import warnings

import pytest
import torch

from lumikit.gpu import torch_sees_gpu


def test_the_cuda_builds_no_driver_warning_is_kept_out_of_the_lesson(monkeypatch: pytest.MonkeyPatch) -> None:
    def noisy() -> bool:  # what the CUDA build does on a machine without an NVIDIA driver
        warnings.warn("CUDA initialization: The NVIDIA driver on your system is too old (found version 0). "
                      "(Triggered internally at c10/cuda/CUDAFunctions.cpp:109.) gpuGetDeviceCount failed with "
                      "code 35", UserWarning)
        return False

    monkeypatch.setattr(torch.cuda, "is_available", noisy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch_sees_gpu() is False
    assert caught == []


def test_other_warnings_still_reach_the_learner(monkeypatch: pytest.MonkeyPatch) -> None:
    def other() -> bool:
        warnings.warn("something else entirely", UserWarning)
        return True

    monkeypatch.setattr(torch.cuda, "is_available", other)
    with pytest.warns(UserWarning, match="something else"):
        assert torch_sees_gpu() is True
