"""A run whose folder's file system fills up keeps its command's outcome (exit 0 is COMPLETED, a command that
failed on the full disk is FAILED) with a "disk full" note in its manifest saying what was cut short, and
`lumikit status` still answers (a small tmpfs stands in for a full project quota; needs root to mount it)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.record import card_of_run

PY = sys.executable


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 1 MiB tmpfs, unmounted afterwards; skips where mounting is not allowed (not root, no mount)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        first_line = (mounted.stderr.strip().splitlines() or ["mount failed"])[0]
        pytest.skip(f"the full disk is a 1 MB tmpfs, and mounting one needs root ({first_line})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_command_that_fails_on_the_full_disk_is_failed_with_disk_full_and_status_answers(tiny_disk, capsys):
    writer = "import sys\nfor _ in range(4096): sys.stdout.write('x' * 1023 + '\\n')\nprint('all written')"
    run = launch(spec([PY, "-c", writer]), site="laptop", backend="local", runs_dir=tiny_disk)
    assert run.wait(timeout=120, progress=False) == "FAILED"
    m = run.manifest
    assert m["exit_code"] != 0  # Python could not write its output: the command itself failed
    assert "disk full" in m["note"] and str(tiny_disk) in m["note"]
    assert "filled up" in m["disk_full"]  # the manifest could be written only with the space the run kept
    assert main(["status", str(run.path)]) == 0
    assert capsys.readouterr().out.startswith("FAILED")


def test_a_run_folder_that_cannot_be_created_names_the_fix(tiny_disk):
    (tiny_disk / "filler").write_bytes(b"\0" * (1024 * 1024 - 8192))  # leave less than the run's reserve
    with pytest.raises(Exception, match="free space under|No space left"):
        launch(spec([PY, "-c", "pass"]), site="laptop", backend="local", runs_dir=tiny_disk)


def test_a_command_that_exited_0_is_completed_when_the_disk_filled_with_a_note(tiny_disk, capsys):
    filler = ("import os\ntry:\n    with open(os.path.join(os.environ['LUMIKIT_RUN_DIR'], 'big.bin'), 'wb') as f:\n"
              "        f.write(b'x' * (4 << 20))\nexcept OSError:\n    pass\n")
    run = launch(spec([PY, "-c", filler]), site="laptop", backend="local", runs_dir=tiny_disk)
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    m = run.manifest
    assert m["exit_code"] == 0 and m["note"].startswith("disk full") and "the command exited 0" in m["note"]
    assert "logs may be cut short" in m["note"] and str(tiny_disk) in m["note"]
    assert main(["status", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("COMPLETED") and "disk full" in out


def test_a_gpu_record_that_fills_the_disk_leaves_the_run_completed_and_the_card_says_so(tiny_disk, tmp_path,
                                                                                       monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "amd-smi"  # generated: 64 kB of output no parser reads, kept raw in every sample
    tool.write_text(f"#!{PY}\nprint('generated ' * 8192)\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run = launch(spec([PY, "-c", "import time; time.sleep(6)"], gpus_per_node=1), site="laptop", backend="local",
                 runs_dir=tiny_disk, gpu_record_interval=0.5)
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    m = run.manifest
    assert m["exit_code"] == 0 and "the ranks' logs and the GPU record may be cut short" in m["note"]
    text = card_of_run(run.path).text()
    assert "cut short by a full disk" in text and "run note: disk full" in text
