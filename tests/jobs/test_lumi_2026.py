"""LUMI's 2026 changes: the course container is the PyTorch 2.7.1 image (2.6.0 has NaN problems, kept as a named
option that says so), and the advice for missing binds names the 2026 bindings module first."""
from __future__ import annotations

from lumikit import bindings_modules
from lumikit.checks import handson
from lumikit.cli import main
from lumikit.jobs import render_srun, spec
from lumikit.jobs.validate import advice
from lumikit.logs import diagnose_text
from lumikit.logs.rccl import parse_rccl
from lumikit.site import load_site

LUMI = load_site("lumi")


def _job(**options):
    base = dict(partition="small-g", gpus_per_node=1, cpus_per_task=7, time="0:30:00", account="p")
    return spec(["python", "t.py"], **{**base, **options})


def test_the_default_course_container_is_pytorch_2_7_1_and_2_6_0_stays_as_an_option():
    assert LUMI.default_container == "pytorch"
    assert LUMI.container("pytorch").path.endswith("lumi-pytorch-rocm-6.2.4-python-3.12-pytorch-v2.7.1.sif")
    assert LUMI.container("pytorch-260").path.endswith("lumi-pytorch-rocm-6.2.4-python-3.12-pytorch-v2.6.0.sif")
    assert LUMI.container("pytorch").path in render_srun(_job(container="pytorch"), LUMI).argv


def test_a_job_in_the_2_6_0_image_is_told_about_its_nan_problems_and_the_default_is_not():
    assert advice(_job(container="pytorch"), LUMI) == []
    (note,) = advice(_job(container="pytorch-260"), LUMI)
    assert note.startswith("container pytorch-260: ") and "NaN" in note and "2.7.1" in note


def test_the_nan_note_reaches_the_command_line(capsys):
    assert main(["srun", "--site", "lumi", "-A", "p", "-t", "0:30:00", "-p", "small-g", "--gpus-per-node", "1",
                 "-c", "7", "--container", "pytorch-260", "--", "python", "t.py"]) == 0
    assert "NaN problems" in capsys.readouterr().err


def test_missing_binds_advice_names_the_2026_module_and_the_older_one_as_older():
    (found,) = diagnose_text("OSError: libcxi.so.1: cannot open shared object file: No such file or directory")
    assert "module use /appl/local/laifs/modules; module load lumi-aif-singularity-bindings" in found.fix
    assert found.fix.index("lumi-aif-singularity-bindings") < found.fix.index("older course editions: "
                                                                               "singularity-AI-bindings")
    (domain,) = diagnose_text("nid0001:1:2 [0] NCCL WARN NET/OFI Couldn't open a fabric access domain. RC: -38")
    assert "lumi-aif-singularity-bindings" in domain.fix and "singularity-AI-bindings" not in domain.fix


def test_the_rccl_reader_advises_the_2026_module_on_a_failed_plugin():
    log = ("nid0001:1:2 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0\n"
           "nid0001:1:2 [0] NCCL WARN NET/OFI Couldn't open a fabric access domain. RC: -38\n"
           "nid0001:1:2 [0] NCCL INFO Using network Socket\n")
    text = parse_rccl(log).describe()
    assert "falls back to TCP sockets" in text
    assert "module load lumi-aif-singularity-bindings" in text and "older course editions" in text


def test_02_s1_knows_exactly_the_modules_the_advice_names():
    assert handson.BINDINGS_MODULES == {"lumi-aif-singularity-bindings": "/appl/local/laifs/modules",
                                        "singularity-AI-bindings": "/appl/local/containers/ai-modules"}
    for name, folder in bindings_modules.MODULES.items():
        assert handson.check_container_shell(["module purge", f"module use {folder}", f"module load {name}",
                                              "singularity shell $CONTAINER"])
