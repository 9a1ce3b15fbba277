"""Helpers for the GPU-view tests: the smi fixture folder and small outputs written for these tests."""
from __future__ import annotations

from pathlib import Path

import pytest

_ROCM5_TABLE = """\
======================= ROCm System Management Interface =======================
================================= Concise Info =================================
GPU  Temp   AvgPwr  SCLK     MCLK     Fan  Perf    PwrCap  VRAM%  GPU%
0    51.0c  305.0W  1700Mhz  1600Mhz  0%   manual  500.0W   40%   100%
1    44.0c  N/A     800Mhz   1600Mhz  0%   manual  0.0W      0%   0%
2    50.0c  290.0W  1650Mhz  1600Mhz  0%   manual  500.0W   96%   100%
3    45.0c  N/A     800Mhz   1600Mhz  0%   manual  0.0W      0%   0%
================================================================================
WARNING:                 One or more commands failed
============================= End of ROCm SMI Log ==============================
"""


@pytest.fixture(scope="session")
def smi_dir(shared_fixtures: Path) -> Path:
    """``../shared/fixtures/smi`` (skips where the shared folder is absent)."""
    path = shared_fixtures / "smi"
    if not path.is_dir():
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture
def rocm5_table() -> str:
    """A ROCm 5 concise table written for these tests: two MI250X packages, one GCD busy on each, a WARNING."""
    return _ROCM5_TABLE
