"""Pictures and the dashboard on the shipped (generated) sessions, with no GPU."""
from __future__ import annotations

from lumikit.smi.plots import node_map, timeline
from lumikit.smi.sessions import load_session
from lumikit.widgets.gpu_dashboard import CSS_DASHBOARD, CSS_FINDINGS, CSS_PLOTS, GpuDashboard


def test_timeline_has_three_panels_and_one_line_per_device() -> None:
    fig = timeline(load_session("ddp-8gcd-starved"), devices=[0, 1, 4])
    power, busy, vram = fig.axes[:3]
    assert [ax.get_ylabel() for ax in (power, busy, vram)] == ["power (W)", "busy (%)", "VRAM (%)"]
    assert [ln.get_label() for ln in busy.get_lines()] == ["GCD 0", "GCD 1", "GCD 4"]
    assert [ln.get_label() for ln in power.get_lines()] == ["GCD 0", "GCD 4"]  # odd GCDs print no power


def test_node_map_labels_numa_domains_and_packages() -> None:
    fig = node_map(load_session("ddp-8gcd-starved")[31])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert [t for t in texts if t.startswith("NUMA")] == ["NUMA 0", "NUMA 1", "NUMA 2", "NUMA 3"]
    assert any(t.startswith("package 2:") for t in texts)
    assert "GCD 4\n0 %\n800 MHz" in texts


def test_dashboard_renders_one_frame_offline() -> None:
    dash = GpuDashboard(session="ddp-8gcd-starved").show_frame(60)
    assert CSS_DASHBOARD in dash.widget._dom_classes
    assert CSS_PLOTS in dash.plots._dom_classes and CSS_FINDINGS in dash.findings._dom_classes
    assert dash.timeline_image.value[:4] == b"\x89PNG" and dash.map_image.value[:4] == b"\x89PNG"
    assert "starved" in dash.findings.value and "GCD 4" in dash.findings.value
    assert dash.picker.value == "replay: ddp-8gcd-starved" and dash.devices.value == tuple(range(8))
    # the map shows the latest sample, the findings a window, and both say so; the session says it is generated
    assert "last 30 samples, 58 s" in dash.findings.value
    assert dash.status.value.startswith("generated session") and "synth" in dash.status.value


def test_dashboard_live_replay_start_stop() -> None:
    dash = GpuDashboard(session="idle-node", interval=0.05, speed=50)
    dash.start()
    try:
        assert dash.sampler is not None
        dash.sampler.wait(timeout=1.0)
    finally:
        dash.stop()
    assert dash.sampler.samples > 0 and dash.start_button.disabled is False
