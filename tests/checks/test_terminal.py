"""The terminal tasks' checks: what they read (masks, CPU lists, #SBATCH lines), the seed's mistakes they reject,
and, against the running lumi-sim cluster, real jobs whose sacct records and printed masks they grade."""
from __future__ import annotations

import re
import time

import pytest

from lumikit.checks import CheckFailed
from lumikit.checks import terminal as t
from lumikit.launch.terminal import ShellResult, find_cluster, sh, wait_for_job
from lumikit.site import load_site

SKIPPED = ShellResult("srun ...", None, skipped="no Slurm client on this machine")
BIND = "bash -c 'echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status)'"


def test_masks_and_cpu_lists_read_as_sets_of_cpus() -> None:
    assert t.cpus_of_mask("0x00fe000000000000") == frozenset(range(49, 56))
    assert t.cpus_of_mask("fefe000000000000") == frozenset([*range(49, 56), *range(57, 64)])
    assert t.cpus_of_list("1-3,8") == frozenset({1, 2, 3, 8})


def test_sbatch_directives_stop_at_the_first_command_and_keep_the_doubled_flag() -> None:
    script = ("#!/bin/bash\n#SBATCH --account=--account=project_465000000\n#SBATCH -p small-g  # comment\n"
              "# a plain comment\nsrun hostname\n#SBATCH --nodes=2\n")
    assert t.sbatch_directives(script) == [("--account", "--account=project_465000000"), ("-p", "small-g")]


def test_topology_masks_pass_the_site_masks_and_name_each_known_mistake() -> None:
    node = load_site("lumi").node
    assert "passed" in str(t.check_topology_masks(node.masks()))
    identity = [f"0x{sum(1 << c for c in range(8 * i + 1, 8 * i + 8)):016x}" for i in range(8)]
    with_reserved = [f"0x{g.mask | 1 << (g.cores[0] - 1):016x}" for g in node.gcds]
    numa_wide = [f"0x{sum(1 << c for h in node.gcds if h.numa == g.numa for c in h.cores):016x}" for g in node.gcds]
    for wrong, words in ((identity, "cores in the mask of GCD 0"), (with_reserved, "reserved"),
                         (numa_wide, "whole NUMA domain"), (node.masks()[:4], "one mask per GCD")):
        with pytest.raises(CheckFailed, match=words):
            t.check_topology_masks(wrong)


def test_bind_test_without_a_task_count_is_the_seeds_mistake() -> None:
    seed = f"srun --nodes=1 --cpu-bind=mask_cpu:0x1,0x2 {BIND}"
    with pytest.raises(CheckFailed, match="starts 1 task"):
        t.check_bind_test(seed, SKIPPED)
    fixed = f"srun --nodes=1 --ntasks=2 --cpu-bind=mask_cpu:0x1,0x2 {BIND}"
    assert "not checked here" in str(t.check_bind_test(fixed, SKIPPED))
    unbound = ShellResult(fixed, 0, "0 Cpus_allowed_list: 0-1\n1 Cpus_allowed_list: 0-1\n", binding_applied=False)
    assert "without applying them" in str(t.check_bind_test(fixed, unbound))
    with pytest.raises(CheckFailed, match="task 1 may run on CPUs"):
        t.check_bind_test(fixed, "0 Cpus_allowed_list: 0\n1 Cpus_allowed_list: 0-1\n")
    with pytest.raises(CheckFailed, match="fewer than two"):
        t.check_bind_test(fixed, "0 Cpus_allowed_list: 0\n")


def _script(tmp_path, account="--account=project_465000000", tasks=2, gpus=2):
    path = tmp_path / "fixed.sh"
    path.write_text(f"#!/bin/bash\n#SBATCH --account={account}\n#SBATCH --partition=small-g\n#SBATCH --nodes=1\n"
                    f"#SBATCH --tasks-per-node={tasks}\n#SBATCH --gpus-per-node={gpus}\n#SBATCH --time=00:05:00\n"
                    "srun hostname\n")
    return path


def test_fixed_script_is_graded_from_the_file(tmp_path) -> None:
    with pytest.raises(CheckFailed, match="gives an option as the value"):
        t.check_fixed_script(_script(tmp_path), SKIPPED)
    with pytest.raises(CheckFailed, match="one task per GPU"):
        t.check_fixed_script(_script(tmp_path, "project_465000000", tasks=1), SKIPPED)
    with pytest.raises(CheckFailed, match="project_<9 digits>"):
        t.check_fixed_script(_script(tmp_path, "project_4650XXXXX"), SKIPPED)
    with pytest.raises(CheckFailed, match="no file"):
        t.check_fixed_script(tmp_path / "missing.sh", SKIPPED)
    assert "not submitted here" in str(t.check_fixed_script(_script(tmp_path, "project_465000000"), SKIPPED))


def test_unanswered_tasks_fail_with_no_answer_yet(tmp_path) -> None:
    for call in (lambda: t.check_bind_test(None, None), lambda: t.check_fixed_script(None, None),
                 lambda: t.check_cancelled_job(None, None), lambda: t.check_overlap_steps(None),
                 lambda: t.check_gpu_visibility(None), lambda: t.check_topology_masks(None)):
        with pytest.raises(CheckFailed):
            call()


def test_visibility_lines_need_one_distinct_gpu_per_rank_on_two_nodes() -> None:
    good = ("0 nid005001 ROCR_VISIBLE_DEVICES=0\n1 nid005001 ROCR_VISIBLE_DEVICES=1\n"
            "2 nid005002 ROCR_VISIBLE_DEVICES=0\n")
    assert "3 ranks on 2 nodes" in str(t.check_gpu_visibility(good))
    with pytest.raises(CheckFailed, match="sees 8 GPUs"):
        t.check_gpu_visibility(good.replace("=1\n", "=0,1,2,3,4,5,6,7\n"))
    with pytest.raises(CheckFailed, match="same GPU"):
        t.check_gpu_visibility(good.replace("DEVICES=1", "DEVICES=0"))
    with pytest.raises(CheckFailed, match="too few nodes"):
        t.check_gpu_visibility(good.replace("nid005002", "nid005001"))


# --- against lumi-sim: real jobs, real sacct records ---------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(slurm_cluster):
    found, why = find_cluster()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def binding_cluster(real_profile_cluster):
    """The cluster as the checks find it, in the 'real' profile (LUMI-shaped nodes accept masks without applying them)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LUMIKIT_SLURM_SIM_DIR", str(real_profile_cluster.sim_dir))
        found, why = find_cluster()
    assert found is not None and found.applies_binding, why
    return found


@pytest.mark.slurm
def test_bind_test_on_lumi_sim_reads_the_masks_slurm_applied(binding_cluster) -> None:
    cluster = binding_cluster
    masks = [f"0x{1 << i:x}" for i in range(cluster.tasks_per_node)]
    command = (f"srun -p {cluster.gpu_partition} -N1 --ntasks={len(masks)} --time=1 "
               f"--cpu-bind=mask_cpu:{','.join(masks)} {BIND} | sort -n")
    run = sh(command, cluster, quiet=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "each bound to its own mask" in str(t.check_bind_test(command, run))
    with pytest.raises(CheckFailed, match="may run on CPUs"):  # the same output read against swapped masks
        t.check_bind_test(command.replace(",".join(masks), ",".join(reversed(masks))), run)


@pytest.mark.slurm
def test_fixed_script_completes_and_its_sacct_record_is_checked(cluster, tmp_path) -> None:
    broken = _script(tmp_path, tasks=1, gpus=cluster.tasks_per_node)
    rejected = sh(f"sbatch --parsable {broken.name}", cluster, cwd=tmp_path, quiet=True)
    assert rejected.returncode != 0 and "account" in rejected.stderr.lower()
    fixed = _script(tmp_path, cluster.account, tasks=cluster.tasks_per_node, gpus=cluster.tasks_per_node)
    submit = sh(f"sbatch --parsable {fixed.name}", cluster, cwd=tmp_path, quiet=True)
    assert submit.returncode == 0, submit.stderr
    assert wait_for_job(submit.stdout.strip().split(";")[0], cluster, timeout=120) == "COMPLETED"
    assert "COMPLETED" in str(t.check_fixed_script(fixed, submit))
    other = sh("sbatch --parsable --wrap true -p small-g -t 1", cluster, cwd=tmp_path, quiet=True)
    wait_for_job(other.stdout.strip().split(";")[0], cluster, timeout=120)
    with pytest.raises(CheckFailed, match="was not submitted from fixed.sh"):
        t.check_fixed_script(fixed, other)
    with pytest.raises(CheckFailed, match="no record|lists no job"):
        t.check_fixed_script(fixed, "99999999")


@pytest.mark.slurm
def test_cancelled_job_needs_scancel_and_the_squeue_line(cluster, tmp_path) -> None:
    job = sh('sbatch --parsable -p small-g -t 3 -J s13-cancel --wrap "sleep 120"', cluster, cwd=tmp_path, quiet=True)
    job_id = job.stdout.strip().split(";")[0]
    seen = sh(f"squeue -j {job_id}", cluster, quiet=True)
    with pytest.raises(CheckFailed, match="not in what squeue printed"):
        t.check_cancelled_job(job, "JOBID PARTITION NAME\n")
    sh(f"scancel {job_id}", cluster, quiet=True)
    assert wait_for_job(job_id, cluster, timeout=60) == "CANCELLED"
    assert "CANCELLED" in str(t.check_cancelled_job(job, seen))


@pytest.mark.slurm
def test_overlap_step_must_run_inside_a_salloc_allocation(cluster, tmp_path) -> None:
    alloc = sh(f"salloc --no-shell -p {cluster.gpu_partition} -N1 -n1 -t 3 -J s13-overlap", cluster, quiet=True)
    job_id = re.search(r"allocation (\d+)", alloc.stderr).group(1)
    try:
        sh(f"srun --jobid={job_id} -n1 sleep 6 > /dev/null 2>&1 < /dev/null &", cluster, quiet=True)
        time.sleep(2)
        sh(f"srun --jobid={job_id} --overlap -n1 true", cluster, quiet=True, timeout=60)
        with pytest.raises(CheckFailed, match="still RUNNING"):
            t.check_overlap_steps(alloc)
    finally:
        sh(f"scancel {job_id}", cluster, quiet=True)
    wait_for_job(job_id, cluster, timeout=60)
    assert "ran inside step" in str(t.check_overlap_steps(alloc))
    batch = sh("sbatch --parsable --wrap true -p small-g -t 1", cluster, cwd=tmp_path, quiet=True)
    wait_for_job(batch.stdout.strip().split(";")[0], cluster, timeout=120)
    with pytest.raises(CheckFailed, match="not made by salloc"):
        t.check_overlap_steps(batch)


@pytest.mark.slurm
def test_visibility_job_on_two_nodes(cluster) -> None:
    n = cluster.tasks_per_node
    run = sh(f"srun -p {cluster.gpu_partition} -N2 --ntasks-per-node={n} --gpus-per-task=1 -t 1 bash -c "
             "'echo $SLURM_PROCID $SLURMD_NODENAME ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES'", cluster,
             quiet=True, timeout=120)
    assert f"{2 * n} ranks on 2 nodes" in str(t.check_gpu_visibility(run))
    whole = sh(f"srun -p {cluster.gpu_partition} -N2 --ntasks-per-node={n} --gpus-per-node={n} -t 1 bash -c "
               "'echo $SLURM_PROCID $SLURMD_NODENAME ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES'", cluster,
               quiet=True, timeout=120)
    with pytest.raises(CheckFailed, match=f"sees {n} GPUs"):
        t.check_gpu_visibility(whole)
