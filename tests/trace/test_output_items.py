"""What the trace commands print: calls beside time in `trace diff`, gap positions from the window's start, and what
a window of one step says it left out. Traces generated here, answers known by construction."""
from __future__ import annotations

import json

from lumikit.cli import main
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.diff import describe_diff, trace_diff
from lumikit.trace.synth import event, write_events

COPY = "Memcpy DtoD (Device -> Device)"


def copies_trace(path, copies: int, t0: float = 0.0):
    """Generated: two steps (the second, last, left out); step 1 launches one 300 µs GEMM and ``copies`` 1 µs
    device-to-device copies."""
    host = {"pid": 1, "tid": 1}
    events = [event("ProfilerStep#1", "user_annotation", t0, 20_000, **host),
              event("ProfilerStep#2", "user_annotation", t0 + 20_000, 100, **host),
              event("aten::mm", "cpu_op", t0 + 1, 5, **host),
              event("hipLaunchKernel", "cuda_runtime", t0 + 2, 2, correlation=1, **host),
              event("Cijk_gemm", "kernel", t0 + 10, 300, pid=0, tid=0, stream=0, correlation=1)]
    for i in range(copies):
        ts = t0 + 400 + 4 * i
        events.append(event("aten::copy_", "cpu_op", ts, 3, **host))
        events.append(event("hipMemcpyAsync", "cuda_runtime", ts + 1, 1, correlation=10 + i, **host))
        events.append(event(COPY, "gpu_memcpy", ts + 2, 1, pid=0, tid=0, stream=0, correlation=10 + i))
    return write_events(path, events)


def test_diff_shows_calls_beside_time(tmp_path, capsys):
    a = TraceAnalyzer.from_path(copies_trace(tmp_path / "a.json", 15))
    b = TraceAnalyzer.from_path(copies_trace(tmp_path / "b.json", 3840))
    diff = trace_diff(a, b)
    calls = {s["title"]: {r["name"]: r for r in s["rows"]} for s in diff["sections"]}
    copy = calls["kernels whose calls changed most, per step"][COPY]
    assert (copy["a"], copy["b"]) == (15, 3840)
    beside = calls["kernels that changed most, per step"][COPY]
    assert (beside["a"], beside["b"], beside["calls_a"], beside["calls_b"]) == (15, 3840, 15, 3840)
    ops = calls["CPU ops whose calls changed most, per step"]["aten::copy_"]
    assert (ops["a"], ops["b"]) == (15, 3840)
    assert calls["kernels that changed most, per step"]["Cijk_gemm"]["calls_b"] == 1
    text = "\n".join(describe_diff(diff))
    assert "[15 -> 3,840 calls]" in text
    assert main(["trace", "diff", str(a.trace[0].path), str(b.trace[0].path)]) == 0
    assert "[15 -> 3,840 calls]" in capsys.readouterr().out


def test_gaps_without_a_step_print_from_the_window_start(tmp_path, capsys):
    # Generated, no ProfilerStep, times near 1.7e12 µs (real epoch-based clocks): k1 10-60, k2 160-200, k3 400-420
    t = 1_700_000_000_000.0
    events = []
    for i, (launch, start, dur) in enumerate([(0, 10, 50), (100, 160, 40), (300, 400, 20)], start=1):
        events.append(event("hipLaunchKernel", "cuda_runtime", t + launch, 5, pid=100, tid=1, correlation=i))
        events.append(event(f"k{i}", "kernel", t + start, dur, pid=0, tid=0, stream=0, correlation=i))
    path = write_events(tmp_path / "t.json", events)
    assert main(["trace", "idle", str(path)]) == 0
    out = capsys.readouterr().out
    # the window starts with k1 (10 µs after the first event): the gaps start 50 and 190 µs later
    assert "at +0.190 ms in the window: 0.200 ms" in out and "at +0.050 ms in the window: 0.100 ms" in out
    assert "1700000000" not in out


def test_a_single_step_window_does_not_say_it_left_the_last_step_out(tmp_path, capsys):
    host = {"pid": 1, "tid": 1}
    events = [event("ProfilerStep#5", "user_annotation", 0, 1000, **host),
              event("hipLaunchKernel", "cuda_runtime", 10, 5, correlation=1, **host),
              event("Cijk_gemm", "kernel", 20, 300, pid=0, tid=0, stream=0, correlation=1)]
    path = write_events(tmp_path / "one.json", events)
    analyzer = TraceAnalyzer.from_path(path)
    assert analyzer.dropped_step(0) is None
    for note in (analyzer.window_note(), analyzer.summary()["window"]):
        assert "left out, as HTA does" not in note and "nothing left out" in note
    assert main(["trace", "summary", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "nothing left out" in summary["window"] and summary["ranks"]["0"]["steps"][0]["analysed"]
    # two steps: the last one is left out, and the sentence says so
    two = write_events(tmp_path / "two.json", [*events, event("ProfilerStep#6", "user_annotation", 1000, 10, **host)])
    assert "last ProfilerStep of each rank left out" in TraceAnalyzer.from_path(two).window_note()
