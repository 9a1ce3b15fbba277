"""The 2026 LAIF container: rocprofv3 needs a library the image lacks (an overlay mounts it), and multi-node jobs
get the 2026 workshop's libfabric/CXI settings."""
from __future__ import annotations

from pathlib import Path

import lumikit
from lumikit.cli import main
from lumikit.jobs import render_srun, spec
from lumikit.jobs.validate import advice
from lumikit.site import load_site

LUMI = load_site("lumi")


def _job(**options):
    base = dict(partition="small-g", gpus_per_node=1, cpus_per_task=7, time="0:30:00", account="p",
                container="laif-pytorch")
    return spec(["python", "t.py"], **{**base, **options})


def test_rocprofv3_in_laif_mounts_the_libdw_overlay_before_the_image():
    argv = render_srun(_job(profile="rocprofv3"), LUMI).argv
    image = LUMI.container("laif-pytorch").path
    assert "--overlay" in argv and argv[argv.index("--overlay") + 1] == "deps.sqsh:ro"
    assert argv.index("--overlay") < argv.index(image)  # a singularity option, not an argument of the command
    assert "rocprofv3" in argv[-1]


def test_rocprofv3_in_laif_warns_with_the_reason_and_how_to_build_the_overlay(capsys):
    assert main(["srun", "--site", "lumi", "-A", "p", "-t", "0:30:00", "-p", "small-g", "--gpus-per-node", "1",
                 "-c", "7", "--container", "laif-pytorch", "--profile", "rocprofv3", "--", "python", "t.py"]) == 0
    err = capsys.readouterr().err
    assert "rocprofv3 in container laif-pytorch needs libdw1t64" in err
    assert "laifs-container-recipes#32" in err
    assert "apt-get download libdw1t64" in err and "mksquashfs deps deps.sqsh" in err


def test_other_modes_and_containers_get_no_overlay():
    assert "--overlay" not in render_srun(_job(profile="torch"), LUMI).argv
    assert "--overlay" not in render_srun(_job(profile="rocprofv3", container="pytorch"), LUMI).argv
    assert advice(_job(profile="rocprofv3", container="pytorch"), LUMI) == []


def test_multi_node_laif_jobs_get_the_cxi_settings_and_single_node_ones_do_not():
    two = _job(partition="standard-g", nodes=2, gpus_per_node=8, ntasks_per_node=8)
    text = render_srun(two, LUMI).text()
    for setting in ('FI_CXI_RDZV_PROTO="alt_read"', 'FI_MR_CACHE_MONITOR="userfaultfd"',
                    'FI_CXI_DEFAULT_CQ_SIZE="131072"', 'HSA_FORCE_FINE_GRAIN_PCIE="1"'):
        assert setting in text
    assert "FI_CXI" not in render_srun(_job(), LUMI).text()
    assert "FI_CXI" not in render_srun(two.with_(container="pytorch"), LUMI).text()  # the 2025 image: not asked


def test_every_job_in_a_laif_image_gets_the_mr_cache_monitor_others_do_not():
    """LUMI AI Guide, Sep 2026: FI_MR_CACHE_MONITOR=userfaultfd for every LAIF job, single-node ones too."""
    for image in ("laif-pytorch", "laif-latest"):
        single = render_srun(_job(container=image), LUMI).argv[-1]
        assert 'export FI_MR_CACHE_MONITOR="userfaultfd"' in single, image
    assert "FI_MR_CACHE_MONITOR" not in render_srun(_job(container="pytorch"), LUMI).argv[-1]


def test_the_laif_entries_carry_their_sources_and_say_expected_where_unchecked():
    text = (Path(lumikit.__file__).parent / "sites" / "lumi.toml").read_text()
    latest = LUMI.container("laif-latest")
    assert latest.path.endswith("lumi-multitorch-latest.sif") and latest.launch == "run"
    assert "LUMI user guide, May 2026" in latest.note and "expected, not checked" in latest.note
    assert LUMI.env_recipe("laif") == {"FI_MR_CACHE_MONITOR": "userfaultfd"}
    assert LUMI.env_recipe("vllm-compile-off") == {"TORCH_COMPILE_DISABLE": "1"}
    for recipe, source in (("[env.laif]", "LUMI AI Guide (Lumi-supercomputer/LUMI-AI-Guide), September 2026"),
                           ("[env.vllm-compile-off]", "LUMI AI Guide, chapter 10")):
        block = text.split(recipe, 1)[1].split("\n[", 1)[0]
        assert source in block and "expected" in block, recipe
