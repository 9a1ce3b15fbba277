"""The rocprof readers on real third-party outputs (../shared/fixtures/rocprof), pinned to exact values."""
from __future__ import annotations

import pytest

from lumikit.rocprof import class_totals, read_rocprof_stats

pytestmark = pytest.mark.conformance


def test_rocprofv3_kernel_stats_of_a_pytorch_resnet(shared_fixtures):
    table = read_rocprof_stats(shared_fixtures / "rocprof" /
                               "rocprofv3_kernel_stats_pytorch_resnet_single_process_amd_hpctraining.csv")
    assert table.attrs["generation"] == "v3" and table.attrs["kind"] == "kernel"
    assert len(table) == 9
    top = table.iloc[0]
    assert (top["name"], top["calls"], top["total_ns"], top["kernel_class"]) == \
        ("__amd_rocclr_copyBuffer", 7084, 17229993, "memory")
    assert table.iloc[1]["name"] == "MIOpenBatchNormBwdSpatial"
    assert table.iloc[-1]["stddev_ns"] == pytest.approx(2561.401809)  # the row that ends in a stray "> "
    totals = class_totals(table)
    assert totals.loc["memory", "total_ns"] == 17229993
    assert totals.loc["compute", "total_ns"] == 95395329 - 17229993
    assert totals.loc["communication", "total_ns"] == 0


@pytest.mark.parametrize("name, kernel, total", [
    ("rocprof_v1_results_stats_csv_csc_hip_programming.txt", "copy_kernel(float*, float*, int, int) [clone .kd]",
     165920),
    ("rocprof_v1_results_stats_csv_transpose_lds_csc_hip_programming.txt",
     "transpose_lds_kernel(float*, float*, int, int) [clone .kd]", 227522),
    ("rocprof_v1_results_stats_csv_transpose_naive_csc_hip_programming.txt",
     "transpose_kernel(float*, float*, int, int) [clone .kd]", 418083),
])
def test_rocprof_v1_results_stats(shared_fixtures, name, kernel, total):
    table = read_rocprof_stats(shared_fixtures / "rocprof" / name)
    assert table.attrs["generation"] == "v1"
    assert table[["name", "calls", "total_ns", "percent", "kernel_class"]].values.tolist() == \
        [[kernel, 1, total, 100.0, "compute"]]


def test_rocprof_v1_hsa_stats_after_a_shell_prompt(shared_fixtures):
    table = read_rocprof_stats(shared_fixtures / "rocprof" / "rocprof_v1_results_hsa_stats_csv_ROCm_issue1640.txt")
    assert table.attrs["kind"] == "hsa_api"
    assert len(table) == 16
    assert table.iloc[0][["name", "calls", "total_ns"]].tolist() == ["hsa_signal_wait_scacquire", 1220, 177633790]
    assert table["kernel_class"].isna().all()
    assert table["total_ns"].sum() == 326302425


def test_a_partial_real_kernel_stats_table_is_flagged(shared_fixtures):
    # the README this file comes from shows the top 9 rows only: their Percentage adds up to 46.39 %
    table = read_rocprof_stats(shared_fixtures / "rocprof" /
                               "rocprofv3_kernel_stats_pytorch_resnet_single_process_amd_hpctraining.csv")
    (note,) = table.attrs["notes"]
    assert "add up to 46.4 %, not 100" in note and "9 rows only" in note
    # 16 HSA rows with full-precision percentages adding up to 99.04 %: rows are missing there too
    hsa = read_rocprof_stats(shared_fixtures / "rocprof" / "rocprof_v1_results_hsa_stats_csv_ROCm_issue1640.txt")
    assert "add up to 99.0 %" in hsa.attrs["notes"][0]
    for name in ("rocprof_v1_results_stats_csv_csc_hip_programming.txt",):  # one row of 100 %: complete
        assert read_rocprof_stats(shared_fixtures / "rocprof" / name).attrs["notes"] == []
