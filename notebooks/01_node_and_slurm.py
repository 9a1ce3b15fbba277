# %% [markdown]
# > **Module 01 at a glance.** About **60 minutes** (lesson and exercises). Before it: module(s) 00.
# >
# > **Objectives.** After it you can:
# > - read a LUMI-G node's layout: 8 GCDs, their cores and NUMA domains
# > - write srun/sbatch commands LUMI accepts, and fix the ones it rejects
# > - derive CPU masks from rocm-smi --showtoponuma and lscpu, and verify them inside a job

# %% [markdown]
# # 01 · A LUMI-G node and Slurm
#
# A LUMI-G node has 4 AMD MI250X packages; each package holds two **GCDs** (graphics compute dies), and each
# GCD is one GPU to Slurm and PyTorch: 8 GPUs per node, 64 GB of memory each. The node's 64 CPU cores are in 8
# groups (CCDs); the first core of each group is reserved for the system, which leaves **7 cores per GCD**.

# %%
import pandas as pd

from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
pd.DataFrame([{"GCD": g.index, "package": g.package, "NUMA": g.numa, "cores": f"{g.cores[0]}-{g.cores[-1]}",
               "mask": g.mask_hex} for g in site.node.gcds]).set_index("GCD")

# %% [markdown]
# **How to read it:** GCD 0 is *not* next to cores 0-7: it sits on NUMA domain 3 with cores 49-55. A task that
# drives GCD 0 runs best on those cores, which is what the CPU **mask** says (bit *n* = core *n*). GCDs 0 and 1
# share package 0: `rocm-smi` reports their power once, on GCD 0.
#
# ## From intent to command
#
# Say what you want; lumikit writes what LUMI needs and refuses what LUMI would reject.

# %%
from lumikit.jobs import render_sbatch, render_srun, spec

one_gcd = spec(["python", "train.py"], partition="small-g", gpus_per_node=1, cpus_per_task=7,
               mem_per_gpu="60G", time="0:15:00")
print(render_srun(one_gcd, site).explain())

# %% [markdown]
# Each line is one flag and why it is there. Now a full node, one task per GCD, with CPU masks:

# %%
full_node = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                 cpus_per_task=7, exclusive=True, cpu_bind="auto", container="pytorch")
print(render_sbatch(full_node, site))

# %% [markdown]
# **Read the script from the bottom:** `srun` starts 16 tasks; `--cpu-bind=mask_cpu:` gives task *i* the cores
# next to GCD *i*; inside the container `$WITH_CONDA` activates PyTorch and `RANK=$SLURM_PROCID` is set per task
# (single quotes keep `$` for the compute node). `MASTER_ADDR` is computed *before* `srun`, outside the
# container, because there are no Slurm tools inside it. With 2 nodes, the system libraries RCCL needs are bound.
#
# ## When LUMI would say no

# %%
from lumikit.errors import SpecError
from lumikit.jobs import validate

try:
    validate(spec(["python", "train.py"], partition="small-g", gpus_per_node=9), site)
except SpecError as err:
    print(err)

# %% [markdown]
# ## Build it yourself
#
# Change the controls; the command follows, and mistakes show in red before anything is submitted.

# %%
from lumikit.widgets.job_builder import JobBuilder

JobBuilder(["python", "train.py"], site=site)

# %% [markdown]
# ## Run a job
#
# `launch` sends the job to this site's backend: Slurm on LUMI, local processes on a laptop. Every launch gets its
# own run folder with a manifest and one log per rank. The command is this notebook's own Python (`sys.executable`,
# the workbook's venv) and it runs in the course container (`container="pytorch"`), as every later module's job does:
# the venv is built inside that image and works only there. Where a site has no containers (a laptop) it runs as it is.

# %%
import sys

from lumikit.launch import launch

job = spec([sys.executable, "-c", "import os, socket; print('rank', os.environ['RANK'], 'of', "
            "os.environ['WORLD_SIZE'], 'on', socket.gethostname())"], ntasks_per_node=2, time="0:05:00",
           container="pytorch")
run = launch(job)
print(mode_line(), "->", run.wait(timeout=120))
for rank in range(2):
    print(run.stdout(rank).strip())

# %% [markdown]
# **How to read it:** both ranks ran; each knew its `RANK` and the `WORLD_SIZE` from the environment that Slurm
# (or the local backend, imitating it) gave it. On LUMI, `run.attach_command(["rocm-smi"])` gives the command
# that watches the GPUs of a running job; module 04 turns that into pictures.

# %% [markdown]
# ## One rule for devices and cores per rank
#
# For one rank per GCD: ask `--gpus-per-node=G` with G tasks per node, let every rank use device `LOCAL_RANK`
# (`torch.cuda.set_device(LOCAL_RANK)`, `LOCAL_RANK=$SLURM_LOCALID`), give each rank the 7 cores next to its GCD
# (`--cpus-per-task=7`) and, on whole nodes, bind it with the mask of those cores (`--cpu-bind=auto`). Sources: the
# LUMI user guide (`docs/runjobs/scheduled-jobs/distribution-binding.md`) and the AI workshop's module 08 run
# without torchrun. `rank_table` shows where each rank lands:

# %%
from lumikit.jobs.ranks import rank_table

rule = spec(["python", "train.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
            cpu_bind="auto", time="0:30:00")
rank_table(rule, site)

# %% [markdown]
# **How to read it:** every rank `sees` 8 devices and uses `device` = its local rank, which on a full node is the GCD
# of the same number; `mask` is what `taskset -p $$` prints in that rank (expected, from the site profile:
# `pid 1234's current affinity mask: fe000000000000` in local rank 0). An empty `problem` column is the goal.
# Now the shape that looks the same but is not, one GPU per task:

# %%
rank_table(spec(["python", "train.py"], partition="small-g", gpus_per_task=1, ntasks_per_node=4, cpus_per_task=7,
                time="0:30:00"), site)

# %% [markdown]
# **How to read it:** each rank sees **one** device, so `set_device(LOCAL_RANK)` has nothing to pick from local rank 1
# on, and RCCL, which wants peer access between the GCDs, fails with "Failed to find reverse path". `lumikit srun`
# warns about this shape and `--explain` states the rule. To check a real job, print `$SLURM_LOCALID $(taskset -p
# $$)` in each rank (one line per rank, module 01's terminal exercise) and compare with the `mask` column. With
# `torchrun` instead (one task per node holding all 56 cores, torchrun starting the 8 ranks), recent PyTorch binds
# each rank with `torchrun --numa-binding=exclusive` (LUMI AI Guide, chapter 05).

# %% [markdown]
# ## Key points
#
# - GCD numbers are not core numbers: GCD 0 sits next to cores 49-55 on NUMA 3.
# - One task per GCD, 7 cores each; the first core of every group of 8 is reserved.
# - A binding is proven by what each task prints (Cpus_allowed_list), with one task per mask.
# - One rule per rank: `--gpus-per-node` + device `LOCAL_RANK`, 7 cores and its GCD's mask; not `--gpus-per-task`.
