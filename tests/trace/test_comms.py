"""Collectives: sizes from the communication events, nccl-tests' bus bandwidth, LUMI's link speeds."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.site import load_site
from lumikit.trace import TraceAnalyzer, load_trace
from lumikit.trace.comms import bus_bandwidth, collective_of_kernel, collective_summary, collective_table
from lumikit.trace.synth import event as x
from lumikit.trace.synth import write_events

NCCL = "nccl_parser_config__nccl_data.json.gz"


def test_bus_bandwidth_follows_nccl_tests_definitions():
    # 1 GB in 0.1 s = 10 GB/s algorithm bandwidth
    assert bus_bandwidth("all_reduce", 1e9, 0.1, 8) == pytest.approx((10, 10 * 2 * 7 / 8))
    assert bus_bandwidth("all_gather", 1e9, 0.1, 4) == pytest.approx((10, 7.5))
    assert bus_bandwidth("reduce_scatter", 1e9, 0.1, 2) == pytest.approx((10, 5))
    assert bus_bandwidth("broadcast", 1e9, 0.1, 16) == pytest.approx((10, 10))
    assert bus_bandwidth("all_to_all", 1e9, 0.1, 8)[1] == pytest.approx(8.75)
    assert collective_of_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "all_gather"
    assert collective_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == "send_recv"
    assert collective_of_kernel("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)") == "generic"


def test_sizes_from_kernel_args_and_from_the_record_param_comms_around_the_launch(tmp_path):
    ev = [
        # new style: the kernel carries the collective's fields (an all-gather: the output is the whole array)
        x("record_param_comms", "cpu_op", 0, 20, tid=1, **{"Collective name": "_allgather_base"}),
        x("hipLaunchKernel", "cuda_runtime", 5, 2, tid=1, correlation=1),
        x("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "kernel", 10, 1000, pid=0, tid=2, stream=2,
          correlation=1, device=0, **{"Collective name": "_allgather_base", "In msg nelems": 1 << 20,
                                       "Out msg nelems": 8 << 20, "Group size": 8, "dtype": "BFloat16"}),
        # old style: nothing on the kernel; the size is the first input of the record_param_comms around the launch
        x("record_param_comms", "cpu_op", 2000, 20, tid=1, **{"Input Dims": [[1000, 1000], []],
                                                                "Input type": ["float", "Scalar"]}),
        x("hipLaunchKernel", "cuda_runtime", 2005, 2, tid=1, correlation=2),
        x("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "kernel", 2010, 500, pid=0, tid=2, stream=2,
          correlation=2),
    ]
    doc = write_events(tmp_path / "t.json", ev, rank=3)  # world_size 2 in distributedInfo
    table = collective_table(load_trace(doc)).set_index("collective")
    ag = table.loc["all_gather"]
    assert (ag["bytes"], ag["group_size"], ag["dtype"]) == (16 << 20, 8, "BFloat16")
    assert ag["algbw_gb_s"] == pytest.approx((16 << 20) / 1e-3 / 1e9)
    assert ag["busbw_gb_s"] == pytest.approx(ag["algbw_gb_s"] * 7 / 8)
    ar = table.loc["all_reduce"]
    assert (ar["bytes"], ar["group_size"]) == (4_000_000, 2)  # group size from distributedInfo.world_size
    assert ar["busbw_gb_s"] == pytest.approx(4e6 / 500e-6 / 1e9 * 2 * 1 / 2)


def test_collective_bandwidth_of_the_real_nccl_trace(shared_fixtures):
    a = TraceAnalyzer.from_path(shared_fixtures / "traces" / "hta-real" / NCCL)
    table = a.get_collectives()
    assert len(table) == 21 and table["bytes"].notna().all()
    summary = a.get_collective_bandwidth().set_index(["collective", "dtype"])
    ar = summary.loc[("all_reduce", "Float")]
    assert (ar["calls"], ar["group_size"]) == (15, 2)
    # the fastest all-reduce moved 7 875 584 floats in 2 424.415 µs: 12.99 GB/s, a factor 2(n-1)/n = 1 for n = 2
    assert ar["best_busbw_gb_s"] == pytest.approx(7875584 * 4 / 2424.415e-6 / 1e9, rel=1e-6)
    links = load_site("lumi").links
    assert ar["of_slingshot_nic"] == pytest.approx(ar["best_busbw_gb_s"] / links["slingshot_nic"]["gb_s"])
    assert all(link["source"].startswith(("LUMI docs", "AMD")) for link in links.values())


def test_collectives_of_the_real_two_rank_traces_on_the_command_line(shared_fixtures, capsys):
    real = shared_fixtures / "traces" / "hta-real"
    mapping = f"0={real / 'trace_filter__sampled_rank-0.json.gz'},1={real / 'trace_filter__sampled_rank-1.json.gz'}"
    assert main(["trace", "collectives", str(real), "--rank-map", mapping]) == 0
    out = capsys.readouterr().out
    assert "rank 0: 2 x send_recv (unsigned char, group of 2), 838.9 MB" in out
    assert "rank 1: 2 x send_recv (unsigned char, group of 2), 733.8 MB" in out
    assert "% of slingshot nic 25 GB/s" in out and "carry no message size" in out
    assert main(["trace", "collectives", str(real), "--rank-map", mapping, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["per_rank"]
    best = {r["rank"]: r["best_busbw_gb_s"] for r in rows if r["dtype"] == "unsigned char"}
    assert best[0] == pytest.approx(419430400 / 62783e-6 / 1e9) and best[1] == pytest.approx(339738624 / 57924e-6 / 1e9)


def test_a_trace_without_collectives_says_so(rocm_run, tmp_path, capsys):
    path = write_events(tmp_path / "t.json", [x("ProfilerStep#1", "user_annotation", 0, 10)])
    assert main(["trace", "collectives", str(path)]) == 0
    assert "no RCCL/NCCL kernels" in capsys.readouterr().out
    assert collective_summary(collective_table(load_trace(path))).empty
