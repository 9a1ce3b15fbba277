"""The memory view: Kineto [memory] events (real CPU trace, a profiled course workload) and a memory snapshot
written in the format torch.cuda.memory._snapshot documents."""
from __future__ import annotations

import pickle

import pytest

from lumikit.cli import main
from lumikit.errors import TraceError
from lumikit.trace.memory import EARLIER, load_memory
from lumikit.trace.synth import event as x
from lumikit.trace.synth import write_events


def mem(ts, nbytes, addr, total, device=-1, tid=1):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": nbytes, "Device Id": device,
                     "Device Type": 1 if device >= 0 else 0, "Addr": addr}}


def test_kineto_memory_events_give_the_peak_its_categories_and_live_blocks(tmp_path):
    ev = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("forward", "user_annotation", 10, 30), x("aten::linear", "cpu_op", 11, 10), x("aten::gelu", "cpu_op", 25, 5),
        x("autograd::engine::evaluate_function: MmBackward0", "cpu_op", 50, 10, tid=2),
        mem(12, 1000, 0xA, 1500, device=0), mem(26, 4000, 0xB, 5500, device=0),    # forward activations
        mem(55, 2000, 0xC, 7500, device=0, tid=2),                                 # a gradient
        mem(58, -4000, 0xB, 3500, device=0, tid=2), mem(59, -500, 0xE, 3000, device=0),  # 0xE: from before
        mem(70, 64, 0xF, 64, device=-1),
    ]
    view = load_memory(write_events(tmp_path / "m.json", ev))
    assert view.devices() == [-1, 0]
    peak = view.peak(0)
    assert peak["bytes"] == 7500 and peak["by_category"] == {EARLIER: 500, "forward": 5000, "backward": 2000}
    live = view.live_at_peak(0)
    assert live[["bytes", "category", "op"]].values.tolist() == [
        [4000, "forward", "aten::gelu"], [2000, "backward", "autograd::engine::evaluate_function: MmBackward0"],
        [1000, "forward", "aten::linear"]]
    timeline = view.timeline(0)
    assert timeline["allocated"].tolist() == [1500, 5500, 7500, 3500, 3000]  # matches Total Allocated
    assert timeline["forward"].tolist() == [1000, 5000, 5000, 1000, 1000]      # the free goes back to forward
    report = view.report()  # the device with the highest peak
    assert report["device"] == 0 and report["largest_live"][0]["op"] == "aten::gelu"


def test_a_real_cpu_trace_names_its_peak_and_largest_allocations(shared_fixtures):
    path = shared_fixtures / "traces" / "torch-cpu" / "rank0.1795343028888257490.pt.trace.json"
    view = load_memory(path)
    peak = view.peak()
    assert peak["device"] == -1 and peak["bytes"] == pytest.approx(3.73e6, rel=0.01)
    assert set(peak["by_category"]) >= {"forward", "backward", "data_loading"}
    top = view.live_at_peak(top=1).iloc[0]
    assert (top["bytes"], top["category"], top["op"]) == (1048576, "forward", "aten::relu")


def test_a_profiled_course_workload_has_its_peak_named(tmp_path, monkeypatch):
    """Runs the course's language model for two profiled steps (10-25 s on 2 shared cores): the acceptance case
    of the memory view, which only a real profiled workload can show."""
    from lumikit.workloads import lm

    for key, value in {"LUMIKIT_PROFILE": "torch", "LUMIKIT_PROFILE_DIR": str(tmp_path / "prof"),
                       "LUMIKIT_PROFILE_SCHEDULE": "0,0,2,1", "LUMIKIT_MAX_STEPS": "2",
                       "LUMIKIT_PROFILE_MEMORY": "1"}.items():
        monkeypatch.setenv(key, value)
    assert lm.main(["--no-progress", "--steps", "5", "--out", str(tmp_path / "run")]) == 0
    (trace,) = (tmp_path / "prof").glob("rank0.*.pt.trace.json")
    view = load_memory(trace)
    report = view.report(top=3)
    assert report["peak_bytes"] > 1e6 and {"forward", "backward"} <= set(report["by_category"])
    assert len(report["largest_live"]) == 3 and report["largest_live"][0]["op"].startswith("aten::")
    assert "peak" in view.describe() and "forward" in view.describe()


def snapshot(path):
    """A memory snapshot in the documented layout: one device, 3 allocations with stack frames, a free, an OOM,
    and the segments still allocated at the end (8 MB of parameters allocated before the history started)."""
    def frames(*names):
        return [{"filename": f, "line": 1, "name": n} for f, n in names]

    fwd = frames(("/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "forward"), ("train.py", "forward"),
                 ("train.py", "main"))
    bwd = frames(("/usr/lib/python3/site-packages/torch/autograd/__init__.py", "backward"), ("train.py", "main"))
    opt = frames(("/usr/lib/python3/site-packages/torch/optim/adamw.py", "step"), ("train.py", "main"))
    traces = [[
        {"action": "segment_alloc", "addr": 0x1000, "size": 64 << 20, "stream": 0, "frames": fwd},
        {"action": "alloc", "addr": 0x1000, "size": 20 << 20, "stream": 0, "frames": fwd},
        {"action": "alloc", "addr": 0x3000, "size": 10 << 20, "stream": 0, "frames": bwd},
        {"action": "free_requested", "addr": 0x1000, "size": 20 << 20, "stream": 0, "frames": bwd},
        {"action": "free_completed", "addr": 0x1000, "size": 20 << 20, "stream": 0, "frames": bwd},
        {"action": "alloc", "addr": 0x5000, "size": 16 << 20, "stream": 0, "frames": opt},
        {"action": "oom", "size": 2 << 30, "device_free": 100 << 20, "stream": 0, "frames": fwd},
    ]]
    segments = [{"device": 0, "address": 0x0, "total_size": 128 << 20, "stream": 0, "segment_type": "large",
                 "allocated_size": 34 << 20, "active_size": 34 << 20, "blocks": [
                     {"address": 0x0, "size": 8 << 20, "requested_size": 8 << 20, "state": "active_allocated",
                      "frames": []},
                     {"address": 0x3000, "size": 10 << 20, "requested_size": 10 << 20, "state": "active_allocated",
                      "frames": bwd},
                     {"address": 0x5000, "size": 16 << 20, "requested_size": 16 << 20, "state": "active_allocated",
                      "frames": opt},
                     {"address": 0x9000, "size": 94 << 20, "requested_size": 0, "state": "inactive", "frames": []}]}]
    path.write_bytes(pickle.dumps({"segments": segments, "device_traces": traces}))
    return path


def test_a_memory_snapshot_gives_the_peak_categories_and_the_oom(tmp_path):
    view = load_memory(snapshot(tmp_path / "snap.pickle"))
    assert view.kind == "snapshot" and view.baseline == {0: 8 << 20}
    peak = view.peak(0)
    assert peak["bytes"] == (8 + 20 + 10) << 20  # before the forward activation was freed
    assert peak["by_category"] == {EARLIER: 8 << 20, "forward": 20 << 20, "backward": 10 << 20}
    live = view.live_at_peak(0)
    assert live["op"].tolist() == ["train.py:1 forward", "train.py:1 main"]
    report = view.report()
    assert report["ooms"] == [{"device": 0, "ts": 6.0, "requested": 2 << 30, "device_free": 100 << 20}]
    assert "out of memory: asked for 2.15 GB" in view.describe()
    assert view.timeline(0)["allocated"].iloc[-1] == 34 << 20  # ends where the segments say


def test_the_memory_command_and_its_errors(tmp_path, capsys):
    assert main(["trace", "memory", str(snapshot(tmp_path / "snap.pickle"))]) == 0
    assert "peak 39.85 MB on device 0" in capsys.readouterr().out
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps({"segments": []}))
    with pytest.raises(TraceError, match="no device_traces"):
        load_memory(bad)
    assert main(["trace", "memory", str(bad)]) == 2
    plain = write_events(tmp_path / "t.json", [x("ProfilerStep#1", "user_annotation", 0, 10)])
    with pytest.raises(TraceError, match="profile_memory=True"):
        load_memory(plain).peak()
