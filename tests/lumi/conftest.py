"""Helpers for the LUMI set-up tests: run lumi/setup-venv.sh in a clean environment, with stand-ins for
`singularity` and the container's `python` so that a real (non-dry) run can be exercised off LUMI."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "lumi" / "setup-venv.sh"
PROJECT = "project_465000123"

# Stand-in for singularity: log the call, drop the verb, the options and the image, run the rest right here.
FAKE_SINGULARITY = r"""#!/bin/bash
printf 'singularity %s\n' "$*" >>"$STUB_LOG"
shift
while [[ $1 == --* ]]; do shift 2; done
shift
export WITH_CONDA=: SINGULARITY_CONTAINER=stub
exec "$@"
"""

# Stand-in for the container's python: makes a venv skeleton, answers the constraints query, logs the rest.
FAKE_PYTHON = r"""#!/bin/bash
printf 'python %s\n' "$*" >>"$STUB_LOG"
case "$1" in
    -m)
        if [[ $2 == venv ]]; then
            dir=${*: -1}
            mkdir -p "$dir/bin"
            printf 'home = /opt/conda/bin\ninclude-system-site-packages = true\n' >"$dir/pyvenv.cfg"
            printf '# activate (stand-in)\n' >"$dir/bin/activate"
            ln -s "$0" "$dir/bin/python"
        fi ;;
    -) cat >/dev/null; printf 'torch==2.6.0+rocm6.2.4\nnumpy==1.26.4\n' ;;
esac
"""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Stubs:
    bin: Path
    log: Path

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: no project from the caller's shell leaks in."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "USER": "alice", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def run_setup(*args: str, env: dict[str, str]) -> Result:
    done = subprocess.run(["bash", str(SETUP), *args], capture_output=True, text=True, env=env, timeout=60)
    return Result(done.returncode, done.stdout, done.stderr)


def tree(root: Path) -> list[str]:
    """Every path under ``root`` (to show that a dry run created nothing)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def stubs(tmp_path: Path) -> Stubs:
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir()
    for name, text in {"singularity": FAKE_SINGULARITY, "python": FAKE_PYTHON}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return Stubs(bin=bin_dir, log=tmp_path / "calls.log")


@pytest.fixture
def stub_env(tmp_path: Path, stubs: Stubs) -> dict[str, str]:
    """Environment for a real run of the set-up script against the stand-ins."""
    home = tmp_path / "home"
    home.mkdir()
    return clean_env(home, PATH=f"{stubs.bin}:{os.environ['PATH']}", STUB_LOG=str(stubs.log))


def fake_sif(tmp_path: Path) -> Path:
    sif = tmp_path / "images" / "pytorch-test.sif"
    sif.parent.mkdir(exist_ok=True)
    sif.write_text("not really an image\n")
    return sif


def site_file_with_image(tmp_path: Path) -> tuple[Path, Path]:
    """The repo's lumi.toml, with its default container pointing at an empty stand-in image under tmp_path."""
    from lumikit.site import load_site

    real = load_site(REPO / "lumikit" / "sites" / "lumi.toml")
    sif = fake_sif(tmp_path)
    text = (REPO / "lumikit" / "sites" / "lumi.toml").read_text()
    site_file = tmp_path / "lumi-test.toml"
    site_file.write_text(text.replace(real.containers[real.default_container].path, str(sif)))
    return site_file, sif


class Kit:
    """The helpers above, handed to tests as the ``kit`` fixture (test modules cannot import each other)."""

    repo = REPO
    setup = SETUP
    project = PROJECT
    run_setup = staticmethod(run_setup)
    clean_env = staticmethod(clean_env)
    tree = staticmethod(tree)
    fake_sif = staticmethod(fake_sif)
    site_file_with_image = staticmethod(site_file_with_image)


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
