# %% [markdown]
# # 10 · JAX on LUMI
#
# JAX runs on LUMI's MI250X the same way PyTorch does: from a container built by LUMI's staff for LUMI's ROCm.
# JAX sees the same 8 devices per node as PyTorch (one per GCD, 64 GB each). Three rules carry over from
# module 02: start the container and activate its environment with `$WITH_CONDA`, put your own packages in a venv
# on top of it, and **never let pip change `jax` or `jaxlib`**: a `jaxlib` from PyPI has no ROCm support.
#
# This notebook runs a tiny JAX computation where JAX is installed (on LUMI: in the container) and otherwise
# shows the commands you would run.

# %%
import re
from pathlib import Path

import pandas as pd

from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site("lumi")
jax_container = site.container("jax")
print(mode_line())
image = Path(jax_container.path).name
versions = dict(re.findall(r"(rocm|python|jax)-(\d+(?:\.\d+)+)", image))
pd.DataFrame([{"image": image, **versions, "start with": f"singularity {jax_container.launch}",
               "environment": "$WITH_CONDA" if jax_container.with_conda else "activated by the image"}])

# %% [markdown]
# **How to read it:** the image's name carries its versions: ROCm, Python and JAX. The JAX version is the one to pin
# below; a newer course edition changes the image in the site profile and every command here follows.
#
# ## A pinned venv on top of the JAX container
#
# Packages that build on JAX (Flax, Optax, ...) declare which `jax` they want; left alone, pip would "upgrade" the
# container's JAX to a CUDA/CPU build from PyPI. Pin `jax` and `jaxlib` to the container's version in a
# constraints file and choose versions of the other packages that work with it. Also set `PYTHONNOUSERSITE=1`: your
# home folder is always visible in a container, and packages once installed into `~/.local` would shadow the
# container's.

# %%
import shlex

from lumikit.config import load_config
from lumikit.jobs import payload, spec

project = load_config().account or "project_465000000"  # an example number when you have none configured
venv_dir = f"/projappl/{project}/jax-venv"
pins = [f"jax=={versions['jax']}", f"jaxlib=={versions['jax']}"]
make_venv = spec(["python", "-m", "venv", "--system-site-packages", venv_dir], container="jax")
install = spec([f"{venv_dir}/bin/python", "-m", "pip", "install", "-c", "jax-constraints.txt", "-r",
                "requirements.txt"], container="jax", env={"PYTHONNOUSERSITE": "1"})
print("jax-constraints.txt:", *pins, sep="\n  ")
for step in (make_venv, install):
    print(shlex.join(payload(step, site)[0]), end="\n\n")

# %% [markdown]
# **How to read it:** both commands run on a login node, inside the container (`singularity exec` with the user
# binds), after `$WITH_CONDA`: the venv is made from the container's Python, so it sees the container's JAX. The
# venv's `bin/python` exists only inside the container. Install with the constraints file and pip either keeps
# `jax` as it is or stops with a conflict that names the package that wanted another version.
#
# ## A tiny JAX computation
#
# One GCD, a jitted function, and the list of devices JAX sees. On LUMI it runs as a Slurm job in the JAX
# container; on a laptop it runs as a local process only if JAX is installed in this kernel.

# %%
import importlib.util
import sys

from lumikit.jobs import render_srun
from lumikit.launch import get_backend, launch

JAX_PROGRAM = ('import jax, jax.numpy as jnp; print("devices:", jax.devices()); '
               'f = jax.jit(lambda v: (v * v).sum()); print("sum of squares 0..7:", float(f(jnp.arange(8.0))))')
tiny = spec(["python", "-c", JAX_PROGRAM], partition="small-g", gpus_per_node=1, time="0:05:00", container="jax",
            env={"PYTHONNOUSERSITE": "1"})
print("On LUMI:", render_srun(tiny, site).text())
backend = get_backend()
jax_here = importlib.util.find_spec("jax") is not None
if backend.name == "slurm" or jax_here:
    job = tiny if backend.name == "slurm" else tiny.with_(command=(sys.executable, "-c", JAX_PROGRAM))
    run = launch(job)
    print(mode_line(), "->", run.wait(timeout=300, progress=False))
    print(run.stdout(0).strip() or run.tail())
else:
    print(mode_line(), "-> not run: JAX is not installed in this kernel (the command above is what LUMI runs)")

# %% [markdown]
# **How to read it:** on LUMI the job is expected to list one GPU device (the GCD you asked for) and print `140.0`; ask for
# `gpus_per_node=8` and JAX lists eight devices. Without `--gpus-per-node` Slurm gives the job no GPU and JAX falls
# back to the CPU with no more than a warning, so check the device list before you trust a timing. Where JAX is
# missing, the cell only prints the command; nothing fails.
#
# ## Many GCDs and nodes: one process per GCD
#
# For more than one node, start **one task per GCD** (8 per node) and let each process drive its own device. JAX
# needs to know the job's shape: call `jax.distributed.initialize(coordinator_address=f"{MASTER_ADDR}:{MASTER_PORT}",
# num_processes=WORLD_SIZE, process_id=RANK, local_device_ids=[LOCAL_RANK])` at the start of the program. The
# batch script below sets exactly those variables: `MASTER_ADDR` and `MASTER_PORT` before `srun`, outside the
# container, and `RANK`, `LOCAL_RANK`, `WORLD_SIZE` per task from Slurm's own.

# %%
from lumikit.jobs import render_sbatch

two_nodes = spec([f"{venv_dir}/bin/python", "train_jax.py"], name="jax-2nodes", partition="standard-g", nodes=2,
                 ntasks_per_node=8, gpus_per_node=8, cpus_per_task=7, mem_per_gpu="60G", time="1:00:00",
                 cpu_bind="auto", container="jax", env={"PYTHONNOUSERSITE": "1"})
print(render_sbatch(two_nodes, site))

# %% [markdown]
# **How to read it:** the `#SBATCH` lines ask for 2 whole nodes, 8 tasks and 8 GCDs on each, 7 cores per task;
# `--cpu-bind=mask_cpu:` puts each task next to its GCD (module 01), and the 2-node job binds the `multinode` set
# RCCL needs (module 02). The program is the venv's Python, started inside the container after `$WITH_CONDA`.
# Submit it with `sbatch` on a login node, follow it with `squeue --me`, and attach to it with
# `srun --jobid=<id> --overlap --pty bash` to watch `rocm-smi` (module 04).
