"""Module 02 checks: each passes on the right answer and fails, naming its exercise, on a wrong one and on None."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, Passed
from lumikit.checks.m02 import (
    check_pins,
    check_rccl_bind_set,
    check_two_node_container,
    check_venv_python,
)
from lumikit.jobs import Command, render_srun, spec
from lumikit.site import load_site

LUMI = load_site("lumi")
TWO_NODES = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                 container="pytorch")


def test_two_node_container_command_passes_with_user_and_multinode_binds():
    result = check_two_node_container(render_srun(TWO_NODES, LUMI))
    assert isinstance(result, Passed) and result.exercise == "02.1"
    assert "10 binds (4 of them for multi-node)" in str(result)


@pytest.mark.parametrize("job, words", [
    (TWO_NODES.with_(nodes=1), "does not ask for two nodes"),
    (TWO_NODES.with_(container=None), "does not run the site's PyTorch container"),
    (TWO_NODES.with_(container="laif-pytorch"), "does not run the site's PyTorch container"),
])
def test_two_node_container_command_fails_on_wrong_jobs(job, words):
    with pytest.raises(CheckFailed, match="Exercise 02.1") as err:
        check_two_node_container(render_srun(job, LUMI))
    assert words in str(err.value)


def test_two_node_container_command_fails_without_the_cray_libraries():
    argv = list(render_srun(TWO_NODES, LUMI).argv)  # a 2-node step: singularity inside `bash -c` (MASTER_ADDR)
    assert sum("-B /opt/cray " in a for a in argv) == 1
    without_cray = Command(argv=tuple(a.replace("-B /opt/cray ", "") for a in argv))  # "-B /opt/cray" taken out
    with pytest.raises(CheckFailed, match="02.1: some paths a 2-node job needs are not bound"):
        check_two_node_container(without_cray)


def test_two_node_container_needs_with_conda_for_an_exec_image():
    path = LUMI.containers["pytorch"].path  # the image by path: lumikit cannot know it needs $WITH_CONDA
    with pytest.raises(CheckFailed, match="02.1: nothing activates the container's conda environment"):
        check_two_node_container(render_srun(TWO_NODES.with_(container=path), LUMI))
    with pytest.raises(CheckFailed, match="No answer yet for 02.1"):
        check_two_node_container(None)


def test_rccl_bind_set_is_the_one_added_for_two_nodes():
    assert "/opt/cray" in str(check_rccl_bind_set("multinode"))
    with pytest.raises(CheckFailed, match="02.2: the bind set RCCL needs across nodes is not one of"):
        check_rccl_bind_set("user")
    with pytest.raises(CheckFailed, match="02.2: the bind set is not one of"):
        check_rccl_bind_set("rccl")
    with pytest.raises(CheckFailed, match="No answer yet for 02.2"):
        check_rccl_bind_set(None)


def test_venv_python_lives_in_the_home_of_pyvenv_cfg(tmp_path: Path):
    home = tmp_path / "base" / "bin"
    home.mkdir(parents=True)
    for name in ("python3.12", "pip"):
        (home / name).write_text("")
    cfg = {"home": str(home), "include-system-site-packages": "true"}
    assert f"python3.12 from {home}" in str(check_venv_python(str(home / "python3.12"), cfg))
    with pytest.raises(CheckFailed, match="02.3: pip is not a python interpreter"):
        check_venv_python(str(home / "pip"), cfg)
    (home / "python3-config").write_text("")
    with pytest.raises(CheckFailed, match="python3-config is not a python interpreter.*build flags"):
        check_venv_python(str(home / "python3-config"), cfg)
    with pytest.raises(CheckFailed, match="02.3: .*python9 does not exist"):
        check_venv_python(str(home / "python9"), cfg)
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").write_text("")
    with pytest.raises(CheckFailed, match="02.3: that python is not the one the venv runs"):
        check_venv_python(str(tmp_path / "venv" / "bin" / "python"), cfg)
    with pytest.raises(CheckFailed, match="02.3: the path of the python the venv runs has the wrong type"):
        check_venv_python(3, cfg)
    with pytest.raises(CheckFailed, match="No answer yet for 02.3"):
        check_venv_python(None, cfg)


def test_pins_are_the_base_versions():
    base = {"torch": "2.6.0+rocm6.2.4", "numpy": "1.26.4"}
    result = check_pins(["torch==2.6.0+rocm6.2.4", "numpy == 1.26.4"], base)
    assert "numpy==1.26.4, torch==2.6.0+rocm6.2.4" in str(result)
    with pytest.raises(CheckFailed, match="02.4: some packages of the base are not pinned"):
        check_pins(["torch>=2.6.0", "numpy==1.26.4"], base)
    with pytest.raises(CheckFailed, match="02.4: some packages of the base are not pinned"):
        check_pins(["torch==2.6.0+rocm6.2.4"], base)
    with pytest.raises(CheckFailed, match="No answer yet for 02.4"):
        check_pins(None, base)


def test_pins_are_compared_as_pip_names_them_and_a_contradicting_pin_is_refused():
    base = {"torch": "2.6.0+rocm6.2.4", "typing_extensions": "4.12.2"}
    assert check_pins(["TORCH==2.6.0+rocm6.2.4", "Typing-Extensions==4.12.2"], base)
    with pytest.raises(CheckFailed, match="torch is pinned twice.*contradicting pin"):
        check_pins(["torch==2.6.0+rocm6.2.4", "typing_extensions==4.12.2", "torch==2.5.1"], base)
    with pytest.raises(CheckFailed, match="is pinned twice"):
        check_pins(["torch==2.6.0+rocm6.2.4", "typing_extensions==4.12.2", "torch>=2.0"], base)
