"""lumi/setup-venv.sh: the dry run shows every command and changes nothing; a real run (against stand-ins for
singularity and the container's python) builds the venv once and reuses it after."""
from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from lumikit.site import load_site

LUMI = load_site("lumi")
SIF = LUMI.containers[LUMI.default_container].path


def test_dry_run_prints_every_command_and_creates_nothing(kit, tmp_path):
    venv = tmp_path / "projappl" / "alice" / "venv"
    before = kit.tree(tmp_path)
    r = kit.run_setup("--project", kit.project, "--venv", str(venv), "--cache-dir", str(tmp_path / "cache"),
                      "--dry-run", env=kit.clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert kit.tree(tmp_path) == before
    commands = [line for line in r.stdout.splitlines() if line.startswith("+ ")]
    binds = ",".join(LUMI.binds["user"])
    assert commands[0] == f"+ mkdir -p {venv.parent}"
    assert commands[1] == (f"+ singularity exec --bind {binds} {SIF} bash -c "
                           f"""'$WITH_CONDA; python -m venv --system-site-packages "$1"' bash {venv}""")
    pip = next(c for c in commands if "pip install" in c)
    assert pip.endswith(f"bash {venv} {kit.repo}/lumi/requirements-lumi.txt {kit.repo}")
    assert '-c "$1/lumi-constraints.txt"' in r.stdout  # torch and numpy pinned to the container's
    assert f"+ install -D -m 0755 {kit.repo}/lumi/bin/python {venv}/host-bin/python" in commands
    assert f"+ write {venv}/ood-init.sh" in commands
    assert f"+ mkdir -p {tmp_path}/cache/hf-cache" in commands
    assert commands[-1].startswith(f"+ {venv}/host-bin/python -c 'import sys, torch, lumikit, jupyterlab")
    assert "dry run: nothing was changed" in r.stdout
    assert f"Custom init File:  {venv}/ood-init.sh" in r.stdout


def test_dry_run_reads_the_container_and_caches_from_the_site_profile(kit, tmp_path):
    r = kit.run_setup("--project", kit.project, "--container", "pytorch-rocm61", "--dry-run", "--no-check",
                      env=kit.clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert f"container: pytorch-rocm61 ({LUMI.containers['pytorch-rocm61'].path})" in r.stdout
    assert f"/projappl/{kit.project}/alice/lumi-workbook-venv" in r.stdout  # the default venv
    assert f"+ mkdir -p /flash/{kit.project}/alice/hf-cache" in r.stdout  # [env.caches], project and user filled
    assert "is not here (fine for a dry run off LUMI)" in r.stderr


def test_dry_run_on_a_module(kit, tmp_path):
    venv = tmp_path / "venv"
    r = kit.run_setup("--project", kit.project, "--module", "pytorch", "--module-use", "/appl/local/csc/modulefiles",
                      "--venv", str(venv), "--dry-run", env=kit.clean_env(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines.index("+ module use /appl/local/csc/modulefiles") < lines.index("+ module load pytorch")
    assert f"""+ bash -c 'python -m venv --system-site-packages "$1"' bash {venv}""" in lines
    assert "singularity" not in r.stdout
    assert f"+ {venv}/bin/python -c 'import sys, torch" in r.stdout


def test_a_real_run_builds_once_and_then_reuses(kit, tmp_path, stubs, stub_env):
    site_file, sif = kit.site_file_with_image(tmp_path)
    venv = tmp_path / "projappl" / "venv"
    args = ("--project", kit.project, "--venv", str(venv), "--site-file", str(site_file),
            "--cache-dir", str(tmp_path / "cache"))

    first = kit.run_setup(*args, env=stub_env)
    assert first.returncode == 0, first.stderr
    calls = stubs.calls()
    assert calls[0] == (f"singularity exec --bind {','.join(LUMI.binds['user'])} {sif} bash -c "
                        f'$WITH_CONDA; python -m venv --system-site-packages "$1" bash {venv}')
    assert f"python -m venv --system-site-packages {venv}" in calls
    assert any(c.startswith("python -m pip install --upgrade-strategy only-if-needed") and
               c.endswith(f"-c {venv}/lumi-constraints.txt -r {kit.repo}/lumi/requirements-lumi.txt -e {kit.repo}")
               for c in calls)
    assert (venv / "lumi-constraints.txt").read_text() == "torch==2.6.0+rocm6.2.4\nnumpy==1.26.4\n"
    assert (venv / "host-bin" / "python").read_bytes() == (kit.repo / "lumi" / "bin" / "python").read_bytes()
    settings = (venv / "lumi-workbook.env").read_text()
    assert f"export LUMI_WORKBOOK_SIF={sif}" in settings
    assert f"export LUMIKIT_ACCOUNT=${{LUMIKIT_ACCOUNT:-{kit.project}}}" in settings
    assert f"export HF_HOME=${{HF_HOME:-{tmp_path}/cache/hf-cache}}" in settings
    assert (tmp_path / "cache" / "hf-cache").is_dir()
    # The final check ran python of the venv through the launcher, i.e. inside the (stand-in) container.
    assert calls[-1].startswith("python -c import sys, torch, lumikit, jupyterlab, ipywidgets")

    n_calls = len(calls)
    second = kit.run_setup(*args, env=stub_env)
    assert second.returncode == 0, second.stderr
    assert f"reusing the existing venv {venv}" in second.stdout
    assert "packages are up to date" in second.stdout
    assert f"{venv}/ood-init.sh is up to date" in second.stdout
    assert "+ write" not in second.stdout
    new_calls = stubs.calls()[n_calls:]
    assert len(new_calls) == 2  # only the check: the launcher, then python inside
    assert new_calls[0].startswith("singularity exec --bind " + ",".join(LUMI.binds["user"]))
    assert new_calls[1].startswith("python -c import sys, torch")

    before = kit.tree(tmp_path)
    third = kit.run_setup(*args, "--dry-run", env=stub_env)
    assert third.returncode == 0, third.stderr
    assert f"would reuse the existing venv {venv}" in third.stdout
    assert "+ write" not in third.stdout and "pip install" not in third.stdout
    assert kit.tree(tmp_path) == before


def test_a_changed_requirement_list_reinstalls(kit, tmp_path, stubs, stub_env):
    site_file, _ = kit.site_file_with_image(tmp_path)
    venv = tmp_path / "venv"
    args = ("--project", kit.project, "--venv", str(venv), "--site-file", str(site_file),
            "--cache-dir", str(tmp_path / "cache"), "--no-check")
    assert kit.run_setup(*args, env=stub_env).returncode == 0
    (venv / ".lumi-workbook-stamp").write_text("from an older requirements list\n")
    again = kit.run_setup(*args, env=stub_env)
    assert "pip install" in again.stdout
    assert (venv / ".lumi-workbook-stamp").read_text() != "from an older requirements list\n"


def test_the_written_init_file_is_shellcheck_clean(kit, tmp_path, stubs, stub_env):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    site_file, _ = kit.site_file_with_image(tmp_path)
    venv = tmp_path / "venv with space"
    r = kit.run_setup("--project", kit.project, "--venv", str(venv), "--site-file", str(site_file),
                      "--cache-dir", str(tmp_path / "cache"), "--no-check", env=stub_env)
    assert r.returncode == 0, r.stderr
    for name in ("ood-init.sh", "lumi-workbook.env"):
        done = subprocess.run(["shellcheck", "--shell=bash", "--severity=style", str(venv / name)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_refuses_a_folder_that_is_not_a_system_site_venv(kit, tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    r = kit.run_setup("--project", kit.project, "--venv", str(venv), "--dry-run", env=kit.clean_env(tmp_path))
    assert r.returncode == 2
    assert f"{venv} exists but is not a venv with system site packages" in r.stderr
    assert "--recreate" in r.stderr


def test_recreate_keeps_the_old_venv(kit, tmp_path, stubs, stub_env):
    site_file, _ = kit.site_file_with_image(tmp_path)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "keep-me").write_text("learner's file\n")
    r = kit.run_setup("--project", kit.project, "--venv", str(venv), "--site-file", str(site_file),
                      "--cache-dir", str(tmp_path / "cache"), "--no-check", "--recreate", env=stub_env)
    assert r.returncode == 0, r.stderr
    (old,) = tmp_path.glob("venv.old-*")
    assert (old / "keep-me").read_text() == "learner's file\n"
    assert (venv / "pyvenv.cfg").exists()


def test_missing_or_malformed_inputs_are_named(kit, tmp_path):
    env = kit.clean_env(tmp_path)
    r = kit.run_setup("--dry-run", env=env)
    assert r.returncode == 2
    assert "no project given" in r.stderr and "--project project_<number>" in r.stderr

    r = kit.run_setup("--project", "465000123", "--dry-run", env=env)
    assert r.returncode == 2 and "does not look like a LUMI project" in r.stderr

    r = kit.run_setup("--project", kit.project, "--container", "tensorflow", "--dry-run", env=env)
    assert r.returncode == 2
    assert "no container 'tensorflow'" in r.stderr
    assert all(name in r.stderr for name in LUMI.containers)

    r = kit.run_setup("--project", kit.project, "--bogus", env=env)
    assert r.returncode == 2 and "unknown option '--bogus'" in r.stderr

    # Off LUMI a real run stops before touching anything, and says why.
    r = kit.run_setup("--project", kit.project, "--venv", str(tmp_path / "v"), env=env)
    assert r.returncode == 2
    assert "not on PATH" in r.stderr or "not found" in r.stderr
    assert not (tmp_path / "v").exists()


def test_the_project_can_come_from_the_environment(kit, tmp_path):
    r = kit.run_setup("--dry-run", "--no-check", env=kit.clean_env(tmp_path, SLURM_JOB_ACCOUNT="project_465000999"))
    assert r.returncode == 0, r.stderr
    assert "project:   project_465000999" in r.stdout


def test_requirements_are_the_workbook_extra_without_torch_and_the_browser(kit):
    extra = tomllib.loads((kit.repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]["workbook"]
    lines = (kit.repo / "lumi" / "requirements-lumi.txt").read_text().splitlines()
    listed = [line for line in lines if line and not line.startswith("#")]
    assert sorted(listed) == sorted(d for d in extra if not d.startswith(("torch", "playwright")))
    assert not any(line.startswith("torch") for line in listed)


def test_a_clone_under_home_gets_a_warning(kit, tmp_path):
    """Cloned under $HOME: a warning that names the better places, not an error."""
    home = Path(kit.repo).parent  # pretend the clone is in $HOME
    r = kit.run_setup("--project", kit.project, "--dry-run", "--no-check", env=kit.clean_env(home))
    assert r.returncode == 0
    assert f"clone it into /project/{kit.project} or /scratch/{kit.project}" in r.stderr
