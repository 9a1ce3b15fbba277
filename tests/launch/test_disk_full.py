"""A run whose folder's file system fills up ends FAILED with "disk full" recorded in its manifest, and
`lumikit status` still answers (a small tmpfs stands in for a full project quota; needs root to mount it)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.jobs import spec
from lumikit.launch import launch

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


def test_a_run_that_fills_the_disk_ends_failed_with_disk_full_and_status_answers(tiny_disk, capsys):
    writer = "import sys\nfor _ in range(4096): sys.stdout.write('x' * 1023 + '\\n')\nprint('all written')"
    run = launch(spec([PY, "-c", writer]), site="laptop", backend="local", runs_dir=tiny_disk)
    assert run.wait(timeout=120, progress=False) == "FAILED"
    m = run.manifest
    assert "disk full" in m["note"] and str(tiny_disk) in m["note"]
    assert "filled up" in m["disk_full"]  # the manifest could be written only with the space the run kept
    assert main(["status", str(run.path)]) == 0
    assert capsys.readouterr().out.startswith("FAILED")


def test_a_run_folder_that_cannot_be_created_names_the_fix(tiny_disk):
    (tiny_disk / "filler").write_bytes(b"\0" * (1024 * 1024 - 8192))  # leave less than the run's reserve
    with pytest.raises(Exception, match="free space under|No space left"):
        launch(spec([PY, "-c", "pass"]), site="laptop", backend="local", runs_dir=tiny_disk)
