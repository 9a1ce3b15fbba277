"""Analyses on hand-written traces with known answers, and on generated ROCm/CUDA runs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.loader import load_trace
from lumikit.trace.metrics import intersection_length, merge_intervals
from lumikit.trace.synth import event as x
from lumikit.trace.synth import lost_launch_events, unlaunched_work_events, write_events


@pytest.fixture()
def small(tmp_path) -> TraceAnalyzer:
    """One step [0, 100) on the host; GPU (stream 0, ROCm style): compute [10,20) and [15,25), comm [30,40)
    overlapping compute [35,45), a memcpy [50,55); launches via HIP names with known host times."""
    ev = [
        x("ProfilerStep#3", "user_annotation", 0, 100),
        x("hipLaunchKernel", "cuda_runtime", 1, 2, stream="0x0", correlation=1),
        x("hipExtModuleLaunchKernel", "cuda_runtime", 12, 2, stream="0x0", correlation=2),
        x("hipLaunchKernel", "cuda_runtime", 20, 2, stream="0x0", correlation=3),
        x("hipModuleLaunchKernel", "cuda_runtime", 21, 2, stream="0x0", correlation=4),
        x("hipMemcpyAsync", "cuda_runtime", 48, 1, stream="0x0", correlation=5),
        x("Cijk_Alik_gemm", "kernel", 10, 10, pid=2, tid=0, stream=0, correlation=1),
        x("elementwise_kernel", "kernel", 15, 10, pid=2, tid=1, stream=1, correlation=2),
        x("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "kernel", 30, 10, pid=2, tid=2, stream=2,
          correlation=3),
        x("Cijk_Alik_gemm", "kernel", 35, 10, pid=2, tid=0, stream=0, correlation=4),
        x("Memcpy HtoD (Host -> Device)", "gpu_memcpy", 50, 5, pid=2, tid=0, stream=0, correlation=5),
        x("hipDeviceSynchronize", "cuda_runtime", 60, 1),
    ]
    return TraceAnalyzer(load_trace(write_events(tmp_path / "t.json", ev)))


def test_intervals_merge_and_intersect():
    s, e = merge_intervals(np.array([0.0, 5, 20]), np.array([10.0, 12, 30]))
    assert s.tolist() == [0, 20] and e.tolist() == [12, 30]
    assert intersection_length((np.array([0.0]), np.array([10.0])), (np.array([5.0]), np.array([20.0]))) == 5


def test_temporal_breakdown_uses_the_gpu_span(small):
    t = small.get_temporal_breakdown().iloc[0]
    # span 10..55 = 45; busy = [10,25) + [30,45) + [50,55) = 35; compute = [10,25) + [35,45) = 25
    assert t["span_us"] == 45 and t["idle_us"] == 10 and t["compute_us"] == 25 and t["non_compute_us"] == 10
    assert t["idle_fraction"] == pytest.approx(10 / 45)


def test_comm_comp_overlap(small):
    assert small.get_comm_comp_overlap()["overlap"].tolist() == [0.5]  # comm [30,40) meets compute from 35


def test_kernel_breakdown_by_class(small):
    k = small.get_kernel_breakdown().set_index("kclass")
    assert k.loc["compute", "total_us"] == 30 and k.loc["communication", "total_us"] == 10
    assert k.loc["memory", "count"] == 1 and k.loc["compute", "count"] == 3
    top = small.get_top_kernels(1).iloc[0]
    assert (top["name"], top["count"], top["total_us"]) == ("Cijk_Alik_gemm", 2, 20)


def test_stream_zero_kernels_belong_to_their_step(small):
    gpu = small.gpu(0)
    assert (gpu["step"] == 3).all() and (gpu[gpu["stream"] == 0]["kclass"] == "compute").sum() == 2
    steps = small.get_step_times().iloc[0]
    assert steps["gpu_activities"] == 5 and steps["gpu_busy_us"] == 35


def test_launch_delays_join_hip_launches_by_correlation(small):
    d = small.get_kernel_launch_delays().set_index("launch_name")
    assert set(d.index) == {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "hipMemcpyAsync"}
    # gemm launched at 1..3, starts at 10: 7 µs; hipModuleLaunchKernel 21..23 -> 35: 12 µs
    assert d.loc["hipModuleLaunchKernel", "launch_delay"] == 12
    assert sorted(d["launch_delay"]) == [1, 1, 7, 8, 12]


def test_idle_breakdown_host_wait_kernel_wait_other(tmp_path):
    ev = [
        x("cudaLaunchKernel", "cuda_runtime", 0, 1, correlation=1),
        x("cudaLaunchKernel", "cuda_runtime", 2, 1, correlation=2),   # queued early: gap is kernel wait
        x("cudaLaunchKernel", "cuda_runtime", 60, 1, correlation=3),  # host late: host wait
        x("k1", "kernel", 5, 10, pid=0, tid=7, stream=7, correlation=1),
        x("k2", "kernel", 20, 10, pid=0, tid=7, stream=7, correlation=2),
        x("k3", "kernel", 70, 10, pid=0, tid=7, stream=7, correlation=3),
        x("k4", "kernel", 200, 10, pid=0, tid=7, stream=7),  # no launch found, long gap: other
    ]
    a = TraceAnalyzer(load_trace(write_events(tmp_path / "t.json", ev)))
    row = a.get_idle_time_breakdown().iloc[0]
    assert (row["kernel_wait_us"], row["host_wait_us"], row["other_us"]) == (5, 40, 120)


def test_generated_rocm_run(rocm_run):
    a = TraceAnalyzer.from_path(rocm_run)
    assert a.get_profiler_steps() == [10, 11, 12, 13]
    for r in a.ranks:
        gpu = a.gpu(r)
        assert (gpu["step"] >= 10).all()  # every GPU activity, stream 0 included, has its step
        assert set(gpu["stream"]) == {0, 2}
        assert set(gpu["launch_name"]) >= {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel"}
    assert a.get_straggler() == 1
    s = a.get_stragglers().set_index("rank")
    assert s.loc[0, "mean_comm_us"] > s.loc[1, "mean_comm_us"]  # rank 0 waits in the all-reduce for rank 1


def test_steps_from_the_launch_when_the_gpu_has_no_step_annotation(cuda_run):
    a = TraceAnalyzer.from_path(cuda_run)
    gpu = a.gpu(0)
    assert sorted(gpu["step"].unique()) == [10, 11, 12]
    assert set(gpu["stream"]) == {7, 20}
    per_step = gpu.groupby("step").size()
    assert per_step.nunique() == 1  # identical steps, identical counts


def test_summary_is_json_ready(rocm_run):
    import json

    s = TraceAnalyzer.from_path(rocm_run).summary(top=3)
    text = json.dumps(s)
    r0 = s["ranks"]["0"]
    assert [x["step"] for x in r0["steps"]] == [10, 11, 12, 13]
    assert r0["kernel_time_us"]["compute"] > 0 and len(r0["top_kernels"]) == 3
    t = r0["temporal"]
    assert math.isclose(t["idle"] + t["compute"] + t["non_compute"], 1.0, abs_tol=1e-3)
    assert s["straggler"] == 1 and "NaN" not in text


def test_data_parallel_is_measured_per_device_and_warns(tmp_path):
    """One process, two GCDs: GCD 1 is idle 90 % of the time; a union of both would say 0 % idle."""
    from lumikit.trace.synth import data_parallel_events

    path = write_events(tmp_path / "dp.json", data_parallel_events(steps=4, busy=(1.0, 0.1)))
    a = TraceAnalyzer(load_trace(path), include_last_step=True)
    with pytest.warns(UserWarning, match="drove 2 GPU devices"):
        t = a.get_temporal_breakdown().set_index("device")
    assert a.devices(0) == [0, 1]
    assert t.loc[0, "idle_fraction"] == pytest.approx(0.0, abs=0.001)
    assert t.loc[1, "idle_fraction"] == pytest.approx(0.9, abs=0.01)
    s = a.summary()["ranks"]["0"]
    assert s["temporal"] is None and s["devices"]["1"]["temporal"]["idle"] == pytest.approx(0.9, abs=0.01)
    assert "drove 2 GPU devices" in s["warnings"][0]


def test_the_last_step_is_left_out_as_hta_does_unless_asked(rocm_run):
    a = TraceAnalyzer.from_path(rocm_run)
    assert a.dropped_step(0) == 13
    assert (a.window(0)["step"] < 13).all() and (a.gpu(0)["step"] == 13).any()
    s = a.summary()
    assert s["ranks"]["0"]["dropped_step"] == 13 and "left out, as HTA does" in s["window"]
    assert [x["analysed"] for x in s["ranks"]["0"]["steps"]] == [True, True, True, False]
    every = TraceAnalyzer.from_path(rocm_run, include_last_step=True)
    assert every.dropped_step(0) is None and len(every.window(0)) == len(every.gpu(0))
    assert every.get_kernel_breakdown()["total_us"].sum() > a.get_kernel_breakdown()["total_us"].sum()


def test_overlapping_gpu_step_spans_give_a_kernel_to_the_step_that_launched_it(tmp_path):
    ev = [
        x("ProfilerStep#1", "user_annotation", 0, 100), x("ProfilerStep#2", "user_annotation", 100, 100),
        x("ProfilerStep#1", "gpu_user_annotation", 10, 130, pid=2, tid=0),   # step 1's GPU work runs until 140
        x("ProfilerStep#2", "gpu_user_annotation", 120, 80, pid=2, tid=0),   # step 2's starts at 120
        x("hipLaunchKernel", "cuda_runtime", 90, 2, correlation=1),          # launched in step 1
        x("hipLaunchKernel", "cuda_runtime", 110, 2, correlation=2),         # launched in step 2
        x("k_late_of_step1", "kernel", 125, 10, pid=2, tid=0, stream=0, correlation=1),
        x("k_first_of_step2", "kernel", 136, 10, pid=2, tid=0, stream=0, correlation=2),
        x("k_unlaunched", "kernel", 130, 1, pid=2, tid=0, stream=0),         # no launch: the earlier span
    ]
    gpu = TraceAnalyzer(load_trace(write_events(tmp_path / "t.json", ev))).gpu(0).set_index("name")
    assert gpu.loc["k_late_of_step1", "step"] == 1
    assert gpu.loc["k_first_of_step2", "step"] == 2
    assert gpu.loc["k_unlaunched", "step"] == 1


def test_negative_launch_delays_are_kept_and_counted(tmp_path):
    ev = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("hipLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
        x("hipLaunchKernel", "cuda_runtime", 30, 5, correlation=2),
        x("k1", "kernel", 12, 4, pid=2, tid=0, stream=0, correlation=1),  # starts before its launch returns: -3
        x("k2", "kernel", 40, 4, pid=2, tid=0, stream=0, correlation=2),  # +5
    ]
    a = TraceAnalyzer(load_trace(write_events(tmp_path / "t.json", ev)))
    assert sorted(a.get_kernel_launch_delays()["launch_delay"]) == [-3, 5]
    delays = a.summary()["ranks"]["0"]["launch_delays"]
    assert (delays["negative"], delays["min_us"], delays["count"]) == (1, -3, 2)
    assert delays["before_call"] == 0  # k1 started inside its call (10-15), not before it began


def test_work_that_starts_before_its_call_began_is_counted_apart(tmp_path, capsys):
    from lumikit.cli import main

    ev = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("hipMemcpyWithStream", "cuda_runtime", 10, 50, correlation=1),  # synchronous: returns after its copy
        x("hipLaunchKernel", "cuda_runtime", 70, 5, correlation=2),
        x("Memcpy DtoH (Device -> Host)", "gpu_memcpy", 20, 30, pid=2, tid=0, stream=0, correlation=1),  # -40
        x("k2", "kernel", 68, 4, pid=2, tid=0, stream=0, correlation=2),  # starts before its call began: -7
    ]
    path = write_events(tmp_path / "t.json", ev)
    delays = TraceAnalyzer.from_path(path).summary()["ranks"]["0"]["launch_delays"]
    assert (delays["negative"], delays["before_call"]) == (2, 1)
    assert main(["trace", "summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 negative" in out and "before its launch call returned" in out and "skew" not in out
    assert "1 of them started before their call even began" in out


@pytest.mark.parametrize("seed", range(5))
def test_launch_delay_quantiles_equal_numpys(seed):
    from lumikit.trace.analyses import median, quantile

    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 10, 101, 1000):
        values = rng.normal(5, 20, n).round(3)
        assert quantile(np.sort(values), 0.95) == np.percentile(values, 95)
        assert median(np.sort(values)) == np.median(values)
    assert math.isnan(median(np.array([1.0, np.nan]))) and math.isnan(quantile(np.array([np.nan]), 0.5))


def test_the_summary_command_runs_without_pandas(rocm_run):
    """`lumikit trace summary` computes on numpy columns: a fresh process never pays pandas' import (0.2-0.5 s)."""
    import json
    import subprocess
    import sys

    code = ("import sys; from lumikit.cli import main; rc = main(['trace', 'summary', '--json', sys.argv[1]]); "
            "print('PANDAS' if 'pandas' in sys.modules else 'NO PANDAS', file=sys.stderr); sys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code, str(rocm_run)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().endswith("NO PANDAS")
    summary = json.loads(run.stdout)
    assert summary == json.loads(json.dumps(TraceAnalyzer.from_path(rocm_run).summary()))  # the same numbers


def test_kernel_union_stays_within_their_sum_on_nanosecond_epoch_timestamps(tmp_path):
    # Generated: 400 kernels of 1.2 µs, 3 µs apart, at a nanosecond-precise epoch time (µs since 1970, as Kineto
    # writes). In float64 such times sit on a 0.25 µs grid; ends computed there (ts + 1.2 -> ts + 1.25) used to
    # make the union of the kernels longer than their durations add up to.
    base = 1_732_000_000_123_456.789
    events = [x("ProfilerStep#1", "user_annotation", base - 10, 2000, pid=100)]
    for i in range(400):
        ts = base + i * 3.0
        events.append(x("hipLaunchKernel", "cuda_runtime", ts - 5, 1, pid=100, correlation=i + 1))
        events.append(x("Cijk_gemm", "kernel", ts, 1.2, pid=0, tid=0, correlation=i + 1, stream=0, device=0))
    a = TraceAnalyzer.from_path(write_events(tmp_path / "epoch.json", events))
    temporal = a.summary()["ranks"]["0"]["temporal"]
    gpu = a.gpu(0)
    total = float(gpu["dur"].sum())
    from lumikit.trace.metrics import temporal_breakdown
    breakdown = temporal_breakdown(gpu)
    assert total == pytest.approx(480.0)
    assert breakdown["compute_us"] <= total + 1e-6
    assert breakdown["compute_us"] == pytest.approx(total, abs=1e-6)  # no overlaps: the union is the sum
    assert temporal["compute"] == pytest.approx(480.0 / breakdown["span_us"], abs=1e-4)
    # idle by stream too: 399 gaps of 3 - 1.2 = 1.8 µs, each queued early (kernel wait), not 1.75 on the grid
    idle = a.get_idle_time_breakdown().iloc[0]
    assert idle["kernel_wait_us"] == pytest.approx(399 * 1.8, abs=1e-6)
    assert idle["kernel_wait_us"] == pytest.approx(breakdown["idle_us"], abs=1e-6)


def test_gpu_work_before_the_first_step_without_its_launch_is_left_out(tmp_path):
    # Generated: two kernels still running from before the profiler started (their launches are not in the trace)
    # and three steps of three launched kernels each. HTA drops unlaunched work; the defaults do too.
    path = write_events(tmp_path / "warm.json", unlaunched_work_events())
    default = TraceAnalyzer.from_path(path).summary()
    assert default["ranks"]["0"]["temporal"]["span_us"] == 1250.0  # steps 1 and 2 only
    assert "launch call is not in the trace" in default["window"] and "wherever it runs" in default["window"]
    every = TraceAnalyzer.from_path(path, include_last_step=True).summary()["ranks"]["0"]["temporal"]
    assert every["span_us"] == 2250.0


def test_gpu_work_without_its_launch_is_left_out_inside_the_steps_too(tmp_path):
    # Generated: as above, plus a 200 us kernel inside step 2 whose launch is not in the trace. HTA keeps only
    # work whose correlation matches a host call, wherever it runs; so do the defaults.
    path = write_events(tmp_path / "lost.json", lost_launch_events())
    a = TraceAnalyzer.from_path(path)
    temporal = a.summary()["ranks"]["0"]["temporal"]
    assert temporal["span_us"] == 1250.0
    assert temporal["idle"] == pytest.approx(950.0 / 1250.0)  # six 50 us kernels busy; not 750 / 1250
    assert a.summary()["ranks"]["0"]["gpu_activities_unlaunched"] == 3
    assert len(a.window(0)) == 6 and not a.window(0)["launch_name"].eq("").any()


def test_launches_are_linked_by_external_id_when_correlation_is_missing(tmp_path):
    # Generated, as PyTorch's ROCm traces may be written (chakra#128): no "correlation" anywhere, only the
    # operator's "External id" on its launch calls and on their kernels. One operator launches two kernels.
    events = [x("ProfilerStep#1", "user_annotation", 0, 1000, pid=100),
              x("ProfilerStep#2", "user_annotation", 1000, 1000, pid=100)]
    for step, t0 in ((1, 0), (2, 1000)):
        ext = 10 * step
        events += [x("hipGetDevice", "cuda_runtime", t0 + 5, 1, pid=100, **{"External id": ext}),
                   x("hipLaunchKernel", "cuda_runtime", t0 + 10, 4, pid=100, **{"External id": ext}),
                   x("hipLaunchKernel", "cuda_runtime", t0 + 20, 4, pid=100, **{"External id": ext}),
                   x("Cijk_first", "kernel", t0 + 50, 30, pid=0, tid=0, stream=0, **{"External id": ext}),
                   x("Cijk_second", "kernel", t0 + 90, 30, pid=0, tid=0, stream=0, **{"External id": ext})]
    a = TraceAnalyzer.from_path(write_events(tmp_path / "no_correlation.json", events), include_last_step=True)
    gpu = a.gpu(0)
    assert list(gpu["launch_name"]) == ["hipLaunchKernel"] * 4
    assert list(gpu["launch_ts"]) == [10.0, 20.0, 1010.0, 1020.0]  # n-th kernel of an operator <- n-th launch
    assert list(gpu["step"]) == [1, 1, 2, 2]
    assert list(a.get_kernel_launch_delays()["launch_delay"]) == [36.0, 66.0, 36.0, 66.0]
