"""The critical path's stream-wait-event edge where the runtime call carries its stream: the waiting stream is the
argument (the thread's next launch, on another stream, does not fool it), and an argument no GPU work uses falls back
on the launching thread's next work, labelled as inferred."""
from __future__ import annotations

import pytest

from lumikit.trace.critical_path import OTHER_STREAM, critical_path
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import event, write_events


def path_of(tmp_path, wait_stream: str) -> dict:
    """The thread records an event behind a 500 µs kernel on stream 0 and makes stream 1 wait for it, launches a
    short kernel on stream 3, then a copy on stream 1 (the work that waits)."""
    events = [
        event("ProfilerStep#1", "user_annotation", 0, 1000), event("ProfilerStep#2", "user_annotation", 1000, 10),
        event("hipLaunchKernel", "cuda_runtime", 10, 5, correlation=1, stream="0x0"),
        event("long_kernel", "kernel", 20, 500, pid=0, tid=0, stream=0, correlation=1),
        event("hipEventRecord", "cuda_runtime", 20, 2, correlation=2),
        event("hipStreamWaitEvent", "cuda_runtime", 25, 2, correlation=3, stream=wait_stream),
        event("hipLaunchKernel", "cuda_runtime", 28, 2, correlation=4, stream="0x3"),
        event("side_kernel", "kernel", 35, 10, pid=0, tid=3, stream=3, correlation=4),
        event("hipMemcpyAsync", "cuda_runtime", 30, 5, correlation=5, stream="0x1"),
        event("Memcpy DtoD (Device -> Device)", "gpu_memcpy", 525, 50, pid=0, tid=1, stream=1, correlation=5),
        event("hipDeviceSynchronize", "cuda_runtime", 40, 540, correlation=6),
    ]
    # the step's untraced host time (it idles until 1000 µs) is not this file's subject: weigh it as HTA does
    return critical_path(load_trace(write_events(tmp_path / "t.json", events))[0].columns, count_untraced_host=False)


def test_the_waiting_stream_comes_from_the_calls_stream_argument(tmp_path):
    result = path_of(tmp_path, "0x1")
    assert result["path_us"] == pytest.approx(10 + 500 + 50)  # launch delay, kernel, then the copy behind the wait
    assert result["inferred"] == {"hipStreamWaitEvent: event = the matching event record, its thread's last "
                                  "stream, waiting stream = its stream argument": 1}


def test_a_stream_argument_no_gpu_work_uses_falls_back_on_the_threads_next_launch(tmp_path):
    """The fallback takes the side kernel (the thread's next launch) as the waiting work; it started before the
    kernel ended, so no stream-wait edge is drawn. The copy still starts 5 µs after the long kernel on stream 0
    ended, long after its own launch: that wait is found on the other stream (inferred), not launch overhead."""
    result = path_of(tmp_path, "0x7f3a")
    assert result["inferred"] == {OTHER_STREAM: 1}
    assert result["bound_by_us"]["gpu_kernel_launch_overhead"] == pytest.approx(10)  # the long kernel's own launch
    assert result["path_us"] == pytest.approx(10 + 500 + 50)
