"""The log doctor recognises known LUMI failures and explains them, and invents nothing in healthy logs."""
from __future__ import annotations

import pytest

from lumikit.logs import SIGNATURES, diagnose, diagnose_text, problems

# One line per signature, in the words of the tool that prints it (written for these tests).
EXAMPLES = {
    "conda-not-activated": "ModuleNotFoundError: No module named 'torch'",
    "missing-system-binds": "OSError: libcxi.so.1: cannot open shared object file: No such file or directory",
    "rocprofv3-libdw": "rocprofv3: error while loading shared libraries: libdw.so.1: cannot open shared object file",
    "ofi-fabric-domain": "nid0001:1:2 [0] NCCL WARN NET/OFI Couldn't open a fabric access domain. RC: -38",
    "rccl-socket-fallback": "nid0001:1:2 [0] NCCL INFO NET/Plugin : No plugin found, using internal implementation",
    "rccl-reverse-path": "ncclInternalError: Internal check failed. Failed to find reverse path from rank 2",
    "miopen-sqlite-lock": "MIOpen Error: /src/sqlite_db.cpp:220: Internal error while accessing SQLite database: "
                          "locking protocol",
    "rocm-smi-login-node": "ERROR:root:Driver not initialized (amdgpu not found in modules)",
    "home-quota-container-cache": "FATAL: write /users/someone/.singularity/cache/blob/x: disk quota exceeded",
    "disk-quota": "OSError: [Errno 122] Disk quota exceeded: '/project/project_465000000/out.pt'",
    "read-only-cache": "OSError: [Errno 30] Read-only file system: '/workdir/hf-cache'",
    "gpu-out-of-memory": "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.",
    "host-out-of-memory": "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks "
                          "have been OOM Killed.",
    "mem-options-conflict": "srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are "
                            "mutually exclusive.",
    "time-limit": "slurmstepd: error: *** JOB 123 ON nid005000 CANCELLED AT 2025-01-01T10:00:00 DUE TO TIME LIMIT ***",
    "job-cancelled": "slurmstepd: error: *** JOB 123 ON nid005000 CANCELLED AT 2025-01-01T10:00:00 ***",
    "rccl-rocm-smi-init": "nid0001:1:2 [6] rocm_smi_wrap.cc:38 NCCL WARN ROCm SMI init failure An error occurred",
}


def test_every_signature_has_an_example_and_explains_itself_briefly():
    assert set(EXAMPLES) == {s.id for s in SIGNATURES}
    for sig in SIGNATURES:
        assert 20 < len(sig.cause) < 260 and 20 < len(sig.fix) < 300, sig.id


@pytest.mark.parametrize("signature, line", sorted(EXAMPLES.items()))
def test_each_signature_is_recognised_by_its_line(signature, line):
    found = diagnose_text("some output\n" + line + "\nmore output\n", source="job.out")
    assert [(d.signature, d.file, d.line_no, d.line) for d in found] == [(signature, "job.out", 2, line)]


def test_a_line_belongs_to_the_most_specific_signature():
    found = diagnose_text(EXAMPLES["home-quota-container-cache"])
    assert [d.signature for d in found] == ["home-quota-container-cache"]


def test_repeated_lines_are_counted_not_repeated():
    text = "\n".join([EXAMPLES["gpu-out-of-memory"]] * 3 + [EXAMPLES["time-limit"]])
    found = diagnose_text(text)
    assert [(d.signature, d.line_no, d.count) for d in found] == [("gpu-out-of-memory", 1, 3), ("time-limit", 4, 1)]
    assert "(and 2 more lines like it)" in found[0].describe()


def test_the_matching_carriage_return_segment_is_shown_without_control_codes():
    text = " 40%|████      | 400/1000 [04:33<04:31,  2.21it/s]\r\x1b[A" + EXAMPLES["job-cancelled"] + "\n"
    assert diagnose_text(text)[0].line == EXAMPLES["job-cancelled"]


def test_healthy_output_gives_no_diagnosis():
    healthy = "\n".join([
        "The following modules were not unloaded:", "  1) ModuleLabel/label   2) lumi-tools/24.05",
        "Rank 3 of 8 (local: 3) sees 8 devices", "Using GPU, device name: AMD Instinct MI250X",
        "nid0001:1:2 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0",
        "nid0001:1:2 [0] NCCL INFO NET/OFI Selected Provider is cxi",
        "UserWarning: Can't initialize amdsmi - Error code: 34",
        " 10%|█         | 100/1000 [00:57<06:46,  2.21it/s]", "{'loss': 2.5, 'epoch': 0.1}",
    ])
    assert diagnose_text(healthy) == []


def test_notes_are_not_problems():
    found = diagnose_text(EXAMPLES["job-cancelled"] + "\n" + EXAMPLES["disk-quota"])
    assert [d.severity for d in found] == ["note", "problem"]
    assert [d.signature for d in problems(found)] == ["disk-quota"]


def test_a_folder_is_searched_for_logs_and_binary_files_are_passed_by(tmp_path):
    (tmp_path / "slurm-1.out").write_text(EXAMPLES["time-limit"] + "\n")
    (tmp_path / "rank0.err").write_text(EXAMPLES["miopen-sqlite-lock"] + "\n")
    (tmp_path / "model.txt").write_bytes(b"\0\0" + EXAMPLES["disk-quota"].encode())
    (tmp_path / "trace.json").write_text(EXAMPLES["disk-quota"])
    found = diagnose(tmp_path)
    assert [(d.file.rsplit("/", 1)[1], d.signature) for d in found] == [
        ("rank0.err", "miopen-sqlite-lock"), ("slurm-1.out", "time-limit")]


@pytest.mark.parametrize("line", [
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 GiB",
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 63.98 GiB total capacity)",
    "terminate called after throwing an instance of 'c10::Error' what(): hipErrorOutOfMemory",
])
def test_out_of_memory_messages_point_at_the_memory_view(line):
    (found,) = diagnose_text(line)
    assert found.signature == "gpu-out-of-memory"
    assert "lumikit trace memory" in found.fix and "profile_memory=True" in found.fix


def test_out_of_memory_fix_names_the_expandable_segments_setting():
    line = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. Of the allocated memory 40.1 GiB "
            "is allocated by PyTorch, and 18.2 GiB is reserved by PyTorch but unallocated.")
    (found,) = diagnose_text(line)
    assert "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True" in found.fix
    assert "reserved by PyTorch but unallocated" in found.cause
