"""The same generated steps read as a Kineto trace and as the rocpd database rocprofv3 would have written for them
(:func:`lumikit.testing.kineto_to_rocpd.kineto_to_rocpd`: HIP calls with their stream arguments, kernels, copies; no
CPU ops). The GPU side of the critical path must be the same; the whole path differs only by the host work that a
database never records, which shows as gaps between the HIP calls of the launching thread."""
from __future__ import annotations

import numpy as np
import pytest

from lumikit.rocprof.rocpd_events import rocpd_trace
from lumikit.testing.kineto_to_rocpd import kineto_to_rocpd
from lumikit.trace.critical_path import critical_path
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import SynthSpec, sync_chain_events, write_events, write_synthetic

GPU_KINDS = ("gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_launch_overhead",
             "gpu_kernel_kernel_overhead")


def _both(trace_path, tmp_path):
    kineto = critical_path(load_trace(trace_path)[0].columns)
    window = (kineto["window"]["start_us"], kineto["window"]["end_us"])
    db = kineto_to_rocpd(trace_path, tmp_path / "step_results.db", window_us=window)
    trace = rocpd_trace(db)
    return kineto, critical_path(trace[0].columns), trace[0].columns


def test_the_known_answer_step_gives_the_same_path_as_a_database_within_5_percent(tmp_path):
    """The course's generated steps (SynthSpec: 3 steps of 4 layers, copies, a collective): the GPU side of the
    path is identical; the whole path is within 5 % (the 48 µs of data loading are host work rocpd does not see)."""
    (path,) = write_synthetic(tmp_path / "synth", SynthSpec(ranks=1))
    kineto, rocpd, _ = _both(path, tmp_path)
    assert rocpd["path_us"] == pytest.approx(kineto["path_us"], rel=0.05)
    for kind in GPU_KINDS:
        assert rocpd["bound_by_us"][kind] == pytest.approx(kineto["bound_by_us"][kind]), kind
    assert kineto["path_us"] - rocpd["path_us"] == pytest.approx(kineto["bound_by_us"]["data_loading"])


def test_host_work_a_database_does_not_record_shows_as_gaps_between_the_hip_calls(tmp_path):
    """The sync-chain step: 25 µs of CPU ops (aten::mm before the first launch, aten::item after the sync) are on
    the Kineto path and absent from the database, whose path is shorter by exactly that; the same 25 µs are gaps
    between consecutive HIP calls of the thread, which a `host_untraced` category can count."""
    write_events(tmp_path / "chain.json", sync_chain_events("rocm"))
    kineto, rocpd, cols = _both(tmp_path / "chain.json", tmp_path)
    for kind in GPU_KINDS:
        assert rocpd["bound_by_us"][kind] == pytest.approx(kineto["bound_by_us"][kind]), kind
    assert kineto["path_us"] - rocpd["path_us"] == pytest.approx(kineto["bound_by_us"]["cpu_bound"]) == 25.0
    host = cols["cat"] == cols.labels["cat"].index("cuda_runtime")
    ts, end = cols["ts"][host], cols["ts"][host] + cols["dur"][host]
    gaps = ts[1:] - np.maximum.accumulate(end)[:-1]
    assert gaps[gaps > 0].sum() >= 25.0
