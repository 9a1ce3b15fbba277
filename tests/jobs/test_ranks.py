"""Where each rank lands: devices seen and used, GCD, cores and the mask taskset prints, read before a job runs."""
from __future__ import annotations

from lumikit.jobs import spec
from lumikit.jobs.ranks import rank_places, rank_table, taskset_mask
from lumikit.site import load_site

LUMI = load_site("lumi")


def test_the_rule_gives_every_rank_its_own_gcd_cores_and_mask():
    job = spec(["python"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
               cpu_bind="auto")
    places = rank_places(job, LUMI)
    assert [(p.sees, p.device, p.gcd, p.cores) for p in places] == [(8, r, r, 7) for r in range(8)]
    assert places[0].mask == "fe000000000000"  # GCD 0: cores 49-55, as `taskset -p` prints it
    assert places[4].mask == "fe"  # GCD 4: cores 1-7
    assert all(p.problem == "" for p in places)


def test_one_gpu_per_task_leaves_local_ranks_above_zero_without_their_device():
    job = spec(["python"], partition="small-g", gpus_per_task=1, ntasks_per_node=4, cpus_per_task=7)
    table = rank_table(job, LUMI)
    assert table["sees"].tolist() == [1, 1, 1, 1]
    assert table.loc[0, "device"] == 0 and table["device"].isna().tolist() == [False, True, True, True]
    assert "set_device(LOCAL_RANK=3) fails" in table.loc[3, "problem"]
    assert "RCCL loses peer access" in table.loc[0, "problem"]


def test_shared_nodes_do_not_name_physical_gcds_and_missing_cores_are_a_problem():
    job = spec(["python"], partition="small-g", gpus_per_node=2, ntasks_per_node=2)
    places = rank_places(job, LUMI)
    assert [p.gcd for p in places] == [None, None]  # Slurm picks which GCDs a shared-node job gets
    assert places[1].problem == "1 core: add --cpus-per-task"


def test_torchrun_shape_is_one_task_that_sees_every_gcd():
    (only,) = rank_places(spec(["torchrun"], partition="standard-g", gpus_per_node=8, cpus_per_task=56), LUMI)
    assert (only.sees, only.device, only.cores, only.problem) == (8, 0, 56, "")


def test_taskset_prints_hex_without_prefix_or_leading_zeros():
    assert taskset_mask(LUMI.node.gcd(0).mask) == "fe000000000000"
    assert taskset_mask(0x00000000000000fe) == "fe"
