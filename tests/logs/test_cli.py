"""``lumikit logs ...`` and ``lumikit doctor``: output and exit status."""
from __future__ import annotations

import json

from lumikit.cli import main


def test_doctor_exits_1_on_a_problem_and_explains_it(tmp_path, capsys):
    log = tmp_path / "slurm-7.out"
    log.write_text("starting\nOSError: [Errno 30] Read-only file system: '/workdir/hf-cache'\n")
    assert main(["doctor", str(log)]) == 1
    out = capsys.readouterr().out
    assert f"{log}:2: [problem] A cache folder is not writable inside the container (read-only-cache)" in out
    assert "    fix:   Bind the folder" in out
    assert out.rstrip().endswith("1 problem, 0 notes.")


def test_doctor_exits_0_when_it_finds_only_notes_or_nothing(tmp_path, capsys):
    note = tmp_path / "a.out"
    note.write_text("slurmstepd: error: *** JOB 9 ON nid1 CANCELLED AT 2025-01-01T00:00:00 ***\n")
    clean = tmp_path / "b.out"
    clean.write_text("all good\n")
    assert main(["doctor", str(note), str(clean)]) == 0
    assert main(["doctor", str(clean)]) == 0
    assert "No known problem recognised." in capsys.readouterr().out


def test_doctor_json_lists_the_diagnoses(tmp_path, capsys):
    log = tmp_path / "a.out"
    log.write_text("HIP out of memory. Tried to allocate 1 GiB\n")
    assert main(["doctor", "--json", str(log)]) == 1
    (d,) = json.loads(capsys.readouterr().out)
    assert (d["signature"], d["line_no"], d["severity"], d["count"]) == ("gpu-out-of-memory", 1, "problem", 1)


def test_doctor_on_a_missing_file_is_exit_status_2(tmp_path, capsys):
    assert main(["doctor", str(tmp_path / "nope.out")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_logs_progress_prints_the_training_state(tmp_path, capsys):
    log = tmp_path / "slurm-1.out"
    log.write_text(" 10%|█         | 10/100 [00:05<00:45,  2.00it/s]\r 20%|██        | 20/100 [00:10<00:40,  2.00it/s]\n"
                   "{'eval_loss': 1.5, 'epoch': 0.2}\n")
    assert main(["logs", "progress", str(log)]) == 0
    out = capsys.readouterr().out
    assert "  training: step 20 of 100 after 10 s, 2.00 it/s median" in out
    assert "  last eval loss: 1.5" in out
    assert main(["logs", "progress", str(log), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["step"] for r in report["rows"]] == [10, 20, 20]


def test_logs_hip_counts_launches(tmp_path, capsys):
    log = tmp_path / "hip.log"
    log.write_text(":3:hip_module.cpp :662 : 100 us: [pid:1 tid: 0x1] hipLaunchKernel ( 0x1, {1,1,1}, {64,1,1}, 0x2, 0, "
                   "stream:<null> )\n:3:rocvirtual.cpp :2853: 101 us: [pid:1 tid: 0x1] ShaderName : _Z6squarePfi\n")
    assert main(["logs", "hip", str(log)]) == 0
    out = capsys.readouterr().out
    assert "2 HIP log records (layout rocm7)" in out
    assert "        1  square" in out


def test_logs_rccl_exits_1_on_the_socket_fallback(tmp_path, capsys):
    good, bad = tmp_path / "rank0.txt", tmp_path / "rank1.txt"
    good.write_text("NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0\nNCCL INFO NET/OFI Selected Provider is cxi\n")
    bad.write_text("NCCL INFO NET/Plugin : No plugin found, using internal implementation\n")
    assert main(["logs", "rccl", str(good)]) == 0
    assert main(["logs", "rccl", str(good), str(bad)]) == 1
    assert "falls back to TCP sockets" in capsys.readouterr().out
