"""Omnistat exports with the vendor counters (HPE Cray pm_counters) and Prometheus' host:port node names. The CSVs
here are WRITTEN FOR THE TEST from the layout of ``omnistat/query.py``'s ``export`` (ROCm/omnistat@0fbbf811:
``metric`` / ``instance`` / ``card``, ``metric`` / ``instance`` / ``vendor``, ``metric`` / ``instance`` / ``accel``
/ ``vendor`` column levels over a ``timestamp`` index), not a real export."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.record import report_card
from lumikit.smi.omnistat import node_name, read_omnistat, read_vendor

LABEL = "written for a test from Omnistat's export layout, not a real export"
TIMES = [f"2026-01-05 10:00:{s:02d}" for s in range(0, 10, 2)]  # 5 samples, 2 s apart


def write_export(folder: Path) -> Path:
    """An MI250X package as Omnistat's amd-smi collector exports it: card 0 reads the package's 300 W and idles,
    card 1 computes and reads 0 W; the node's counters rise 3000 J, each accelerator's 500 J over the 8 s."""
    folder.mkdir()
    inst = "nid005001:8001"
    rocm = ["metric," + ",".join(["rocm_utilization_percentage"] * 2 + ["rocm_average_socket_power_watts"] * 2),
            f"instance,{inst},{inst},{inst},{inst}", "card,0,1,0,1", "timestamp,,,,"]
    rocm += [f"{t},0.0,100.0,300.0,0.0" for t in TIMES]
    (folder / "omnistat-rocm.gpu.csv").write_text("\n".join(rocm) + "\n")
    node = ["metric,omnistat_vendor_energy_joules,omnistat_vendor_cpu_energy_joules,omnistat_vendor_power_watts",
            f"instance,{inst},{inst},{inst}", "vendor,cray,cray,cray", "timestamp,,,"]
    node += [f"{t},{100000 + 750 * i},{20000 + 100 * i},700" for i, t in enumerate(TIMES)]
    (folder / "omnistat-vendor.csv").write_text("\n".join(node) + "\n")
    accel = ["metric," + ",".join(["omnistat_vendor_accel_energy_joules"] * 4),
             f"instance,{inst},{inst},{inst},{inst}", "accel,0,1,2,3", "vendor,cray,cray,cray,cray", "timestamp,,,,"]
    accel += [f"{t}," + ",".join(str(5000 * a + 125 * i) for a in range(4)) for i, t in enumerate(TIMES)]
    (folder / "omnistat-vendor.gpu.csv").write_text("\n".join(accel) + "\n")
    return folder


def test_nodes_are_named_without_the_port():
    assert node_name("nid005001:8001") == "nid005001" and node_name("node01") == "node01"
    assert node_name("[::1]:8001") == "[::1]" and node_name("host:abc") == "host:abc"


def test_the_vendor_counters_are_read_in_pm_counters_names(tmp_path: Path):
    vendor = read_vendor(write_export(tmp_path / "export"))
    assert list(vendor) == ["nid005001"]
    first = vendor["nid005001"][min(vendor["nid005001"])]
    assert first == {"energy": 100000, "cpu_energy": 20000, "power": 700, "accel0_energy": 0,
                     "accel1_energy": 5000, "accel2_energy": 10000, "accel3_energy": 15000}


def test_an_export_gives_package_power_computing_hours_and_node_energy(tmp_path: Path):
    sessions = read_omnistat(write_export(tmp_path / "export"), note=LABEL)
    assert list(sessions) == ["nid005001"]
    card = report_card(sessions, {"site": "lumi"}, run="omnistat")
    gcd0, gcd1 = card.rows
    # card 1 computes while reading 0 W: its computing seconds come from busy %, the package power from card 0
    assert gcd1.computing_s == pytest.approx(8.0) and gcd0.computing_s == 0.0
    assert card.packages[0].power_mean_w == 300 and card.packages[0].energy_j == pytest.approx(300 * 8)
    pm = card.totals["nodes"]["nid005001"]["pm_counters"]
    assert pm["energy_j"]["energy"] == 3000 and pm["energy_j"]["cpu_energy"] == 400
    assert sum(v for k, v in pm["energy_j"].items() if k.startswith("accel")) == 2000 and pm["span_s"] == 8.0
    assert "pm_counters over 8.0 s: node 3000 J" in card.text()


def test_a_cr_or_a_short_header_line_is_a_parse_error_naming_the_file(tmp_path: Path):
    """Two of the tracebacks issue 31's fuzz found: `_csv.Error` on a CR inside a cell, and an IndexError where
    the vendor file's header lines have different lengths."""
    from lumikit.errors import ParseError

    folder = write_export(tmp_path / "export")
    gpu = folder / "omnistat-rocm.gpu.csv"
    gpu.write_bytes(gpu.read_bytes().replace(b"10:00:00,0.0,100.0,", b"10:00:00,0.0,100.0\r,"))  # a stray CR
    with pytest.raises(ParseError, match="omnistat-rocm.gpu.csv, line 5: 3 cells where the header has 5"):
        read_omnistat(folder)
    write_export(tmp_path / "again")
    vendor = tmp_path / "again" / "omnistat-vendor.csv"
    vendor.write_text(vendor.read_text().replace("vendor,cray,cray,cray", "vendor,cray"))
    with pytest.raises(ParseError, match="omnistat-vendor.csv: header lines with different numbers of columns "
                                         r"\(metric: 3, instance: 3, vendor: 1\)"):
        read_omnistat(tmp_path / "again")
