"""Every launch in the course's seed material, rebuilt with lumikit, means the same as the seed's command.

The seeds are read from ../shared/seeds. Both commands are reduced to their meaning: the resources
(order-insensitive, short and long option names, totals), the CPU masks, the container (verb, image, binds),
the environment the program sees and the program's own argv.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lumikit.jobs import attach_argv, render_salloc, render_sbatch, render_srun, spec
from lumikit.jobs.spec import parse_mem_mb, parse_time
from lumikit.jobs.render import MASTER_IN_STEP
from lumikit.site import load_site

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
SHORT = {"-N": "nodes", "-n": "ntasks", "-p": "partition", "-t": "time", "-A": "account", "-c": "cpus-per-task"}
VALUED = {"nodes", "ntasks", "partition", "time", "account", "cpus-per-task", "gpus", "gpus-per-node", "mem",
          "mem-per-gpu", "ntasks-per-node", "tasks-per-node", "reservation", "threads-per-core", "cpu-bind", "jobid",
          "job-name", "output"}
FLAGS = {"exclusive", "interactive", "overlap", "pty"}
PY = "/appl/local/containers/sif-images/lumi-pytorch-rocm-6.2.4-python-3.12-pytorch-v2.7.1.sif"
PY61 = "/appl/local/containers/sif-images/lumi-pytorch-rocm-6.1.3-python-3.12-pytorch-v2.4.1.sif"
JAX = "/appl/local/containers/sif-images/lumi-jax-rocm-6.2.0-python-3.12-jax-0.4.28.sif"


def seed_text(prefix: str) -> str:
    if not SEEDS.is_dir():
        pytest.skip(f"seed material not found at {SEEDS}")
    return next(SEEDS.glob(f"{prefix}_*.txt")).read_text()


def seed_command(prefix: str, marker: str, occurrence: int = 0, subst: dict[str, str] | None = None) -> list[str]:
    """The shell command that starts at the n-th line holding ``marker``, continuation lines joined."""
    lines = seed_text(prefix).splitlines()
    starts = [i for i, line in enumerate(lines) if marker in line]
    i = starts[occurrence]
    out = []
    while i < len(lines) and not lines[i].startswith("```"):
        out.append(lines[i])
        if not lines[i].rstrip().endswith("\\"):
            break
        i += 1
    text = "\n".join(out).replace("\\\n", " ")
    for k, v in (subst or {}).items():
        text = text.replace(k, v)
    return shlex.split(text)


def sbatch_directives(prefix: str, first: str, last_marker: str) -> list[str]:
    lines = seed_text(prefix).splitlines()
    i = next(n for n, line in enumerate(lines) if line.strip() == first)
    out = []
    for line in lines[i:]:
        out.append(line.split("#SBATCH", 1)[1].strip() if "#SBATCH" in line else None)
        if last_marker in line:
            break
    return [o for o in out if o]


def _mask_list(value: str) -> list[int]:
    value = re.sub(r"^(v,|verbose,)", "", value)
    value = re.sub(r"^mask_cpu[:=]", "", value)
    return [int(m, 16) for m in value.split(",")]


def meaning(argv: list[str] | tuple[str, ...]) -> dict:
    """Reduce a srun/salloc argv (or a list of #SBATCH options) to what it asks for and what it runs."""
    argv = list(argv)
    opts: dict[str, object] = {}
    i = 1 if argv and argv[0] in ("srun", "salloc", "sbatch") else 0
    while i < len(argv):
        tok = argv[i]
        if tok in SHORT:
            opts[SHORT[tok]] = argv[i + 1]
            i += 2
            continue
        if tok[:2] in SHORT:  # -n1, -N2
            opts[SHORT[tok[:2]]] = tok[2:]
            i += 1
            continue
        if tok.startswith("--"):
            name, eq, val = tok[2:].partition("=")
            if name in FLAGS:
                opts[name] = True
            elif eq:
                opts[name] = val
            elif name in VALUED:
                opts[name] = argv[i + 1]
                i += 1
            i += 1
            continue
        break
    rest = argv[i:]
    wrapper = f"{MASTER_IN_STEP} && exec "
    if rest[:2] == ["bash", "-c"] and rest[2].startswith(wrapper):  # the step's own shell, around the container
        rest = shlex.split(rest[2][len(wrapper):])
    m: dict[str, object] = {}
    nodes = int(opts.get("nodes", 1))
    m["nodes"] = nodes
    per_node = opts.get("ntasks-per-node", opts.get("tasks-per-node"))
    if "ntasks" in opts or per_node:
        m["tasks"] = int(opts["ntasks"]) if "ntasks" in opts else nodes * int(per_node)
    if "gpus" in opts or "gpus-per-node" in opts:
        m["gpus"] = int(opts["gpus"]) if "gpus" in opts else nodes * int(opts["gpus-per-node"])
    for key in ("partition", "account", "reservation", "cpus-per-task", "threads-per-core", "output"):
        if key in opts:
            m[key] = str(opts[key])
    if "time" in opts:
        m["time"] = parse_time(str(opts["time"]))
    for key in ("mem", "mem-per-gpu"):
        if key in opts:
            m[key] = parse_mem_mb(str(opts[key]), key)
    if "cpu-bind" in opts:
        m["masks"] = _mask_list(str(opts["cpu-bind"]))
    if opts.get("exclusive"):
        m["exclusive"] = True
    if "jobid" in opts:
        m["attach"] = (opts["jobid"], bool(opts.get("pty")), bool(opts.get("overlap") or opts.get("interactive")))
    if rest:
        m.update(_payload(rest))
    return m


def _payload(rest: list[str]) -> dict:
    out: dict[str, object] = {}
    if rest[0] == "singularity":
        out["container"] = rest[1]
        binds, i = set(), 2
        while rest[i] in ("-B", "--bind"):
            binds.update(rest[i + 1].split(","))
            i += 2
        out["image"], rest = rest[i], rest[i + 1:]
        out["binds"] = binds
    env: dict[str, str] = {}
    if rest[:2] == ["bash", "-c"]:
        lex = shlex.shlex(rest[2], posix=True, punctuation_chars=";&")
        lex.whitespace_split = True
        statements, cur = [], []
        for word in lex:
            if word in (";", "&&"):
                statements.append(cur)
                cur = []
            else:
                cur.append(word)
        statements.append(cur)
        program: list[str] = []
        for words in filter(None, statements):
            if words == ["$WITH_CONDA"]:
                out["conda"] = True
                continue
            if words[0] == "cd":
                out["cwd"] = words[1]
                continue
            if words[0] == "source":
                out.setdefault("sourced", []).append(words[1])
                continue
            if words[0] == "export":
                words = words[1:]
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                k, v = words.pop(0).split("=", 1)
                env[k] = v
            if words and words[0] == "exec":
                words = words[1:]
            if words:
                program = words
        rest = program
    if rest and rest[0].endswith("/run.sh"):  # the seeds' wrapper that sets RANK/LOCAL_RANK per task
        rest = rest[1:]
        env["RANK"] = "$SLURM_PROCID"
    out["rank_env"] = env.pop("RANK", None) == "$SLURM_PROCID"
    for k in ("LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        env.pop(k, None)
    out["env"] = env
    out["program"] = [re.sub(r"\$\{?(SLURM_PROCID|RANK)\}?", "<rank>",
                             re.sub(r"\$\{?(SLURM_LOCALID|LOCAL_RANK)\}?", "<local_rank>",
                                    re.sub(r"\$\{?(SLURM_NPROCS|SLURM_NTASKS|WORLD_SIZE)\}?", "<world_size>", w)))
                      for w in rest]
    return out


def same_meaning(seed: dict, ours: dict) -> None:
    """Everything the seed states, lumikit states the same way (lumikit may state more, e.g. the partition)."""
    for key, value in seed.items():
        assert ours.get(key) == value, f"{key}: seed {value!r}, lumikit {ours.get(key)!r}"


SINGLE_GCD_ENV = {"HIP_VISIBLE_DEVICES": "0", "TORCH_HOME": "/workdir/torch-cache", "HF_HOME": "/workdir/hf-cache",
                  "TOKENIZERS_PARALLELISM": "false"}
GPT_ARGS = ["python", "-u", "/workdir/GPT-neo-IMDB-finetuning.py", "--model-name", "gpt-imdb-model",
            "--output-path", "/workdir/train-output", "--logging-path", "/workdir/train-logging", "--num-workers", "7"]


def test_seed_single_gcd_run_with_hip_visible_devices():
    seed = meaning(seed_command("000", "srun -n1 singularity exec", 0))
    job = spec(GPT_ARGS, ntasks_per_node=1, container=PY61, bind_sets=(), binds=(".:/workdir",), workdir="/workdir",
               env=SINGLE_GCD_ENV)
    ours = meaning(render_srun(job.with_(container="pytorch-rocm61"), "lumi").argv)
    assert seed["program"] == GPT_ARGS and seed["env"] == SINGLE_GCD_ENV
    same_meaning(seed, ours)


def test_seed_rocprof_run():
    seed = meaning(seed_command("000", "srun -n1 singularity exec", 3))
    assert seed["program"][:3] == ["rocprof", "--hip-trace", "--stats"]
    job = spec(GPT_ARGS, container="pytorch-rocm61", bind_sets=(), binds=(".:/workdir",), workdir="/workdir",
               env=SINGLE_GCD_ENV, profile="rocprof")
    ours = meaning(render_srun(job, "lumi").argv)
    # lumikit puts the results in the run folder (-o ...); apart from that the program is the same
    assert ours["program"][:3] == ["rocprof", "--hip-trace", "--stats"] and ours["program"][5:] == GPT_ARGS
    seed["program"] = seed["program"][3:]
    ours["program"] = ours["program"][5:]
    same_meaning(seed, ours)


def test_seed_allocations():
    seed = meaning(seed_command("000", "salloc -p small-g"))
    job = spec(["true"], partition="small-g", account="project_465001707", reservation="AI_workshop",
               gpus_per_node=2, ntasks_per_node=1, cpus_per_task=14, mem_per_gpu="60G", time="0:30:00")
    same_meaning(seed, meaning(render_salloc(job, "lumi").argv))
    seed = meaning(seed_command("002", "salloc -p standard-g", subst={"$N": "2", "$((N*8))": "16", "N=2 ;": ""}))
    job = spec(["true"], partition="standard-g", account="project_465002178", reservation="AI_workshop_Day2",
               threads_per_core=1, exclusive=True, nodes=2, gpus_per_node=8, time="1:00:00", mem="0")
    same_meaning(seed, meaning(render_salloc(job, "lumi").argv))


def test_seed_batch_header_single_gcd():
    seed = meaning(sbatch_directives("000", "#SBATCH --account=project_465001707", "--time=0:30:00"))
    job = spec(["python", "train.py"], account="project_465001707", reservation="AI_workshop", partition="small-g",
               gpus_per_node=1, ntasks_per_node=1, cpus_per_task=7, mem_per_gpu="60G", time="0:30:00")
    script = render_sbatch(job, "lumi")
    ours = meaning([line.split(" ", 1)[1] for line in script.splitlines() if line.startswith("#SBATCH")])
    same_meaning(seed, ours)


EIGHT_TASKS = dict(ntasks_per_node=8, gpus_per_node=8, cpu_bind="auto", exclusive=True, container="pytorch",
                   bind_sets=(), binds=(".:/workdir",))
MP_ARGS = ["python", "-u", "/workdir/GPT-neo-IMDB-finetuning-mp.py", "--model-name", "gpt-imdb-model",
           "--output-path", "/workdir/train-output", "--logging-path", "/workdir/train-logging", "--num-workers", "7"]


def test_seed_eight_tasks_on_one_node_with_masks():
    seed = meaning(seed_command("002", "srun -N1 -n8 --gpus 8"))
    ours = meaning(render_srun(spec(MP_ARGS, partition="standard-g", **EIGHT_TASKS), "lumi").argv)
    assert len(seed["masks"]) == 8
    seed["image"] = ours["image"]  # the seed's edition used pytorch v2.7.1; the site profile names the current one
    same_meaning(seed, ours)


def test_seed_two_nodes_sixteen_tasks_with_masks_and_system_binds():
    seed = meaning(seed_command("002", "srun -N2 -n16 --gpus 16", 0))
    ours = meaning(render_srun(spec(MP_ARGS, partition="standard-g", nodes=2, **EIGHT_TASKS), "lumi").argv)
    assert {"/var/spool/slurmd", "/opt/cray", "/usr/lib64/libcxi.so.1"} <= seed["binds"]
    seed["image"] = ours["image"]
    # lumikit's multi-node bind set also carries libjansson (needed by libcxi on current LUMI)
    ours["binds"] = ours["binds"] - {"/usr/lib64/libjansson.so.4"}
    # the seed exports RCCL's interfaces and MIOpen's per-node cache in its shell before every multi-node srun;
    # a lumikit multi-node job carries them itself (recipes rccl and miopen, in the rank script)
    text = seed_text("002")
    assert "export NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3" in text
    assert 'export MIOPEN_USER_DB_PATH="/tmp/$(whoami)-miopen-cache-$SLURM_NODEID"' in text
    assert ours["env"]["NCCL_SOCKET_IFNAME"] == "hsn0,hsn1,hsn2,hsn3"
    assert ours["env"]["MIOPEN_USER_DB_PATH"] == "/tmp/${USER}-miopen-cache-${SLURM_NODEID}"
    assert ours["env"]["MIOPEN_CUSTOM_CACHE_DIR"] == ours["env"]["MIOPEN_USER_DB_PATH"]
    recipes = {k for name in ("rccl", "miopen") for k in load_site("lumi").env_recipe(name)}
    ours["env"] = {k: v for k, v in ours["env"].items() if k not in recipes}
    same_meaning(seed, ours)


def test_seed_imagenet_run_with_rank_arguments():
    seed = meaning(seed_command("002", "srun -N $N -n $((N*8)) --gpus $((N*8))", 0,
                                subst={"$N": "1", "$((N*8))": "8", "$((8*512))": "4096", "$((8*7))": "56"}))
    args = ["python", "-u", "/workdir/cv_example.py", "-a", "resnet50", "--batch-size", "4096", "--workers", "56",
            "--gpu", "{local_rank}", "--world-size", "{world_size}", "--rank", "{rank}",
            "--dist-url", "tcp://{master_addr}:45678", "--dist-backend", "nccl", "--epochs", "2",
            "/flash/project_465002178/data-sets/data-resnet-small"]
    job = spec(args, partition="standard-g",
               **{**EIGHT_TASKS, "bind_sets": ("multinode",), "binds": (".:/workdir", "/flash", "/pfs")})
    # the seed binds the multi-node set even for N=1 (its N is a knob); so does this job
    cmd = render_srun(job, "lumi")
    ours = meaning(cmd.argv)
    ours["binds"] = ours["binds"] - {"/usr/lib64/libjansson.so.4"}
    seed["image"] = ours["image"]
    # the seed computes the master's address inside the argument; lumikit's step computes MASTER_ADDR outside
    # the container, before it starts
    seed["program"] = [w.replace("$(scontrol show hostname $SLURM_NODELIST | head -n1)", "${MASTER_ADDR}")
                       for w in seed["program"]]
    assert cmd.argv[cmd.argv.index("bash") + 2].startswith("export MASTER_ADDR=$(scontrol show hostnames")
    same_meaning(seed, ours)


def test_seed_profile_one_rank_of_sixteen():
    job = spec(MP_ARGS, partition="standard-g", nodes=2, profile="rocprof", profile_ranks=(14,), **EIGHT_TASKS)
    script = render_srun(job, "lumi").argv[-1]
    assert 'case "$SLURM_PROCID" in 14) ' in script  # seed 002: `if [ $RANK -eq 14 ]; then pcmd='rocprof ...'`
    assert "rocprof --hip-trace --stats" in seed_text("002")


def test_seed_attach_to_a_running_job():
    seed = meaning(seed_command("000", "srun --jobid 7100665"))
    seed["tasks"] = 1  # lumikit adds -N1 -n1: one shell, also in a job of several tasks (the seed's job had one)
    same_meaning(seed, meaning(attach_argv(7100665)))


def test_seed_jax_srun_and_batch_templates():
    seed = meaning(seed_command("003", "srun --account=--account=project_your_project_number0"))
    seed["account"] = "project_your_project_number"  # the seed doubles the option by mistake
    job = spec(["python3", "path/to/script.py"], account="project_your_project_number", partition="small-g",
               nodes=1, gpus_per_node=1, time="05:00", container="jax", bind_sets=(),
               env_recipes=(), workdir=None)
    ours = meaning(render_srun(job, "lumi").argv)
    seed.pop("sourced")  # the venv activation: part of the learner's command in lumikit (see module 10)
    same_meaning(seed, ours)
    seed = meaning(sbatch_directives("003", "#!/bin/bash", "--mem-per-gpu=60G"))
    job = spec(["python3", "x.py"], partition="standard-g", nodes=2, gpus_per_node=8, ntasks_per_node=8,
               cpus_per_task=7, mem_per_gpu="60G")
    ours = meaning([line.split(" ", 1)[1] for line in render_sbatch(job, "lumi").splitlines()
                    if line.startswith("#SBATCH")])
    same_meaning(seed, ours)
