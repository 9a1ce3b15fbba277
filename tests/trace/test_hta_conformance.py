"""Cross-check against Holistic Trace Analysis on the real traces in ../shared/fixtures/traces/hta-real.

Where HTA is right, lumikit's numbers equal HTA's within 1 %: both are compared over HTA's window (GPU work
launched before the last ProfilerStep starts; HTA drops the last step) and with HTA's sub-microsecond rounding
turned off (``exact_timestamps=True``). Where HTA is wrong on ROCm, each test says what the value should be and why.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from lumikit.cli import main
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.hta_bridge import trace_analysis
from lumikit.trace.metrics import comm_comp_overlap, idle_breakdown, temporal_breakdown

pytestmark = [pytest.mark.conformance, pytest.mark.filterwarnings("ignore")]

ROCM = "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
NCCL = "nccl_parser_config__nccl_data.json.gz"
SYNC = "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"


@pytest.fixture(scope="module")
def real(shared_fixtures):
    return shared_fixtures / "traces" / "hta-real"


def hta_window(a: TraceAnalyzer, rank: int) -> pd.DataFrame:
    """lumikit's GPU table restricted to what HTA analyses: work launched before the last step begins."""
    gpu, steps = a.gpu(rank), a.steps(rank)
    if steps.empty:
        return gpu
    return gpu[gpu["launch_ts"] < steps["start"].max()]


def hta_temporal(ta) -> pd.DataFrame:
    return ta.get_temporal_breakdown(visualize=False).set_index("rank")


def assert_temporal_matches(ours: dict, theirs: pd.Series) -> None:
    assert ours["span_us"] == pytest.approx(theirs["kernel_time(us)"], rel=0.01)
    assert ours["idle_us"] == pytest.approx(theirs["idle_time(us)"], rel=0.01)
    assert ours["compute_us"] == pytest.approx(theirs["compute_time(us)"], rel=0.01)
    assert ours["non_compute_us"] == pytest.approx(theirs["non_compute_time(us)"], rel=0.01)


def test_acceptance_rocm_kernels_on_stream_0_are_inside_their_step(real, capsys):
    assert main(["trace", "summary", str(real / ROCM), "--json"]) == 0
    rank = json.loads(capsys.readouterr().out)["ranks"]["0"]
    assert rank["streams"] == [0]
    assert rank["gpu_activities"] == rank["gpu_activities_in_steps"] == 16
    step1 = rank["steps"][0]
    assert step1["step"] == 1 and step1["gpu_activities"] == 16
    assert rank["kernel_time_us"]["compute"] == pytest.approx(110.881, abs=0.01)
    assert rank["temporal"]["compute"] > 0


def test_rocm_temporal_breakdown_equals_hta(real):
    ta = trace_analysis(real / ROCM, exact_timestamps=True)
    a = TraceAnalyzer.from_path(real / ROCM)
    assert_temporal_matches(temporal_breakdown(hta_window(a, 0)), hta_temporal(ta).loc[0])


def test_rocm_where_hta_is_wrong(real):
    """HTA on the MI250 ROCm 6.2 trace:

    * every GPU row gets iteration NaN, because HTA assigns steps only to streams > 0 (and < 0 on the host) and
      ROCm runs kernels on stream 0. They should all be in ProfilerStep#1: their launches (hipLaunchKernel,
      hipExtModuleLaunchKernel, hipMemcpyWithStream) lie inside ProfilerStep#1 on the host.
    * its kernel launch statistics are empty, because it only knows CUDA launch names; there should be one row per
      launched activity: 14 kernels and 2 copies, joined to their HIP launch by correlation id.
    * with its default rounding to whole microseconds, compute time drops from 110.881 µs to 96 µs (13 % short):
      each kernel of a few µs loses up to 1 µs. The trace's own durations add up to 110.881 µs.
    """
    a = TraceAnalyzer.from_path(real / ROCM)
    ta = trace_analysis(real / ROCM, exact_timestamps=True)
    df = ta.t.get_trace(0)
    assert df.loc[df["stream"] == 0, "iteration"].isna().all()  # HTA: no iteration for stream 0
    assert (a.gpu(0)["step"] == 1).all()  # lumikit: all 16 in step 1

    assert ta.get_cuda_kernel_launch_stats(visualize=False)[0].empty  # HTA: nothing
    launches = a.get_kernel_launch_delays()
    assert len(launches) == 16
    assert set(launches["launch_name"]) == {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream"}

    rounded = trace_analysis(real / ROCM, exact_timestamps=False)
    assert hta_temporal(rounded).loc[0, "compute_time(us)"] == 96
    assert temporal_breakdown(a.gpu(0))["compute_us"] == pytest.approx(110.881, abs=0.01)


def test_cuda_trace_breakdowns_overlap_idle_and_launch_delays_equal_hta(real):
    ta = trace_analysis(real / NCCL, exact_timestamps=True)
    a = TraceAnalyzer.from_path(real / NCCL)
    window = hta_window(a, 0)
    assert_temporal_matches(temporal_breakdown(window), hta_temporal(ta).loc[0])

    theirs = ta.get_comm_comp_overlap(visualize=False).set_index("rank").loc[0, "comp_comm_overlap_pctg"]
    assert 100 * comm_comp_overlap(window) == pytest.approx(theirs, rel=0.01)

    hta_idle = ta.get_idle_time_breakdown(visualize=False)[0].pivot(index="stream", columns="idle_category",
                                                                     values="idle_time")
    ours = idle_breakdown(window).set_index("stream")
    for stream in (7, 40):
        assert ours.loc[stream, "host_wait_us"] == pytest.approx(hta_idle.loc[stream, "host_wait"], rel=0.01)
        assert ours.loc[stream, "kernel_wait_us"] == pytest.approx(hta_idle.loc[stream, "kernel_wait"] if
                                                                   not np.isnan(hta_idle.loc[stream, "kernel_wait"])
                                                                   else 0.0, rel=0.01, abs=0.01)

    hta_launch = ta.get_cuda_kernel_launch_stats(visualize=False)[0]
    joined = hta_launch.merge(a.get_kernel_launch_delays(), on="correlation", suffixes=("_hta", ""))
    assert len(joined) == len(hta_launch) == 2516
    # HTA clips launch delays at 0; lumikit keeps the negative ones (work that began before its call returned)
    assert np.allclose(joined["launch_delay"].clip(lower=0), joined["launch_delay_hta"], atol=0.01)
    negative = int((joined["launch_delay"] < 0).sum())
    assert negative > 0 and (joined.loc[joined["launch_delay"] < 0, "launch_delay_hta"] == 0).all()
    assert a.summary()["ranks"]["0"]["launch_delays"]["negative"] >= negative
    assert np.allclose(joined["cpu_duration"], joined["cpu_duration_hta"], atol=0.01)


def test_two_ranks_mapped_explicitly_equal_hta(real):
    files = {0: real / "trace_filter__sampled_rank-0.json.gz", 1: real / "trace_filter__sampled_rank-1.json.gz"}
    ta = trace_analysis(real, rank_map=files, exact_timestamps=True)
    assert sorted(ta.t.get_ranks()) == [0, 1]
    a = TraceAnalyzer.from_path(real, rank_map=files)
    theirs = hta_temporal(ta)
    overlap = ta.get_comm_comp_overlap(visualize=False).set_index("rank")["comp_comm_overlap_pctg"]
    summary = a.summary()["ranks"]
    for r in (0, 1):
        assert_temporal_matches(temporal_breakdown(hta_window(a, r)), theirs.loc[r])
        assert 100 * comm_comp_overlap(hta_window(a, r)) == pytest.approx(overlap.loc[r], rel=0.01)
        # the defaults are HTA's: the last step left out (rank 0: idle 53.6 %, overlap 11.8 %, not 55.2 / 14.9)
        idle = theirs.loc[r, "idle_time(us)"] / theirs.loc[r, "kernel_time(us)"]
        assert summary[str(r)]["temporal"]["idle"] == pytest.approx(idle, abs=0.002)
        assert 100 * summary[str(r)]["comm_comp_overlap"] == pytest.approx(overlap.loc[r], abs=0.2)
    assert summary["0"]["temporal"]["idle"] == pytest.approx(0.536, abs=0.001)
    every = TraceAnalyzer.from_path(real, rank_map=files, include_last_step=True).summary()["ranks"]["0"]
    assert (every["temporal"]["idle"], every["comm_comp_overlap"]) == pytest.approx((0.552, 0.1495), abs=0.001)


def test_cuda_sync_rows_are_not_gpu_work(real):
    """HTA's temporal breakdown counts ``cuda_sync`` rows (the host waiting, drawn on a GPU stream) as GPU time:
    on this trace its span is 16 464 339 µs and its non-compute time 39 293 µs. They should be 16 025 575 µs
    (first to last kernel/copy) and 39 088 µs (the memory copies alone): a sync is not work the GPU does, and HTA's
    own idle-time breakdown leaves these rows out. Compute time, which syncs do not touch, agrees."""
    ta = trace_analysis(real / SYNC, exact_timestamps=True)
    theirs = hta_temporal(ta).loc[0]
    ours = temporal_breakdown(TraceAnalyzer.from_path(real / SYNC).gpu(0))
    assert (theirs["kernel_time(us)"], theirs["non_compute_time(us)"]) == (16464339, 39293)
    assert (ours["span_us"], ours["non_compute_us"]) == (16025575, 39088)
    assert ours["compute_us"] == pytest.approx(theirs["compute_time(us)"], rel=0.01)


def test_hta_gets_the_rank_mapping_from_lumikit(tmp_path, rocm_run):
    """Compact JSON ('"rank":1') makes HTA's own discovery put both files on rank 0; the bridge maps them."""
    for f in rocm_run.glob("*.json"):
        doc = json.loads(f.read_text())
        (tmp_path / f.name).write_text(json.dumps(doc, separators=(",", ":")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ta = trace_analysis(tmp_path)
    assert sorted(ta.t.get_ranks()) == [0, 1]


def test_work_before_the_first_step_is_left_out_as_hta_does(tmp_path):
    """Generated trace: kernels still running from before the profiler started (no launch in the trace), then
    three steps. HTA keeps only launched work; lumikit's default window must give HTA's numbers."""
    from lumikit.trace.synth import unlaunched_work_events, write_events

    path = write_events(tmp_path / "warm.json", unlaunched_work_events())
    for include in (False, True):
        ours = TraceAnalyzer.from_path(path, include_last_step=include).summary()["ranks"]["0"]["temporal"]
        theirs = hta_temporal(trace_analysis(path, exact_timestamps=True, include_last_profiler_step=include)).loc[0]
        assert ours["span_us"] == theirs["kernel_time(us)"]
        assert ours["idle"] == pytest.approx(theirs["idle_time_pctg"] / 100, abs=1e-4)


def _hta_idle_share(path, **options) -> float:
    row = hta_temporal(trace_analysis(path, exact_timestamps=True, **options)).iloc[0]
    return float(row["idle_time(us)"] / row["kernel_time(us)"])


@pytest.mark.parametrize("name", [ROCM, NCCL, SYNC, "trace_filter__sampled_rank-0.json.gz",
                                  "trace_filter__sampled_rank-1.json.gz"])
def test_the_default_window_idle_equals_htas_on_every_real_gpu_trace(real, name):
    ours = TraceAnalyzer.from_path(real / name).summary()["ranks"]
    (rank,) = ours.values()
    assert rank["temporal"]["idle"] == pytest.approx(_hta_idle_share(real / name), abs=0.005)


def test_a_real_trace_with_lost_launches_keeps_htas_idle(real, tmp_path):
    """A real CUDA trace (trace_filter rank 0) with every third kernel launch of its first step removed, as when
    the profiler loses launch calls: HTA drops those kernels although they run inside the steps, and the default
    window must too (keeping them moved idle by several points)."""
    import gzip

    import orjson

    doc = orjson.loads(gzip.decompress((real / "trace_filter__sampled_rank-0.json.gz").read_bytes()))
    events = doc["traceEvents"]
    step = next(e for e in events if e.get("name") == "ProfilerStep#551")
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    launches = [e for e in events if e.get("name") == "cudaLaunchKernel" and t0 <= e["ts"] < t1]
    lost = {id(e) for e in launches[::3]}
    doc["traceEvents"] = [e for e in events if id(e) not in lost]
    path = tmp_path / "lost_launches.json"
    path.write_bytes(orjson.dumps(doc))

    a = TraceAnalyzer.from_path(path)
    summary = a.summary()["ranks"]["0"]
    assert summary["gpu_activities_unlaunched"] == len(lost) > 50
    theirs = _hta_idle_share(path)
    assert summary["temporal"]["idle"] == pytest.approx(theirs, abs=0.005)
    gpu, last = a.gpu(0), a.steps(0)["start"].max()  # the old window: lost-launch work kept inside the steps
    old = gpu[(gpu["launch_ts"] < last) | (gpu["launch_ts"].isna() & (gpu["ts"] >= t0) & (gpu["ts"] < last))]
    assert abs(temporal_breakdown(old)["idle_us"] / temporal_breakdown(old)["span_us"] - theirs) > 0.01


def test_the_summary_says_where_its_idle_differs_from_htas_and_why(real, capsys):
    """The one known difference from HTA's temporal breakdown (the cuda_sync rows above) is stated in the summary
    of a trace that has them; a trace without them says nothing."""
    assert main(["trace", "summary", str(real / SYNC)]) == 0
    out = capsys.readouterr().out
    assert "vs HTA: HTA's temporal breakdown counts this trace's" in out and "cuda_sync rows" in out
    assert TraceAnalyzer.from_path(real / ROCM).summary()["ranks"]["0"]["vs_hta"] is None


def test_negative_launch_delays_on_real_traces_start_inside_their_call(real):
    """On the real GPU traces every negative launch delay is work that started after its call began and before it
    returned (a long or synchronous call), never before it began: nothing here looks like clock skew."""
    negative = in_window = 0
    for name in (ROCM, NCCL, SYNC, "trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"):
        a = TraceAnalyzer.from_path(real / name)
        (rank,) = a.ranks
        gpu = a.gpu(rank)
        launched = gpu[gpu["launch_name"] != ""]
        assert (launched["ts"] >= launched["launch_ts"]).all(), name  # none began before its call began
        negative += int((launched["ts"] < launched["launch_ts"] + launched["launch_dur"]).sum())
        delays = a.summary()["ranks"][str(rank)]["launch_delays"]
        assert delays["before_call"] == 0
        in_window += delays["negative"]
    # 2 on ROCm (the synchronous hipMemcpyWithStream), the rest cudaLaunchKernel and cudaMemcpyAsync on CUDA
    assert (negative, in_window) == (320, 133)
