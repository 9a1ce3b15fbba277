"""LUMI's vLLM recipe (LUMI AI Guide, chapter 10): a vLLM server in the LAIF container on two GCDs, listening on a
Unix domain socket, with its caches on /scratch, and the client that reaches it from a step overlapping the job.

lumikit prints these commands and never runs them: the server needs LUMI's GPUs, the container and a model. What
LUMI answers (the startup line, the reply) is "expected": nothing here has seen it.
"""
from __future__ import annotations

import json
import re
import shlex

from ..errors import SpecError
from ..site import Site, load_site
from .render import attach_argv
from .spec import JobSpec, spec
from .workload import gcd_resources

SOURCE = ("LUMI AI Guide, chapter 10 'LLM inference' (Lumi-supercomputer/LUMI-AI-Guide, 10-LLM-inference/: "
          "start-vllm-server.sh and README, 2026)")
#: The guide's example: a mixture-of-experts model of 35 B parameters (about 70 GB in bf16: two GCDs).
DEFAULT_MODEL = "Qwen/Qwen3.6-35B-A3B"
GCDS = 2
#: The socket, as the server's step and an overlapping step both spell it (each expands it on the node).
SOCKET = "${TMPDIR:-/tmp}/vllm-${SLURM_JOB_ID}.sock"
CACHES = ('export HF_HOME="/scratch/${SLURM_JOB_ACCOUNT}/hf-cache" '
          'VLLM_CACHE_ROOT="/scratch/${SLURM_JOB_ACCOUNT}/vllm-cache"')


def server_command(model: str) -> str:
    """The shell line the server's task runs inside the container: caches on /scratch, then ``vllm serve``."""
    return (f"{CACHES}; exec vllm serve {shlex.quote(model)} --tensor-parallel-size \"$SLURM_GPUS_ON_NODE\" "
            f"--uds \"{SOCKET}\" --load-format runai_streamer")


def server_spec(model: str = DEFAULT_MODEL, *, site: Site | str | None = "lumi", account: str | None = None,
                time: str = "2:00:00", partition: str | None = None, container: str = "laif-pytorch",
                gcds: int = GCDS) -> JobSpec:
    """The server as a batch job: one task on ``gcds`` GCDs (their 7 cores each and 60 GB each), in the LAIF
    container, MIOpen's cache on the node's /tmp (the site's ``miopen`` recipe)."""
    s = load_site(site)
    fields = {**gcd_resources(gcds, 1, s), **({"partition": partition} if partition else {})}
    return spec(["bash", "-c", server_command(model)], name="vllm-server", container=container, time=time,
                account=account, env_recipes=("miopen",), **fields)


def completion_request(model: str, prompt: str, max_tokens: int = 64) -> str:
    """The JSON body of an OpenAI-style completion request."""
    return json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})


def client_argv(job_id: str, model: str = DEFAULT_MODEL, prompt: str = "LUMI is a supercomputer that",
                max_tokens: int = 64) -> list[str]:
    """One step that overlaps the server's job on its node and asks the server once through the socket (curl,
    outside the container: the socket is a file on the node)."""
    if not re.fullmatch(r"\d+", str(job_id)):
        raise SpecError("--client", f"{job_id!r} is not a Slurm job id",
                        "give the number sbatch printed for the server job (Submitted batch job <number>)")
    curl = (f"curl --silent --unix-socket \"{SOCKET}\" http://localhost/v1/completions "
            f"-H 'Content-Type: application/json' -d {shlex.quote(completion_request(model, prompt, max_tokens))}")
    return attach_argv(job_id, ["bash", "-c", curl], pty=True)


def server_explain(model: str, site: Site) -> list[str]:
    """Why each part of the server job is there (after the flags' own lines)."""
    return [
        f"vllm serve {model}: the server of the LUMI AI Guide's chapter 10; the LAIF container ships a vLLM built "
        "for LUMI",
        f"--tensor-parallel-size $SLURM_GPUS_ON_NODE: the model split over the job's {GCDS} GCDs (a 35 B model in "
        "bf16 is about 70 GB; one GCD has 64 GB)",
        f"--uds {SOCKET}: a Unix domain socket instead of a TCP port: no port collisions with other users on a "
        "shared node, and only steps of this job on this node can reach it (no API key)",
        "--load-format runai_streamer: streams the weights from the parallel file system to the GCDs (faster "
        "loading for models that support it)",
        "HF_HOME and VLLM_CACHE_ROOT on /scratch/<project>: model weights and vLLM's caches are far larger than "
        "the 20 GB home quota",
        "MIOPEN_* on the node's /tmp (recipe miopen): MIOpen's cache out of the shared file system",
        "FI_MR_CACHE_MONITOR=userfaultfd (recipe laif, every job in a LAIF image: LUMI AI Guide, Sep 2026)",
        "early-2026 LAIF images on MI250X needed TORCH_COMPILE_DISABLE=1 for vLLM (LAIF's own gfx90a build; LUMI AI "
        "Guide): add --env-recipe vllm-compile-off on such an image (expected, not checked here)",
        "expected on LUMI (not seen here): the model loads for minutes after the job starts; the log says "
        "\"Application startup complete\" when the server answers",
        f"source: {SOURCE}",
    ]


def client_explain(job_id: str) -> list[str]:
    """Why the client is called the way it is."""
    return [
        f"srun --jobid={job_id} --overlap: a step inside the server's job, sharing its resources, on its node "
        "(the socket is a file there); --pty gives it a terminal",
        f"curl --unix-socket {SOCKET}: the request goes through the server's socket; the host name in the URL is "
        "not used",
        "/v1/completions: vLLM's OpenAI-compatible API; temperature 0 asks for greedy decoding",
        "expected on LUMI (not seen here): one JSON reply with the continuation in choices[0].text",
        f"for many prompts or a chat, the guide runs its Python clients in the container from such a shell: "
        f"srun --overlap --jobid {job_id} --pty bash; source: {SOURCE}",
    ]
