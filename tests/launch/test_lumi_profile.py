"""The LUMI profile's Slurm side: the Open OnDemand, large-memory and visualisation partitions, detection that does
not take any Cray host for LUMI, the recipes of multi-node jobs, the doctor's MIOpen advice and the RCCL log."""
from __future__ import annotations

import re
import sys

import pytest

from lumikit.errors import SpecError
from lumikit.jobs import render_sbatch, spec
from lumikit.jobs.validate import validate
from lumikit.launch import launch
from lumikit.logs.doctor import SIGNATURES
from lumikit.site import detect_site, load_site

LUMI = load_site("lumi")


@pytest.mark.parametrize("name,kind,max_nodes,max_time", [
    ("interactive", "cpu", 1, "8:00:00"), ("largemem", "cpu", 1, "1-00:00:00"), ("lumid", "vis", 1, "4:00:00")])
def test_the_partitions_beyond_lumi_g_and_lumi_c(name, kind, max_nodes, max_time):
    p = load_site("lumi").partition(name)
    assert (p.kind, p.max_nodes, p.max_time, p.exclusive) == (kind, max_nodes, max_time, False)
    validate(spec(["true"], partition=name, time="1:00:00", account="project_465000000"), LUMI)
    with pytest.raises(SpecError, match=f"{max_time} on {name}"):
        validate(spec(["true"], partition=name, time="2-00:00:00", account="project_465000000"), LUMI)


def test_a_gpu_on_the_visualisation_partition_is_not_held_to_lumi_g_rules():
    validate(spec(["paraview"], partition="lumid", gpus_per_node=1, mem="100G", account="project_465000000"), LUMI)
    with pytest.raises(SpecError, match="CPU partition largemem"):
        validate(spec(["true"], partition="largemem", gpus_per_node=1, account="project_465000000"), LUMI)


@pytest.fixture
def elsewhere(monkeypatch, tmp_path):
    """A process on a Cray host that is not LUMI: a nid* host name, no LUMI module, no /appl/lumi."""
    monkeypatch.delenv("LUMIKIT_SITE", raising=False)
    monkeypatch.delenv("LUMIKIT_BACKEND_OVERRIDE", raising=False)
    monkeypatch.delenv("LUMI_STACK_VERSION", raising=False)
    monkeypatch.setenv("LUMIKIT_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setattr("socket.gethostname", lambda: "nid001234")
    return monkeypatch


def test_a_nid_host_name_alone_is_not_lumi(elsewhere):
    assert detect_site() == "laptop"


def test_the_lumi_module_says_lumi(elsewhere):
    elsewhere.setenv("LUMI_STACK_VERSION", "24.03")
    assert detect_site() == "lumi"


def test_multi_node_jobs_get_the_rccl_and_miopen_recipes():
    one = render_sbatch(spec(["python", "t.py"], partition="standard-g", ntasks_per_node=8, gpus_per_node=8,
                             account="project_465000000"), "lumi")
    two = render_sbatch(spec(["python", "t.py"], partition="standard-g", nodes=2, ntasks_per_node=8,
                             gpus_per_node=8, account="project_465000000"), LUMI)
    site = load_site("lumi")
    for name in ("rccl", "miopen"):
        for k, v in site.env_recipe(name).items():
            assert f'export {k}="{v}"' in two and k not in one


def test_the_doctor_gives_the_miopen_recipe_of_the_site():
    fix = next(s for s in SIGNATURES if s.id == "miopen-sqlite-lock").fix
    recipe = load_site("lumi").env_recipe("miopen")
    path = re.sub(r"\$\{(\w+)\}", r"$\1", recipe["MIOPEN_USER_DB_PATH"])  # the recipe writes ${X}, the advice $X
    assert f"MIOPEN_USER_DB_PATH={path}" in fix and "MIOPEN_CUSTOM_CACHE_DIR=$MIOPEN_USER_DB_PATH" in fix
    assert recipe["MIOPEN_CUSTOM_CACHE_DIR"] == recipe["MIOPEN_USER_DB_PATH"] and "miopen" in fix


@pytest.mark.slurm
def test_the_rccl_debug_log_goes_to_the_run_folder(slurm_cluster, tmp_path):
    code = "import os; print(os.environ['NCCL_DEBUG_FILE'])"
    run = launch(spec([sys.executable, "-c", code], env_recipes=("rccl-debug",)), site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    assert run.stdout().strip() == f"{run.path}/rccl-%h-%p.txt"


def test_lumi_sim_has_only_the_partitions_its_cluster_has():
    sim = load_site("lumi-sim")
    assert set(LUMI.partitions) - set(sim.partitions) == {"interactive", "largemem", "lumid"}
    assert sim.partition("small-g") == LUMI.partition("small-g")
