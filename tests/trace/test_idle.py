"""Why the GPU waited (`lumikit trace idle`): known answers on generated traces, and the causes adding up to the
temporal breakdown's idle time on every real trace in ../shared/fixtures."""
from __future__ import annotations

import json
import warnings

import pytest

from lumikit.cli import main
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.idle import idle_causes, idle_causes_table, idle_report, kind_of
from lumikit.trace.synth import IDLE_CAUSES_ANSWER, event, idle_causes_events, write_events


def answer(vendor: str) -> dict[str, float]:
    """The generated trace's causes, with the 20 µs from the step's start to its first kernel (the host launches it
    at 10 µs after 10 µs of nothing traced) added to "nothing traced"."""
    runtime = "hip" if vendor == "rocm" else "cuda"
    out = {k.replace(": X", f": {runtime}"): v for k, v in IDLE_CAUSES_ANSWER.items()}
    out["starved: nothing traced"] += 20.0
    return out


@pytest.mark.parametrize("vendor", ["rocm", "cuda"])
def test_each_gap_gets_its_known_cause_with_hip_and_cuda_names(tmp_path, vendor):
    a = TraceAnalyzer.from_path(write_events(tmp_path / "t.json", idle_causes_events(vendor)))
    (report,) = idle_causes(a, 0)
    # the GPU span (1420 µs, 1050 idle) and the 20 µs from the step's start to the first GPU work
    assert (report.span_us, report.idle_us, report.before_gpu_us) == (1440.0, 1070.0, 20.0)
    assert report.causes == answer(vendor)
    assert [(g["since_step_us"], g["dur_us"]) for g in report.gaps] == [
        (0, 20), (120, 230), (400, 10), (450, 270), (800, 45), (850, 110), (990, 5), (1000, 200), (1250, 180)]
    assert report.kinds == {"sync drain": 435.0, "starved": 625.0, "queued": 10.0}
    assert report.gaps[0]["before_first_gpu"] and not report.gaps[1]["before_first_gpu"]
    assert report.gaps[1]["next"] == "kernel_2" and report.gaps[1]["step"] == 1


def test_a_sync_that_ended_before_the_gap_does_not_explain_it(tmp_path):
    # Generated: the host synchronizes (0-50) while k1 runs (10-40), so the sync returns just after the GPU drains;
    # the gap 40-300 starts inside the sync: sync drain. A second sync at 320-330 returns at once (the GPU is
    # idle since 310); the gap 310-400 that follows is the host's aten::mul (330-395): starved.
    host = {"pid": 1, "tid": 1}
    ev = [event("ProfilerStep#1", "user_annotation", 0, 1000, **host),
          event("ProfilerStep#2", "user_annotation", 1000, 10, **host),
          event("cudaLaunchKernel", "cuda_runtime", 2, 3, correlation=1, **host),
          event("cudaStreamSynchronize", "cuda_runtime", 5, 45, **host),
          event("cudaLaunchKernel", "cuda_runtime", 290, 3, correlation=2, **host),
          event("cudaStreamSynchronize", "cuda_runtime", 320, 10, **host),
          event("aten::mul", "cpu_op", 330, 65, **host),
          event("cudaLaunchKernel", "cuda_runtime", 395, 3, correlation=3, **host)]
    for corr, (ts, dur) in enumerate([(10, 30), (300, 10), (400, 10)], start=1):
        ev.append(event(f"k{corr}", "kernel", ts, dur, pid=0, tid=7, stream=7, correlation=corr))
    (report,) = idle_causes(TraceAnalyzer.from_path(write_events(tmp_path / "t.json", ev)), 0)
    # (and 0-10 before the first kernel: the host launched it at 2 after 2 µs of nothing traced)
    assert report.causes == {"sync drain: cudaStreamSynchronize": 260.0, "starved: aten::mul": 90.0,
                             "starved: nothing traced": 10.0}


def test_a_trace_without_host_events_says_nothing_traced(tmp_path):
    # Generated: kernels with no launch calls and no ProfilerStep (nothing is left out of the window).
    ev = [event("k", "kernel", ts, 10, pid=0, tid=0, stream=0) for ts in (0, 30, 100)]
    (report,) = idle_causes(TraceAnalyzer.from_path(write_events(tmp_path / "t.json", ev)), 0)
    assert report.causes == {"starved: nothing traced": 80.0}


def test_the_command_prints_a_table_and_json(tmp_path, capsys):
    path = write_events(tmp_path / "t.json", idle_causes_events("rocm"))
    assert main(["trace", "idle", str(path), "--rank", "0"]) == 0
    out = capsys.readouterr().out
    assert ("GPU idle 1.07 ms of a 1.44 ms span (74.3%), 0.020 ms of it before the first GPU work, in a 1.500 ms "
            "window, 9 gaps") in out
    assert "sync drain 0.43 ms (40.7%), starved 0.62 ms (58.4%), queued 0.01 ms (0.9%)" in out
    assert "starved: data loading" in out and "step 1 +0.450 ms: 0.270 ms" in out
    assert main(["trace", "idle", str(path), "--json"]) == 0
    device = json.loads(capsys.readouterr().out)["ranks"]["0"]["0"]
    assert device["idle_us"] == 1070.0 and device["causes"] == answer("rocm") and len(device["gaps"]) == 9
    assert device["before_gpu_us"] == 20.0


def _fixture_traces(shared_fixtures):
    return sorted(p for p in (shared_fixtures / "traces").rglob("*") if p.name.endswith((".json", ".json.gz")))


@pytest.mark.conformance
def test_causes_add_up_to_the_idle_time_on_every_fixture_trace(shared_fixtures, capsys):
    checked = 0
    for path in _fixture_traces(shared_fixtures):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["trace", "idle", str(path), "--json"]) == 0, path
            report = json.loads(capsys.readouterr().out)
            analyzer = TraceAnalyzer.from_path(path)
        for rank, devices in report["ranks"].items():
            temporal = {str(row["device"]): row["idle_us"] for row in analyzer.temporal(int(rank))}
            for device, d in devices.items():
                # the GPU span's idle time, and the time from the window's start to the first GPU work
                assert d["idle_us"] - d["before_gpu_us"] == pytest.approx(temporal[device], rel=0.01), path
                assert sum(d["causes"].values()) == pytest.approx(d["idle_us"], rel=0.01, abs=0.01), path
                assert sum(g["dur_us"] for g in d["gaps"]) == pytest.approx(d["idle_us"], rel=0.01, abs=0.01)
                assert {kind_of(c) for c in d["causes"]} <= {"sync drain", "starved", "queued"}
                checked += d["idle_us"] > 0
    assert checked >= 5  # the real GPU traces: ROCm MI250, CUDA simple_add, NCCL, two sampled ranks


@pytest.mark.conformance
def test_real_traces_name_their_sync_calls_in_hip_and_cuda(shared_fixtures):
    """The MI250 ROCm 6.2 trace's synchronous hipMemcpyWithStream and the CUDA benchmark's
    cudaStreamSynchronize are found as sync drains (read off these traces with `lumikit trace idle`)."""
    real = shared_fixtures / "traces" / "hta-real"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rocm = idle_report(TraceAnalyzer.from_path(real / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
        cuda = idle_report(TraceAnalyzer.from_path(
            real / "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"))
    (rocm_device,) = rocm["ranks"]["0"].values()
    (cuda_device,) = cuda["ranks"]["0"].values()
    assert rocm_device["causes"]["sync drain: hipMemcpyWithStream"] > 0
    assert cuda_device["causes"]["sync drain: cudaStreamSynchronize"] > 0


def test_the_picture_colours_each_gap_by_the_kind_of_its_cause(tmp_path):
    from lumikit.plotting import figure_png
    from lumikit.trace.plots import IDLE_KIND_COLOURS, idle_causes_timeline

    a = TraceAnalyzer.from_path(write_events(tmp_path / "t.json", idle_causes_events("rocm")))
    fig = idle_causes_timeline(a, 0, step=1)
    ax = fig.axes[0]
    assert "1.07 ms idle" in ax.get_title()  # with the 20 µs before the first GPU work
    assert [t.get_text() for t in ax.get_yticklabels()] == ["GPU idle", "GPU busy", "host steps"]
    widths = {}
    for collection in ax.collections:
        colour = tuple(round(c, 3) for c in collection.get_facecolor()[0][:3])
        width = sum(float(p.vertices[:, 0].max() - p.vertices[:, 0].min()) for p in collection.get_paths())
        widths[colour] = widths.get(colour, 0.0) + width
    from matplotlib.colors import to_rgb

    for kind, ms in (("sync drain", 0.435), ("starved", 0.625), ("queued", 0.010)):
        assert widths[tuple(round(c, 3) for c in to_rgb(IDLE_KIND_COLOURS[kind]))] == pytest.approx(ms)
    assert "starved: data loading" in [t.get_text() for t in ax.texts]
    assert figure_png(fig).startswith(b"\x89PNG")


def test_one_report_per_device_when_a_process_drives_several(tmp_path):
    from lumikit.trace.synth import data_parallel_events

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the many-devices warning
        a = TraceAnalyzer.from_path(write_events(tmp_path / "dp.json", data_parallel_events(busy=(0.9, 0.1))))
        reports = idle_causes(a, 0)
        temporal = {row["device"]: row["idle_us"] for row in a.temporal(0)}
    assert [r.device for r in reports] == [0, 1]
    for report in reports:
        assert sum(report.causes.values()) == pytest.approx(report.idle_us) and \
            report.idle_us - report.before_gpu_us == pytest.approx(temporal[report.device])
    assert reports[1].idle_us > 5 * reports[0].idle_us  # device 1 is busy a tenth of the time


def test_the_busiest_host_thread_names_the_gap(tmp_path):
    # Generated: the main thread is in no event during the gap 20-220 while the autograd thread runs
    # MmBackward0 (30-200): the host was busy there, so the gap is starved by that op, not "nothing traced".
    ev = [event("ProfilerStep#1", "user_annotation", 0, 1000, pid=1, tid=1),
          event("ProfilerStep#2", "user_annotation", 1000, 10, pid=1, tid=1),
          event("cudaLaunchKernel", "cuda_runtime", 1, 2, correlation=1, pid=1, tid=1),
          event("MmBackward0", "cpu_op", 30, 170, pid=1, tid=2),
          event("cudaLaunchKernel", "cuda_runtime", 205, 2, correlation=2, pid=1, tid=2)]
    ev += [event(f"k{c}", "kernel", ts, 10, pid=0, tid=7, stream=7, correlation=c) for c, ts in ((1, 10), (2, 220))]
    (report,) = idle_causes(TraceAnalyzer.from_path(write_events(tmp_path / "t.json", ev)), 0)
    # (and 0-10 before the first kernel, launched after 1 µs of nothing traced)
    assert report.causes == {"starved: MmBackward0": 200.0, "starved: nothing traced": 10.0}


def test_a_cpu_only_trace_says_there_is_no_gpu_work(tmp_path, capsys):
    path = write_events(tmp_path / "cpu.json", [event("ProfilerStep#1", "user_annotation", 0, 100),
                                                event("aten::mm", "cpu_op", 10, 50)])
    assert main(["trace", "idle", str(path)]) == 0
    assert "rank 0: no GPU work in the analysed window" in capsys.readouterr().out


def test_the_analyzer_gives_the_causes_as_a_table(tmp_path):
    a = TraceAnalyzer.from_path(write_events(tmp_path / "t.json", idle_causes_events("cuda")))
    table = a.get_idle_causes()
    assert table["idle_us"].sum() == 1070.0 and table["fraction"].sum() == pytest.approx(1.0)
    assert table.set_index("cause").loc["starved: data loading", "kind"] == "starved"


def test_the_lesson_table_has_one_row_per_cause_with_its_share_and_gap_count(tmp_path):
    a = TraceAnalyzer.from_path(write_events(tmp_path / "t.json", idle_causes_events("rocm")))
    table = idle_causes_table(a)
    assert dict(zip(table["cause"], table["idle_us"])) == answer("rocm")
    rows = table.set_index("cause")
    # sync drain in an async copy: two gaps (990-995 and 1000-1200), 205 of the 1070 µs idle (1050 in the GPU
    # span, 20 before the first GPU work)
    assert (rows.loc["sync drain: hipMemcpyAsync", "gaps"], rows.loc["sync drain: hipMemcpyAsync", "kind"]) == \
        (2, "sync drain")
    assert rows.loc["starved: data loading", "share"] == pytest.approx(270 / 1070, abs=1e-4)
    assert table["share"].sum() == pytest.approx(1.0, abs=1e-3)
    assert list(table["idle_us"]) == sorted(table["idle_us"], reverse=True)
