# %% [markdown]
# > **Module 00 at a glance.** About **15 minutes** (lesson and exercises). Before it: module(s) none.
# >
# > **Objectives.** After it you can:
# > - find out where the workbook runs (LUMI, lumi-sim, laptop) and what falls back
# > - set your project and reservation outside the code
# > - plan a route through the modules

# %% [markdown]
# # 00 · Start here
#
# This workbook runs in three places: on **LUMI** (real Slurm, real MI250X GPUs), on a **laptop or CI machine**
# (no Slurm, no GPU: jobs run as local processes and GPU views replay generated sessions), and against a
# **local Slurm cluster** (`make slurm-up`). Every cell that runs something says where it ran, in one line.

# %% [markdown]
# ## The map
#
# Each module is three notebooks, in this order: the **lesson** (read and run it), the **exercise** (the same
# questions with the answers left out; a check under each answer says whether it is right and why not), and the
# **solution** (the answers and a discussion; open it after trying). The links open in JupyterLab. The minutes are
# estimates for the lesson and its exercises together; "After" names the modules to do first.
#
# | Module | Minutes | After | Objectives | Path |
# |---|---|---|---|---|
# | **00** Start here | 15 | - | find out where the workbook runs (LUMI, lumi-sim, laptop) and what falls back; set your project and reservation outside the code; plan a route through the modules | [lesson](00_start_here.ipynb) |
# | **01** A LUMI-G node and Slurm | 60 | 00 | read a LUMI-G node's layout: 8 GCDs, their cores and NUMA domains; write srun/sbatch commands LUMI accepts, and fix the ones it rejects; derive CPU masks from rocm-smi --showtoponuma and lscpu, and verify them inside a job | [lesson](01_node_and_slurm.ipynb) → [exercise](../exercises/01_node_and_slurm.ipynb) → [solution](../solutions/01_node_and_slurm.ipynb) |
# | **02** Containers and Python environments | 55 | 01 | run a job inside LUMI's PyTorch container with the right binds; add packages in a venv on top of the container without replacing its PyTorch | [lesson](02_containers_and_envs.ipynb) → [exercise](../exercises/02_containers_and_envs.ipynb) → [solution](../solutions/02_containers_and_envs.ipynb) |
# | **03** A first training job | 70 | 01, 02 | submit a training job and follow it with squeue and sacct; plan --time from measured step times, and checkpoint and resume; fix a broken #SBATCH script and cancel a job with Slurm's own commands | [lesson](03_first_training_job.ipynb) → [exercise](../exercises/03_first_training_job.ipynb) → [solution](../solutions/03_first_training_job.ipynb) |
# | **04** Watching the GPU | 55 | 01 | read rocm-smi: power, clock, busy %, memory per GCD and package; tell a working GCD from a waiting one; look at a running job with salloc and srun --overlap | [lesson](04_watching_the_gpu.ipynb) → [exercise](../exercises/04_watching_the_gpu.ipynb) → [solution](../solutions/04_watching_the_gpu.ipynb) |
# | **05** Logging and profiling | 95 | 03 | read a HIP log (AMD_LOG_LEVEL=4) and rocprof's tables; profile a few steps with torch.profiler, with and without lumikit's wrapper; diagnose a failed job from its log | [lesson](05_logging_and_profiling.ipynb) → [exercise](../exercises/05_logging_and_profiling.ipynb) → [solution](../solutions/05_logging_and_profiling.ipynb) |
# | **06** Reading traces | 100 | 05 | split GPU time into compute, communication and idle; find a straggler rank and hidden communication in multi-rank traces; say why the GPU waited and what would make the step faster: idle causes, the critical path, a what-if; place kernels on the MI250X roofline from counters or from shapes | [lesson](06_reading_traces.ipynb) → [exercise](../exercises/06_reading_traces.ipynb) → [solution](../solutions/06_reading_traces.ipynb) |
# | **07** Several GPUs on one node | 100 | 03, 05 | run DDP with one task per GCD, and compare it with DataParallel; start DDP with srun or torchrun | [lesson](07_several_gpus.ipynb) → [exercise](../exercises/07_several_gpus.ipynb) → [solution](../solutions/07_several_gpus.ipynb) |
# | **08** Several nodes | 85 | 07 | write a multi-node batch script with binding and RCCL's environment; prove from RCCL's log that the network was used; know which GPU each rank sees (Slurm, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES) | [lesson](08_several_nodes.ipynb) → [exercise](../exercises/08_several_nodes.ipynb) → [solution](../solutions/08_several_nodes.ipynb) |
# | **09** Data and I/O | 60 | 03 | choose where data lives on LUMI and why one file beats many small ones; size DataLoader workers, and start them with spawn in multi-node jobs | [lesson](09_data_and_io.ipynb) → [exercise](../exercises/09_data_and_io.ipynb) → [solution](../solutions/09_data_and_io.ipynb) |
# | **10** JAX on LUMI | 30 | 02 | run JAX from LUMI's JAX container with a pinned venv; launch one JAX process per GCD | [lesson](10_jax_on_lumi.ipynb) → [exercise](../exercises/10_jax_on_lumi.ipynb) → [solution](../solutions/10_jax_on_lumi.ipynb) |
# | **11** Capstone: find a bottleneck, fix it, measure | 60 | 04, 05, 06, 07, 09 | find a planted bottleneck with the step metrics, the profiler and the trace analysis; fix it with one change and claim it with before/after numbers and their spread | [lesson](11_capstone.ipynb) → [exercise](../exercises/11_capstone.ipynb) → [solution](../solutions/11_capstone.ipynb) |
# | **12** Making the step faster | 65 | 05, 06 | climb the optimisation ladder (fp32, bf16, a fused optimizer, torch.compile) and measure each rung with its spread; say which rung helped most and why, from the trace diff and the critical path; measure prefill and decode tokens/s with and without a KV cache, across batch sizes | [lesson](12_making_it_faster.ipynb) → [exercise](../exercises/12_making_it_faster.ipynb) → [solution](../solutions/12_making_it_faster.ipynb) |
#
# In all about 14 hours.
#
# **Prerequisites for the whole workbook:** Python and a little PyTorch (a training loop: model, loss, optimizer),
# and a Unix shell. No Slurm or GPU experience is assumed. Three routes:
#
# - **A one-day course on LUMI:** 00, 01, 03, 04, 05, 07, then the capstone 11.
# - **Profiling first:** 00, 04, 05, 06, 12, then 11.
# - **Scaling out:** 01, 02, 03, 07, 08, 09 (and 10 for JAX).
#
# Several exercises (01, 03, 04, 08) are done with Slurm's own commands (`sbatch`, `squeue`, `sacct`, `scancel`,
# `salloc`, `srun --overlap`). They run against LUMI, or the local `lumi-sim` cluster where it is up; on a laptop
# without Slurm they show the commands, and the checks grade what they can and say what they could not.
#
# ## Where am I?
#
# The next cell asks lumikit.

# %%
from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site()
print(mode_line(site))

# %% [markdown]
# **How to read it:** on a LUMI login node or in Open OnDemand the mode says `lumi` and jobs go to Slurm; on a
# laptop it says `laptop` and the same cells start local processes instead. Inside a job of the local cluster
# (`make slurm-up`) it says `lumi-sim`: a real Slurm with LUMI's partitions and node shape, but CPUs only.
#
# **Rehearsing on lumi-sim.** `make slurm-up` starts that cluster on this machine; then `lumikit rehearse --site
# lumi-sim` submits every module's job there (the same specs the notebooks launch, from `lumikit.course_jobs`),
# waits for them and writes a report under `runs/rehearsal-lumi-sim-*/`. To run a notebook as a lumi-sim user
# would, run it with `--site lumi-sim` jobs (`export LUMIKIT_SITE=lumi-sim` before `make lab`). Instructors run
# the same rehearsal on LUMI the week before a course (`lumikit rehearse --site lumi`, see the instructor guide).
#
# ## The site profile: the machine as data
#
# Everything lumikit knows about LUMI lives in one file, `lumikit/sites/lumi.toml`, that an instructor edits once
# per course edition: the node's GCDs and cores, the partitions and their limits, the containers, bind sets and
# environment recipes. The laptop profile inherits it, so commands render exactly as on LUMI.

# %%
import pandas as pd

lumi = load_site("lumi")
pd.DataFrame([{"partition": p.name, "kind": p.kind, "nodes": "exclusive" if p.exclusive else "shared",
               "max nodes": p.max_nodes, "max time": p.max_time} for p in lumi.partitions.values()])

# %% [markdown]
# **Read it as:** `-g` partitions have GPUs; `standard-g` gives whole nodes, `small-g` and `dev-g` share them.
# `dev-g` is for short tests (3 hours at most).
#
# ## Your own settings
#
# Your project number and the course reservation are yours, not the workbook's: they come from
# `~/.config/lumikit/config.toml` or the variables `LUMIKIT_ACCOUNT` and `LUMIKIT_RESERVATION`.

# %%
from lumikit.config import config_path, load_config

cfg = load_config()
print(f"config file: {config_path()} ({'found' if cfg.source else 'not there'})")
missing = '(not set: add account = "project_4650XXXXX" to the file)'
print(f"account: {cfg.account or missing}")
print(f"reservation: {cfg.reservation or '(none)'}")

# %% [markdown]
# ## What runs for real here?
#
# What this machine has. The mode line above says what the cells use: a Slurm client found here is used only where
# the site is a Slurm one (`lumi`, or `lumi-sim` for a rehearsal); with `laptop`, jobs stay local processes.

# %%
import shutil

checks = {
    "Slurm client (sbatch)": shutil.which("sbatch") is not None,
    "rocm-smi": shutil.which("rocm-smi") is not None,
    "nvidia-smi": shutil.which("nvidia-smi") is not None,
    "singularity": shutil.which("singularity") is not None,
}
try:
    from lumikit.gpu import torch_sees_gpu
    checks["PyTorch sees a GPU"] = torch_sees_gpu()
except ImportError:
    checks["PyTorch installed"] = False
pd.Series(checks, name="available here").to_frame()

# %% [markdown]
# Where something is missing, the workbook falls back: jobs run as local processes, the GPU dashboard replays a
# **generated** session (written by `lumikit.smi.synth` in `rocm-smi`'s format, its readings calibrated on real LUMI
# outputs), and profiles come from small runs on the CPU. Whatever is generated says so where you meet it. Beside
# it the modules show **real outputs** taken on LUMI and on AMD GPUs, each with the page and commit it comes from
# (`lumikit.reference`, files in `lumikit/data/reference/` with their licences in `SOURCES.toml`):

# %%
from lumikit import reference

pd.DataFrame([{"real output": r.name, "kind": r.kind, "machine": r.machine,
               "source": f"{r.repo or 'recorded for this project'} ({r.licence})"}
              for r in reference.catalogue()]).set_index("real output")

# %% [markdown]
# The next module, **01**, builds your first LUMI job.

# %% [markdown]
# ## Key points
#
# - Every cell that runs something says where it ran.
# - Your account and reservation live in ~/.config/lumikit/config.toml or LUMIKIT_* variables.
# - Each module is a lesson, then an exercise notebook with checks, then its solution.
