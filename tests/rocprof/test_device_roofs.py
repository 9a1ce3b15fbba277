"""Roofs by device: the roofline from shapes holds a trace's kernels to the roofs of the GPU the trace names
(``deviceProperties``), or says it has none; every kernel gets a % of the roof that bounds it."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from lumikit.gpu_roofs import device_profile, profiles
from lumikit.rocprof.counters import parse_counter_csv
from lumikit.rocprof.roofline import ROOFLINE_COUNTERS, roofline
from lumikit.rocprof.shape_roofline import shape_roofline
from lumikit.testing import counter_outputs as co

MI300X = {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205_822_885_888, "computeMajor": 9,
          "computeMinor": 4, "warpSize": 64, "numSms": 304}
N = 8192  # the GEMM: 8192^3, bf16
ELEMENTS = 1 << 28  # the add: two bf16 vectors of 2^28 elements


def fast_trace(tmp_path, device: dict | None, name: str = "t.json"):
    """Generated: a bf16 GEMM at 600 TFLOP/s and a bf16 add at 3 TB/s (each from its shapes and kernel time): what
    an MI300X can run (46 % and 57 % of its roofs), and three times an MI250X GCD's peaks."""
    gemm_us = 2 * N**3 / 600e12 * 1e6
    add_us = 3 * ELEMENTS * 2 / 3e12 * 1e6
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 20,
         "args": {"External id": 1, "Input Dims": [[N, N], [N, N]], "Input type": ["c10::BFloat16"] * 2}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 30, "dur": 20,
         "args": {"External id": 2, "Input Dims": [[ELEMENTS], [ELEMENTS], []],
                  "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"]}},
        {"ph": "X", "cat": "kernel", "name": "Cijk_gemm", "pid": 0, "tid": 0, "ts": 25, "dur": gemm_us,
         "args": {"External id": 1, "device": 0, "stream": 0}},
        {"ph": "X", "cat": "kernel", "name": "elementwise_add", "pid": 0, "tid": 0, "ts": 25 + gemm_us, "dur": add_us,
         "args": {"External id": 2, "device": 0, "stream": 0}},
    ]
    doc = {"traceEvents": events} | ({"deviceProperties": [device]} if device is not None else {})
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def pct(rl) -> dict[str, float]:
    return {k.split(" ")[0]: v for k, v in zip(rl.kernels["kernel"], rl.kernels["pct_of_roof"])}


def test_an_mi300x_trace_is_held_to_mi300x_roofs_and_no_kernel_is_above_100_percent(tmp_path):
    rl = shape_roofline(fast_trace(tmp_path, MI300X))
    roofs = {r.name: r.value for r in rl.roofs}
    assert roofs["HBM, peak"] == 5.3e12 and roofs["BF16 matrix, peak"] == pytest.approx(1307.4e12)
    assert not any(r.measured for r in rl.roofs)  # the MI200 measurements are not an MI300X's
    assert any("AMD Instinct MI300X" in n for n in rl.notes) and rl.device == "AMD Instinct MI300X"
    got = pct(rl)
    assert got["aten::mm"] == pytest.approx(100 * 600 / 1307.4, rel=1e-3)
    assert got["aten::add"] == pytest.approx(100 * 3 / 5.3, rel=1e-3)
    assert (rl.kernels["pct_of_roof"] <= 100).all() and (rl.dispatches["pct_of_roof"] <= 100).all()
    # held to an MI250X GCD's roofs (site profile lumi) the same kernels run at three times its peaks, and a note
    # says such roofs cannot be this GPU's
    wrong = shape_roofline(fast_trace(tmp_path, MI300X), site="lumi")
    assert (wrong.kernels["pct_of_roof"] > 100).all()
    assert any("above 100 % of their roof" in n for n in wrong.notes)


def test_an_mi300x_named_only_by_its_gfx_version_and_units_is_recognised(tmp_path):
    # older ROCm Kinetos name every GPU "AMD Radeon Graphics"; gfx942 with 304 CUs and 192 GB is an MI300X
    rl = shape_roofline(fast_trace(tmp_path, MI300X | {"name": "AMD Radeon Graphics"}))
    assert {r.name: r.value for r in rl.roofs}["HBM, peak"] == 5.3e12
    # the same chip with 256 GB is an MI325X (another bandwidth): no profile, and it says so
    mi325x = shape_roofline(fast_trace(tmp_path, MI300X | {"name": "AMD Radeon Graphics",
                                                            "totalGlobalMem": 274_877_906_944}))
    assert mi325x.roofs == () and mi325x.kernels["pct_of_roof"].isna().all()
    assert mi325x.device == "AMD Radeon Graphics, no roofs"
    assert any(n.startswith("no roofs for this trace's GPU, AMD Radeon Graphics") for n in mi325x.notes)
    assert mi325x.kernels["flops_per_s"].notna().all()  # the rates are still there


def test_h100_and_mi250x_traces_get_their_own_roofs_and_a_trace_without_a_device_the_course_default(tmp_path):
    h100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}
    roofs = {r.name: r.value for r in shape_roofline(fast_trace(tmp_path, h100)).roofs}
    assert roofs["HBM, peak"] == 3.35e12 and roofs["BF16 matrix, peak"] == pytest.approx(989.4e12)
    pcie = shape_roofline(fast_trace(tmp_path, h100 | {"name": "NVIDIA H100 PCIe", "numSms": 114}))
    assert pcie.roofs == ()  # another GPU with other peaks: none shipped
    gcd = {"id": 0, "name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0, "numSms": 110, "warpSize": 64}
    roofs = {r.name: r.value for r in shape_roofline(fast_trace(tmp_path, gcd)).roofs}
    assert roofs["HBM, peak"] == 1.6e12 and "HBM, measured" in roofs
    none = shape_roofline(fast_trace(tmp_path, None))
    assert {r.name: r.value for r in none.roofs}["HBM, peak"] == 1.6e12
    assert any("names no GPU" in n for n in none.notes)


def test_every_shipped_profile_has_its_peaks_and_a_source():
    for p in profiles().values():
        assert p.hbm_tb_per_s > 0 and p.source and set(p.peak_tflops) >= {"bf16", "fp16", "fp32", "fp64"}
    assert device_profile([]) == (None, None)


def test_a_kernel_without_flops_is_held_to_the_bandwidth_roof():
    # generated counters: the known GEMM and add dispatches plus a copy kernel that only moves data, 80 us for
    # 64 x 1,000,000 bytes read and 64 x 500,000 written: 1.2 TB/s, 75 % of an MI250X GCD's 1.6 TB/s
    copy = dict.fromkeys(ROOFLINE_COUNTERS, 0.0) | {"TCC_EA_RDREQ_sum": 1_000_000, "TCC_EA_WRREQ_sum": 500_000,
                                                     "TCC_EA_WRREQ_64B_sum": 500_000}
    dispatches = co.roofline_dispatches() + [co.CounterDispatch(4, "copy_kernel", 2_000_000, 2_080_000, copy)]
    k = roofline(parse_counter_csv(co.counter_csv(dispatches))).kernels.set_index("kernel")
    assert k.loc["copy_kernel", "flops"] == 0
    assert k.loc["copy_kernel", "pct_of_roof"] == pytest.approx(75.0)
    assert k.loc["copy_kernel", "roof"] == "HBM bandwidth" and k.loc["copy_kernel", "bound"] == "memory"
    assert pd.notna(k["pct_of_roof"]).all()


def test_the_real_mi250_trace_says_it_has_no_roofs_for_its_gpu(shared_fixtures):
    # HTA's MI250 trace (ROCm 6.2): "AMD Radeon Graphics", gfx90a with 104 CUs (an MI250 GCD or an MI210, not an
    # MI250X GCD's 110): no shipped profile, said plainly, rather than an MI250X's roofs
    hta = shared_fixtures / "traces" / "hta-real"
    rl = shape_roofline(hta / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert rl.roofs == () and any("numSms 104" in n for n in rl.notes)


@pytest.mark.parametrize("props", ["an MI300X", [1, 2], [{"name": {"a": 1}, "numSms": [304], "computeMajor": "9",
                                                          "totalGlobalMem": "192 GB", "id": [0]}],
                                   [{"name": "AMD Instinct MI300X\u001b[31m" + "x" * 5000}]])
def test_damaged_device_properties_are_no_crash(tmp_path, props):
    doc = json.loads(fast_trace(tmp_path, None).read_text()) | {"deviceProperties": props}
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    rl = shape_roofline(path)
    assert len(rl.kernels) == 2 and all(len(n) < 2000 and "\u001b" not in n for n in rl.notes)
