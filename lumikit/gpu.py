"""Whether torch sees a GPU, asked so that PyTorch's CUDA build on a machine without a driver stays quiet.

``torch.cuda.is_available()`` on the CUDA build with no NVIDIA driver warns ("CUDA initialization: ...
gpuGetDeviceCount failed with code 35"), which Jupyter shows as a red box in the middle of a lesson although
nothing is wrong: the workbook then simply runs on the CPU. Every place that asks goes through here.
"""
from __future__ import annotations

import warnings


def torch_sees_gpu() -> bool:
    """True where torch can use a GPU (ROCm builds answer through ``torch.cuda`` too); False, silently, elsewhere."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"(?s).*CUDA initialization")
        warnings.filterwarnings("ignore", message=r"(?s).*(?:NVIDIA driver|gpuGetDeviceCount|cudaGetDeviceCount)")
        return bool(torch.cuda.is_available())
