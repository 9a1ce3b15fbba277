"""Every log reader refuses a pipe or a device by name instead of waiting on it forever (a FIFO never ends until its
writer does; /dev/zero never ends)."""
from __future__ import annotations

import os

import pytest

from lumikit.errors import LumikitError
from lumikit.logs import diagnose, read_collbench, read_hip_log, read_progress, rccl_transport


@pytest.mark.parametrize("reader", [read_hip_log, read_progress, rccl_transport, read_collbench, diagnose],
                         ids=lambda f: f.__name__)
def test_a_fifo_and_dev_zero_are_refused(reader, tmp_path):
    fifo = tmp_path / "rank0.out"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        with pytest.raises(LumikitError, match="not a regular file"):
            reader(path)
