"""GpuDashboard(run=...) on a 2-node x 2-GCD run record (GENERATED test data): the grid, one detail pane per
node, the time slider, following a growing record; the single-session dashboard stays as it was."""
from __future__ import annotations

import json
import re
from pathlib import Path

from lumikit.smi.plots import CSS_GRID
from lumikit.testing.records import GeneratedRecord, write_generated_record
from lumikit.widgets.gpu_dashboard import CSS_RECORD, GpuDashboard, RecordDashboard


def test_grid_for_two_nodes_by_two_gcds_renders(tmp_path: Path) -> None:
    dash = GpuDashboard(run=write_generated_record(tmp_path / "run", samples=8))
    assert isinstance(dash, RecordDashboard) and not dash.running  # a finished run: a replay, no thread
    assert CSS_RECORD in dash.widget._dom_classes and CSS_GRID in dash.grid._dom_classes
    cells = dash.grid.value.count("class='lumikit-gcd-cell'")
    assert cells == 4 and "nid005001" in dash.grid.value and "nid005002" in dash.grid.value
    assert [dash.tabs.get_title(i) for i in range(2)] == ["nid005001", "nid005002"]
    assert dash.status.value.startswith("<b>generated</b> GPU record") and "COMPLETED" in dash.status.value
    first_pane = dash.tabs.children[0].children[0]
    assert all(img.value[:4] == b"\x89PNG" for img in first_pane.children)  # the selected node's plots


def test_the_slider_replays_and_another_tab_draws_its_node(tmp_path: Path) -> None:
    dash = GpuDashboard(run=write_generated_record(tmp_path / "run", samples=8))
    assert dash.slider.max == 14.0  # 8 samples, 2 s apart
    dash.show_time(0)
    assert "data-activity='idle-low-clock'" in dash.grid.value and "busy'" not in dash.grid.value  # start-up
    assert re.search(r"shown: \d\d:\d\d:\d\d<", dash.when.value)  # a clock time, not epoch seconds
    dash.show_time(14)
    assert "data-activity='busy'" in dash.grid.value
    dash.tabs.selected_index = 1
    second = dash.tabs.children[1].children[0]
    assert all(img.value[:4] == b"\x89PNG" for img in second.children)


def test_a_running_record_is_followed_without_any_slurm_call(tmp_path: Path) -> None:
    rec = GeneratedRecord(tmp_path / "run").add(2)
    dash = GpuDashboard(run=rec.path, interval=0.1)
    try:
        assert dash.interval == 2.0  # never more often than every 2 s
        assert dash.running and "(following it, read every 2 s)" in dash.status.value  # the manifest: RUNNING
        rec.add(3)
        dash.refresh()  # (or the dashboard's own thread got there first)
        assert [len(dash.tail.frames(n)) for n in dash.nodes] == [5, 5] and dash.slider.max == 8.0
    finally:
        dash.stop()
    assert not dash.running and "(a replay: move the slider)" in dash.status.value


def test_a_run_without_record_says_so(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text(json.dumps({"state": "COMPLETED"}))
    dash = GpuDashboard(run=tmp_path / "run")
    assert "no GPU record in this run folder" in dash.status.value and dash.nodes == []


def test_a_node_without_smi_tool_says_so_and_nothing_is_invented(tmp_path: Path) -> None:
    from lumikit.record.recorder import header_line
    from lumikit.smi.sessions import SessionHeader

    run = write_generated_record(tmp_path / "run", nodes=1, samples=3)
    head = SessionHeader(name="laptop", kind="absent", source="no SMI tool found (amd-smi, rocm-smi, nvidia-smi)")
    (run / "gpu" / "laptop.jsonl").write_text(json.dumps(header_line(head)) + "\n")
    dash = GpuDashboard(run=run)
    assert dash.nodes == ["laptop", "nid005001"]
    assert dash.status.value.startswith("<b>absent / generated</b>")
    assert "data-node='laptop' data-gcd='0' style" in dash.grid.value and "no SMI tool on this node" in dash.grid.value
    dash.tabs.selected_index = 0
    assert "no samples (no SMI tool existed on this node)" in dash.tabs.children[0].children[1].value
