"""The `lumikit srun|sbatch|salloc|attach` commands, as a reviewer would type them."""
from __future__ import annotations

import json
import subprocess
import sys

from lumikit.cli import main

LUMI_MASKS = ("0x00fe000000000000,0xfe00000000000000,0x0000000000fe0000,0x00000000fe000000,"
              "0x00000000000000fe,0x000000000000fe00,0x000000fe00000000,0x0000fe0000000000")


def test_full_node_srun_prints_the_eight_masks(capsys):
    rc = main(["srun", "--partition", "standard-g", "--nodes", "2", "--ntasks-per-node", "8", "--gpus-per-node",
               "8", "--exclusive", "--cpu-bind", "auto", "--container", "pytorch", "--site", "lumi", "--",
               "python", "train.py"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"--cpu-bind=mask_cpu:{LUMI_MASKS}" in out
    # one command to paste on a login node: the step computes MASTER_ADDR itself, outside the container
    assert out.splitlines()[0].startswith("srun ") and len(out.strip().splitlines()) == 1
    assert "bash -c 'export MASTER_ADDR=$(scontrol show hostnames" in out


def test_nine_gcds_exit_2_naming_the_limit():
    proc = subprocess.run([sys.executable, "-m", "lumikit", "srun", "--partition", "small-g", "--gpus-per-node",
                           "9", "--", "true"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "8 GCDs" in proc.stderr and proc.stdout == ""


def test_json_is_the_argv(capsys):
    assert main(["srun", "--json", "-p", "small-g", "--gpus-per-node", "1", "--", "python", "-c", "print(1)"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert argv[0] == "srun" and argv[-3:] == ["python", "-c", "print(1)"]


def test_explain_gives_reasons(capsys):
    main(["srun", "--explain", "-p", "small-g", "--gpus-per-node", "1", "--cpus-per-task", "7", "--", "true"])
    out = capsys.readouterr().out
    assert "--cpus-per-task=7" in out and "7 per GCD sit next to it" in out


def test_sbatch_writes_a_script_and_never_overwrites(tmp_path, capsys):
    target = tmp_path / "job.sh"
    args = ["sbatch", "-p", "small-g", "--gpus-per-node", "1", "--write", str(target), "--", "python", "t.py"]
    assert main(args) == 0
    assert target.read_text().startswith("#!/bin/bash\n")
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["sbatch", "-p", "small-g", "--write", str(target), "--force", "--", "true"]) == 0
    assert target.read_text().rstrip().endswith("true")


def test_salloc_and_attach(capsys):
    main(["salloc", "-p", "dev-g", "--gpus-per-node", "2", "-t", "1:00:00", "-A", "project_465000000"])
    assert capsys.readouterr().out.strip() == ("salloc --job-name=lumikit --partition=dev-g --nodes=1 "
                                               "--ntasks-per-node=1 --gpus-per-node=2 --time=1:00:00 "
                                               "--account=project_465000000")
    main(["attach", "123", "--", "watch", "-n1", "rocm-smi"])
    assert capsys.readouterr().out.strip() == "srun --jobid=123 --overlap --pty watch -n1 rocm-smi"


def test_bad_env_option_is_a_clear_error(capsys):
    assert main(["srun", "--env", "NOEQUALS", "--", "true"]) == 2
    assert "write --env NAME=value" in capsys.readouterr().err
