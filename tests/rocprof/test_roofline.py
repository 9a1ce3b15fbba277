"""The MI250X roofline from rocprofv3 counters: numbers checked on generated counters whose answer is worked out by
hand, the passes within gfx90a's per-pass limits, and the profiling recipe that collects them."""
from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from lumikit.cli import main
from lumikit.errors import LumikitError
from lumikit.jobs.profiling import MODES, PASS_LIMITS, ROOFLINE_PASSES, counter_block, plan_passes
from lumikit.rocprof.counters import parse_counter_csv
from lumikit.rocprof.roofline import MEASURED, ROOFLINE_COUNTERS, read_roofline, roofline
from lumikit.testing import counter_outputs as co

# Worked out by hand from co.roofline_dispatches() (generated):
# gemm_bf16, per dispatch: 512 x 1,000,000 BF16 MFMA MOPs + 64 x 2 x 40,000 FP32 FMAs = 517,120,000 FLOPs;
#   HBM = 32 x 20,000 + 64 x (30,000 - 20,000) + 64 x 30,000 + 32 x (50,000 - 30,000) = 3,840,000 bytes.
# add_fp32: 64 x 16,384 FP32 adds = 1,048,576 FLOPs; HBM = 64 x 1,000,000 + 64 x 500,000 = 96,000,000 bytes.
GEMM_FLOPS, GEMM_BYTES = 517_120_000, 3_840_000
ADD_FLOPS, ADD_BYTES = 1_048_576, 96_000_000


def _check_known_numbers(rl) -> None:
    k = rl.kernels.set_index("kernel")
    assert k.loc["gemm_bf16", "dispatches"] == 2 and k.loc["gemm_bf16", "duration_ns"] == 22_000
    assert k.loc["gemm_bf16", "flops"] == pytest.approx(2 * GEMM_FLOPS, rel=1e-3)
    assert k.loc["gemm_bf16", "mfma_bf16"] == pytest.approx(2 * 512e6, rel=1e-3)
    assert k.loc["gemm_bf16", "hbm_bytes"] == pytest.approx(2 * GEMM_BYTES, rel=1e-3)
    assert k.loc["gemm_bf16", "arithmetic_intensity"] == pytest.approx(GEMM_FLOPS / GEMM_BYTES, rel=1e-3)
    assert k.loc["gemm_bf16", "flops_per_s"] == pytest.approx(2 * GEMM_FLOPS / 22e-6, rel=1e-3)
    assert k.loc["add_fp32", "flops"] == pytest.approx(ADD_FLOPS, rel=1e-3)
    assert k.loc["add_fp32", "hbm_bytes"] == pytest.approx(ADD_BYTES, rel=1e-3)
    assert k.loc["add_fp32", "arithmetic_intensity"] == pytest.approx(ADD_FLOPS / ADD_BYTES, rel=1e-3)
    assert k.loc["add_fp32", "hbm_bytes_per_s"] == pytest.approx(ADD_BYTES / 80e-6, rel=1e-3)  # 1.2 TB/s
    # ridge of BF16 matrix: 191.49 TFLOP/s / 1.6 TB/s = 119.7 FLOP/B; the GEMM's 134.7 is right of it
    assert k.loc["gemm_bf16", "bound"] == "compute" and k.loc["gemm_bf16", "roof"] == "BF16 matrix"
    assert k.loc["add_fp32", "bound"] == "memory" and k.loc["add_fp32", "roof"] == "FP32 vector"
    assert k.loc["add_fp32", "pct_of_roof"] == pytest.approx(100 * 1.2 / 1.6, rel=1e-3)  # 1.2 of 1.6 TB/s
    d = rl.dispatches.set_index("dispatch_id")
    assert d.loc[1, "flops"] == pytest.approx(GEMM_FLOPS, rel=1e-3) and d.loc[3, "duration_ns"] == 12_000


def test_known_counts_give_flops_bytes_and_intensity_to_a_tenth_of_a_percent():
    _check_known_numbers(roofline(parse_counter_csv(co.counter_csv(co.roofline_dispatches()))))


def test_the_same_counts_from_a_rocpd_database(tmp_path):
    _check_known_numbers(read_roofline(co.write_counter_db(tmp_path / "77_results.db", co.roofline_dispatches())))


def test_three_pass_folders_are_joined_by_dispatch(tmp_path):
    dispatches = co.roofline_dispatches()
    for n, counters in enumerate(ROOFLINE_PASSES, start=1):  # each pass a new process: another pid, other times
        part = [co.CounterDispatch(d.dispatch_id, d.kernel, d.start_ns + 7 * n, d.end_ns + 7 * n,
                                   {c: d.counters[c] for c in counters}) for d in dispatches]
        folder = tmp_path / "rank0" / f"pass_{n}"
        folder.mkdir(parents=True)
        (folder / f"{100 + n}_counter_collection.csv").write_text(co.counter_csv(part, pid=100 + n))
    rl = read_roofline(tmp_path)
    assert rl.passes == 3 and not rl.notes
    _check_known_numbers(rl)


def test_a_pass_missing_is_named_not_counted_as_zero():
    dispatches = [co.CounterDispatch(d.dispatch_id, d.kernel, d.start_ns, d.end_ns,
                                     {c: d.counters[c] for c in ROOFLINE_PASSES[0]}) for d in co.roofline_dispatches()]
    rl = roofline(parse_counter_csv(co.counter_csv(dispatches)))
    assert "not collected, so not counted" in rl.notes[0] and "HBM bytes" in rl.notes[0]
    assert "BF16 matrix FLOPs" in rl.notes[0]
    assert rl.kernels["hbm_bytes"].isna().all() and rl.kernels["bound"].isna().all()


def test_every_pass_stays_within_the_gfx90a_limits():
    plans = {"rocprof-compute's passes": [list(p) for p in ROOFLINE_PASSES],
             "first fit of the roofline set": plan_passes(ROOFLINE_COUNTERS),
             "first fit with more counters": plan_passes([*ROOFLINE_COUNTERS, "SQ_WAVES", "GRBM_GUI_ACTIVE",
                                                          "TCC_HIT_sum", "TCC_MISS_sum", "TCP_PENDING_STALL_CYCLES_sum",
                                                          *[f"SQ_INSTS_{k}" for k in ("SALU", "SMEM", "LDS", "VMEM")]])}
    for what, passes in plans.items():
        for p in passes:
            for block, limit in PASS_LIMITS.items():
                assert sum(counter_block(c) == block for c in p) <= limit, (what, p)
    assert sorted(c for p in ROOFLINE_PASSES for c in p) == sorted(set(ROOFLINE_COUNTERS))
    assert len(plan_passes(["SQ_X"] * 3 + [f"SQ_{i}" for i in range(17)])) == 3  # 18 distinct SQ counters


def test_the_roofline_recipe_writes_its_passes_and_runs_rocprofv3_with_them(tmp_path):
    from lumikit.jobs.render import rank_script
    from lumikit.jobs.spec import spec
    from lumikit.site import load_site

    mode = MODES["roofline"]
    assert mode.prefix[:2] == ("rocprofv3", "-i")
    script = rank_script(spec(["python", "train.py"], partition="small-g", profile="roofline"), load_site("lumi"))
    fake = tmp_path / "bin" / "rocprofv3"  # stands in for rocprofv3: prints the input file it was given
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n[ "$1" = -i ] && cat "$2"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "LUMIKIT_RUN_DIR": str(tmp_path / "run"),
           "SLURM_PROCID": "3"}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [ln.split()[1:] for ln in lines] == [list(p) for p in ROOFLINE_PASSES]
    assert (tmp_path / "run" / "profile" / "roofline-rank3.txt").read_text() == done.stdout


def test_cli_json_table_csv_and_plot(tmp_path, capsys):
    path = tmp_path / "77_counter_collection.csv"
    path.write_text(co.counter_csv(co.roofline_dispatches()))
    out_csv, out_png = tmp_path / "points.csv", tmp_path / "roofline.png"
    assert main(["rocprof", "roofline", str(path), "--json", "--dispatches", "--csv", str(out_csv),
                 "--plot", str(out_png)]) == 0
    report = json.loads(capsys.readouterr().out)
    gemm = next(k for k in report["kernels"] if k["kernel"] == "gemm_bf16")
    assert {"kernel", "flops", "hbm_bytes", "arithmetic_intensity", "flops_per_s", "bound"} <= set(gemm)
    assert gemm["flops"] == 2 * GEMM_FLOPS and gemm["bound"] == "compute"
    assert gemm["flops_by_kind"]["mfma_bf16"] == 1_024_000_000 and len(report["dispatches"]) == 3
    assert {r["name"] for r in report["roofs"]} >= {"HBM, peak", "HBM, measured", "HBM, achievable (LUMI course)"}
    assert all(r["source"] for r in report["roofs"])
    assert out_csv.read_text().splitlines()[0].startswith("kernel,dispatches,duration_ns,flops,")
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["rocprof", "roofline", str(path)]) == 0
    text = capsys.readouterr().out
    assert "compute" in text and "LUMI-training-materials" in text and "roofline.csv" in text


def test_the_figure_labels_every_line_with_its_source():
    from lumikit.rocprof.plots import plot_roofline

    fig = plot_roofline(roofline(parse_counter_csv(co.counter_csv(co.roofline_dispatches()))), generated=True)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_title().startswith("Generated")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lb.startswith("HBM, peak 1.60 TB/s [1]") for lb in labels)
    assert any(lb.startswith("HBM, achievable (LUMI course) 1.30 TB/s") for lb in labels)
    notes = " ".join(t.get_text() for t in ax.texts)
    assert "[1] site profile lumi" in notes and "MI200/roofline.csv" in notes and "4day-20230530" in notes
    assert {a.get_text() for a in ax.texts if not a.get_text().startswith("[")} >= {"gemm_bf16", "add_fp32"}


def test_measured_ceilings_are_below_the_peaks_they_measure():
    rl = roofline(parse_counter_csv(co.counter_csv(co.roofline_dispatches())))
    peak = {r.name.split(",")[0]: r.value for r in rl.roofs if not r.measured}
    for r in MEASURED:
        base = r.name.split(",")[0]
        if base in peak:
            assert 0.8 * peak[base] < r.value < peak[base], r


def test_a_folder_without_counter_files_says_what_to_give(tmp_path):
    with pytest.raises(LumikitError, match="no \\*_counter_collection.csv or .db"):
        read_roofline(tmp_path)


def test_real_counter_fixtures_hold_no_roofline_counters(shared_fixtures: Path):
    # ../shared/fixtures/rocprof has rocprof v1 statistics and a rocprofv3 kernel-stats CSV, no --pmc output
    # with the roofline's counters: the numbers above are checked on generated counters only.
    names = [p.name for p in (shared_fixtures / "rocprof").iterdir()]
    assert names and not any("counter_collection" in n for n in names)


# -- without counters: FLOPs and bytes from the shapes of a torch profiler trace (record_shapes=True) ----------
def _op(name, ts, dur, ext, dims, types, concrete=None):
    args = {"External id": ext, "Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _kernel(ext, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": f"k{ext}", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "stream": 7}}


def _shapes_trace(tmp_path):
    """Generated: four counted operators (two of them inside an outer op) and the GPU kernels they launched."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
         "args": {"External id": 1, "Input Dims": [[64, 128], [32, 128], [32]], "Input type": ["c10::BFloat16"] * 3}},
        _op("aten::addmm", 10, 80, 2, [[32], [64, 128], [128, 32], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2),
        _op("aten::scaled_dot_product_attention", 200, 50, 3, [[2, 4, 128, 64], [2, 4, 256, 64], [2, 4, 256, 64]],
            ["c10::Half"] * 3),
        _op("aten::_scaled_dot_product_flash_attention", 205, 40, 4,
            [[2, 4, 128, 64], [2, 4, 256, 64], [2, 4, 256, 64]], ["c10::Half"] * 3),
        _op("aten::convolution", 300, 60, 5, [[8, 16, 32, 32], [32, 16, 3, 3], [32], [], [], [], [], [], []],
            ["float"] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
            ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
        _op("aten::relu", 400, 20, 6, [[8, 32, 16, 16]], ["float"]),
        _op("aten::clamp_min", 402, 15, 7, [[8, 32, 16, 16], []], ["float", "Scalar"]),
        _kernel(2, 20, 10), _kernel(4, 210, 20), _kernel(5, 310, 30), _kernel(7, 405, 4)]
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_roofline_from_shapes_counts_each_operator_once_by_known_formulas(tmp_path):
    from lumikit.rocprof.shape_roofline import CACHE_ASSUMPTION, shape_roofline

    rl = shape_roofline(_shapes_trace(tmp_path))
    k = {row["kernel"].split(" ")[0]: row for _, row in rl.kernels.iterrows()}
    assert set(k) == {"aten::addmm", "aten::scaled_dot_product_attention", "aten::convolution", "aten::relu"}
    # addmm: 2 x 64 x 32 x 128 FLOPs; (32 + 64*128 + 128*32 + 64*32) bf16 elements
    assert (k["aten::addmm"]["flops"], k["aten::addmm"]["hbm_bytes"]) == (524_288, 28_736)
    assert k["aten::addmm"]["mfma_bf16"] == 524_288 and k["aten::addmm"]["duration_ns"] == 10_000
    # attention: 2 x B2 x H4 x L128 x S256 x (E64 + Ev64); q, k, v and the output read/written once, fp16
    sdpa = k["aten::scaled_dot_product_attention"]
    assert (sdpa["flops"], sdpa["hbm_bytes"], sdpa["duration_ns"]) == (67_108_864, 786_432, 20_000)
    # stride-2 3x3 convolution, padding 1: 16x16 output pixels; 2 x 8 x 32 x 256 x 16 x 9 FLOPs, fp32
    conv = k["aten::convolution"]
    assert (conv["flops"], conv["hbm_bytes"], conv["duration_ns"]) == (18_874_368, 804_992, 30_000)
    assert conv["mfma_f32"] == 18_874_368
    # relu: one FLOP per element; the clamp_min inside it is not counted again, its kernel is relu's
    relu = k["aten::relu"]
    assert (relu["flops"], relu["hbm_bytes"], relu["duration_ns"]) == (65_536, 524_288, 4_000)
    assert relu["bound"] == "memory" and relu["valu_f32"] == 65_536
    assert relu["arithmetic_intensity"] == pytest.approx(0.125)
    assert rl.notes[0] == CACHE_ASSUMPTION and len(rl.dispatches) == 4


def test_cli_roofline_of_a_trace_without_shapes_says_how_to_record_them(tmp_path, capsys):
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0,
                                                 "dur": 5, "tid": 1, "args": {}}]}))
    assert main(["rocprof", "roofline", str(path)]) == 2
    assert "record_shapes=True" in capsys.readouterr().err
    assert main(["rocprof", "roofline", str(_shapes_trace(tmp_path)), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passes"] == 0 and "every input read from HBM once" in report["notes"][0]
    assert {k["kernel"].split(" ")[0] for k in report["kernels"]} >= {"aten::addmm", "aten::convolution"}


def test_the_real_cpu_trace_gives_its_convolutions_by_hand(shared_fixtures):
    # ../shared/fixtures/traces/torch-cpu (torch 2.13 CPU, record_shapes=True): a 3x3 convolution of a 16x3x32x32
    # batch to 16 channels, padding 1, three calls: 3 x 2 x 16 x 16 x 1024 x 3 x 9 FLOPs
    from lumikit.rocprof.shape_roofline import shape_roofline

    rl = shape_roofline(shared_fixtures / "traces" / "torch-cpu" / "rank0.1795343028888257490.pt.trace.json")
    conv = rl.kernels[rl.kernels["kernel"].str.startswith("aten::convolution [[16, 3, 32, 32]")].iloc[0]
    assert conv["dispatches"] == 3 and conv["flops"] == 3 * 2 * 16 * 16 * 1024 * 3 * 9
    assert conv["hbm_bytes"] == 3 * 4 * (16 * 3 * 1024 + 16 * 3 * 9 + 16 + 16 * 16 * 1024)
    assert any("CPU time" in n for n in rl.notes)


def test_the_roofline_mode_gets_rocprofv3s_overlay_in_the_laif_container():
    from lumikit.jobs.render import profiler_overlay
    from lumikit.jobs.spec import spec
    from lumikit.jobs.validate import overlay_advice
    from lumikit.site import load_site

    site = load_site("lumi")
    job = spec(["python", "train.py"], partition="small-g", container="laif-pytorch", profile="roofline")
    assert profiler_overlay(job, site)["overlay"] == "deps.sqsh"  # rocprofv3 in that image lacks libdw
    assert "libdw1t64" in overlay_advice(job, site)[0]


def test_real_gpu_traces_link_each_operator_to_its_kernels(shared_fixtures):
    # HTA's MI250 trace (ROCm 6.2, Kineto): addmm of a 5x128 batch by a 128x128 weight, fp32, one call
    from lumikit.rocprof.shape_roofline import shape_roofline

    hta = shared_fixtures / "traces" / "hta-real"
    rl = shape_roofline(hta / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    addmm = rl.kernels.set_index("kernel").loc["aten::addmm [[128], [5, 128], [128, 128]] float"]
    assert (addmm["flops"], addmm["hbm_bytes"]) == (2 * 5 * 128 * 128, 4 * (128 + 5 * 128 + 128 * 128 + 5 * 128))
    assert addmm["duration_ns"] > 0 and rl.kernels["duration_ns"].notna().all()
    # HTA's sampled CUDA trace: kernels carry the launch's correlation, not the operator's External id; every
    # operator call finds its kernels through its launch calls (8192x512 by 512x8192, fp32: 2 x 8192^2 x 512)
    rl = shape_roofline(hta / "trace_filter__sampled_rank-0.json.gz")
    assert rl.kernels["duration_ns"].notna().all() and not any("no GPU kernel" in n for n in rl.notes)
    mm = rl.kernels.set_index("kernel").loc["aten::mm [[8192, 512], [512, 8192]] float"]
    assert mm["dispatches"] == 2 and mm["flops"] == 2 * 2 * 8192 * 8192 * 512


def test_an_operator_without_kernels_in_a_gpu_trace_has_an_unknown_time(tmp_path):
    from lumikit.rocprof.shape_roofline import shape_roofline

    path = _shapes_trace(tmp_path)
    doc = json.loads(path.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["args"].get("External id") != 5 or e["cat"] != "kernel"]
    path.write_text(json.dumps(doc))
    rl = shape_roofline(path)
    conv = rl.kernels[rl.kernels["kernel"].str.startswith("aten::convolution")].iloc[0]
    assert pd.isna(conv["duration_ns"]) and pd.isna(conv["flops_per_s"]) and conv["flops"] == 18_874_368
    assert any("1 of 4 operator calls have no GPU kernel" in n for n in rl.notes)


def test_a_kernel_with_one_untimed_dispatch_has_no_rate_rather_than_a_too_high_one():
    table = parse_counter_csv(co.counter_csv(co.roofline_dispatches()))
    table.loc[table["dispatch_id"] == 3, "duration_ns"] = pd.NA  # the second GEMM lost its timestamps
    gemm = roofline(table).kernels.set_index("kernel").loc["gemm_bf16"]
    assert gemm["flops"] == pytest.approx(2 * GEMM_FLOPS) and pd.isna(gemm["duration_ns"])
    assert pd.isna(gemm["flops_per_s"]) and gemm["bound"] == "compute"  # the bound needs no time
    assert any("1 dispatches without timestamps" in n for n in roofline(table).notes)


def test_damaged_dtypes_are_skipped_not_a_crash(tmp_path):
    # found by fuzzing (seed 2026.9): an "Input type" entry that is an object
    from lumikit.rocprof.shape_roofline import shape_roofline

    path = _shapes_trace(tmp_path)
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        if e["name"] == "aten::addmm":
            e["args"]["Input type"] = [{"a": 1}, ["float"], "c10::BFloat16"]
    path.write_text(json.dumps(doc))
    names = {k.split(" ")[0] for k in shape_roofline(path).kernels["kernel"]}
    assert "aten::addmm" in names  # its one readable dtype still names the precision
