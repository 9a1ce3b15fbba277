"""The log readers and the doctor on real third-party outputs (../shared/fixtures/logs and /slurm)."""
from __future__ import annotations

import pytest

from lumikit.logs import diagnose, progress_summary, rccl_transport, read_hip_log, read_progress

pytestmark = pytest.mark.conformance

#: Every error file of fixtures/logs and what the doctor must say about it (signature, first line, count).
EXPECTED = {
    "container_missing_cpe_bind_libmpi_cray_workshop05.txt": [("missing-system-binds", 27, 1)],
    "error_hf_cache_readonly_workdir_ai20251008.txt": [("read-only-cache", 2, 1)],
    "error_nccl_warn_ofi_fabric_domain_ai20250204.txt": [("ofi-fabric-domain", 1, 1)],
    "error_rocm_smi_on_login_node_ai20250527.txt": [("rocm-smi-login-node", 1, 2)],
    "error_singularity_pull_home_quota_ai20251008.txt": [("home-quota-container-cache", 4, 1)],
    "miopen_sqlite_locking_error_and_rccl_warn_hedgedoc.txt": [("miopen-sqlite-lock", 1, 1),
                                                               ("rccl-rocm-smi-init", 2, 1)],
}
HEALTHY = ["amd_log_level4_hip_rocm6_workshop04.txt", "hello_lumi_gpu_world_login_vs_compute_workshop05.txt",
           "nccl_debug_info_aws_ofi_rccl_lumi_userguide.txt", "singularity_pull_docker_workshop05.txt"]


def test_every_error_fixture_is_covered_here(shared_fixtures):
    names = {p.name for p in (shared_fixtures / "logs").iterdir()}
    errors = {n for n in names if n.startswith(("error_", "container_missing_", "miopen_"))}
    assert errors == set(EXPECTED)
    assert names - errors == set(HEALTHY)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_doctor_diagnoses_each_error_log(shared_fixtures, name):
    found = diagnose(shared_fixtures / "logs" / name)
    assert [(d.signature, d.line_no, d.count) for d in found] == EXPECTED[name]
    assert found[0].severity == "problem" and found[0].cause and found[0].fix


@pytest.mark.parametrize("name", HEALTHY)
def test_doctor_invents_nothing_in_healthy_logs(shared_fixtures, name):
    assert diagnose(shared_fixtures / "logs" / name) == []


def test_doctor_on_the_slurm_outputs_finds_only_the_real_cancellation(shared_fixtures):
    found = diagnose(shared_fixtures / "slurm")
    assert [(d.file.rsplit("/", 1)[1], d.signature, d.severity, d.line_no, d.count) for d in found] == [
        ("slurm-9304946_no_torchrun_8gcd.out", "job-cancelled", "note", 156, 2)]
    assert found[0].line == "slurmstepd: error: *** STEP 9304946.0 ON nid005527 CANCELLED AT 2025-01-28T15:04:48 ***"


def test_hip_log_of_the_workshop_rocm6_wrapped(shared_fixtures):
    table = read_hip_log(shared_fixtures / "logs" / "amd_log_level4_hip_rocm6_workshop04.txt")
    assert table.attrs["layout"] == "rocm6" and table.attrs["records"] == 7
    assert len(table) == 1
    row = table.iloc[0]
    assert row["name"] == ("_ZN2at6native6legacy18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_implIZZZNS0_23direct_"
                           "copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE5_clEvEUlfE_EEvS5_RKT_EUliE_"
                           "EEviT1_")
    assert (row["api"], row["ts_us"], row["pid"], row["tid"], row["grid"], row["workgroup"], row["stream"],
            row["status"], row["api_us"], row["kernel_class"]) == \
        ("hipLaunchKernel", 117659918626, 8088, "0x14b2015e9700", "16777216,1,1", "512,1,1", "<null>",
         "hipSuccess", 23, "compute")


def test_rccl_success_lines(shared_fixtures):
    result = rccl_transport(shared_fixtures / "logs" / "nccl_debug_info_aws_ofi_rccl_lumi_userguide.txt")
    assert (result.transport, result.plugin, result.provider, result.ok) == ("ofi", "aws-ofi-rccl 1.4.0", "cxi", True)


def test_progress_of_the_8_gcd_gpt_neo_run(shared_fixtures):
    table = read_progress(shared_fixtures / "slurm" / "slurm-9304946_no_torchrun_8gcd.out")
    summary = progress_summary(table)
    assert summary["training"] == {"series": "progress", "steps": 400, "total": 1000, "elapsed_s": 277.0,
                                   "median_it_per_s": 2.21, "last_it_per_s": 2.21}
    assert summary["last_eval_loss"] == 3.214578151702881
    bars = {(b["series"], b["total"]): b["steps"] for b in summary["bars"]}
    assert bars == {("Map (num_proc=7)", 75000): 75000, ("Map (num_proc=7)", 25000): 25000,
                    ("progress", 1000): 400, ("progress", 1): 1}
    assert (table["kind"] == "throughput").sum() == 0  # tqdm fragments are not mistaken for throughput lines


def test_progress_of_epoch_loss_and_accuracy(shared_fixtures):
    table = read_progress(shared_fixtures / "slurm" / "training_epoch_loss_accuracy_AIguide_quickstart.txt")
    train = table[table["split"] == "train"]
    val = table[table["split"] == "validation"]
    assert train[["epoch", "loss"]].values.tolist() == [[1.0, 4.825212168216705], [2.0, 4.165826177024841],
                                                        [3.0, 3.792399849319458], [4.0, 3.558482360649109]]
    assert val["accuracy"].tolist() == pytest.approx([0.0895, 0.1441, 0.1818, 0.20945])


def test_progress_of_images_per_second(shared_fixtures):
    table = read_progress(shared_fixtures / "slurm" / "training_throughput_images_per_sec_lumi_userguide.txt")
    assert table[["series", "epoch", "rate"]].fillna(-1).values.tolist() == [
        ["rank 0", 1.0, 212.39], ["rank 0", 2.0, 212.34], ["rank 0", 3.0, 212.55], ["rank 0", 4.0, 212.44],
        ["total", -1, 6792.58]]


@pytest.mark.parametrize("name", ["wandb_init_output_AIguide.txt", "rank_device_log_excerpt_ai20250527.txt",
                                  "squeue_me_workshop04.txt", "slurm_out_module_purge_warning_ai20240529.txt"])
def test_logs_without_training_progress_give_no_rows(shared_fixtures, name):
    assert read_progress(shared_fixtures / "slurm" / name).empty
