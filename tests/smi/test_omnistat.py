"""Omnistat's per-GPU export (omnistat-rocm.gpu.csv) read as one session per node. The file under
tests/smi/omnistat_from_docs/ is WRITTEN FROM THE DOCUMENTED LAYOUT (ROCm/omnistat docs and query.py), not a real
export: see the README there. Its sessions say so in their source."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from lumikit.errors import LumikitError, ParseError
from lumikit.smi.omnistat import is_omnistat_export, read_omnistat
from lumikit.widgets.gpu_dashboard import GpuDashboard

FROM_DOCS = Path(__file__).parent / "omnistat_from_docs"
LABEL = "written from Omnistat's documented layout for a test, not a real export"


def test_the_file_reads_as_the_documentation_says_with_pandas() -> None:
    df = pd.read_csv(FROM_DOCS / "omnistat-rocm.gpu.csv", header=[0, 1, 2], index_col=0)  # the documented way
    assert df["rocm_utilization_percentage"]["node01"]["0"].tolist()[:2] == [0.0, 100.0]


def test_an_omnistat_layout_csv_loads_as_one_session_per_node() -> None:
    sessions = read_omnistat(FROM_DOCS, note=LABEL)
    assert list(sessions) == ["node01", "node02"]
    head = sessions["node01"].header
    assert head.kind == "recorded" and head.label == "node01 (recorded)"
    assert head.source == f"Omnistat export omnistat-rocm.gpu.csv (omnistat-query --export); {LABEL}"
    assert head.interval_s == 1.0 and head.started == 1764072000.0  # 2025-11-25 12:00:00 UTC
    snaps = sessions["node01"].snapshots()
    assert len(snaps) == 6 and [s.timestamp for s in snaps] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    busy = snaps[2]
    assert [d.index for d in busy.devices] == [0, 1] and busy.format == "omnistat-export"
    gcd0, gcd1 = busy.devices
    assert (gcd0.gpu_busy_pct, gcd0.vram_pct, gcd0.temp_c, gcd0.sclk_mhz, gcd0.power_w) == (100, 52, 55, 1700, 488)
    assert gcd1.power_w is None  # the odd GCD of an MI250X reports no power: an empty cell, never 0
    idle = sessions["node02"].snapshots()[2].devices[1]
    assert idle.gpu_busy_pct == 0 and idle.sclk_mhz == 800


def test_the_dashboard_shows_an_omnistat_export_like_a_run_record() -> None:
    assert is_omnistat_export(FROM_DOCS) and is_omnistat_export(FROM_DOCS / "omnistat-rocm.gpu.csv")
    dash = GpuDashboard(run=FROM_DOCS)
    assert dash.nodes == ["node01", "node02"] and not dash.running
    assert dash.grid.value.count("class='lumikit-gcd-cell'") == 4
    assert "data-activity='busy'" not in dash.grid.value  # the last sample: the job has ended, every GCD idles
    assert dash.status.value.startswith("<b>recorded</b> GPU record of <b>omnistat_from_docs</b>")
    assert "Omnistat export" in dash.status.value
    dash.show_time(2)
    assert "data-node='node02' data-gcd='1' data-activity='idle-low-clock'" in dash.grid.value
    assert "data-node='node01' data-gcd='0' data-activity='busy'" in dash.grid.value


def test_other_layouts_and_hostile_files_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "omnistat-host.csv"
    other.write_text("metric,omnistat_host_cpu\ninstance,node01\ntimestamp,\n2025-01-01 10:00:00,3\n")
    with pytest.raises(ParseError, match="line 3 should start with 'card'"):
        read_omnistat(other)
    bad_time = tmp_path / "bad.csv"
    bad_time.write_text("metric,rocm_utilization_percentage\ninstance,n1\ncard,0\ntimestamp,\nyesterday,3\n")
    with pytest.raises(ParseError, match="line 5.*not a timestamp"):
        read_omnistat(bad_time)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(LumikitError, match="not a regular file"):
        read_omnistat(fifo)
    with pytest.raises(LumikitError, match="no such file.*omnistat-query"):
        read_omnistat(tmp_path / "nothing")


def test_the_report_card_takes_an_omnistat_session_like_any_other() -> None:
    from lumikit.record import report_card

    card = report_card(read_omnistat(FROM_DOCS, note=LABEL), {"site": "lumi"}, run="omnistat_from_docs")
    rows = {(r.node, r.gcd): r for r in card.rows}
    assert sorted(rows) == [("node01", 0), ("node01", 1), ("node02", 0), ("node02", 1)]
    assert rows[("node01", 0)].samples == 6 and rows[("node01", 0)].busy_max_pct == 100
    assert rows[("node02", 1)].busy_max_pct == 0
    assert rows[("node01", 0)].power_max_w == 491 and rows[("node01", 0)].energy_j is not None
    assert card.nodes["node01"]["kind"] == "recorded" and LABEL in card.nodes["node01"]["source"]
