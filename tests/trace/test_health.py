"""`lumikit trace check`: what a trace lacks, found on traces whose faults are known by construction, then on real
traces (every finding checked against what the file holds)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest

from lumikit.cli import main
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.health import check_trace, describe_check, left_out_unlaunched, lost_kernels
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import (SynthSpec, event, lost_launch_events, unlaunched_work_events, write_events,
                                 write_synthetic)


def clean_trace(tmp_path, vendor: str = "rocm"):
    """Generated: one rank, four steps, every launch with its kernel."""
    (path,) = write_synthetic(tmp_path / vendor, SynthSpec(ranks=1, steps=4, layers=4, vendor=vendor))
    return path


def dropped_kernels(path, every: int = 3):
    """The trace at ``path`` without every ``every``-th kernel event (as a tracer that lost them); returns the path
    and how many kernels it dropped."""
    doc = orjson.loads(path.read_bytes())
    kept, dropped, seen = [], 0, 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            seen += 1
            if seen % every == 0:
                dropped += 1
                continue
        kept.append(e)
    doc["traceEvents"] = kept
    out = path.with_name("dropped.json")
    out.write_bytes(orjson.dumps(doc))
    return out, dropped, seen


def kinds(report: dict) -> dict[str, dict]:
    return {f["kind"]: f for f in report["findings"]}


def test_a_clean_trace_passes(tmp_path):
    for vendor in ("rocm", "cuda"):
        report = check_trace(load_trace(clean_trace(tmp_path, vendor)))
        assert report["warnings"] == 0, report["findings"]
        assert "lost_kernels" not in kinds(report)


def test_a_third_of_the_kernels_dropped_is_found_and_counted(tmp_path):
    path, dropped, seen = dropped_kernels(clean_trace(tmp_path))
    assert dropped == seen // 3 and dropped > 20
    found = kinds(check_trace(load_trace(path)))["lost_kernels"]
    assert found["severity"] == "warning" and found["count"] == dropped
    assert found["numbers"]["launches"] == seen and found["numbers"]["share"] == pytest.approx(dropped / seen, abs=1e-4)
    # a ROCm trace names the release known to lose records, and the one that fixed it
    assert "ROCm 7.2.1" in found["evidence"] and "7.2.2" in found["evidence"]
    assert found["numbers"]["launch_call_us"] > 0


def test_check_on_the_command_line_and_the_warning_of_other_commands(tmp_path, capsys):
    path, dropped, _ = dropped_kernels(clean_trace(tmp_path))
    assert main(["trace", "check", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"kind", "severity", "count", "evidence", "fix", "rank"} <= set(report["findings"][0])
    assert kinds(report)["lost_kernels"]["count"] == dropped
    assert main(["trace", "check", str(path)]) == 0
    assert "lost_kernels" in capsys.readouterr().out
    for command in (["idle"], ["summary"], ["critical-path"]):
        assert main(["trace", *command, str(path)]) == 0
        err = capsys.readouterr().err
        assert f"lost_kernels ({dropped})" in err and "lumikit trace check" in err, command
    assert main(["trace", "idle", str(clean_trace(tmp_path / "c"))]) == 0
    assert "trace check" not in capsys.readouterr().err  # a clean trace: no line


def test_lost_launches_are_matched_by_external_id_when_kernels_have_no_correlation(tmp_path):
    # PyTorch's ROCm traces may lack correlation ids: kernels then share the launch's External id
    events = [event("ProfilerStep#1", "user_annotation", 0, 100), event("ProfilerStep#2", "user_annotation", 100, 100)]
    for i in range(6):
        events.append(event("hipLaunchKernel", "cuda_runtime", 10 + 20 * i, 2, **{"External id": i}))
        if i % 3:
            events.append(event("k", "kernel", 15 + 20 * i, 5, pid=0, tid=0, stream=0, **{"External id": i}))
    lost = lost_kernels(load_trace(write_events(tmp_path / "t.json", events))[0].columns)
    assert (lost["count"], lost["launches"]) == (2, 6)


def test_steps_missing_one_or_starved(tmp_path):
    k = {"pid": 0, "tid": 0, "stream": 0}
    no_steps = [event("hipLaunchKernel", "cuda_runtime", 0, 2, correlation=1),
                event("k", "kernel", 5, 5, correlation=1, **k)]
    assert "no_profiler_step" in kinds(check_trace(load_trace(write_events(tmp_path / "a.json", no_steps))))
    one = [event("ProfilerStep#7", "user_annotation", 0, 50), *no_steps]
    found = kinds(check_trace(load_trace(write_events(tmp_path / "b.json", one))))
    assert found["single_step"]["severity"] == "note" and "#7" in found["single_step"]["evidence"]
    # four analysed steps of 4 kernels each, step 3 with none (plus the last step, left out)
    events, corr = [], 1
    for s in range(5):
        events.append(event(f"ProfilerStep#{s}", "user_annotation", 100 * s, 100))
        for j in range(0 if s == 3 else 4):
            events.append(event("hipLaunchKernel", "cuda_runtime", 100 * s + 10 * j, 2, correlation=corr))
            events.append(event("k", "kernel", 100 * s + 10 * j + 4, 3, correlation=corr, **k))
            corr += 1
    starved = kinds(check_trace(load_trace(write_events(tmp_path / "c.json", events))))["starved_steps"]
    assert starved["numbers"]["steps"] == [3] and starved["severity"] == "warning"


def test_gpu_work_before_its_launch_is_a_clock_disagreement(tmp_path):
    events = [event("ProfilerStep#1", "user_annotation", 0, 500), event("ProfilerStep#2", "user_annotation", 500, 10)]
    for i, skew in enumerate((0, 0, 40, 75), start=1):  # two kernels start 40 and 75 µs before their launch
        ts = 100 * i
        events.append(event("hipLaunchKernel", "cuda_runtime", ts, 5, correlation=i))
        events.append(event("k", "kernel", ts + 10 - (skew + 10 if skew else 0), 5, pid=0, tid=0, stream=0,
                            correlation=i))
    found = kinds(check_trace(load_trace(write_events(tmp_path / "t.json", events))))["clock_disagreement"]
    assert found["count"] == 2 and found["numbers"]["worst_us"] == 75


def test_work_without_its_launch_is_reported_and_summary_says_what_it_left_out(tmp_path, capsys):
    before = kinds(check_trace(load_trace(write_events(tmp_path / "a.json", unlaunched_work_events()))))
    assert before["unlaunched_gpu_work"]["severity"] == "note"  # all before the first step: nothing lost
    assert before["unlaunched_gpu_work"]["count"] == 2
    path = write_events(tmp_path / "b.json", lost_launch_events())
    lost = kinds(check_trace(load_trace(path)))["unlaunched_gpu_work"]
    assert lost["severity"] == "warning" and lost["numbers"]["inside_steps"] == 1
    # the 2 kernels of 2000 µs from before the profiler started and the 200 µs one whose launch was lost
    assert left_out_unlaunched(TraceAnalyzer(load_trace(path)), 0) == {"count": 3, "us": 4200.0}
    assert main(["trace", "summary", str(path)]) == 0
    assert "left out: 3 GPU activities (4.200 ms) whose launch call is not in the trace" in capsys.readouterr().out


def test_graph_launches_and_cuda_without_cuda_sync_are_notes(tmp_path):
    events = [event("ProfilerStep#1", "user_annotation", 0, 100), event("ProfilerStep#2", "user_annotation", 100, 10),
              event("cudaGraphLaunch", "cuda_runtime", 5, 3, correlation=1),
              *[event(f"k{i}", "kernel", 10 + 5 * i, 4, pid=0, tid=7, stream=7, correlation=1) for i in range(3)],
              event("cudaStreamSynchronize", "cuda_runtime", 10, 20, correlation=2)]
    found = kinds(check_trace(load_trace(write_events(tmp_path / "t.json", events))))
    assert found["graph_launches"]["count"] == 1 and found["no_cuda_sync"]["severity"] == "note"
    assert "lost_kernels" not in found  # the graph's three kernels carry its correlation id


def test_a_trace_without_operator_shapes_cannot_give_a_shape_roofline(tmp_path):
    plain = write_events(tmp_path / "a.json", [event("aten::mm", "cpu_op", 0, 5)])
    assert "no_shapes" in kinds(check_trace(load_trace(plain)))
    shaped = write_events(tmp_path / "b.json", [event("aten::mm", "cpu_op", 0, 5, **{"Input Dims": [[2, 2], [2, 2]]})])
    assert "no_shapes" not in kinds(check_trace(load_trace(shaped)))


#: What each real trace holds, read from the files (category counts, ProfilerStep names, "Input Dims"): the
#: findings the check must give, and none of warning severity beyond these.
REAL = {
    "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz": set(),
    "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": {"single_step"},
    "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz": {"no_profiler_step", "no_shapes"},
    "nccl_parser_config__nccl_data.json.gz": {"no_cuda_sync", "no_shapes"},
    "rank_non_gpu__rank_non_gpu.json.gz": {"single_step"},
    "trace_filter__sampled_rank-0.json.gz": {"no_cuda_sync"},
    "trace_filter__sampled_rank-1.json.gz": {"no_cuda_sync"},
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_traces_get_true_findings(shared_fixtures, name):
    report = check_trace(load_trace(shared_fixtures / "traces" / "hta-real" / name))
    assert set(kinds(report)) == REAL[name]


def test_every_real_trace_is_checked_without_a_crash(shared_fixtures, capsys):
    for path in sorted((shared_fixtures / "traces").glob("*/*.json*")):
        assert main(["trace", "check", str(path), "--json"]) == 0, path
        report = json.loads(capsys.readouterr().out)
        assert report["warnings"] == sum(f["severity"] == "warning" for f in report["findings"])


def test_damaged_traces_are_checked_or_refused_in_one_line(tmp_path):
    # the fuzzer's trace seeds (generated), mutated with a fixed seed: `trace check --json` either prints strict JSON
    # or refuses in one line (exit status 2); never a traceback
    import random

    from lumikit.testing.fuzz import _check_cli, _Refused, mutate, trace_seeds

    rng = random.Random(2026_38)
    seeds = trace_seeds(None)
    checked = refused = 0
    for i in range(20):
        seed = seeds[i % len(seeds)]
        data, _ = mutate(rng, seed.data)
        path = tmp_path / f"{i}.pt.trace.json"
        path.write_bytes(data)
        try:
            _check_cli(["trace", "check", str(path), "--json"])
            checked += 1
        except _Refused:
            refused += 1
    assert checked and refused and checked + refused == 20


def test_a_salvaged_truncated_file_is_a_warning(tmp_path):
    path = clean_trace(tmp_path)
    cut = path.with_name("cut.json")
    cut.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])
    with pytest.warns(UserWarning, match="truncated|complete events"):
        trace = load_trace(cut, salvage=True)
    assert kinds(check_trace(trace))["truncated"]["severity"] == "warning"


RECORDED = sorted((Path(__file__).resolve().parents[2] / "lumikit" / "data" / "reference").glob(
    "h100-*-profile/profile/*.pt.trace.json.gz"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parts[-3])
def test_recorded_h100_traces_are_whole_and_a_third_dropped_from_one_is_found(tmp_path, path):
    # traces recorded on an NVIDIA H100 (torch profiler, CUDA 13; shipped in lumikit/data/reference): cuda_sync
    # events, three ProfilerSteps, every launch with its kernel, no shapes (recorded without record_shapes)
    assert set(kinds(check_trace(load_trace(path)))) == {"no_shapes"}
    doc = orjson.loads(gzip.decompress(path.read_bytes()))
    raw = tmp_path / "recorded.json"
    raw.write_bytes(orjson.dumps(doc))
    cut, dropped, seen = dropped_kernels(raw)
    lost = kinds(check_trace(load_trace(cut)))["lost_kernels"]
    assert lost["count"] == dropped == seen // 3 and lost["severity"] == "warning"
    assert "ROCm" not in lost["evidence"]  # a CUDA trace: the ROCm release that drops records is not its cause


def test_launches_that_share_no_id_with_gpu_work_cannot_be_checked_and_say_so(tmp_path):
    events = [event("ProfilerStep#1", "user_annotation", 0, 100), event("ProfilerStep#2", "user_annotation", 100, 9),
              event("hipLaunchKernel", "cuda_runtime", 10, 2), event("k", "kernel", 15, 5, pid=0, tid=0, stream=0)]
    report = check_trace(load_trace(write_events(tmp_path / "t.json", events)))
    assert "unmatched_launches" in kinds(report) and "lost_kernels" not in kinds(report)
    assert not describe_check(report)[0].startswith("no findings")
