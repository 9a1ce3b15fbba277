# %% [markdown]
# # 10 · JAX on LUMI: exercise
#
# One exercise on a JAX job: build it, predict what JAX will list, then run it where JAX is installed (on LUMI, in
# the JAX container; on a laptop only when this kernel has JAX). Where it cannot run, the cell shows the command and
# the check grades the job and your prediction.
#
# What to find, and why it matters: how many devices JAX sees in a job, which depends on what Slurm hands the
# task, not on the node (a job that asks for no GPU runs JAX on the CPU without an error, and its timings then
# measure the CPU).

# %%
import importlib.util
import sys

import lumikit.checks.seeds as seed_checks
from lumikit.jobs import render_srun, spec
from lumikit.launch import get_backend, launch, mode_line
from lumikit.site import load_site

site = load_site("lumi")
backend = get_backend()
jax_here = importlib.util.find_spec("jax") is not None
print(mode_line(), "· JAX in this kernel:", jax_here)
JAX_PROGRAM = 'import jax; print("devices:", jax.devices())'

# %% tags=["exercise"]
# Exercise 10.S1: Build a job (`jax_job`) that runs `JAX_PROGRAM` with `python -c` in the JAX container on small-g,
# one task with 2 GCDs (`gpus_per_node=2`), 5 minutes. Predict how many devices `jax.devices()` lists in it
# (`devices_expected`). Then run it where you can (Slurm, or this kernel when it has JAX) and store what it printed in
# `jax_output` ("" where it cannot run). Keep the packages of your ~/.local out of the container's Python (a jax
# installed there with `pip install --user` would shadow the container's ROCm build).
jax_job = None
devices_expected = None
jax_output = None
job = None
run = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("10.S1")
raise NotImplementedError("Exercise 10.S1: write your answer above, then delete this line")

# %% tags=["check"]
seed_checks.check_jax_job(jax_job, devices_expected, jax_output)

# %% [markdown]
# ## One process per GCD
#
# A multi-node JAX run starts one process per GCD, as PyTorch's DDP does, and joins them with
# `jax.distributed.initialize()`, which reads the Slurm task layout. Each process then has local devices and the
# whole job has global ones.

# %%
import lumikit.checks.handson as handson_checks

# %% tags=["exercise"]
# Exercise 10.2: Build `per_gcd_job`: the same program in the JAX container on small-g, 5 minutes, as one process
# per GCD on 2 GCDs. How many devices does `jax.local_devices()` list in each process (`devices_per_process`), and
# how many processes does `jax.process_count()` report (`process_count`)?
per_gcd_job = None
devices_per_process = None
process_count = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("10.2")
raise NotImplementedError("Exercise 10.2: write your answer above, then delete this line")

# %% tags=["check"]
handson_checks.check_jax_per_gcd(per_gcd_job, devices_per_process, process_count)

# %% [markdown] tags=["exercise"]
# **Question 10.A.** Why does JAX list two devices in this job, what would it list with
# `--ntasks-per-node=2 --gpus-per-task=1`, and what happens to a job that forgets `--gpus-per-node`?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._
