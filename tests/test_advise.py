"""advise: the right first remedy on generated steps whose cause is known by construction, with its evidence,
its gain bound and its remedy; a healthy bf16 step gets no high-priority finding."""
from __future__ import annotations

import json

import pytest

from lumikit.advise import advise
from lumikit.cli import main
from lumikit.trace.synth_cases import case_events, write_case
from lumikit.trace.synth_ranks import RanksSpec, write_straggler_ranks


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cases")
    return {c: write_case(folder / f"{c}.json", c) for c in ("healthy", "dataloader", "tiny_kernels", "fp32_gemm",
                                                               "item_sync")}


def first(path):
    advice = advise(path)
    assert advice.findings, advice.text()
    return advice, advice.findings[0]


@pytest.mark.parametrize("case, rule, remedy_words", [
    ("dataloader", "data_loading", ("num_workers", "pin_memory", "--cpus-per-task=7", "--cpu-bind")),
    ("tiny_kernels", "small_kernels", ("torch.compile", "graphs", "batch")),
    ("fp32_gemm", "fp32_matrix", ("torch.autocast", "bfloat16", "PYTORCH_TUNABLEOP_ENABLED=1")),
    ("item_sync", "blocking_sync", (".item()",)),
])
def test_the_first_remedy_acts_on_the_planted_cause(cases, case, rule, remedy_words):
    advice, f = first(cases[case])
    assert f.rule == rule and f.priority == "high", advice.text()
    assert all(w in f.remedy for w in remedy_words)
    assert f.evidence and f.verify and 10 <= f.gain_pct <= 100
    assert advice.generated  # a generated trace is said to be one


def test_the_gain_never_exceeds_the_path_share_it_acts_on(cases):
    from lumikit.trace.analyses import TraceAnalyzer
    from lumikit.trace.critical_path import critical_path

    _, f = first(cases["dataloader"])
    analyzer = TraceAnalyzer.from_path(cases["dataloader"])
    share = critical_path(analyzer.trace[0].columns)["bound_by"]["data_loading"]
    # 6 ms of loading before ~3.5 ms of GPU work per step: removing it saves the loading, not the GPU's share
    assert f.gain_pct <= 100 * share + 1e-6
    assert 80 <= f.gain_pct <= 90


def test_the_blocking_sync_names_the_op(cases):
    _, f = first(cases["item_sync"])
    assert "aten::item (.item())" in f.evidence[0] and "1.0 per step" in f.evidence[0]


def test_a_healthy_bf16_step_gets_no_high_priority_finding_and_says_so(cases):
    advice = advise(cases["healthy"])
    assert advice.healthy and not [f for f in advice.findings if f.priority == "high"]
    assert "no high-priority finding" in advice.text()


def test_the_straggler_comes_first_on_four_ranks_and_the_overlap_after(tmp_path):
    write_straggler_ranks(tmp_path, RanksSpec())
    advice = advise(tmp_path)
    rules = [f.rule for f in advice.findings]
    assert rules[:2] == ["straggler", "comm_overlap"], advice.text()
    s = advice.findings[0]
    assert s.title.startswith("Rank 2 arrives last") and "6 of 6 collectives" in s.evidence[0]
    # rank 0 waits 3 ms in each of its 5 analysed steps (of about 9.5-10 ms): 15 ms of its path
    from lumikit.trace.critical_path import critical_path
    from lumikit.trace.loader import load_trace

    rank0 = tmp_path / "rank0.trace.json"
    path = critical_path(load_trace(rank0, rank_map={0: rank0})[0].columns)["path_us"]
    assert s.gain_pct == pytest.approx(100 * 15000 / path, rel=0.01) and 29 < s.gain_pct < 33
    assert "--cpu-bind" in s.remedy and "DistributedSampler" in s.remedy
    # the straggler's own work is on rank 0's path across ranks: its backward GEMM
    across = s.evidence[-1]
    assert across.startswith("critical path across ranks: rank 2's own work is") and "backward_gemm" in across
    assert "bucket_cap_mb" in advice.findings[1].remedy


def test_the_command_line_prints_json_and_text(cases, capsys):
    assert main(["advise", str(cases["fp32_gemm"]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    f = out["findings"][0]
    assert {"priority", "title", "evidence", "gain_pct", "remedy", "verify"} <= set(f) and f["rule"] == "fp32_matrix"
    assert main(["advise", str(cases["dataloader"])]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[2].startswith("1. [high] The GPU waits for the data loader")


def test_a_path_that_is_no_trace_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["advise", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["advise", str(tmp_path)]) == 2
    assert "run folder" in capsys.readouterr().err


def test_case_events_refuse_an_unknown_case():
    from lumikit.errors import TraceError

    with pytest.raises(TraceError, match="unknown case"):
        case_events("slow")


def test_a_run_folder_adds_the_record_card_and_the_log_doctor(tmp_path):
    from lumikit.logs.samples import rccl_debug_log
    from lumikit.testing.records import write_generated_record

    run = write_generated_record(tmp_path / "run", nodes=2, gcds=2, samples=8)  # GCD 1 of node 2 stays idle
    (run / "rank0.out").write_text(rccl_debug_log(plugin=False))
    write_straggler_ranks(run / "traces", RanksSpec())
    advice = advise(run)
    rules = [f.rule for f in advice.findings]
    # a setup error comes before the numbers it distorts, then the largest gains
    assert rules[:3] == ["rccl_socket", "straggler", "comm_overlap"], advice.text()
    assert "idle_gcds" in rules and "vram_full" not in rules
    socket = advice.findings[0]
    assert "NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3" in socket.remedy and socket.evidence[0].startswith("log doctor:")
    idle = next(f for f in advice.findings if f.rule == "idle_gcds")
    assert idle.evidence[0].startswith("record card: nid005002: GCD 1")
    assert "GPU record card" in advice.inputs and "logs (doctor)" in advice.inputs


def test_a_rocpd_database_is_advised_too(tmp_path):
    from lumikit.testing.rocprof_outputs import generated_run, write_rocpd_per_process

    write_rocpd_per_process(tmp_path, generated_run())
    advice = advise(tmp_path)
    assert advice.inputs[0] == "rocpd database" and "critical path" in advice.inputs[1]
    assert all(f.gain_pct is None or f.gain_pct >= 0.5 for f in advice.findings)


def test_real_traces_get_a_cause_with_evidence(reference_dir):
    # the shipped H100 ladder trace in bf16 (a real recording): host-bound, hundreds of small kernels per step
    advice = advise(reference_dir / "h100-benchmarks" / "ladder-lm-medium" / "bf16" / "trace")
    assert advice.findings[0].rule == "small_kernels" and not advice.generated
    # its fp32 rung: fp32 GEMMs first
    assert advise(reference_dir / "h100-benchmarks" / "ladder-lm-medium" / "fp32" / "trace"
                  ).findings[0].rule == "fp32_matrix"
    # the real MI250X trace profiles only its first step: a 6.5 ms first launch says to profile later steps
    first_step = advise(reference_dir / "trace_mi250_rocm6.2_kineto.json.gz").findings[0]
    assert first_step.rule == "one_off" and "hipLaunchKernel" in first_step.evidence[0]


@pytest.fixture
def reference_dir():
    from pathlib import Path

    import lumikit

    return Path(lumikit.__file__).parent / "data" / "reference"


def _advise_capped(path):
    """``lumikit advise PATH`` in a fresh process with 1 GB of address space and a timeout."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "lumikit", "advise", str(path)], capture_output=True, text=True,
                          timeout=120, env=env, preexec_fn=cap)


def test_hostile_inputs_get_one_line_and_no_traceback(tmp_path):
    import os

    fifo = tmp_path / "rank0.pt.trace.json"
    os.mkfifo(fifo)
    sparse = tmp_path / "big" / "rank0.pt.trace.json"
    sparse.parent.mkdir()
    with open(sparse, "wb") as fh:
        fh.truncate(2 << 30)
    deep = tmp_path / "deep.pt.trace.json"
    deep.write_text('{"traceEvents": [' + "[" * 100000 + "]" * 100000 + "]}")
    for path in (fifo, "/dev/zero", sparse, deep):
        done = _advise_capped(path)
        assert done.returncode == 2, (path, done.stderr[-500:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lumikit: error: ") and "Traceback" not in done.stderr


def test_names_with_control_characters_print_escaped(tmp_path, capsys):
    from lumikit.trace.synth_cases import FP32_GEMM

    evil = FP32_GEMM + "\x1b]0;pwned\x07\n"
    events = [dict(e, name=evil) if e["name"] == FP32_GEMM else e for e in case_events("fp32_gemm")]
    from lumikit.trace.synth import write_events

    path = write_events(tmp_path / "evil.pt.trace.json", events)
    assert main(["advise", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "fp32" in out.lower()


def _row(gcd, busy, vram_pct):
    from lumikit.record.card import GcdRow

    return GcdRow(node="nid005001", gcd=gcd, kind="real", samples=10, busy_mean_pct=busy, busy_max_pct=busy,
                  power_mean_w=None, power_max_w=None, power_note="", vram_peak_gib=0.64 * vram_pct,
                  vram_peak_pct=vram_pct, energy_j=None, energy_kwh=None, energy_source="", sclk_mean_mhz=None,
                  sclk_max_mhz=None, computing_s=0.0)


def test_the_record_card_gives_vram_near_full_and_waiting_gcds(tmp_path, monkeypatch):
    from lumikit.advise import rules
    from lumikit.record import card

    def fake_card(folder):
        return card.ReportCard(run="r", rows=[_row(0, 40.0, 97.0), _row(1, 35.0, 50.0)])

    monkeypatch.setattr(card, "card_of_run", fake_card)
    found, where = rules.record_findings(tmp_path)
    by_rule = {f.rule: f for f in found}
    assert set(by_rule) == {"vram_full", "waiting_gcds"} and where == "GPU record card"
    assert "GCD 0 peaked at 97 %" in by_rule["vram_full"].evidence[0]
    assert "expandable_segments" in by_rule["vram_full"].remedy
    assert "mean busy 35-40 %" in by_rule["waiting_gcds"].evidence[0]


def test_the_health_check_seam_puts_lost_kernels_first(cases, monkeypatch):
    import sys
    import types

    health = types.ModuleType("lumikit.trace.health")
    health.check_trace = lambda trace, files=True: {"findings": [
        {"kind": "lost_kernels", "severity": "warning", "rank": 0, "count": 900,
         "evidence": "900 of 2700 kernel launches have no GPU work in the trace", "fix": "record fewer steps"}]}
    monkeypatch.setitem(sys.modules, "lumikit.trace.health", health)
    advice = advise(cases["fp32_gemm"])
    assert [f.rule for f in advice.findings][:2] == ["lost_kernels", "fp32_matrix"]
    assert "900 of 2700" in advice.findings[0].evidence[0]
    assert not any("not in this checkout" in n for n in advice.notes)


def test_memory_bound_kernels_measured_on_a_roofline(tmp_path, cases):
    import shutil

    from lumikit.testing.counter_outputs import counter_csv, roofline_dispatches

    (tmp_path / "pass_1").mkdir()
    # generated counters: add_fp32 (80 µs, memory-bound at 75 % of the HBM roof) and gemm_bf16 (22 µs, compute-bound)
    (tmp_path / "pass_1" / "run_counter_collection.csv").write_text(counter_csv(roofline_dispatches()))
    alone = advise(tmp_path)
    f = alone.findings[0]
    assert (f.rule, f.priority, f.gain_pct) == ("memory_bound", "medium", None)
    assert "78 % of the kernel time" in f.evidence[0] and "add_fp32" in f.evidence[0]
    assert "roofline (rocprofv3 counters)" in alone.inputs
    # with a trace beside them, the gain is half their share of the path's GPU compute
    from lumikit.trace.critical_path import critical_path
    from lumikit.trace.loader import load_trace

    shutil.copy(cases["healthy"], tmp_path / "rank0.pt.trace.json")
    compute = critical_path(load_trace(cases["healthy"])[0].columns)["bound_by"]["gpu_compute_bound"]
    both = advise(tmp_path).findings[0]
    assert both.rule == "memory_bound" and both.gain_pct == pytest.approx(100 * compute * 80 / 102 / 2, abs=0.01)
