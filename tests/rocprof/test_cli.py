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


def test_stats_counts_the_memory_copies_beside_the_kernel_shares(tmp_path, capsys):
    # generated: one process, two steps, a 4 MiB host-to-device copy of 20 us per step
    import json

    from lumikit.cli import main
    from lumikit.testing import rocprof_outputs as gen

    run = gen.generated_run(nodes=1, processes_per_node=1, steps=2)
    for path in (gen.write_rocpd(tmp_path / "1_results.db", run), gen.write_pftrace(tmp_path / "1.pftrace", run)):
        assert main(["rocprof", "stats", str(path)]) == 0
        out = capsys.readouterr().out
        assert "memory 0.0 % (memory: copy kernels only)" in out
        assert "memory copies: 2, 0.040 ms, 8.0 MiB (DMA transfers, not in the kernel time)" in out
        assert main(["rocprof", "stats", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["copies"] == {"count": 2, "total_ns": 40000.0, "bytes": 8388608.0}
