"""Model estimates checked against hand counts, and measured runs set against them (MFU, share of a GCD)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from lumikit.errors import LumikitError  # noqa: E402
from lumikit.model_estimate import (GiB, compare, estimate_model, estimate_workload, gcd_memory_gb,  # noqa: E402
                                    gcd_peak_flops, largest_batch, optimizer_slots)

B, I, H, O = 16, 32, 64, 10


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(I, H), nn.ReLU(), nn.Linear(H, O))


def test_an_mlp_matches_the_hand_count():
    model = mlp()
    e = estimate_model(model, torch.randn(B, I), optimizer="adamw")
    params = I * H + H + H * O + O
    assert (e.parameters, e.trainable, e.batch_size) == (params, params, B)
    assert (e.parameter_bytes, e.gradient_bytes, e.optimizer_bytes) == (4 * params, 4 * params, 8 * params)
    assert e.forward_flops == 2 * B * (I * H + H * O)
    # backward: both weight gradients, and the input gradient of the second layer only (x needs no gradient)
    assert e.step_flops == e.forward_flops + 2 * B * (I * H + H * O) + 2 * B * H * O
    # saved for backward: the input x, the ReLU's output (kept once, although two ops save it)
    assert e.activation_bytes == 4 * B * (I + H)
    assert e.total_bytes == 16 * params + 4 * B * (I + H)
    assert next(model.parameters()).device.type == "cpu"  # the original stays where it was


def test_optimizer_state_follows_the_optimizer():
    params = [nn.Parameter(torch.zeros(3))]
    assert optimizer_slots(torch.optim.SGD(params, lr=0.1))[0] == 0
    assert optimizer_slots(torch.optim.SGD(params, lr=0.1, momentum=0.9))[0] == 1
    assert optimizer_slots(torch.optim.Adam(params, amsgrad=True))[0] == 3
    assert optimizer_slots("adamw") == (2, "adamw")
    with pytest.raises(LumikitError, match="unknown optimizer"):
        optimizer_slots("lion")


def test_course_workloads_scale_with_the_batch():
    from lumikit.workloads.resnet import build_model

    small, large = estimate_workload("resnet", "tiny", 8), estimate_workload("resnet", "tiny", 16)
    assert small.parameters == large.parameters == sum(p.numel() for p in build_model("tiny").parameters())
    # activations grow with the batch, but for batch norm's per-channel statistics
    fixed = 2 * small.activation_bytes - large.activation_bytes
    assert 0 < fixed < 0.01 * large.activation_bytes
    assert large.step_flops == 2 * small.step_flops
    assert small.optimizer == "sgd-momentum" and small.optimizer_bytes == small.parameter_bytes
    lm = estimate_workload("lm", "tiny", 4)
    assert lm.optimizer == "adamw" and lm.optimizer_bytes == 2 * lm.parameter_bytes and lm.step_flops > 0


def test_largest_batch_fills_a_gcd_and_one_more_does_not():
    e = estimate_model(mlp(), torch.randn(B, I), optimizer="adamw")
    n = largest_batch(e)
    assert n == int((64 * GiB - 16 * e.parameters) // (4 * (I + H)))
    assert estimate_model(mlp(), torch.empty(n, I, device="meta")).gcd_fraction() <= 1
    assert estimate_model(mlp(), torch.empty(n + 1, I, device="meta")).gcd_fraction() > 1


def test_peaks_come_from_the_site_profile():
    assert gcd_memory_gb("lumi") == 64
    cus, clock = 110, 1.7e9  # AMD's ROCm docs: 110 CUs per MI250X GCD at a 1.7 GHz peak engine clock
    assert gcd_peak_flops("bf16", "lumi") == pytest.approx(1024 * cus * clock, rel=1e-3)  # FLOPs per CU and clock
    assert gcd_peak_flops("fp32_matrix", "lumi") == pytest.approx(256 * cus * clock, rel=1e-3)
    assert gcd_peak_flops("fp32", "lumi") == pytest.approx(128 * cus * clock, rel=1e-3)
    with pytest.raises(LumikitError, match="bf16"):
        gcd_peak_flops("fp8", "lumi")


def test_compare_gives_mfu_and_the_share_of_a_gcd():
    e = estimate_model(mlp(), torch.randn(B, I), optimizer="sgd")
    c = compare(e, step_time_s=e.step_flops / 47.87e12 * 4, peak_memory_bytes=32 * GiB, precision="fp32_matrix")
    assert c.mfu == pytest.approx(0.25)
    assert c.measured_fraction_of_gcd == pytest.approx(0.5)
    assert "MFU 25.0 %" in c.text() and "50.0 %" in c.text()
    assert "MI250X" in c.source and "AMD" in c.source
    with pytest.raises(LumikitError, match="step time"):
        compare(e, 0)


def test_a_gcd_is_64_gib_so_its_whole_memory_is_a_fraction_of_one():
    # PyTorch reports a GCD's memory in bytes: 64 GiB = 68,719,476,736 (a GB of 1e9 bytes made it 107 %)
    e = estimate_model(mlp(), torch.randn(B, I), optimizer="sgd")
    c = compare(e, step_time_s=1.0, peak_memory_bytes=64 * 2 ** 30)
    assert c.measured_fraction_of_gcd == pytest.approx(1.0)
    assert "GiB" in c.text() and " GB" not in c.text()
    assert all(unit != "GB" for _, _, unit in e.rows())
