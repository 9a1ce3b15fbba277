"""Before and after (`lumikit trace diff A B`): known changes between generated traces, and real traces."""
from __future__ import annotations

import json
import warnings

import pytest

from lumikit.cli import main
from lumikit.trace import diff as trace_diff_module
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.critical_path import analyzer_critical_path
from lumikit.trace.diff import Section, add_section, describe_diff, section_table, trace_diff
from lumikit.trace.synth import event, idle_causes_events, sync_chain_events, write_events


def steps_trace(path, step_us: list[float], kernels: dict[str, float]):
    """Generated: steps of the given lengths (plus a short last step, left out), each running the given kernels
    (name -> µs) back to back from 10 µs after the step starts, launched at the step's start."""
    host = {"pid": 1, "tid": 1}
    events, t, corr = [], 0.0, 1
    for number, length in enumerate([*step_us, 50.0], start=1):
        events.append(event(f"ProfilerStep#{number}", "user_annotation", t, length, **host))
        start = t + 10
        for name, us in kernels.items():
            events.append(event("hipLaunchKernel", "cuda_runtime", t + corr % 5, 1, correlation=corr, **host))
            events.append(event(name, "kernel", start, us, pid=0, tid=0, stream=0, correlation=corr))
            start += us
            corr += 1
        t += length
    return TraceAnalyzer.from_path(write_events(path, events))


def section(diff: dict, title: str) -> dict[str, dict]:
    (found,) = [s for s in diff["sections"] if s["title"] == title]
    return {row["name"]: row for row in found["rows"]}


def test_step_time_and_kernel_changes_per_step(tmp_path):
    a = steps_trace(tmp_path / "a.json", [1000, 1200, 1100], {"Cijk_gemm": 300.0, "copy_kernel": 20.0})
    b = steps_trace(tmp_path / "b.json", [800, 900, 850, 900], {"Cijk_gemm": 200.0, "elementwise_kernel": 10.0})
    diff = trace_diff(a, b)
    assert (diff["a"]["steps"], diff["b"]["steps"]) == (3, 4)
    steps = section(diff, "step time")
    assert {k: (r["a"], r["b"]) for k, r in steps.items()} == {
        "median": (1100, 875), "p25": (1050, 837.5), "p75": (1150, 900), "min": (1000, 800), "max": (1200, 900)}
    assert steps["median"]["change"] == -225 and steps["median"]["change_pct"] == pytest.approx(-20.5)
    kernels = section(diff, "kernels that changed most, per step")
    assert list(kernels) == ["Cijk_gemm", "copy_kernel", "elementwise_kernel"]  # largest change first
    assert (kernels["Cijk_gemm"]["a"], kernels["Cijk_gemm"]["b"]) == (300, 200)
    assert kernels["elementwise_kernel"]["change_pct"] is None  # new in B: no share of A
    classes = section(diff, "GPU time by class, per step")
    assert (classes["compute"]["a"], classes["compute"]["b"]) == (320, 210)


def test_removing_a_sync_moves_its_idle_time_to_the_cpu_op_after_it(tmp_path):
    # Generated: the known idle causes (see synth.idle_causes_events), then the same without hipDeviceSynchronize:
    # its 230 µs gap now goes to the aten::nonzero that kept the host busy after it.
    a = write_events(tmp_path / "a.json", idle_causes_events("rocm"))
    b = write_events(tmp_path / "b.json", [e for e in idle_causes_events("rocm")
                                           if e["name"] != "hipDeviceSynchronize"])
    diff = trace_diff(TraceAnalyzer.from_path(a), TraceAnalyzer.from_path(b))
    causes = section(diff, "GPU idle by cause, per step")
    assert (causes["sync drain: hipDeviceSynchronize"]["a"], causes["sync drain: hipDeviceSynchronize"]["b"]) == \
        (230, 0)
    assert (causes["starved: aten::nonzero"]["a"], causes["starved: aten::nonzero"]["b"]) == (180, 410)
    kinds = section(diff, "GPU idle by kind of cause, per step")
    assert {k: r["change"] for k, r in kinds.items()} == {"idle": 0, "sync drain": -230, "starved": 230,
                                                          "queued": 0}
    text = "\n".join(describe_diff(diff))
    assert "sync drain: hipDeviceSynchronize" in text and "-230.0 (-100.0 %)" in text


def test_a_new_section_plugs_in(tmp_path, monkeypatch):
    """The hook another analysis (the critical path) uses to add its block to the comparison."""
    monkeypatch.setattr(trace_diff_module, "SECTIONS", list(trace_diff_module.SECTIONS))
    add_section(Section("critical path by category", "%", lambda analyzer, rank: {"cpu_bound": 10.0 * rank}),
                before="GPU idle by kind of cause, per step")
    titles = [s.title for s in trace_diff_module.SECTIONS]
    assert titles.index("critical path by category") == titles.index("GPU idle by kind of cause, per step") - 1
    a = steps_trace(tmp_path / "a.json", [1000, 1000], {"k": 10.0})
    rows = section(trace_diff(a, a), "critical path by category")
    assert rows["cpu_bound"]["change"] == 0


@pytest.mark.conformance
def test_two_real_ranks_side_by_side_agree_with_their_summaries(shared_fixtures, capsys):
    real = shared_fixtures / "traces" / "hta-real"
    a, b = real / "trace_filter__sampled_rank-0.json.gz", real / "trace_filter__sampled_rank-1.json.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["trace", "diff", str(a), str(b), "--json"]) == 0
        diff = json.loads(capsys.readouterr().out)
        summaries = [TraceAnalyzer.from_path(p).summary()["ranks"] for p in (a, b)]
        assert main(["trace", "diff", str(a), str(b), "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "GPU idle by cause, per step (µs)" in text and "window:" in text
    (sa,), (sb,) = (s.values() for s in summaries)
    steps = section(diff, "step time")
    analysed = [[s["dur_us"] for s in summary["steps"] if s["analysed"]] for summary in (sa, sb)]
    assert (steps["median"]["a"], steps["median"]["b"]) == pytest.approx((analysed[0][0], analysed[1][0]))
    idle = section(diff, "GPU idle by kind of cause, per step")["idle"]
    # the GPU span's idle time and the time from the window's start to the first GPU work
    spans = [s["temporal"]["span_us"] * s["temporal"]["idle"] + s["coverage"]["before_gpu_us"] for s in (sa, sb)]
    assert (idle["a"], idle["b"]) == pytest.approx(spans, rel=1e-3)
    assert len(section(diff, "GPU idle by cause, per step")) == 10


def halved_k2(events: list[dict]) -> list[dict]:
    """Generated: :func:`sync_chain_events` with the on-path kernel K2 twice as fast (200 -> 100 µs); K3, the end of
    the stream sync, ``aten::item`` and the step's end move 100 µs earlier with it, as they would in the real run."""
    out = []
    for e in events:
        e = {**e}
        if e["name"] == "K2_gemm":
            e["dur"] = 100
        elif e["name"] == "ProfilerStep#1":
            e["dur"] -= 100
        elif e["name"] in ("K3_relu", "Stream Sync", "aten::item", "ProfilerStep#2") or e["ts"] >= 420:
            e["ts"] -= 100
        elif e["name"].endswith("StreamSynchronize"):
            e["dur"] -= 100
        out.append(e)
    return out


@pytest.mark.parametrize("vendor", ["cuda", "rocm"])
def test_the_critical_path_side_by_side_when_the_on_path_kernel_is_twice_as_fast(tmp_path, capsys, vendor):
    # Known by construction (see sync_chain_events): the path is 415 µs, 350 of it GPU compute (K1 100, K2 200,
    # K3 50), 25 cpu_bound (5 µs of aten::mm before its launch, aten::item 20), 10 launch overhead, 5 kernel-kernel,
    # 25 of the step on the host that no op covers. With K2 at 100 µs, the path loses exactly those 100 µs, all of
    # them GPU compute.
    a = write_events(tmp_path / "a.json", sync_chain_events(vendor))
    b = write_events(tmp_path / "b.json", halved_k2(sync_chain_events(vendor)))
    diff = trace_diff(TraceAnalyzer.from_path(a), TraceAnalyzer.from_path(b))
    per_step = section(diff, "critical path and its categories, per step")
    assert {k: (r["a"], r["b"]) for k, r in per_step.items()} == {
        "path": (415, 315), "cpu_bound": (25, 25), "data_loading": (0, 0), "gpu_compute_bound": (350, 250),
        "gpu_communication_bound": (0, 0), "gpu_kernel_launch_overhead": (10, 10),
        "gpu_kernel_kernel_overhead": (5, 5), "gpu_queue_wait": (0, 0), "unexplained_wait": (0, 0),
        "host_untraced": (25, 25)}
    assert per_step["path"]["change_pct"] == pytest.approx(-24.1, abs=0.05)
    shares = section(diff, "critical path bound by (share of the path)")
    assert shares["gpu_compute_bound"]["a"] == pytest.approx(100 * 350 / 415, abs=1e-3)
    assert shares["gpu_compute_bound"]["b"] == pytest.approx(100 * 250 / 315, abs=1e-3)
    assert shares["cpu_bound"]["b"] == pytest.approx(100 * 25 / 315, abs=1e-3)
    # the same through the command line, in text and JSON
    assert main(["trace", "diff", str(a), str(b), "--json"]) == 0
    assert section(json.loads(capsys.readouterr().out), "critical path and its categories, per step") == per_step
    assert main(["trace", "diff", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "critical path bound by (share of the path) (%)" in text
    assert "path" in text and "-100.0 (-24.1 %)" in text
    # the what-if on A predicted what B measures
    before = TraceAnalyzer.from_path(a)
    (predicted,) = analyzer_critical_path(before, before.ranks[0], what_if=["K2_gemm=2"])["what_if"]
    assert predicted["path_us_after"] == per_step["path"]["b"]
    table = section_table(diff, "critical path and its categories, per step").set_index("name")
    assert table.loc["gpu_compute_bound", "change"] == -100 and table.loc["path", "change_pct"] == -24.1


def cpu_steps_trace(path, per_step: dict[str, list[float]]):
    """Generated: one CPU op per name in each step, with the given self time per step (plus a short last step)."""
    host = {"pid": 1, "tid": 1}
    steps = len(next(iter(per_step.values())))
    events, t = [], 0.0
    for number in range(steps + 1):
        events.append(event(f"ProfilerStep#{number + 1}", "user_annotation", t, 1000.0, **host))
        start = t + 5
        for name, times in per_step.items():
            us = times[number] if number < steps else 1.0
            events.append(event(name, "cpu_op", start, us, **host))
            start += us + 1
        t += 1000.0
    return TraceAnalyzer.from_path(write_events(path, events))


def test_cpu_ops_compare_medians_over_steps_and_call_a_change_within_their_spread_noise(tmp_path):
    # aten::sqrt has one slow step on each side (scheduling): its medians barely move and the ranges overlap;
    # aten::mm is faster in every step of B than in any step of A: a change.
    a = cpu_steps_trace(tmp_path / "a.json", {"aten::sqrt": [10, 300, 12], "aten::mm": [500, 510, 505]})
    b = cpu_steps_trace(tmp_path / "b.json", {"aten::sqrt": [11, 13, 280], "aten::mm": [200, 210, 205]})
    rows = section(trace_diff(a, b), "CPU ops (self time) that changed most, per step")
    assert (rows["aten::sqrt"]["a"], rows["aten::sqrt"]["b"], rows["aten::sqrt"]["verdict"]) == (12, 13, "noise")
    assert rows["aten::sqrt"]["a_range"] == [10, 300]
    assert (rows["aten::mm"]["a"], rows["aten::mm"]["b"], rows["aten::mm"]["verdict"]) == (505, 205, "changed")
    table = section_table(trace_diff(a, b), "CPU ops (self time) that changed most, per step")
    assert list(table["name"]) == ["aten::mm", "aten::sqrt"]  # a change before noise
    one = cpu_steps_trace(tmp_path / "one.json", {"aten::sqrt": [10], "aten::mm": [500]})
    rows = section(trace_diff(one, b), "CPU ops (self time) that changed most, per step")
    assert rows["aten::sqrt"]["verdict"] == "one step: spread unknown"
