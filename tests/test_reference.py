"""The real outputs shipped as course data: each listed with origin, commit, date and licence, each readable by
lumikit's own reader, each byte-identical to the conformance copy in ../shared/fixtures."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit import reference
from lumikit.errors import LumikitError
from lumikit.smi.model import Snapshot

# shipped name -> the conformance fixture it was copied from (relative to ../shared/fixtures)
COPIED_FROM = {
    "rocm-smi-8gcd-idle": "smi/rocm-smi_concise_rocm5_lumi-mi250x_8gcd_with-warning.txt",
    "rocm-smi-one-gcd-busy": "smi/rocm-smi_concise_rocm5_lumi-mi250x_2gcd_busy.txt",
    "rocm-smi-8gcd-one-starved": "smi/rocm_smi_concise_legacy_8gcd_io_bound_workshop09.txt",
    "rocm-smi-srun-label": "smi/rocm-smi_concise_rocm6_lumi-mi250x_srun-label-sorted.txt",
    "rocm-smi-exit-status-2": "smi/rocm_smi_concise_legacy_2023_exitcode2_hedgedoc.txt",
    "rocm-smi-showtoponuma": "smi/rocm_smi_showtoponuma_lumi_userguide.txt",
    "amd-smi-monitor-mi300x": "smi/amd-smi_monitor_ptumv_rocm6.1_mi300x_8gpu.txt",
    "trace-mi250": "traces/hta-real/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hip-log-level4": "logs/amd_log_level4_hip_rocm6_workshop04.txt",
    "rccl-aws-ofi-rccl": "logs/nccl_debug_info_aws_ofi_rccl_lumi_userguide.txt",
    "rccl-warn-no-fabric-domain": "logs/error_nccl_warn_ofi_fabric_domain_ai20250204.txt",
    "slurm-squeue-me": "slurm/squeue_me_workshop04.txt",
    "slurm-8gcd-gpt-neo": "slurm/slurm-9304946_no_torchrun_8gcd.out",
    "slurm-images-per-sec-32gcd": "slurm/training_throughput_images_per_sec_lumi_userguide.txt",
    "slurm-vit-epochs": "slurm/training_epoch_loss_accuracy_AIguide_quickstart.txt",
    "rocprof-v1-stats": "rocprof/rocprof_v1_results_stats_csv_csc_hip_programming.txt",
    "rocprofv3-kernel-stats-resnet": "rocprof/rocprofv3_kernel_stats_pytorch_resnet_single_process_amd_hpctraining.csv",
}
LICENCES = {"MIT", "CC BY 4.0", "CC BY-SA 4.0"}


def test_every_file_is_listed_with_origin_commit_date_and_licence() -> None:
    refs = reference.catalogue()
    assert len(refs) >= 12
    listed = {r.file.split("/")[0] for r in refs}  # a benchmark's JSON lives in a folder of its recording
    on_disk = {p.name for p in reference.REFERENCE_DIR.iterdir() if p.name != "SOURCES.toml"}
    assert listed == on_disk
    for r in refs:
        if r.kind == "run-record":  # a packed real run (`lumikit reference add`): its record and where it ran
            assert r.record_kind == "recorded" and (r.file_path / "gpu").is_dir() and r.source and r.command, r.name
            assert r.machine in r.source_line and r.licence in r.source_line
            continue
        if r.kind in ("ladder", "inference", "benchmark"):  # the course's own recording on a named machine
            assert r.file_path.is_file() and len(r.commit) == 40 and r.date and r.source, r.name
            assert r.machine in r.source_line and r.commit[:10] in r.source_line and "MIT" in r.licence
            assert isinstance(r.parsed(), dict) and "LUMI" in r.machine, r.name  # says it is not LUMI
            continue
        assert r.repo.count("/") == 1 and r.path and len(r.commit) == 40 and r.date, r.name
        assert r.licence in LICENCES, f"{r.name}: licence {r.licence!r}"
        assert r.kind in reference.KINDS and r.machine and r.what
        assert r.repo in r.source_line and r.commit[:10] in r.source_line and r.licence in r.source_line


def test_the_course_has_every_kind_of_real_output() -> None:
    kinds = {r.kind for r in reference.catalogue()}
    assert {"rocm-smi", "amd-smi", "trace", "hip-log", "rccl-log", "squeue", "training-log", "rocprof"} <= kinds
    assert len(reference.names("rocm-smi")) >= 4


def test_real_snapshots_read_through_the_smi_parser() -> None:
    starved = reference.load("rocm-smi-8gcd-one-starved").parsed()
    assert isinstance(starved, Snapshot)
    assert starved.device(4).gpu_busy_pct == 0 and starved.device(4).sclk_mhz == 800
    assert [starved.device(i).power_w for i in (0, 2, 4, 6)] == [128.0, 132.0, 111.0, 130.0]
    assert all(starved.device(i).power_w is None for i in (1, 3, 5, 7))
    label = reference.load("rocm-smi-srun-label").parsed()   # task 2's table, all 8 GCDs
    assert len(label.devices) == 8 and label.device(6).power_w == 83.0
    assert reference.load("rocm-smi-one-gcd-busy").parsed().device(0).power_w == 324.0


def test_logs_rocprof_and_trace_read_through_their_readers() -> None:
    assert reference.load("rccl-aws-ofi-rccl").parsed().provider == "cxi"
    assert reference.load("rccl-warn-no-fabric-domain").parsed().ofi_failed
    hip = reference.load("hip-log-level4").parsed()
    assert (hip["kind"] == "kernel").sum() == 1
    assert reference.load("rocprofv3-kernel-stats-resnet").parsed()["calls"].iloc[0] == 7084
    gpt = reference.load("slurm-8gcd-gpt-neo").parsed()
    assert (gpt["unit"] == "it/s").any()
    trace = reference.load("trace-mi250").parsed()
    assert trace.ranks


def test_show_ends_with_the_source_line() -> None:
    ref = reference.load("rocm-smi-one-gcd-busy")
    shown = ref.show()
    assert "324.0W" in shown and shown.splitlines()[-1] == f"-- {ref.source_line}"
    assert "more lines" in reference.load("slurm-8gcd-gpt-neo").show(max_lines=5)


def test_unknown_name_lists_the_shipped_ones() -> None:
    with pytest.raises(LumikitError, match="rocm-smi-8gcd-idle"):
        reference.load("nope")


@pytest.mark.parametrize("name", sorted(COPIED_FROM))
def test_shipped_bytes_equal_the_conformance_copy(name: str, shared_fixtures: Path) -> None:
    ref = reference.load(name)
    assert ref.file_path.read_bytes() == (shared_fixtures / COPIED_FROM[name]).read_bytes()
