"""LUMI's vLLM recipe (AI Guide chapter 10), printed like every other command: the server's batch script is valid
bash and its srun line splits back into the intended argv, down to `vllm serve`; the client's srun round-trips and
reaches the same socket. Nothing is run."""
from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from lumikit.cli import main
from lumikit.jobs import render_sbatch
from lumikit.jobs import vllm
from lumikit.site import load_site

LUMI = load_site("lumi")


def bash_parses(text: str) -> None:
    """`bash -n`: the text is valid shell (syntax only; nothing runs)."""
    proc = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def server_script(**options) -> str:
    return render_sbatch(vllm.server_spec(account="project_465000000", **options), LUMI)


def served_command(script: str) -> str:
    """The shell line the server's task runs: srun line -> rank script -> its ``exec bash -c`` argument."""
    srun = script.rstrip("\n").splitlines()[-1]
    words = shlex.split(srun)
    assert words[0] == "srun" and words[1:3] == ["singularity", "run"]
    assert LUMI.container("laif-pytorch").path in words
    rank_script = shlex.split(words[-1])
    assert rank_script[-4:-1] == ["exec", "bash", "-c"]
    assert "MIOPEN_USER_DB_PATH=/tmp/${USER}-miopen-cache-${SLURM_NODEID}" in rank_script
    return rank_script[-1]


def test_the_server_script_is_two_gcds_in_the_laif_container_and_valid_bash():
    script = server_script()
    bash_parses(script)
    for line in ("#SBATCH --gpus-per-node=2", "#SBATCH --cpus-per-task=14", "#SBATCH --mem-per-gpu=60G",
                 "#SBATCH --partition=small-g", "#SBATCH --account=project_465000000", "#SBATCH --time=2:00:00"):
        assert line in script.splitlines()
    served = served_command(script)
    assert served == vllm.server_command(vllm.DEFAULT_MODEL)
    bash_parses(served)
    words = shlex.split(served.split("; ", 1)[1])
    assert words[:4] == ["exec", "vllm", "serve", vllm.DEFAULT_MODEL]
    assert words[words.index("--tensor-parallel-size") + 1] == "$SLURM_GPUS_ON_NODE"
    assert words[words.index("--uds") + 1] == vllm.SOCKET
    assert 'HF_HOME="/scratch/${SLURM_JOB_ACCOUNT}/hf-cache"' in served
    assert 'VLLM_CACHE_ROOT="/scratch/${SLURM_JOB_ACCOUNT}/vllm-cache"' in served


def test_a_model_name_with_shell_characters_stays_one_word():
    served = served_command(server_script(model="org/it's $odd"))
    assert shlex.split(served.split("; ", 1)[1])[3] == "org/it's $odd"


def test_the_client_overlaps_the_job_and_asks_the_servers_socket(capsys):
    assert main(["vllm", "--client", "4242"]) == 0
    text = capsys.readouterr().out.strip()
    argv = vllm.client_argv("4242")
    assert shlex.split(text) == argv
    assert argv[:6] == ["srun", "--jobid=4242", "--overlap", "-N1", "-n1", "--pty"] and argv[6:8] == ["bash", "-c"]
    bash_parses(argv[8])
    curl = shlex.split(argv[8])
    assert curl[curl.index("--unix-socket") + 1] == vllm.SOCKET  # the path the server's --uds names
    body = json.loads(curl[curl.index("-d") + 1])
    assert body["model"] == vllm.DEFAULT_MODEL and body["temperature"] == 0
    assert main(["vllm", "--client", "4242", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == argv


def test_explain_says_why_and_what_is_expected_on_lumi(capsys):
    assert main(["vllm", "--site", "lumi", "-A", "project_465000000", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "--gpus-per-node=2" in out and "# GCDs per node" in out  # the flags' own lines
    assert "--uds" in out and "no port collisions" in out and "expected on LUMI (not seen here)" in out
    assert "LUMI-AI-Guide" in out and "cost:" in out
    assert main(["vllm", "--client", "7", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "srun --jobid=7 --overlap" in out and "expected on LUMI" in out


def test_the_script_can_be_written_and_is_never_overwritten(tmp_path, capsys):
    target = tmp_path / "vllm-server.sh"
    assert main(["vllm", "--site", "lumi", "-A", "project_465000000", "--write", str(target)]) == 0
    bash_parses(target.read_text())
    assert main(["vllm", "--site", "lumi", "-A", "project_465000000", "--write", str(target)]) == 2
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize("job_id", ["abc", "12; rm -rf ~", ""])
def test_a_client_for_something_that_is_no_job_id_is_refused(job_id, capsys):
    assert main(["vllm", "--client", job_id]) == 2
    assert "is not a Slurm job id" in capsys.readouterr().err
