"""What OOD's Jupyter app sees: the init file it sources puts the venv's python first on PATH, and that python
runs `python -m jupyter lab` inside the container with the course's binds (stand-ins for singularity here)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lumikit.site import load_site

LUMI = load_site("lumi")


@pytest.fixture
def built(kit, tmp_path, stubs, stub_env):
    """A venv made by a real run of the set-up script against the stand-ins."""
    site_file, sif = kit.site_file_with_image(tmp_path)
    venv = tmp_path / "venv"
    r = kit.run_setup("--project", kit.project, "--venv", str(venv), "--site-file", str(site_file),
                      "--cache-dir", str(tmp_path / "cache"), "--no-check", env=stub_env)
    assert r.returncode == 0, r.stderr
    return venv, sif


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=30)


def test_init_file_starts_jupyter_inside_the_container(built, stubs, stub_env):
    venv, sif = built
    start = len(stubs.calls())
    # What the app does: source the init file, then `python -m jupyter lab`.
    done = bash(f"source '{venv}/ood-init.sh' && command -v python && python -m jupyter lab --port 8888", stub_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"{venv}/host-bin/python"
    calls = stubs.calls()[start:]
    assert calls[0].startswith(f"singularity exec --bind {','.join(LUMI.binds['user'])}")
    assert f" {sif} bash -c $WITH_CONDA; source \"$1/bin/activate\"" in calls[0]
    assert calls[0].endswith(f"bash {venv} -m jupyter lab --port 8888")
    assert calls[1] == "python -m jupyter lab --port 8888"


def test_init_file_sets_account_and_caches(built, kit, stub_env):
    venv, _ = built
    done = bash(f"source '{venv}/ood-init.sh' && echo \"$LUMIKIT_ACCOUNT|$LUMIKIT_SITE|$HF_HOME|$TORCH_HOME\"",
                stub_env)
    assert done.returncode == 0, done.stderr
    cache = Path(stub_env["STUB_LOG"]).parent / "cache"
    assert done.stdout.splitlines()[-1] == f"{kit.project}|lumi|{cache}/hf-cache|{cache}/torch-cache"
    assert f"lumi-workbook: python is {venv}/host-bin/python" in done.stdout


def test_a_course_reservation_and_account_from_the_module_win(built, stub_env):
    venv, _ = built
    env = dict(stub_env, LUMIKIT_ACCOUNT="project_465000777", LUMIKIT_RESERVATION="AI_day2")
    done = bash(f"source '{venv}/ood-init.sh' && echo \"$LUMIKIT_ACCOUNT $LUMIKIT_RESERVATION\"", env)
    assert done.stdout.splitlines()[-1] == "project_465000777 AI_day2"


def test_sourcing_without_a_venv_says_what_to_do(kit, tmp_path):
    env = kit.clean_env(tmp_path)
    init = kit.repo / "lumi" / "ood" / "jupyter-init.sh"
    done = bash(f"source '{init}'; echo \"status $?\"", env)
    assert done.stdout.strip() == "status 2"  # returns, so the app's own script reports the failure
    assert "LUMI_WORKBOOK_VENV is not set" in done.stderr

    done = bash(f"export LUMI_WORKBOOK_VENV='{tmp_path}/nowhere'; source '{init}'; echo \"status $?\"", env)
    assert done.stdout.strip() == "status 2"
    assert f"run lumi/setup-venv.sh --project <your project> --venv {tmp_path}/nowhere" in done.stderr


def test_launcher_refuses_a_module_that_expects_another_image(built, stub_env):
    venv, sif = built
    env = dict(stub_env, LUMI_WORKBOOK_EXPECT_SIF="/appl/local/containers/other.sif")
    done = bash(f"'{venv}/host-bin/python' -c pass", env)
    assert done.returncode == 2
    assert f"was built on {sif}, but the course module expects /appl/local/containers/other.sif" in done.stderr


def test_launcher_binds_the_slurm_client_where_the_host_has_it(built, stubs, stub_env, tmp_path):
    venv, _ = built
    present = tmp_path / "sbatch"
    present.write_text("")
    settings = venv / "lumi-workbook.env"
    settings.write_text(settings.read_text() + f"\nexport LUMI_WORKBOOK_SLURM_PATHS={present},/no/such/srun\n")
    start = len(stubs.calls())
    done = bash(f"'{venv}/host-bin/python' -c pass", stub_env)
    assert done.returncode == 0, done.stderr
    binds = stubs.calls()[start].split()[3]
    assert binds == ",".join(LUMI.binds["user"]) + f",{present}"


def test_inside_a_container_the_launcher_runs_python_directly(built, stubs, stub_env):
    venv, _ = built
    start = len(stubs.calls())
    done = bash(f"'{venv}/host-bin/python' -m ipykernel_launcher", dict(stub_env, SINGULARITY_CONTAINER="/x.sif"))
    assert done.returncode == 0, done.stderr
    assert stubs.calls()[start:] == ["python -m ipykernel_launcher"]
