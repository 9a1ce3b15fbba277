"""The generated roofline counters of the course's kernels: counts derived from shapes give back, through the
roofline reader, the FLOPs, bytes and intensity worked out by hand from those shapes."""
from __future__ import annotations

import pytest

from lumikit.jobs.profiling import PASS_LIMITS, ROOFLINE_PASSES, counter_block
from lumikit.rocprof.counters import read_counters
from lumikit.rocprof.course_counters import (LINK_BYTES_PER_S, MIN_KERNEL_NS, course_kernels, duration_ns,
                                             write_course_counters)
from lumikit.rocprof.roofline import read_roofline

# The QKV projection while generating 32 tokens, by hand: a 32 x 384 by 384 x 1152 BF16 GEMM plus a bias add.
QKV_FLOPS = 2 * 32 * 1152 * 384 + 32 * 1152          # 28,348,416 per dispatch
QKV_BYTES = 2 * (32 * 384 + 384 * 1152 + 1152) + 2 * 32 * 1152  # inputs read once, output written once: 985,344


@pytest.fixture(scope="module")
def roof(tmp_path_factory: pytest.TempPathFactory):
    return read_roofline(write_course_counters(tmp_path_factory.mktemp("course") / "generated-roofline"))


def test_a_thin_gemm_gives_back_its_flops_bytes_and_intensity_from_shapes(roof):
    qkv = roof.kernels.set_index("kernel").loc["Cijk_gemm_lm_qkv_decode"]
    assert qkv["dispatches"] == 8
    assert qkv["flops"] == pytest.approx(8 * QKV_FLOPS, rel=1e-3)
    assert qkv["hbm_bytes"] == pytest.approx(8 * QKV_BYTES, rel=1e-3)
    assert qkv["arithmetic_intensity"] == pytest.approx(QKV_FLOPS / QKV_BYTES, rel=1e-3)  # 28.77 FLOPs per byte
    assert qkv["bound"] == "memory" and qkv["roof"] == "BF16 matrix"
    assert qkv["l2_bytes"] > qkv["hbm_bytes"]  # A is read once per column of output tiles


def test_the_big_gemms_are_compute_bound_and_the_elementwise_kernels_memory_bound(roof):
    k = roof.kernels.set_index("kernel")
    assert set(k.index[k["bound"] == "compute"]) == {"igemm_conv3x3_resnet50", "Cijk_gemm_lm_mlp_up"}
    conv = k.loc["igemm_conv3x3_resnet50"]
    conv_flops = 2 * (128 * 8 * 8) * 256 * (256 * 9) + 128 * 8 * 8 * 256
    conv_bytes = 2 * (128 * 256 * 8 * 8 + 256 * 256 * 9 + 256) + 2 * 128 * 8 * 8 * 256
    assert conv["arithmetic_intensity"] == pytest.approx(conv_flops / conv_bytes, rel=1e-3)
    norm = k.loc["batch_norm_fwd_resnet50"]  # 1 add + 2 FMAs per element; reads 4 bytes twice, writes 4
    assert norm["arithmetic_intensity"] == pytest.approx(5 / 12, rel=1e-3)


def test_times_follow_the_stated_rules(roof):
    kernels = {k.name: k for k in course_kernels()}
    assert duration_ns(kernels["Cijk_gemm_lm_qkv_decode"]) == MIN_KERNEL_NS  # too small to reach a roof
    bucket = 25 * 2**20
    assert duration_ns(kernels["ncclDevKernel_AllReduce_Sum_f32"]) == round(bucket / LINK_BYTES_PER_S * 1e9)
    mlp = roof.kernels.set_index("kernel").loc["Cijk_gemm_lm_mlp_up"]
    assert mlp["pct_of_roof"] == pytest.approx(70 * 170438.3 / 191490, rel=1e-3)  # 70 % of the measured ceiling


def test_each_pass_folder_holds_only_its_pass_within_the_gfx90a_limits(tmp_path):
    root = write_course_counters(tmp_path / "run")
    for n, names in enumerate(ROOFLINE_PASSES, start=1):
        (f,) = (root / f"pass_{n}").glob("*_counter_collection.csv")
        counted = set(read_counters(f)["counter"])
        assert counted == set(names)
        for block, limit in PASS_LIMITS.items():
            assert sum(counter_block(c) == block for c in counted) <= limit


def test_the_decode_tokens_move_only_the_thin_gemm(tmp_path):
    a = read_roofline(write_course_counters(tmp_path / "a", decode_tokens=8)).kernels.set_index("kernel")
    b = read_roofline(write_course_counters(tmp_path / "b", decode_tokens=48)).kernels.set_index("kernel")
    assert a.loc["Cijk_gemm_lm_qkv_decode", "arithmetic_intensity"] < b.loc["Cijk_gemm_lm_qkv_decode",
                                                                            "arithmetic_intensity"]
    assert a.loc["Cijk_gemm_lm_mlp_up", "flops"] == b.loc["Cijk_gemm_lm_mlp_up", "flops"]
