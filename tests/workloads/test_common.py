"""Where a process sits in a job, read from the launcher's environment; deterministic sharded batches; metrics."""
from __future__ import annotations

import argparse

import pytest

from lumikit.errors import LaunchError, SpecError
from lumikit.workloads.common import (DistEnv, MetricsWriter, base_parser, check_common_args, dist_env,
                                      metrics_path, read_metrics)
from lumikit.workloads.trainer import epoch_batches


def test_torchrun_variables_come_first():
    env = dist_env({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                    "SLURM_PROCID": "0", "SLURM_NTASKS": "1", "MASTER_ADDR": "nid005527", "MASTER_PORT": "25900"})
    assert env == DistEnv(rank=3, local_rank=1, world_size=4, local_world_size=2, master_addr="nid005527",
                          master_port="25900", source="torchrun")
    assert not env.is_main


def test_slurm_variables_are_the_fall_back():
    env = dist_env({"SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NTASKS": "8",
                    "SLURM_NTASKS_PER_NODE": "4(x2)", "MASTER_ADDR": "nid000001"})
    assert (env.rank, env.local_rank, env.world_size, env.local_world_size, env.source) == (5, 1, 8, 4, "slurm")


def test_no_launcher_means_one_process():
    env = dist_env({})
    assert (env.rank, env.world_size, env.source, env.is_main) == (0, 1, "default", True)


def test_rank_without_world_size_names_the_fix():
    with pytest.raises(LaunchError, match="WORLD_SIZE"):
        dist_env({"RANK": "0"})


def test_rank_outside_the_world_is_refused():
    with pytest.raises(LaunchError, match="rank 2 is outside the world size 2"):
        dist_env({"RANK": "2", "WORLD_SIZE": "2"})


def test_non_integer_rank_is_refused():
    with pytest.raises(LaunchError, match=r"RANK='\$SLURM_PROCID'"):
        dist_env({"RANK": "$SLURM_PROCID", "WORLD_SIZE": "2"})


def test_ranks_get_disjoint_equal_shards_of_one_shuffle():
    shards = [epoch_batches(103, seed=7, epoch=0, rank=r, world=2, batch=10) for r in range(2)]
    assert [len(s) for s in shards] == [5, 5]  # 103 // 20 steps, the 3-sample tail dropped
    flat = [i for shard in shards for batch in shard for i in batch]
    assert len(flat) == len(set(flat)) == 100


def test_batches_repeat_for_the_same_seed_and_epoch_and_change_with_the_epoch():
    first = epoch_batches(50, seed=1, epoch=0, rank=0, world=1, batch=5)
    assert first == epoch_batches(50, seed=1, epoch=0, rank=0, world=1, batch=5)
    assert first != epoch_batches(50, seed=1, epoch=1, rank=0, world=1, batch=5)
    assert sorted(i for b in first for i in b) == list(range(50))


def test_metrics_rows_are_read_back_as_steps_and_epochs(tmp_path):
    path = metrics_path(tmp_path, 1)
    with MetricsWriter(path, append=False) as out:
        out.write({"step": 1, "loss": 2.5})
        out.write({"epoch_end": 0, "loss": 2.5})
    steps, epochs = read_metrics(path)
    assert path.name == "metrics.rank1.jsonl"
    assert steps == [{"step": 1, "loss": 2.5}] and epochs == [{"epoch_end": 0, "loss": 2.5}]
    with pytest.raises(FileExistsError):
        MetricsWriter(path, append=False)  # a fresh writer never truncates an earlier run


@pytest.mark.parametrize("argv, option", [(["--steps", "0"], "--steps"), (["--batch-size", "-1"], "--batch-size"),
                                          (["--workers", "-2"], "--workers"), (["--max-time", "0"], "--max-time"),
                                          (["--resume"], "--resume")])
def test_impossible_options_are_refused_with_their_name(argv, option):
    args = base_parser("x", "x", sizes=["tiny"], lr=0.1, batch_size=4).parse_args(argv)
    with pytest.raises(SpecError) as info:
        check_common_args(args)
    assert info.value.field == option


def test_defaults_are_small():
    args = base_parser("x", "x", sizes=["tiny", "small"], lr=0.1, batch_size=4).parse_args([])
    assert isinstance(args, argparse.Namespace)
    assert (args.model_size, args.mode, args.batch_size, args.workers, args.steps, args.epochs) == \
        ("tiny", "single", 4, 0, None, None)
