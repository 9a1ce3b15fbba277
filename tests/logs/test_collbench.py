"""The rccl-tests / nccl-tests output reader: bandwidth per size, ranks and GCDs, and the link it is held against.

No rccl-tests output from LUMI is published with a licence that lets the project ship it, so the outputs below are
WRITTEN FROM THE DOCUMENTED FORMAT (nccl-tests' ``src/common.cu`` printing and ``doc/PERFORMANCE.md``; RCCL's
fork prints the same), with the variants real outputs show: the ``Group`` column of older versions and its absence
in newer ones, ``rccl-tests: Version`` and ``RCCL version :`` lines, ``N/A`` in ``#wrong``, and extra trailing
columns. Their numbers are made up for the test: they are not measurements. The layout was also checked by hand
against a real public output, all_reduce_perf on 8 and 16 AMD MI300X (hisohara/ai-scripts,
training/01_rccl-smoketest/README.md at 0780bb3c); that repository states no licence, so it is not copied here.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lumikit.errors import LumikitError, ParseError
from lumikit.logs.collbench import (check_busbw, describe, gcds_of, is_generated, link_for, parse_collbench,
                                    read_collbench, synthesize)

# Written from the documented format (see the module docstring): 2 ranks on GCDs 0 and 1 of one LUMI-G node.
SMALL_G_PAIR = """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 268435456 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:0000000
# Using devices
#  Rank  0 Group  0 Pid  41001 on  nid005001 device  0 [0000:c1:00] AMD Instinct MI250X
#  Rank  1 Group  0 Pid  41002 on  nid005001 device  1 [0000:c6:00] AMD Instinct MI250X
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    40.00   26.21   26.21      0    41.00   25.58   25.58      0
     4194304       1048576     float     sum      -1    80.00   52.43   52.43      0    82.00   51.15   51.15      0
    16777216       4194304     float     sum      -1   200.00   83.89   83.89      0   201.00   83.47   83.47      0
    67108864      16777216     float     sum      -1    600.0  111.85  111.85      0    602.0  111.48  111.48      0
   268435456      67108864     float     sum      -1   2200.0  122.02  122.02      0   2210.0  121.46  121.46      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 79.28
#
"""

# Newer layout: no Group column, version lines, N/A in #wrong, two trailing columns RCCL can add; two nodes.
TWO_NODES_NEW_LAYOUT = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#   Rank  0 Pid  51001 on  nid005001 device  0 [0000:d1:00.0] AMD Instinct MI250X
#   Rank  1 Pid  51002 on  nid005002 device  0 [0000:d1:00.0] AMD Instinct MI250X
RCCL version : 2.20.5-HEAD:0000000
HIP version  : 6.2.41134-00000000
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   33554432       8388608     float     sum      -1   2000.0   16.78   16.78    N/A   2001.0   16.77   16.77    N/A  RING  SIMPLE
   134217728     33554432     float     sum      -1   7000.0   19.17   19.17    N/A   7002.0   19.17   19.17    N/A  RING  SIMPLE
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 17.975
"""


def test_rows_hold_algbw_and_busbw_per_size():
    bench = parse_collbench(SMALL_G_PAIR, "all_reduce_perf.out")
    assert bench.test == "all_reduce_perf"  # named by the file when the output does not say
    assert [r.size_bytes for r in bench.rows] == [1048576, 4194304, 16777216, 67108864, 268435456]
    last = bench.rows[-1]
    assert (last.time_us, last.algbw, last.busbw, last.wrong) == (2200.0, 122.02, 122.02, 0)
    assert (last.in_time_us, last.in_busbw, last.redop, last.dtype) == (2210.0, 121.46, "sum", "float")
    assert bench.avg_busbw == 79.28 and bench.out_of_bounds == 0
    assert bench.peak is last
    assert list(bench.table().columns)[:3] == ["count", "dtype", "redop"]


def test_ranks_name_their_host_device_and_bus():
    bench = parse_collbench(SMALL_G_PAIR)
    assert [(r.rank, r.host, r.device, r.bus) for r in bench.ranks] == [
        (0, "nid005001", 0, "0000:c1:00"), (1, "nid005001", 1, "0000:c6:00")]
    assert bench.nodes == 1


def test_two_gcds_of_one_package_are_held_against_the_200_gb_s_link():
    verdict = link_for(parse_collbench(SMALL_G_PAIR), "lumi")
    assert verdict.link == "gcd_in_package" and verdict.peak_gb_s == 200
    assert verdict.gcds == (0, 1) and verdict.packages == (0,)
    assert verdict.fraction == pytest.approx(122.02 / 200)
    assert "61 % of it" in verdict.text()


def test_two_gcds_on_different_packages_are_held_against_one_50_gb_s_link():
    other_package = SMALL_G_PAIR.replace("[0000:c6:00]", "[0000:d1:00]")  # GCD 4: package 2
    verdict = link_for(parse_collbench(other_package), "lumi")
    assert verdict.link == "gcd_between_packages" and verdict.peak_gb_s == 50
    assert verdict.gcds == (0, 4) and verdict.packages == (0, 2)


def test_physical_gcds_come_from_bus_ids_not_from_the_jobs_device_numbers():
    # in a small-g job both ranks may say "device 0"/"device 1" whatever GCDs they got; the bus id tells
    shifted = SMALL_G_PAIR.replace("[0000:c1:00]", "[0000:d9:00]").replace("[0000:c6:00]", "[0000:de:00]")
    assert gcds_of(parse_collbench(shifted), "lumi") == {0: 6, 1: 7}
    assert link_for(parse_collbench(shifted), "lumi").packages == (3,)


def test_new_layout_two_nodes_and_na_wrong_columns():
    bench = parse_collbench(TWO_NODES_NEW_LAYOUT)
    assert bench.test == "all_reduce_perf" and bench.nodes == 2
    assert [r.wrong for r in bench.rows] == [None, None]
    assert bench.rows[1].busbw == 19.17 and bench.rows[1].in_busbw == 19.17
    verdict = link_for(bench, "lumi")
    assert verdict.link == "slingshot_nic" and verdict.peak_gb_s == 25  # one GCD per node: one NIC
    assert "1 per node" in verdict.reason


def test_busbw_is_checked_against_algbw_times_the_collective_factor():
    assert check_busbw(parse_collbench(SMALL_G_PAIR, "all_reduce_perf.txt")) == []  # 2 ranks: factor 1
    edited = SMALL_G_PAIR.replace("122.02  122.02      0   2210.0", "122.02  150.00      0   2210.0")
    (complaint,) = check_busbw(parse_collbench(edited, "all_reduce_perf.txt"))
    assert complaint.startswith("268435456 bytes: busbw 150")


def test_generated_outputs_say_so_and_read_back():
    text = synthesize((0, 2), site="lumi")
    assert is_generated(text) and text.startswith("# lumikit: GENERATED")
    bench = parse_collbench(text)
    assert is_generated(bench) and "generated" in bench.notes
    assert link_for(bench, "lumi").link == "gcd_between_packages"
    assert check_busbw(bench) == []
    assert not is_generated(parse_collbench(SMALL_G_PAIR))


@pytest.mark.parametrize("text", ["", "hello\n", "# size count type time algbw busbw\n", "\x00" * 64,
                                  "#  size count type redop root time algbw busbw #wrong\n  1e400 2 float sum -1\n"])
def test_text_without_a_table_is_refused_by_name(text):
    with pytest.raises(ParseError, match="no rccl-tests"):
        parse_collbench(text, "bad.txt")


def test_hostile_files_are_refused_without_reading_them(tmp_path):
    fifo = tmp_path / "fifo"
    import os
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", tmp_path):
        with pytest.raises(LumikitError):
            read_collbench(path)
    with pytest.raises(LumikitError, match="no such file"):
        read_collbench(tmp_path / "missing.txt")


def test_cli_prints_the_table_and_the_link_and_json_holds_them(tmp_path):
    out = tmp_path / "all_reduce_perf.out"
    out.write_text(SMALL_G_PAIR)
    run = [sys.executable, "-m", "lumikit", "logs", "rccl-tests", str(out)]
    text = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "peak busbw 122.02 GB/s" in text.stdout and "gcd_in_package (200 GB/s" in text.stdout
    data = json.loads(subprocess.run(run + ["--json"], capture_output=True, text=True, timeout=120).stdout)
    assert data["link"]["link"] == "gcd_in_package" and data["peak_busbw"] == 122.02
    assert len(data["rows"]) == 5 and data["inconsistent_rows"] == []
    bad = subprocess.run([sys.executable, "-m", "lumikit", "logs", "rccl-tests", "/dev/zero"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "not a regular file" in bad.stderr


def test_devices_of_another_machine_get_no_lumi_link():
    # the bus ids of another machine (an 8-GPU MI300X node prints 0000:05:00.0, 0000:25:00.0, ...) are no LUMI GCDs
    other = TWO_NODES_NEW_LAYOUT.replace("[0000:d1:00.0] AMD Instinct MI250X", "[0000:05:00.0] AMD Instinct MI300X")
    verdict = link_for(parse_collbench(other), "lumi")
    assert verdict.link is None and verdict.fraction is None
    assert "not GCDs of this site" in verdict.text()


# ROCm's rccl-tests prints no "Collective test starting" line and no Group column (ROCm/rccl-tests src/common.cu,
# run()); written from that printing, numbers made up: 4 ranks on GCDs 0-3 of one node, all_reduce (factor 1.5).
ROCM_FOUR_GCDS = """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:0000000
# Using devices
#   Rank  0 Pid  41001 on  nid005001 device  0 [0000:c1:00.0] AMD Instinct MI250X
#   Rank  1 Pid  41002 on  nid005001 device  1 [0000:c6:00.0] AMD Instinct MI250X
#   Rank  2 Pid  41003 on  nid005001 device  2 [0000:c9:00.0] AMD Instinct MI250X
#   Rank  3 Pid  41004 on  nid005001 device  3 [0000:ce:00.0] AMD Instinct MI250X
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    52.43   20.00   30.00      0    52.43   20.00   30.00      0
     4194304       1048576     float     sum      -1    44.74   93.75  140.63      0    44.74   93.75  140.63      0
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 85.315
#
"""


def test_rocm_output_names_its_test_from_the_table_and_is_checked():
    bench = parse_collbench(ROCM_FOUR_GCDS, "slurm-123.out")
    assert (bench.test, bench.test_from) == ("all_reduce_perf", "table") and len(bench.ranks) == 4
    assert check_busbw(bench) == []  # 20 x 2(4-1)/4 = 30
    edited = parse_collbench(ROCM_FOUR_GCDS.replace("20.00   30.00      0    52.43", "20.00   35.00      0    52.43"),
                             "slurm-123.out")
    (complaint,) = check_busbw(edited)
    assert complaint == "1048576 bytes: busbw 35 but algbw 20 x 1.500 = 30.00"
    assert any("told by the table" in line for line in describe(bench))


def test_more_than_two_gcds_are_not_held_against_one_link():
    verdict = link_for(parse_collbench(ROCM_FOUR_GCDS, "slurm-123.out"), "lumi")
    assert verdict.link == "gcd_between_packages" and verdict.fraction is None  # 140.63 GB/s is not 281 % of 50
    assert "%" not in verdict.text() and "several links at once" in verdict.text()


def test_other_collectives_are_told_by_reduction_root_and_bytes_per_element():
    movement = ROCM_FOUR_GCDS.replace("262144     float     sum", " 65536     float    none").replace(
        "1048576     float     sum", " 262144     float    none")  # per-rank counts: size = 4 x count x 4 bytes
    assert parse_collbench(movement, "x.out").test == "all_gather_perf or alltoall_perf"
    broadcast = ROCM_FOUR_GCDS.replace("float     sum      -1", "float    none       0")
    assert parse_collbench(broadcast, "x.out").test == "broadcast_perf"
    mixed = ROCM_FOUR_GCDS.replace("262144     float     sum", "262144     float    none")
    bench = parse_collbench(mixed, "x.out")
    assert bench.test is None and "not named" in " ".join(describe(bench))
    assert any(line.startswith("  busbw check: skipped (the test is not named") for line in describe(bench))


def test_cpu_time_output_reads_with_a_note():
    cpu = ROCM_FOUR_GCDS.replace("    time   algbw", " cputime   algbw")
    bench = parse_collbench(cpu, "all_reduce_perf.out")
    assert bench.time_column == "cputime" and [r.time_us for r in bench.rows] == [52.43, 44.74]
    assert any("host's launch time" in n for n in bench.notes)


def test_in_place_only_output_is_labelled_in_place():
    only = "\n".join(line for line in ROCM_FOUR_GCDS.splitlines() if "out-of-place" not in line) + "\n"
    only = only.replace("#wrong     time   algbw   busbw #wrong", "#wrong").replace(
        "      0    52.43   20.00   30.00      0", "      0").replace("      0    44.74   93.75  140.63      0", "      0")
    only = only.replace("#\n#       size", "#                                                                 in-place\n"
                                            "#       size", 1)
    bench = parse_collbench(only, "all_reduce_perf.out")
    assert bench.placement == "in-place" and bench.rows[1].busbw is None and bench.rows[1].in_busbw == 140.63
    assert bench.peak_busbw == 140.63 and "(in-place)" in describe(bench)[1]


def test_wrong_results_are_shown_and_fail_the_command(tmp_path):
    bad = ROCM_FOUR_GCDS.replace("140.63      0    44.74", "140.63     12*   44.74").replace(
        "values : 0 OK", "values : 1 FAILED")
    bench = parse_collbench(bad, "all_reduce_perf.out")
    assert bench.failed and [r.size_bytes for r in bench.wrong_rows] == [4194304] and bench.rows[1].wrong == 12
    assert "  WRONG RESULTS at 4,194,304 bytes: #wrong 12 out-of-place" in describe(bench)
    out = tmp_path / "all_reduce_perf.out"
    out.write_text(bad)
    run = subprocess.run([sys.executable, "-m", "lumikit", "logs", "rccl-tests", str(out)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and "<- wrong results" in run.stdout
    data = subprocess.run([sys.executable, "-m", "lumikit", "logs", "rccl-tests", str(out), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert data.returncode == 1 and json.loads(data.stdout)["wrong_sizes"] == [4194304]
    slow = parse_collbench(ROCM_FOUR_GCDS.replace("85.315", "85.315 FAILED"), "all_reduce_perf.out")
    assert slow.avg_failed and slow.failed


def test_report_files_of_rccl_tests_read_too():
    # -x FILE -Z csv / -Z json (ROCm/rccl-tests src/common.cu, class Reporter); values made up
    csv_text = ("collective, ranks, rankspernode, gpusperrank, size, type, redop, inplace, time, algbw, busbw, #wrong\n"
                "AllReduce, 4, 4, 1, 1048576, float, sum, 0, 52.43, 20, 30, 0\n"
                "AllReduce, 4, 4, 1, 1048576, float, sum, 1, 52.43, 20, 30, 3\n")
    bench = parse_collbench(csv_text, "report.csv")
    assert (bench.test, bench.n_ranks, bench.rows[0].busbw, bench.rows[0].in_wrong) == ("all_reduce_perf", 4, 30.0, 3)
    assert bench.failed and check_busbw(bench) == []
    json_text = ('{"name":AllReduce, "nodes":1, "ranks":4, "ranksPerNode":4, "gpusPerRank":1, "size":1048576, '
                 '"type":float, "redop":sum, "inPlace":0, "time":52.43, "algBw":20, "busBw":35, "wrong":N/A}\n')
    bench = parse_collbench(json_text, "report.json")
    assert bench.rows[0].busbw == 35.0 and bench.rows[0].wrong is None and not bench.failed
    assert check_busbw(bench) == ["1048576 bytes: busbw 35 but algbw 20 x 1.500 = 30.00"]


@pytest.mark.parametrize("change", [("Rank  0 Pid", "Rank  " + "9" * 5000 + " Pid"), ("85.315", "8.5.3.1"),
                                    ("values : 0", "values : " + "9" * 5000), ("1048576        262144",
                                                                               "9" * 5000 + " " + "9" * 5000)])
def test_hostile_numbers_never_crash(change):
    bench = parse_collbench(ROCM_FOUR_GCDS.replace(*change), "all_reduce_perf.out")
    assert bench.rows and json.dumps(bench.to_dict())


# NVIDIA nccl-tests 2.19 (NVIDIA/nccl-tests src/util.cu, writeDeviceReport and writeBenchmarkLine*): a version line,
# per-iteration columns (-I), time stamps at the end of a row; written from that printing, numbers made up.
NCCL_PER_ITERATION = """\
# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
# Per-Iteration Report: CUDA event timing; i_* uses max over process rows 
#
# Using devices
#  Rank  0 Group  0 Pid  51001 on   gpuhost1 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  51002 on   gpuhost1 device  1 [0000:43:00] NVIDIA H100 80GB HBM3
#
#                                                   out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%) %Y-%m-%d %H:%M:%S
     1048576        262144     float     sum      -1    20.00   52.43   52.43       0    19.50    21.00    20.90     1.50    20.10   52.17   52.17       0    19.60    21.10    21.00     1.60 2025-11-25 12:00:01
     2097152        524288     float     sum      -1    30.00   69.91   69.91       0    29.50    31.00    30.90     1.10    30.20   69.44   69.44       3    29.60    31.10    31.00     1.20 2025-11-25 12:00:02
# Out of bounds values : 1 FAILED
# Avg bus bandwidth    : 61.0
#
# Collective test concluded: all_reduce_perf
"""


def test_nvidia_per_iteration_columns_and_time_stamps_read_by_name():
    bench = parse_collbench(NCCL_PER_ITERATION, "slurm-9.out")
    assert (bench.test, bench.test_from, len(bench.rows)) == ("all_reduce_perf", "output", 2)
    last = bench.rows[1]
    assert (last.time_us, last.busbw, last.wrong, last.in_time_us, last.in_busbw, last.in_wrong) == (
        30.0, 69.91, 0, 30.2, 69.44, 3)
    assert bench.failed and check_busbw(bench) == []


def test_a_replayed_trace_leaves_out_of_place_blank_and_reads_as_in_place():
    blank = " " * 32  # nccl-tests writeBenchMarkLineNullBody
    replay = SMALL_G_PAIR.replace("-1    40.00   26.21   26.21      0", "-1" + blank).replace(
        "-1    80.00   52.43   52.43      0", "-1" + blank)
    rows = [line for line in replay.splitlines() if line.strip().startswith(("1048576", "4194304"))]
    assert all(len(r.split()) == 9 for r in rows)
    bench = parse_collbench(replay, "all_reduce_perf.out")
    assert bench.rows[0].busbw is None and bench.rows[0].in_busbw == 25.58 and bench.rows[2].busbw == 83.89


def test_the_nvidia_json_output_file_reads_as_the_table():
    report = {"version": 1, "args": ["/opt/nccl-tests/build/all_reduce_perf", "-b", "1M", "-J", "out.json"],
              "config": {"nthreads": 1, "ngpus": 1},
              "devices": [{"rank": r, "group": 0, "pid": 51001 + r, "hostname": "nid005001", "device": r,
                           "device_hex": bus, "device_info": "AMD Instinct MI250X"}
                          for r, bus in ((0, "0000:c1:00"), (1, "0000:c6:00"))],
              "results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum", "root": "    -1",
                           "out_of_place": {"time": 40.0, "alg_bw": 26.21, "bus_bw": 26.21, "nwrong": 0.0},
                           "in_place": {"time": 41.0, "alg_bw": 25.58, "bus_bw": 25.58, "nwrong": None},
                           "actual_iterations": 20, "experiment_name": ""}],
              "out_of_bounds": {"count": 0, "okay": "true"},
              "average_bus_bandwidth": {"bandwidth": 25.9, "okay": "unchecked"}}
    bench = parse_collbench(json.dumps(report), "out.json")
    assert (bench.test, bench.n_ranks, bench.rows[0].busbw, bench.rows[0].in_wrong, bench.avg_busbw) == (
        "all_reduce_perf", 2, 26.21, None, 25.9)
    assert not bench.failed and link_for(bench, "lumi").link == "gcd_in_package"
    with pytest.raises(ParseError, match="nested more than"):
        parse_collbench('{"results": ' + "[" * 1000 + "]" * 1000 + "}", "deep.json")
