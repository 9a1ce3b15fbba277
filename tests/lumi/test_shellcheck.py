"""Every shell script of the LUMI set-up is shellcheck clean (the ones in the repo and the ones it writes)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = [REPO / "lumi" / "setup-venv.sh", REPO / "lumi" / "bin" / "python", REPO / "lumi" / "ood" / "jupyter-init.sh"]


def shellcheck() -> str:
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    return exe


def test_every_shell_script_in_lumi_is_listed():
    """A new script under lumi/ must be added to SCRIPTS, so that it is checked too."""
    found = {p for p in (REPO / "lumi").rglob("*") if p.is_file() and p.read_bytes()[:64].lstrip().startswith(
        (b"#!/bin/bash", b"#!/usr/bin/env bash", b"# shellcheck shell=bash"))}
    assert found == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_script_is_shellcheck_clean(script: Path):
    done = subprocess.run([shellcheck(), "--severity=style", "--external-sources", str(script)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_scripts_are_executable_or_sourced():
    assert (REPO / "lumi" / "setup-venv.sh").stat().st_mode & 0o111
    assert (REPO / "lumi" / "bin" / "python").stat().st_mode & 0o111
    # The init script is sourced by the OOD app, never run: it says which shell it is for instead of a #! line.
    assert (REPO / "lumi" / "ood" / "jupyter-init.sh").read_text().startswith("# shellcheck shell=bash")
