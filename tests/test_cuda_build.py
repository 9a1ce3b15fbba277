"""PyTorch's CUDA build on a machine without a GPU: no lesson shows an error box, the profiling ones (06, 11) included.

The default PyPI torch is the CUDA build (about 2.7 GB of wheels, 5.4 GB installed with the workbook), so the tests
that need it run only where LUMIKIT_CUDA_TORCH_PYTHON names the Python of a venv that holds it and the workbook
(scripts/cuda-build-check.sh makes one outside the clone and runs this file); elsewhere they are skipped, and CI never
downloads it (issue 31). The stderr filter they rely on is tested with any torch.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lumikit.profiler import _without_kineto_noise

ROOT = Path(__file__).resolve().parents[1]
CUDA_PYTHON = os.environ.get("LUMIKIT_CUDA_TORCH_PYTHON", "")
#: What a learner must never see from torch's CUDA build without a driver: Kineto's "ERROR: ... gpuGetDeviceCount
#: failed with code 35" line (printed at the first profiler stop) and c10's "CUDA initialization" warning.
DRIVER_NOISE = ("gpuGetDeviceCount", "CUDA initialization", "UserWarning: CUDA", "NVIDIA driver", "cudaGetDeviceCount")
LESSONS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
#: The lessons that profile in the kernel itself, where Kineto's line landed before lumikit.profiler dropped it.
PROFILING_LESSONS = ["06_reading_traces.ipynb", "11_capstone.ipynb"]


def _run_with_cuda_torch(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by the CUDA build's Python with this checkout's lumikit first on the path."""
    return subprocess.run([CUDA_PYTHON, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def cuda_torch() -> dict[str, Any]:
    """What that interpreter's torch is; skips on a machine where it sees a GPU (the check is for machines without)."""
    if not CUDA_PYTHON:
        pytest.skip("LUMIKIT_CUDA_TORCH_PYTHON is unset: no venv with PyTorch's CUDA build to run "
                    "(scripts/cuda-build-check.sh makes one, about 5.4 GB)")
    if not Path(CUDA_PYTHON).is_file():
        pytest.fail(f"LUMIKIT_CUDA_TORCH_PYTHON={CUDA_PYTHON}: no such file; give the venv's bin/python")
    done = _run_with_cuda_torch("import json, warnings, torch\n"
                                "with warnings.catch_warnings():\n"
                                "    warnings.simplefilter('ignore')\n"
                                "    gpu = torch.cuda.is_available()\n"
                                "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, "
                                "'hip': torch.version.hip, 'gpu': gpu}))")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    if info["gpu"]:
        pytest.skip(f"torch {info['version']} sees a GPU here: the check is for machines without one")
    return info


def test_the_interpreter_holds_the_cuda_build_of_the_workbooks_torch_pin(cuda_torch: dict[str, Any]) -> None:
    pin = next(line.split("==")[1].strip('", ') for line in (ROOT / "pyproject.toml").read_text().splitlines()
               if line.strip().startswith('"torch=='))
    assert cuda_torch["version"].split("+")[0] == pin
    assert cuda_torch["cuda"] and cuda_torch["hip"] is None, cuda_torch


def test_the_profilers_stderr_filter_drops_kinetos_notices_and_keeps_every_other_line(
        capfd: pytest.CaptureFixture[str]) -> None:
    # runs with any torch: the lines are the ones the CUDA build wrote in this machine's test (pid, time as printed)
    kineto = (b"USDT:2026-11-26 17:37:17 2996:2996 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
              b"ERROR:2026-11-26 17:37:17 2996:2996 DeviceProperties.cpp:50] gpuGetDeviceCount failed with code 35\n")
    others = b"ERROR: a real error of the learner's own\nWARNING: gpuGetDeviceCount failed, said in a log line\n"
    with _without_kineto_noise():
        os.write(2, kineto + others)
    assert capfd.readouterr().err == others.decode()


PROFILE_ONCE = """
import torch
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU]) as prof:
    torch.ones(4).sum()
"""


def test_the_bare_profiler_of_the_cuda_build_prints_the_drivers_error_line(cuda_torch: dict[str, Any]) -> None:
    # the noise exists (so the lesson tests below can fail): Kineto writes it to stderr at the first profiler stop
    done = _run_with_cuda_torch(PROFILE_ONCE)
    assert done.returncode == 0, done.stderr
    assert "gpuGetDeviceCount failed" in done.stderr


def test_profile_steps_keeps_the_drivers_error_line_out_and_passes_other_lines_on(
        cuda_torch: dict[str, Any], tmp_path: Path) -> None:
    done = _run_with_cuda_torch(f"""
import os, torch
from lumikit.profiler import profile_steps
for _ in range(2):  # Kineto prints it once per process: the second session is the same
    with profile_steps(enabled=True, rank=0, out_dir={str(tmp_path)!r}, schedule="0,0,1,1") as prof:
        os.write(2, b"a line of the learner's own\\n")
        torch.ones(4).sum()
        prof.step()
print(len(os.listdir({str(tmp_path)!r})))
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "2"  # both sessions wrote a trace
    assert [noise for noise in DRIVER_NOISE if noise in done.stderr] == []
    assert done.stderr.count("a line of the learner's own") == 2, done.stderr


def _stderr_and_noise(notebook: Any) -> list[str]:
    """Each code cell's stderr output and any output holding driver noise, as 'cell N: text'."""
    found = []
    for number, cell in enumerate(notebook.cells, 1):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = output.get("text", "") if output.get("output_type") == "stream" else json.dumps(output)
            if output.get("name") == "stderr" or any(noise in text for noise in DRIVER_NOISE):
                found.append(f"cell {number} ({output.get('output_type')} {output.get('name', '')}): {text[:300]}")
    return found


@pytest.mark.notebooks
@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_shows_no_stderr_box_with_the_cuda_build(cuda_torch: dict[str, Any], lesson: str) -> None:
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    from lumikit.checks.instructor.notebook import read_notebook

    class CudaTorchKernel(KernelSpecManager):
        """Only one kernel: the CUDA build's Python, importing this checkout's lumikit."""

        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(argv=[CUDA_PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="CUDA torch", language="python", env={"PYTHONPATH": str(ROOT)})

    path = ROOT / "notebooks" / lesson
    notebook = read_notebook(path)
    with tempfile.TemporaryDirectory(prefix="lumikit-kernel-") as sockets:
        manager = KernelManager(kernel_name="cuda-torch", kernel_spec_manager=CudaTorchKernel(), transport="ipc",
                                ip=os.path.join(sockets, "kernel"))
        # every cell, in the notebook's folder, as a learner runs it (an error fails the test here). Without
        # PYTEST_CURRENT_TEST: ipykernel does not forward what C++ code writes to stderr while it sees that variable,
        # so under pytest (nbval too) Kineto's line would never reach the notebook and the test could not fail.
        try:
            NotebookClient(notebook, km=manager, timeout=300, startup_timeout=120,
                           resources={"metadata": {"path": str(path.parent)}}).execute(
                env={name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"})
        finally:  # nbclient leaves a kernel it was given running
            if manager.has_kernel:
                manager.shutdown_kernel(now=True)
    assert set(PROFILING_LESSONS) <= set(LESSONS)
    if lesson in PROFILING_LESSONS:
        assert any(cell.cell_type == "code" and "profile_steps" in cell.source for cell in notebook.cells)
    assert _stderr_and_noise(notebook) == []
