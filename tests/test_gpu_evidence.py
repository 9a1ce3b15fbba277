"""The pieces of the GPU evidence run (benchmarks/gpu_evidence.sh, issue 32) that a CPU machine can check: a site
given as a file reaches the run's supervisor and recorder, the profiler's CUDA-only settings, the ladder's choice of
peak, the overhead benchmark and the script itself in its quick form."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lumikit import profiler
from lumikit.ladder.run import _peak_name
from lumikit.site import load_site

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_a_site_given_as_a_file_reaches_the_supervisor_and_the_recorder(tmp_path):
    site = tmp_path / "my-machine.toml"
    site.write_text('inherits = "laptop"\nname = "my-machine"\ndescription = "a profile of my own"\n')
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "lumikit", "run", "--site", str(site), "--gpus-per-node", "1",
                           "--runs-dir", str(runs), "--wait", "--quiet", "--", "python", "-c", "print('hi')"],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = runs.iterdir()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["state"] == "COMPLETED" and manifest["site"] == str(site.resolve())
    assert "no site profile" not in (run / "gpu" / "recorder.log").read_text()
    assert load_site(manifest["site"]).name == "my-machine"


def test_a_shipped_site_is_named_by_its_name():
    assert load_site("laptop").ref == "laptop" and load_site("nvidia-h100").ref == "nvidia-h100"


def test_cuda_builds_ask_for_sync_events_unless_switched_off(monkeypatch):
    monkeypatch.setattr(profiler, "torch_sees_gpu", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    assert "experimental_config" in profiler._sync_events(torch, {})
    assert profiler._sync_events(torch, {"LUMIKIT_PROFILE_SYNC_EVENTS": "0"}) == {}
    monkeypatch.setattr(torch.version, "hip", "6.2")  # ROCm emits none: nothing is asked there
    assert profiler._sync_events(torch, {}) == {}


def test_cuda_builds_have_kineto_finalise_cupti_after_the_window(monkeypatch):
    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    monkeypatch.setattr(torch.version, "hip", None)
    profiler._teardown_cupti_after(torch, {"LUMIKIT_PROFILE_TEARDOWN": "0"})
    assert "TEARDOWN_CUPTI" not in os.environ
    profiler._teardown_cupti_after(torch, {})
    assert os.environ["TEARDOWN_CUPTI"] == "1"
    monkeypatch.setenv("TEARDOWN_CUPTI", "0")  # a setting of the user's own wins
    profiler._teardown_cupti_after(torch, {})
    assert os.environ["TEARDOWN_CUPTI"] == "0"


def test_fp32_on_tf32_tensor_cores_is_held_to_the_tf32_peak(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    matmul = torch.backends.cuda.matmul.allow_tf32  # a property of torch's own module: set and put back by hand
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        _peak_names_on_cuda(monkeypatch)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul


def _peak_names_on_cuda(monkeypatch) -> None:
    cuda = torch.device("cuda")
    assert _peak_name("fp32", "resnet", cuda, "nvidia-h100") == "tf32"  # cuDNN's convolutions use TF32
    assert _peak_name("fp32", "lm", cuda, "nvidia-h100") == "fp32_matrix"  # matrix products do not, by default
    assert _peak_name("fp32", "resnet", cuda, "lumi") == "fp32_matrix"  # a site without a TF32 peak
    assert _peak_name("fp32", "resnet", torch.device("cpu"), "nvidia-h100") == "fp32_matrix"
    assert _peak_name("bf16", "resnet", cuda, "nvidia-h100") == "bf16"
    monkeypatch.setattr(torch.version, "hip", "6.2")  # an MI250X: fp32 GEMMs on its matrix cores, no TF32
    assert _peak_name("fp32", "resnet", cuda, "nvidia-h100") == "fp32_matrix"


def test_the_overhead_benchmark_prints_each_round_and_the_spread(tmp_path):
    out = tmp_path / "overhead.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_profiler_overhead.py"), "--model", "lm",
                           "--steps", "12", "--skip", "7", "--pairs", "1", "--device", "cpu", "--json", str(out)],
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "round 1: plain" in done.stdout and "overhead outside the profiled steps" in done.stdout
    data = json.loads(out.read_text())
    (run,) = data["rounds"]
    assert set(run["runs"]) == {"plain", "profiled"} and run["runs"]["profiled"]["trace_bytes"] > 0
    assert data["overhead"]["profiled"]["median"] == pytest.approx(run["overhead"]["profiled"])


def test_the_evidence_script_packs_what_its_steps_made(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_evidence.sh"), str(tmp_path), "300"],
                          env={**ENV, "QUICK": "1", "ONLY": "ceilings inference", "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ceilings rc=0" in done.stdout and "inference rc=0" in done.stdout
    listing = subprocess.run(["tar", "-tzf", str(tmp_path / "evidence.tar.gz")], capture_output=True, text=True).stdout
    assert "ev/ceilings.json" in listing and "ev/inference/generate.json" in listing and "ev/SOURCE.txt" in listing
    assert json.loads((tmp_path / "ev" / "ceilings.json").read_text())["device"] == "CPU"
