"""The speed knobs: in both workloads' --help, and each one that cannot work here says so in one line while the
run goes on without it (never a traceback)."""
from __future__ import annotations

import json
import os

import pytest
import torch

from lumikit.workloads import knobs, lm, resnet

KNOB_OPTIONS = ("--precision", "--channels-last", "--compile", "--fused-optimizer", "--tunableop", "--workers")


def result(folder):
    return json.loads((folder / "result.rank0.json").read_text())


def run(module, tmp_path, capsys, *argv):
    extra = ["--samples", "64"] if module is resnet else []
    status = module.main(["--no-progress", "--steps", "2", "--out", str(tmp_path), *extra, *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return status, captured.out, result(tmp_path)["knobs"]


@pytest.mark.parametrize("module", [lm, resnet])
def test_every_knob_is_in_both_workloads_help(module):
    text = module.parser().format_help()
    for option in KNOB_OPTIONS:
        assert option in text, option
    for precision in knobs.PRECISIONS:
        assert precision in text


@pytest.mark.skipif(knobs.precision_support("bf16", torch.device("cpu")) is not None, reason="no native bf16 here")
def test_bf16_runs_on_a_cpu_with_native_bf16(tmp_path, capsys):
    status, out, applied = run(lm, tmp_path, capsys, "--precision", "bf16")
    assert status == 0 and applied["precision"] == "bf16" and applied["notes"] == []
    assert "precision bf16" in out


def test_a_cpu_without_bf16_says_so_and_runs_in_fp32(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    status, out, applied = run(lm, tmp_path, capsys, "--precision", "bf16")
    assert status == 0 and applied["precision"] == "fp32"
    assert [line for line in out.splitlines() if line.startswith("--precision")] == [
        "--precision bf16: this CPU has no native bf16 (no AVX512-BF16 or AMX): autocast would only emulate it; "
        "running in fp32"]


def test_fp16_on_a_cpu_says_so_and_runs_in_fp32(tmp_path, capsys):
    status, out, applied = run(resnet, tmp_path, capsys, "--precision", "fp16")
    assert status == 0 and applied["precision"] == "fp32" and len(applied["notes"]) == 1
    assert "fp16 autocast is for GPUs" in out


def test_tunableop_without_rocm_does_nothing_and_says_so(tmp_path, capsys):
    status, out, applied = run(lm, tmp_path, capsys, "--tunableop")
    assert status == 0 and applied["tunableop_file"] is None
    assert "--tunableop: TunableOp tunes ROCm's GEMMs (hipBLASLt/rocBLAS) and this torch is not a ROCm build, so it " \
           "does nothing here" in out.splitlines()


def test_channels_last_changes_the_resnet_and_does_nothing_in_the_lm(tmp_path, capsys):
    status, out, applied = run(resnet, tmp_path / "r", capsys, "--channels-last", "--fused-optimizer")
    assert status == 0 and applied["channels_last"] and applied["fused_optimizer"] and applied["notes"] == []
    status, out, applied = run(lm, tmp_path / "l", capsys, "--channels-last")
    assert status == 0 and not applied["channels_last"]
    assert "--channels-last: this model has no convolutions, so channels-last does nothing here" in out.splitlines()


def test_channels_last_stores_convolution_weights_nhwc():
    model = resnet.build_model("tiny")
    changed, applied = knobs.apply_knobs(knobs.Knobs(channels_last=True), model, torch.device("cpu"),
                                         out_dir=".", convolutional=True, say=print)
    weight = changed.stem[0].weight
    assert applied.channels_last and weight.is_contiguous(memory_format=torch.channels_last)
    assert not weight.is_contiguous()  # NCHW-contiguous no more: a 3x3 kernel over 3 channels, stored NHWC


def test_fp16_steps_go_through_the_gradient_scaler():
    """On a GPU, fp16 gets a scaler: the loss is scaled before backward, the step and update go through it."""
    calls = []

    class Scaler:
        def scale(self, loss):
            calls.append("scale")
            return loss * 1024.0

        def step(self, optimizer):
            calls.append("step")
            optimizer.step()

        def update(self):
            calls.append("update")

    assert knobs.precision_support("fp16", torch.device("cuda")) is None
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.0)
    knobs.Applied(precision="fp16", device_type="cuda", scaler=Scaler()).backward_and_step(weight.sum(), optimizer)
    assert calls == ["scale", "step", "update"] and weight.grad.tolist() == [1024.0, 1024.0]


def test_a_missing_compiler_is_one_line_and_the_run_goes_on_eagerly(tmp_path, capsys, monkeypatch):
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"cpp.cxx": (None, "/nonexistent/g++")}):
        status, out, applied = run(lm, tmp_path, capsys, "--compile")
    assert status == 0 and applied["compile"] is None
    assert ("--compile: inductor finds no C++ compiler (/nonexistent/g++ not on PATH; set CXX or load a compiler); "
            "running without it") in out.splitlines()


def test_a_compile_that_fails_at_the_first_step_falls_back_to_eager(tmp_path, capsys, monkeypatch):
    """A compiler that is there but does not work (/bin/false) fails inside inductor, at the first call."""
    import torch._inductor.config as inductor_config

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))  # no cached kernel to reuse
    torch._dynamo.reset()
    try:
        with inductor_config.patch({"cpp.cxx": (None, "/bin/false")}):
            status, out, applied = run(lm, tmp_path / "run", capsys, "--compile")
    finally:
        torch._dynamo.reset()
    assert status == 0 and applied["compile"] is None
    said = [line for line in out.splitlines() if line.startswith("--compile")]
    assert len(said) == 1 and said[0].startswith("--compile: compiling failed (") and "C++ compiler" in said[0]


@pytest.mark.skipif(knobs.compiler_support(torch.device("cpu")) is not None, reason="no C++ compiler here")
def test_compile_works_where_inductor_has_a_compiler(tmp_path, capsys):
    """Slow (inductor compiles the tiny model's forward and backward: about 40 s on a busy 2-core machine)."""
    torch._dynamo.reset()
    try:
        status, out, applied = run(lm, tmp_path, capsys, "--compile")
    finally:
        torch._dynamo.reset()
    assert status == 0 and applied["compile"] == "default" and applied["notes"] == []


def test_tunableop_on_rocm_keeps_its_results_file_in_the_run_folder(tmp_path, monkeypatch):
    """What a ROCm build gets (its torch.cuda.tunable calls recorded here): enabled, tuning, the file in the run
    folder with the device index in its name (torch writes it when the process ends), the variables set for child
    processes."""
    calls = []
    for name in ("enable", "tuning_enable", "set_filename"):
        monkeypatch.setattr(torch.cuda.tunable, name, lambda *a, name=name, **k: calls.append((name, *a, k)))
    monkeypatch.setattr(knobs, "tunableop_support", lambda: None)
    monkeypatch.delenv("PYTORCH_TUNABLEOP_ENABLED", raising=False)
    monkeypatch.delenv("PYTORCH_TUNABLEOP_FILENAME", raising=False)
    _, applied = knobs.apply_knobs(knobs.Knobs(tunableop=True), torch.nn.Linear(2, 2), torch.device("cpu"),
                                   out_dir=tmp_path, convolutional=False, say=print)
    pattern = str(tmp_path / "tunableop_results%d.csv")
    assert applied.tunableop_file == pattern and applied.notes == []
    assert calls == [("enable", True, {}), ("tuning_enable", True, {}),
                     ("set_filename", str(tmp_path / "tunableop_results.csv"), {"insert_device_ordinal": True})]
    assert os.environ["PYTORCH_TUNABLEOP_ENABLED"] == "1" and os.environ["PYTORCH_TUNABLEOP_FILENAME"] == pattern
