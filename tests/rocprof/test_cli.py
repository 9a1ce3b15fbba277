"""``lumikit rocprof stats`` prints the ranked table or JSON."""
from __future__ import annotations

import json

from lumikit.cli import main

V1 = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
      '"gemm(float*)",4,3000000,750000,75.0\n"ncclDevKernel_AllReduce",1,1000000,1000000,25.0\n')


def test_stats_prints_classes_and_ranked_kernels(tmp_path, capsys):
    (tmp_path / "results.stats.csv").write_text(V1)
    assert main(["rocprof", "stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 kernels, 4.000 ms of GPU time" in out
    assert "compute 75.0 %   communication 25.0 %" in out
    assert "  1  compute            3.000       4    750.00  75.00  gemm\n" in out
    assert "  2  communication      1.000       1   1000.00  25.00  ncclDevKernel_AllReduce\n" in out


def test_stats_json_has_totals_by_class_and_kernels(tmp_path, capsys):
    path = tmp_path / "results.stats.csv"
    path.write_text(V1)
    assert main(["rocprof", "stats", str(path), "--json", "--top", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total_ns"] == 4_000_000
    assert report["classes"]["communication"] == {"total_ns": 1_000_000.0, "calls": 1, "share": 0.25}
    assert [k["name"] for k in report["kernels"]] == ["gemm(float*)"]


def test_a_bad_file_is_exit_status_2_with_the_reason(tmp_path, capsys):
    path = tmp_path / "results.stats.csv"
    path.write_text("not a csv\n")
    assert main(["rocprof", "stats", str(path)]) == 2
    assert "no rocprof statistics header" in capsys.readouterr().err
