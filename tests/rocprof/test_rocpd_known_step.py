"""The same generated steps read as a Kineto trace and as the rocpd database rocprofv3 would have written for them
(:func:`lumikit.testing.kineto_to_rocpd.kineto_to_rocpd`: HIP calls with their stream arguments, kernels, copies; no
CPU ops). The GPU side of the critical path must be the same. Host work between the HIP calls is the database's
``host_untraced`` time (no thread of the process in a call); host work before its first call and after its last is
outside the database's window, and is all the whole path loses."""
from __future__ import annotations

import numpy as np
import pytest

from lumikit.rocprof.rocpd_events import rocpd_trace
from lumikit.testing.kineto_to_rocpd import kineto_to_rocpd
from lumikit.trace.critical_path import critical_path
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import SynthSpec, event, sync_chain_events, write_events, write_synthetic

GPU_KINDS = ("gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_launch_overhead",
             "gpu_kernel_kernel_overhead")


def _both(trace_path, tmp_path):
    kineto = critical_path(load_trace(trace_path)[0].columns)
    window = (kineto["window"]["start_us"], kineto["window"]["end_us"])
    db = kineto_to_rocpd(trace_path, tmp_path / "step_results.db", window_us=window)
    trace = rocpd_trace(db)
    return kineto, critical_path(trace[0].columns), trace[0].columns


def _window_us(result: dict) -> float:
    return result["window"]["end_us"] - result["window"]["start_us"]


def _host_us(result: dict) -> float:
    return sum(result["bound_by_us"][k] for k in ("cpu_bound", "data_loading", "host_untraced"))


def test_the_known_answer_step_gives_the_same_path_as_a_database_within_5_percent(tmp_path):
    """The course's generated steps (SynthSpec: 3 steps of 4 layers, copies, a collective, forward and backward on
    two threads): the GPU side of the path is identical; the whole path is within 5 %, shorter by the host time
    before the first HIP call and after the last (the first step's data loading, the last step's end: 26 µs);
    the data loading and CPU ops between the calls are the database's untraced host time."""
    (path,) = write_synthetic(tmp_path / "synth", SynthSpec(ranks=1))
    kineto, rocpd, _ = _both(path, tmp_path)
    assert rocpd["path_us"] == pytest.approx(kineto["path_us"], rel=0.05)
    for kind in GPU_KINDS:
        assert rocpd["bound_by_us"][kind] == pytest.approx(kineto["bound_by_us"][kind]), kind
    outside = _window_us(kineto) - _window_us(rocpd)
    assert kineto["path_us"] - rocpd["path_us"] == pytest.approx(outside) == 26.0
    assert _host_us(rocpd) + outside == pytest.approx(_host_us(kineto))
    assert rocpd["bound_by_us"]["host_untraced"] > kineto["bound_by_us"]["host_untraced"]


def test_host_work_a_database_does_not_record_is_outside_its_window_or_under_the_gpu_work(tmp_path):
    """The sync-chain step: 50 µs of host time on the Kineto path (5 µs of aten::mm and the step's first 10 µs
    before the first launch, aten::item and the step's end after the sync) lie outside the database's first and
    last HIP call, and are exactly what its path lacks; the 170 µs of gaps between its HIP calls fall while K1-K3
    run, so they are not on its path (no host_untraced)."""
    write_events(tmp_path / "chain.json", sync_chain_events("rocm"))
    kineto, rocpd, cols = _both(tmp_path / "chain.json", tmp_path)
    for kind in GPU_KINDS:
        assert rocpd["bound_by_us"][kind] == pytest.approx(kineto["bound_by_us"][kind]), kind
    outside = _window_us(kineto) - _window_us(rocpd)
    assert kineto["path_us"] - rocpd["path_us"] == pytest.approx(outside) == pytest.approx(_host_us(kineto)) == 50.0
    host = cols["cat"] == cols.labels["cat"].index("cuda_runtime")
    ts, end = cols["ts"][host], cols["ts"][host] + cols["dur"][host]
    gaps = ts[1:] - np.maximum.accumulate(end)[:-1]
    assert gaps[gaps > 0].sum() == pytest.approx(170.0)
    assert rocpd["bound_by_us"]["host_untraced"] == 0.0


def _launch(corr: int, thread: int, ts: float, stream: int, kernel_ts: float, kernel_us: float) -> list[dict]:
    return [event("hipLaunchKernel", "cuda_runtime", ts, 5, pid=100, tid=thread, correlation=corr),
            event(f"K{corr}", "kernel", kernel_ts, kernel_us, pid=0, tid=stream, stream=stream, device=0,
                  correlation=corr)]


@pytest.mark.parametrize("read_as", ["kineto", "rocpd"])
def test_two_launching_threads_share_the_untraced_host_time(tmp_path, read_as):
    """Only HIP calls and kernels, on two threads of one process (no CPU ops, no annotations). Thread 2 launches K0
    (0-5 µs) and, 225 µs later, K3 (230-235 µs, K3 runs 240-250); between them thread 1 launches K1 (10-15, K1 runs
    20-220 µs) and waits in hipStreamSynchronize until it ends (20-225 µs). The step waited on K1: the path is
    thread 2's first call (5), 5 µs in no call, K1's launch (10) and K1 (200), 5 µs in no call, K3's launch (10) and
    K3 (10): 245 µs, of which 10 untraced. Thread 2's 225 µs gap is waiting, not host work."""
    events = (_launch(0, 2, 0, 1, 10, 10) + _launch(1, 1, 10, 0, 20, 200)
              + [event("hipStreamSynchronize", "cuda_runtime", 20, 205, pid=100, tid=1, correlation=9)]
              + _launch(3, 2, 230, 1, 240, 10))
    path = write_events(tmp_path / "two_threads.json", sorted(events, key=lambda e: e["ts"]))
    trace = load_trace(path) if read_as == "kineto" else rocpd_trace(kineto_to_rocpd(path, tmp_path / "two.db"))
    result = critical_path(trace[0].columns)
    assert result["path_us"] == pytest.approx(245.0)
    assert {k: v for k, v in result["bound_by_us"].items() if v} == pytest.approx(
        {"cpu_bound": 5.0, "host_untraced": 10.0, "gpu_kernel_launch_overhead": 20.0, "gpu_compute_bound": 210.0})
    assert [e["name"] for e in result["path_events"] if e["category"] == "gpu_compute_bound"] == ["K1", "K3"]
