"""Set-up's pip steps print a line every HEARTBEAT_S seconds while pip runs with its output in a log file
(scripts/with-heartbeat.sh, used by scripts/install-torch.sh and the Makefile's venv target), so the learner sees
progress instead of a minute of silence. pip is stood in for by a script that prints and sleeps."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "with-heartbeat.sh"


def slow_pip(tmp_path: Path, exit_status: int = 0) -> Path:
    """A stand-in for pip: a line, 2.5 s of work, a download line with an escape code, 0.5 s, then exit."""
    pip = tmp_path / "slow-pip"
    pip.write_text("#!/bin/sh\necho 'Collecting torch==2.13.0'\nsleep 2.5\n"
                   "printf 'Downloading torch-2.13.0.whl (180 MB)\\033[2K\\n'\nsleep 0.5\n"
                   f"exit {exit_status}\n")
    pip.chmod(0o755)
    return pip


def heartbeat(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(tmp_path / "pip.log"), "torch", *command], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "HEARTBEAT_S": "1"})


def test_a_line_per_interval_while_pip_runs_and_its_output_only_in_the_log(tmp_path: Path) -> None:
    proc = heartbeat(tmp_path, str(slow_pip(tmp_path)))
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert 2 <= len(lines) <= 4  # about one a second over 3 s
    pattern = re.compile(r"^   installing torch \.\.\. \((\d+) s; pip: (.+); log: (.+)\)$")
    found = [pattern.match(line) for line in lines]
    assert all(found), lines
    seconds = [int(m.group(1)) for m in found if m]
    assert seconds == sorted(seconds) and seconds[0] >= 1
    assert found[0].group(2) == "Collecting torch==2.13.0" and found[0].group(3) == str(tmp_path / "pip.log")
    assert "Collecting" not in proc.stdout.replace("pip: Collecting", "")  # pip's own lines stay in the log
    assert "\x1b" not in proc.stdout  # the download line's escape code is dropped
    assert (tmp_path / "pip.log").read_text().startswith("Collecting torch==2.13.0\nDownloading torch-2.13.0.whl")


def test_pips_exit_status_comes_back_and_a_quick_pip_prints_nothing(tmp_path: Path) -> None:
    assert heartbeat(tmp_path, str(slow_pip(tmp_path, exit_status=4))).returncode == 4
    quick = heartbeat(tmp_path, "true")
    assert quick.returncode == 0 and quick.stdout == ""


def test_a_heartbeat_interval_that_is_no_number_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "log"), "torch", "true"], capture_output=True,
                          text=True, env={**os.environ, "HEARTBEAT_S": "soon"})
    assert proc.returncode == 2 and "HEARTBEAT_S=soon: give a whole number of seconds" in proc.stderr


def test_install_torch_and_make_venv_run_pip_through_the_heartbeat(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    py = tmp_path / "bin" / "python"  # as in a venv: pip's output goes to tmp_path/torch-install.log
    py.write_text("#!/bin/sh\necho \"Looking in indexes: $7\"\nsleep 2.5\nexit 0\n")  # $7: the index URL
    py.chmod(0o755)
    script = REPO / "scripts" / "install-torch.sh"
    proc = subprocess.run(["bash", str(script), str(py), "https://example.invalid/cpu"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "HEARTBEAT_S": "1"})
    assert proc.returncode == 0
    assert "   installing torch==" in proc.stdout
    assert "pip: Looking in indexes: https://example.invalid/cpu" in proc.stdout
    assert (tmp_path / "torch-install.log").read_text() == "Looking in indexes: https://example.invalid/cpu\n"
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(["make", "-n", "venv", "VENV=/nonexistent/venv"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    assert "bash scripts/with-heartbeat.sh /nonexistent/venv/pip-install.log" in plan


def test_a_long_pip_line_is_shortened_at_a_words_end_never_mid_word(tmp_path: Path) -> None:
    words = "Downloading https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl " \
            "(190.2 MB) from the index named by TORCH_INDEX for this laptop"
    pip = tmp_path / "long-pip"
    pip.write_text(f"#!/bin/sh\necho '{words}'\nsleep 2.5\n")
    pip.chmod(0o755)
    proc = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "pip.log"), "torch", str(pip)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "HEARTBEAT_S": "1", "HEARTBEAT_WIDTH": "60"})
    shown = re.search(r"pip: (.+); log: ", proc.stdout.splitlines()[0]).group(1)
    assert shown.endswith(" ...") and len(shown) <= 64
    kept = shown.removesuffix(" ...")
    assert words.startswith(kept) and words[len(kept)] == " "  # cut where a word ends
