"""Several ranks as separate processes with the environment a launcher gives: every rank ends on the same loss.

Each test starts two Python processes (about 5 s each on the 2-core CI machine, run side by side).
"""
from __future__ import annotations

import json


def test_lm_ddp_ranks_agree_and_runs_repeat(tmp_path, launcher):
    finals = []
    for name in ("a", "b"):
        ranks = launcher.run_ranks("lumikit.workloads.lm", ["--mode", "ddp", "--steps", "4", "--no-progress",
                                                            "--out", str(tmp_path / name)], world=2)
        assert [r.returncode for r in ranks] == [0, 0], ranks[0].stderr + ranks[1].stderr
        finals.append([launcher.final_loss(r.stdout) for r in ranks])
    assert finals[0][0] == finals[0][1] == finals[1][0] == finals[1][1]
    summaries = [json.loads((tmp_path / "a" / f"result.rank{r}.json").read_text()) for r in (0, 1)]
    assert [s["world_size"] for s in summaries] == [2, 2] and summaries[0]["backend"] == "gloo"
    assert summaries[0]["global_batch_size"] == 16
    assert summaries[0]["loss_curve"] == summaries[1]["loss_curve"]
    # Each rank saw its own shard, so the per-rank losses differ while the averaged loss agrees.
    rows = [json.loads((tmp_path / "a" / f"metrics.rank{r}.jsonl").read_text().splitlines()[0]) for r in (0, 1)]
    assert rows[0]["rank_loss"] != rows[1]["rank_loss"] and rows[0]["loss"] == rows[1]["loss"]
    assert ranks[1].stdout.count("\n") == 1  # rank 1 prints only its FINAL line


def test_resnet_ddp_with_slurm_variables_profiles_only_the_chosen_rank(tmp_path, launcher):
    prof = tmp_path / "prof"
    profiled = {"LUMIKIT_PROFILE": "torch", "LUMIKIT_PROFILE_DIR": str(prof), "LUMIKIT_PROFILE_SCHEDULE": "0,0,2,1"}
    ranks = launcher.run_ranks("lumikit.workloads.resnet",
                               ["--mode", "ddp", "--steps", "3", "--samples", "64", "--batch-size", "4",
                                "--no-progress", "--out", str(tmp_path)],
                               world=2, style="slurm", per_rank_env={1: profiled})
    assert [r.returncode for r in ranks] == [0, 0], ranks[0].stderr + ranks[1].stderr
    assert launcher.final_loss(ranks[0].stdout) == launcher.final_loss(ranks[1].stdout)
    (trace_file,) = prof.glob("*.pt.trace.json")
    assert trace_file.name.startswith("rank1.")
    trace = json.loads(trace_file.read_text())
    assert trace["distributedInfo"]["rank"] == 1 and trace["distributedInfo"]["world_size"] == 2
    assert json.loads((tmp_path / "result.rank1.json").read_text())["launcher"] == "slurm"


def test_ddp_check_ranks_print_the_same_final_loss(launcher):
    ranks = launcher.run_ranks("lumikit.workloads.ddp_check", [], world=2, style="slurm")
    assert [r.returncode for r in ranks] == [0, 0], ranks[0].stderr + ranks[1].stderr
    assert launcher.final_loss(ranks[0].stdout) == launcher.final_loss(ranks[1].stdout)
    assert "rank 1/2 local 1" in ranks[1].stdout


def test_ddp_without_a_launcher_explains_how_to_start_it(launcher):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "lumikit.workloads.lm", "--mode", "ddp", "--steps", "1"],
                          env=launcher.clean_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "torchrun" in proc.stderr


def test_loader_workers_spawn_when_the_job_spans_nodes_and_fork_on_one():
    from lumikit.workloads.common import DistEnv, loader_start_method

    two_nodes = DistEnv(rank=9, local_rank=1, world_size=16, local_world_size=8)
    one_node = DistEnv(rank=1, local_rank=1, world_size=8, local_world_size=8)
    assert loader_start_method(two_nodes, workers=7) == "spawn"
    assert loader_start_method(one_node, workers=7) is None
    assert loader_start_method(two_nodes, workers=0) is None  # no worker processes, nothing to start


def test_two_node_ddp_with_loader_workers_spawns_them_and_trains(tmp_path, launcher):
    # one rank per "node": LOCAL_WORLD_SIZE=1, so the world spans two nodes as far as the ranks can tell
    one_per_node = {r: {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"} for r in (0, 1)}
    ranks = launcher.run_ranks("lumikit.workloads.lm", ["--mode", "ddp", "--steps", "2", "--workers", "1",
                                                        "--no-progress", "--out", str(tmp_path)],
                               world=2, per_rank_env=one_per_node, timeout=240)
    assert [r.returncode for r in ranks] == [0, 0], ranks[0].stderr + ranks[1].stderr
    summary = json.loads((tmp_path / "result.rank0.json").read_text())
    assert summary["loader_start_method"] == "spawn" and summary["workers"] == 1
    assert launcher.final_loss(ranks[0].stdout) == launcher.final_loss(ranks[1].stdout)
