"""The seed's hands-on checks (08.S3 scaling, 08.S4 $SLURM_* escaping, 05.S4 MIOpen logging, 02.S1 container shell,
10.2 JAX per GCD): the model answers pass, every declared wrong answer fails with its own words, no message shows
the value wanted."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from lumikit.checks import CheckFailed
from lumikit.checks import handson as h
from lumikit.checks.framework import check_info
from lumikit.jobs import spec

SRUN = ('srun singularity exec $CONTAINER bash -c "export RANK=\\$SLURM_PROCID LOCAL_RANK=\\$SLURM_LOCALID '
        'WORLD_SIZE=\\$SLURM_NPROCS && python train.py"')
WRAPPER = ('#!/bin/bash\nexport RANK=$SLURM_PROCID\nexport LOCAL_RANK=$SLURM_LOCALID\n'
           'export WORLD_SIZE=$SLURM_NPROCS\nexec "$@"\n')


def _right() -> dict:
    rows = h.scaling_runs()
    one = rows[0]["images_per_s"]
    efficiency = {r["gcds"]: r["images_per_s"] / (r["gcds"] * one) for r in rows}
    return {
        h.check_scaling_efficiency: dict(efficiency_32=efficiency[32],
                                         first_below_90=min(g for g, e in efficiency.items() if e < 0.9),
                                         lumi_per_gcd=h.lumi_total_images_per_s() / 32),
        h.check_slurm_escaping: dict(srun_line=SRUN, wrapper=WRAPPER),
        h.check_miopen_logging: dict(miopen_job=spec(["python", "train.py"], partition="small-g", gpus_per_node=1,
                                                     time="0:10:00",
                                                     env={"MIOPEN_ENABLE_LOGGING": "1",
                                                          "MIOPEN_ENABLE_LOGGING_CMD": "1"})),
        h.check_container_shell: dict(shell_commands=["module purge", "module use /appl/local/containers/ai-modules",
                                                      "module load singularity-AI-bindings",
                                                      "singularity shell $CONTAINER"]),
        h.check_jax_per_gcd: dict(per_gcd_job=spec(["python", "-c", "print(1)"], partition="small-g",
                                                   ntasks_per_node=2, gpus_per_task=1, container="jax"),
                                  devices_per_process=1, process_count=2),
    }


@pytest.mark.parametrize("func", list(_right()), ids=lambda f: check_info(f).exercise)
def test_the_model_answer_passes_and_every_declared_wrong_answer_fails_in_its_own_words(func) -> None:
    right = _right()[func]
    assert func(**right)
    info = check_info(func)
    assert len(info.wrong) >= 2
    for case in info.wrong:
        answers = {**right, **case.values(SimpleNamespace(**right))}
        with pytest.raises(CheckFailed) as err:
            func(**answers)
        assert (case.mentions or "") in str(err.value), case.why
        assert "expected" not in str(err.value), case.why


def test_the_scaling_runs_are_the_learners_own_and_the_lumi_number_is_the_real_logs(monkeypatch) -> None:
    monkeypatch.setenv("LUMIKIT_SEED", "ada")
    ada = h.scaling_runs()
    monkeypatch.setenv("LUMIKIT_SEED", "bob")
    assert h.scaling_runs() != ada and [r["gcds"] for r in ada] == [1, 2, 4, 8, 16, 32]
    assert h.lumi_total_images_per_s() == 6792.58
    assert "GENERATED" in h.scaling_runs.__doc__


def test_the_batch_shell_expands_only_what_is_neither_escaped_nor_single_quoted() -> None:
    assert h.batch_shell_expands('bash -c "RANK=$SLURM_PROCID L=\\$SLURM_LOCALID" \'$SLURM_NODEID\'') == \
        ["SLURM_PROCID"]
    assert h.task_sees(SRUN).startswith("export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID")
    assert h.task_sees("srun bash -c 'RANK=\\$SLURM_PROCID'") == "RANK=\\$SLURM_PROCID"
    assert h.shell_words('a "b c" d\\ e') == ["a", "b c", "d e"]


@pytest.mark.parametrize("use, load", [("module use /appl/local/containers/ai-modules", "module load singularity-AI-bindings"),
                                       ("module use /appl/local/laifs/modules", "module load lumi-aif-singularity-bindings"),
                                       ("module use /appl/local/laifs/modules",
                                        "module load lumi-aif-singularity-bindings/1.0.1")])
def test_02_s1_takes_the_2025_and_the_2026_bindings_modules(use: str, load: str) -> None:
    assert h.check_container_shell(["module purge", use, load, "singularity shell $CONTAINER"])


def test_02_s1_refuses_a_bindings_module_loaded_from_the_other_years_folder() -> None:
    with pytest.raises(CheckFailed, match="another module folder"):
        h.check_container_shell(["module use /appl/local/containers/ai-modules",
                                 "module load lumi-aif-singularity-bindings", "singularity shell $CONTAINER"])
