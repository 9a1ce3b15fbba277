"""`make venv TORCH=cpu` takes torch from PyTorch's CPU-only index, and stops with the choices spelled out when that
one cannot be reached (scripts/install-torch.sh, called by the Makefile)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "install-torch.sh"
PIN = next(line.strip().strip('",') for line in (REPO / "pyproject.toml").read_text().splitlines()
           if line.strip().startswith('"torch=='))


def fake_python(tmp_path: Path, pip_exit: int) -> tuple[Path, Path]:
    """A stand-in interpreter that logs the pip command it was given and exits with ``pip_exit``."""
    log = tmp_path / "argv.log"
    (tmp_path / "bin").mkdir(exist_ok=True)
    py = tmp_path / "bin" / "python"  # as in a venv: pip's output goes to tmp_path/torch-install.log
    py.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit {pip_exit}\n')
    py.chmod(0o755)
    return py, log


def test_make_venv_with_torch_cpu_names_pytorchs_cpu_index() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "venv", "VENV=/nonexistent/venv", "TORCH=cpu"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert "install-torch.sh /nonexistent/venv/bin/python \"https://download.pytorch.org/whl/cpu\"" in out
    default = subprocess.run(["make", "-n", "venv", "VENV=/nonexistent/venv"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
    assert 'install-torch.sh /nonexistent/venv/bin/python ""' in default


def test_the_pin_comes_from_pyproject_and_the_index_is_used(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, pip_exit=0)
    out = subprocess.run(["bash", str(SCRIPT), str(py), "https://example.invalid/whl/cpu"], capture_output=True,
                         text=True, check=True).stdout
    assert log.read_text().split() == ["-m", "pip", "install", "--progress-bar", "off", "--index-url",
                                       "https://example.invalid/whl/cpu", PIN]
    assert f"{PIN} installed" in out


def test_an_unreachable_index_stops_and_spells_out_the_choices(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, pip_exit=1)
    proc = subprocess.run(["bash", str(SCRIPT), str(py), "http://127.0.0.1:9/simple"], capture_output=True,
                          text=True)
    assert proc.returncode == 3
    assert "stopped before installing anything else" in proc.stdout
    assert "TORCH_FALLBACK=default" in proc.stdout and "TORCH_INDEX=URL" in proc.stdout


def test_an_unreachable_index_with_the_fallback_asked_for_goes_on(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, pip_exit=1)
    proc = subprocess.run(["bash", str(SCRIPT), str(py), "http://127.0.0.1:9/simple", "default"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "taking torch from the default package index instead" in proc.stdout


def test_no_index_means_nothing_is_installed_here(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, pip_exit=0)
    subprocess.run(["bash", str(SCRIPT), str(py), ""], check=True)
    assert not log.exists()


def test_the_ready_line_names_the_torch_build_and_its_size() -> None:
    import sys

    out = subprocess.run([sys.executable, str(REPO / "scripts" / "torch_build.py")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.startswith(f"torch {PIN.split('==')[1]}")
    assert out.endswith(" GB)") and "build" in out


def test_an_unreachable_index_names_the_network_error_not_pips_resolver_lines(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    py = tmp_path / "bin" / "python"
    py.write_text("#!/bin/sh\n"
                  "echo \"WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(': "
                  "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'\"\n"
                  "echo 'ERROR: Could not find a version that satisfies the requirement torch (from versions: none)'\n"
                  "echo \"ERROR: pip's dependency resolver does not currently take into account all the packages "
                  "that are installed. This behaviour is the source of the following dependency conflicts.\"\n"
                  "exit 1\n")
    py.chmod(0o755)
    proc = subprocess.run(["bash", str(SCRIPT), str(py), "https://download.pytorch.org/whl/cpu"],
                          capture_output=True, text=True)
    assert proc.returncode == 3
    assert "the index could not be reached" in proc.stdout
    assert "Temporary failure in name resolution" in proc.stdout and "dependency" not in proc.stdout
