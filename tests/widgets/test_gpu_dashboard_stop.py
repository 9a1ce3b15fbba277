"""The live GPU dashboard says what is true after stop: "stopped", never the "running" of its last refresh
(issue 41)."""
from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")

from lumikit.smi.sampler import ReplaySource  # noqa: E402
from lumikit.widgets.gpu_dashboard import GpuDashboard  # noqa: E402


def test_after_stop_the_status_says_stopped_not_running() -> None:
    source = ReplaySource("idle-node", speed=100.0, loop=True)
    dash = GpuDashboard(source=source, interval=0.1)
    dash.start()
    deadline = time.monotonic() + 30
    while "running" not in dash.status.value and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "running" in dash.status.value, dash.status.value
    dash.stop()
    assert "running" not in dash.status.value and "stopped" in dash.status.value, dash.status.value
    assert dash.sampler.state == "stopped"
