"""Right answers written another way pass (numpy numbers and bools, spaces, a tool's other "on" values, a pip-valid
pin, an option letter in capitals, a value rounded as printed), and the wrong answers that used to pass fail."""
from __future__ import annotations

import statistics

import numpy as np
import pytest

from lumikit.checks import CheckFailed, handson, m02, m04, m05, m08, m09, terminal
from lumikit.jobs import spec

from .test_m04 import WAITING

LOGGING = {"MIOPEN_ENABLE_LOGGING": "1", "MIOPEN_ENABLE_LOGGING_CMD": "1"}
TIMES = {0: 0.9, 1: 0.5, 2: 0.31, 4: 0.3, 8: 0.3}


def _miopen(**env: str):
    return spec(["python", "train.py"], partition="small-g", gpus_per_node=1, time="0:10:00", env={**LOGGING, **env})


def _warmup_rounded() -> float:
    steps = m05.warmup_steps()
    return round(steps[0] - statistics.median(steps[1:]), 1)  # as printed to 0.1 s


RIGHT_WRITTEN_ANOTHER_WAY = {
    "08.6 missing rank as np.int64 (pandas' idxmin)": lambda: m08.check_hang(
        m08.RECORDER_ENV, np.int64(m08._hang_truth()[0]), np.int64(m08._hang_truth()[1])),
    "04.4 computing as np.bool_": lambda: m04.check_busy_without_power("busy-without-power", np.bool_(False), WAITING),
    "04.4 the kind with spaces around it": lambda: m04.check_busy_without_power(" busy-without-power ", False,
                                                                                 WAITING),
    "05.W2 the search time to 0.1 s": lambda: m05.check_warmup_cost(_warmup_rounded(), m05.warmup_steps()),
    "05.W2 as np.float64": lambda: m05.check_warmup_cost(np.float64(_warmup_rounded()), m05.warmup_steps()),
    "05.S4 MIOPEN_ENABLE_LOGGING=true": lambda: handson.check_miopen_logging(_miopen(MIOPEN_ENABLE_LOGGING="true")),
    "05.S4 MIOPEN_ENABLE_LOGGING_CMD=YES": lambda: handson.check_miopen_logging(
        _miopen(MIOPEN_ENABLE_LOGGING_CMD="YES")),
    "02.4 ==2.5.1 for the local build 2.5.1+rocm6.2": lambda: m02.check_pins(
        ["torch==2.5.1", "numpy==1.26.4"], {"torch": "2.5.1+rocm6.2", "numpy": "1.26.4"}),
    "02.4 spaces and a trailing .0": lambda: m02.check_pins(["torch == 2.5.1.0", "NumPy==1.26.4"],
                                                            {"torch": "2.5.1", "numpy": "1.26.4"}),
    "09.2 the worker count as np.int64": lambda: m09.check_enough_workers(np.int64(2), TIMES),
    "02.2 the bind set with spaces around it": lambda: m02.check_rccl_bind_set(" multinode "),
    "02.2 the bind set with a newline after it": lambda: m02.check_rccl_bind_set("multinode\n"),
}


@pytest.mark.parametrize("answer", sorted(RIGHT_WRITTEN_ANOTHER_WAY))
def test_a_right_answer_written_another_way_passes(answer: str) -> None:
    assert RIGHT_WRITTEN_ANOTHER_WAY[answer]()


def test_a_numpy_bool_is_refused_where_a_number_is_asked() -> None:
    with pytest.raises(CheckFailed):
        m09.check_enough_workers(np.bool_(True), TIMES)


SCRIPT = ('srun singularity exec $CONTAINER bash -c "export RANK=\\$SLURM_PROCID LOCAL_RANK=\\$SLURM_LOCALID '
          'WORLD_SIZE=\\$SLURM_NPROCS && python train.py"')
WRAPPER = ("#!/bin/bash\nexport RANK=$SLURM_PROCID\nexport LOCAL_RANK=$SLURM_LOCALID\n"
           "export WORLD_SIZE=$SLURM_NPROCS\nexec \"$@\"\n")


HOLES = {
    "08.S4 an srun line without WORLD_SIZE": lambda: handson.check_slurm_escaping(
        SCRIPT.replace(" WORLD_SIZE=\\$SLURM_NPROCS", ""), WRAPPER),
    "08.S4 run.sh without export": lambda: handson.check_slurm_escaping(SCRIPT, WRAPPER.replace("export ", "")),
    "08.S4 WORLD_SIZE only in a comment": lambda: handson.check_slurm_escaping(
        SCRIPT, WRAPPER.replace("export WORLD_SIZE", "# export WORLD_SIZE")),
    "05.S4 logging on a CPU partition": lambda: handson.check_miopen_logging(
        spec(["python", "train.py"], partition="small", time="0:10:00", env=LOGGING)),
    "05.W1 a relative path": lambda: m05.check_cache_env({v: "project_465000000/caches" for v in m05.CACHE_VARIABLES},
                                                         "project_465000000"),
    "05.W1 another project's scratch": lambda: m05.check_cache_env(
        {v: "/scratch/project_4650000001/c" for v in m05.CACHE_VARIABLES}, "project_465000000"),
    "08.T1 rank 0 twice on two nodes": lambda: terminal.check_gpu_visibility(
        "0 nid005001 ROCR_VISIBLE_DEVICES=0\n0 nid005002 ROCR_VISIBLE_DEVICES=0\n"),
    "02.S1 an unrelated --bind": lambda: handson.check_container_shell(["singularity shell --bind /tmp $SIF"]),
}


@pytest.mark.parametrize("hole", sorted(HOLES))
def test_a_wrong_answer_that_used_to_pass_fails(hole: str) -> None:
    with pytest.raises(CheckFailed):
        HOLES[hole]()


def test_scaling_messages_give_no_direction_to_search_by() -> None:
    for guess in (0.1, 0.5, 0.95):
        with pytest.raises(CheckFailed) as caught:
            handson.check_scaling_efficiency(guess, None, None)
        assert "too high" not in str(caught.value) and "too low" not in str(caught.value)


def test_10_s1_takes_any_value_python_reads_as_on_and_refuses_a_cpu_fallback() -> None:
    from lumikit.checks.framework import CheckFailed
    from lumikit.checks.seeds import check_jax_job
    from lumikit.jobs import spec

    job = spec(["python", "-c", "import jax; print(jax.devices())"], partition="small-g", gpus_per_node=2,
               time="0:05:00", container="jax", env={"PYTHONNOUSERSITE": "true"})
    assert check_jax_job(job, 2, "[RocmDevice(id=0), RocmDevice(id=1)]")
    with pytest.raises(CheckFailed, match="CPU devices only"):
        check_jax_job(job, 2, "[CpuDevice(id=0)]")
