"""Each format family on small outputs written for these tests, and the errors for text that is none of them."""
from __future__ import annotations

import json

import pytest

from lumikit.errors import ParseError
from lumikit.smi.parse import parse_smi, parse_smi_series


def test_rocm5_table_with_warning(rocm5_table: str) -> None:
    snap = parse_smi(rocm5_table, source="mine.txt", timestamp=12.5)
    assert snap.format == "rocm-smi-concise" and snap.timestamp == 12.5 and snap.source == "mine.txt"
    assert [(d.index, d.power_w, d.gpu_busy_pct, d.vram_pct) for d in snap.devices] == [
        (0, 305.0, 100.0, 40.0), (1, None, 0.0, 0.0), (2, 290.0, 100.0, 96.0), (3, None, 0.0, 0.0)]
    assert all(d.package is None for d in snap.devices)  # 4 devices: not a whole LUMI-G node
    assert snap.notes == ("WARNING:                 One or more commands failed",)


def test_srun_label_prefixes_split_by_task(rocm5_table: str) -> None:
    labelled = "".join(f"{task}: {line}\n" for task in (0, 1) for line in rocm5_table.splitlines())
    snap = parse_smi(labelled)
    assert [(d.task, d.index) for d in snap.devices] == [(t, i) for t in (0, 1) for i in range(4)]


def test_rocm6_table_degree_sign_and_spaced_cells() -> None:
    text = (
        "Device  Node  IDs              Temp    Power   Partitions          SCLK     MCLK     Fan  Perf    "
        "PwrCap  VRAM%  GPU%\n"
        "              (DID,     GUID)  (Edge)  (Avg)   (Mem, Compute, ID)\n"
        "=====================================================================\n"
        "0       4     0x7408,   63582  47.0\u00b0C  306.0W  N/A, N/A, 0         1650Mhz  1600Mhz  0%   manual  "
        "500.0W  71%    100%\n"
        "1       5     0x7408,   51740  40.0\u00b0C  N/A     N/A, N/A, 0         800Mhz   1600Mhz  0%   manual  "
        "0.0W    0%     0%\n"
        "=====================================================================\n")
    d0, d1 = parse_smi(text).devices
    assert (d0.node_id, d0.temp_c, d0.power_w, d0.sclk_mhz, d0.vram_pct, d0.gpu_busy_pct) == \
        (4, 47.0, 306.0, 1650.0, 71.0, 100.0)
    assert (d1.node_id, d1.power_w, d1.power_cap_w) == (5, None, 0.0)


def test_rocm_json_with_drifted_keys() -> None:
    data = {"card0": {"Temperature (Sensor junction) (C)": "61.0", "Current Socket Graphics Package Power (W)":
                      "402.0", "sclk clock speed:": "(1700Mhz)", "GPU use (%)": "97",
                      "VRAM Total Memory (B)": "1000", "VRAM Total Used Memory (B)": "250"},
            "system": {"Driver version": "6.8.5"}}
    d = parse_smi(json.dumps(data)).device(0)
    assert (d.temp_c, d.power_w, d.sclk_mhz, d.gpu_busy_pct, d.vram_pct) == (61.0, 402.0, 1700.0, 97.0, 25.0)


def test_amd_smi_metric_json_gpu_data_shape() -> None:
    data = {"gpu_data": [{"gpu": 0, "usage": {"gfx_activity": {"value": 88, "unit": "%"}},
                          "power": {"socket_power": {"value": 412, "unit": "W"}},
                          "clock": {"gfx_0": {"clk": {"value": 1700, "unit": "MHz"}}},
                          "temperature": {"edge": "N/A", "hotspot": {"value": 70, "unit": "C"}},
                          "mem_usage": {"total_vram": {"value": 65536, "unit": "MB"},
                                        "used_vram": {"value": 16384, "unit": "MB"}}}]}
    d = parse_smi(json.dumps(data)).device(0)
    assert (d.gpu_busy_pct, d.power_w, d.sclk_mhz, d.temp_c, d.vram_pct) == (88.0, 412.0, 1700.0, 70.0, 25.0)
    assert d.vram_total_bytes == 64 * 2**30


def test_rocm_csv_and_key_value_views() -> None:
    csv_snap = parse_smi("device,GPU use (%),GPU Memory Allocated (VRAM%)\ncard0,12,34\ncard1,0,1\n")
    assert [(d.index, d.gpu_busy_pct, d.vram_pct) for d in csv_snap.devices] == [(0, 12.0, 34.0), (1, 0.0, 1.0)]
    kv = parse_smi("GPU[0]\t\t: GPU use (%): 55\nGPU[0]\t\t: PCI Bus: 0000:C1:00.0\nGPU[1]\t\t: GPU use (%): 0\n")
    assert [(d.index, d.gpu_busy_pct, d.bus_id) for d in kv.devices] == [(0, 55.0, "0000:C1:00.0"),
                                                                         (1, 0.0, None)]


def test_amd_smi_monitor_units_glued_to_numbers() -> None:
    text = ("GPU  POWER  GPU_TEMP  GFX_UTIL  GFX_CLOCK  VRAM_USED  VRAM_TOTAL\n"
            "  0  301 W     55 \u00b0C      97 %   1700 MHz   32768 MB    65536 MB\n"
            "  1    N/A     50 \u00b0C       0 %    800 MHz     10 MB    65536 MB\n")
    d0, d1 = parse_smi(text).devices
    assert (d0.power_w, d0.temp_c, d0.gpu_busy_pct, d0.sclk_mhz, d0.vram_pct) == (301.0, 55.0, 97.0, 1700.0, 50.0)
    assert d1.power_w is None


def test_nvidia_nounits_header() -> None:
    text = ("index, name, utilization.gpu [%], power.draw [W], memory.used [MiB], memory.total [MiB]\n"
            "0, NVIDIA H100, 93, 612.40, 40000, 81559\n")
    d = parse_smi(text).device(0)
    assert (d.name, d.gpu_busy_pct, d.power_w, d.vram_used_bytes) == ("NVIDIA H100", 93.0, 612.4, 40000 * 2**20)


def test_nvidia_series_splits_where_a_device_repeats() -> None:
    text = ("index, utilization.gpu [%]\n0, 10 %\n1, 20 %\n0, 30 %\n1, 40 %\n")
    assert [[d.gpu_busy_pct for d in s.devices] for s in parse_smi_series(text)] == [[10.0, 20.0], [30.0, 40.0]]


@pytest.mark.parametrize("text, line_no", [
    ("hello\nworld\n", 1),
    ("\n\n  some banner\nnothing here\n", 3),
    ('{"card0": {"GPU use (%)": "1"},\n oops}\n', 2),
])
def test_unrecognised_text_names_the_line(text: str, line_no: int) -> None:
    with pytest.raises(ParseError) as err:
        parse_smi(text, source="bad.txt")
    assert err.value.source == "bad.txt" and err.value.line_no == line_no
    assert "bad.txt, line" in str(err.value)


def test_row_that_does_not_fit_the_header_names_its_line(rocm5_table: str) -> None:
    broken = rocm5_table.replace("2    50.0c  290.0W", "2    50.0c  290.0W  extra")
    with pytest.raises(ParseError) as err:
        parse_smi(broken, source="t.txt")
    assert err.value.line_no == 6 and "11 cells under a header of 10" in str(err.value)
