"""The `lumikit srun|sbatch|salloc|attach` commands, as a reviewer would type them."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

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
    assert capsys.readouterr().out.strip() == "srun --jobid=123 --overlap -N1 -n1 --pty watch -n1 rocm-smi"


def test_bad_env_option_is_a_clear_error(capsys):
    assert main(["srun", "--env", "NOEQUALS", "--", "true"]) == 2
    assert "write --env NAME=value" in capsys.readouterr().err


@pytest.mark.parametrize("abbreviated", ["--gpu", "--ntask", "--mem-per", "--part", "--exclu"])
def test_no_option_is_guessed_from_a_prefix(abbreviated, capsys):
    with pytest.raises(SystemExit) as ended:
        main(["srun", abbreviated, "2", "--", "true"])
    assert ended.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_gpus_and_ntasks_mean_what_slurm_means(capsys):
    assert main(["srun", "-p", "small-g", "-G", "2", "-n", "2", "--json", "--", "true"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert "--gpus=2" in argv and "--ntasks=2" in argv and not any(a.startswith("--gpus-per-node") for a in argv)
    assert main(["srun", "-p", "small-g", "-N", "2", "--ntasks", "4", "--json", "--", "true"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert "--ntasks=4" in argv and "--ntasks-per-node=2" in argv  # 4 in total, not 4 per node
    assert main(["srun", "-p", "small-g", "-N", "2", "--gpus", "8", "--", "true"]) == 2
    assert "--gpus-per-node=4" in capsys.readouterr().err  # refused, with the option that means it


def test_memory_without_a_unit_is_megabytes_and_warns(capsys):
    assert main(["srun", "-p", "small-g", "--mem", "16", "--explain", "--", "true"]) == 0
    out, err = capsys.readouterr()
    assert "--mem=16" in out and "16 MB" in out
    assert "warning: --mem=16 has no unit: Slurm reads it as 16 MB; write 16G" in err


def test_a_missing_account_on_lumi_is_an_error_to_submit_and_a_warning_to_print(capsys, tmp_path):
    assert main(["sbatch", "--site", "lumi", "-p", "small-g", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "account" in err and "no-such-config.toml" in err  # names the config file
    assert main(["run", "--site", "lumi", "-p", "small-g", "--backend", "slurm", "--runs-dir", str(tmp_path),
                 "--", "true"]) == 2
    assert "--account=project_<number>" in capsys.readouterr().err and not any(tmp_path.iterdir())
    assert main(["srun", "--site", "lumi", "-p", "small-g", "--", "true"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("srun ") and "warning: account: site lumi bills every job" in err
    assert main(["sbatch", "--site", "lumi", "-A", "project_465000000", "-p", "small-g", "--", "true"]) == 0


SECRETS = {"HF_TOKEN": "hf_s3cr3t_one", "WANDB_API_KEY": "wandb-s3cr3t-two", "COURSE_PASS": "s3cr3t-three"}


@pytest.mark.parametrize("form", [["srun"], ["srun", "--explain"], ["srun", "--json"], ["salloc"], ["sbatch"]])
def test_secret_values_are_never_printed(form, capsys):
    options = [a for k, v in SECRETS.items() for a in ("--env", f"{k}={v}")] + ["--secret", "COURSE_PASS"]
    assert main([*form, "-p", "small-g", "-A", "project_465000000", *options, "--", "python", "t.py"]) == 0
    out, err = capsys.readouterr()
    assert not [v for v in SECRETS.values() if v in out + err]
    assert "which ps shows" in err  # and the values typed on lumikit's own command line are pointed out
    if form[0] != "salloc":
        assert "HF_TOKEN" in out and "COURSE_PASS" in out  # named (checked in the rank script), never valued


def test_no_parser_of_the_cli_takes_abbreviations():
    from lumikit.cli import build_parser

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)
    parsers = list(walk(build_parser()))
    assert len(parsers) > 20 and all(not p.allow_abbrev for p in parsers)


def test_an_unknown_option_names_the_nearest_real_one(capsys):
    with pytest.raises(SystemExit):
        main(["srun", "--gpu", "2", "--", "true"])
    err = capsys.readouterr().err
    assert "usage: lumikit srun" in err and "did you mean --gpus?" in err


@pytest.mark.parametrize("argv, expected", [
    (["attach", "123", "--node", "nid001", "--", "watch", "rocm-smi"],
     "srun --jobid=123 --overlap -N1 -n1 --nodelist=nid001 --pty watch rocm-smi"),
    (["attach", "123", "--node=nid001", "--no-pty"], "srun --jobid=123 --overlap -N1 -n1 --nodelist=nid001 /bin/bash"),
    (["attach", "--node", "nid002", "123", "--", "watch", "-n1", "rocm-smi"],
     "srun --jobid=123 --overlap -N1 -n1 --nodelist=nid002 --pty watch -n1 rocm-smi"),
])
def test_attach_options_after_the_job_id_are_options_not_the_command(argv, expected, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == expected


def test_attach_refuses_an_unknown_option_before_the_command(capsys):
    assert main(["attach", "123", "--nod", "x"]) == 2
    assert "--nod" in capsys.readouterr().err


def test_salloc_explain_tells_the_sruns_typed_afterwards_about_srun_cpus_per_task(capsys):
    assert main(["salloc", "--site", "lumi", "-A", "p", "-p", "small-g", "--gpus-per-node", "2", "-c", "14",
                 "-t", "0:30:00", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK" in out
    main(["salloc", "--site", "lumi", "-A", "p", "-p", "small-g", "--gpus-per-node", "2", "-c", "14",
          "-t", "0:30:00"])
    assert "SRUN_CPUS_PER_TASK" not in capsys.readouterr().out  # the plain command stays pasteable
