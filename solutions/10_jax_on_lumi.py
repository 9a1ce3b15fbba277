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

# %% tags=["solution"]
# Exercise 10.S1: Build a job (`jax_job`) that runs `JAX_PROGRAM` with `python -c` in the JAX container on small-g,
# one task with 2 GCDs (`gpus_per_node=2`), 5 minutes. Predict how many devices `jax.devices()` lists in it
# (`devices_expected`). Then run it where you can (Slurm, or this kernel when it has JAX) and store what it printed in
# `jax_output` ("" where it cannot run). Keep the packages of your ~/.local out of the container's Python (a jax
# installed there with `pip install --user` would shadow the container's ROCm build).
# Hint: the job's shape decides what JAX sees, not the node; keep your own ~/.local packages out of the container's Python.
# Tool: `spec([...], partition=..., gpus_per_node=..., time=..., container=..., env={...})`.
jax_job = spec(["python", "-c", JAX_PROGRAM], partition="small-g", gpus_per_node=2, time="0:05:00",
               container="jax", env={"PYTHONNOUSERSITE": "1"})
devices_expected = 2
print("On LUMI:", render_srun(jax_job, site).text())
jax_output = ""
if backend.name == "slurm" or jax_here:
    job = jax_job if backend.name == "slurm" else jax_job.with_(command=(sys.executable, "-c", JAX_PROGRAM))
    run = launch(job)
    run.wait(timeout=200, progress=False)  # a bound on the job's state, generous for a loaded machine
    jax_output = run.stdout(0)
print(jax_output or "not run here: no Slurm and no JAX in this kernel")

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

# %% tags=["solution"]
# Exercise 10.2: Build `per_gcd_job`: the same program in the JAX container on small-g, 5 minutes, as one process
# per GCD on 2 GCDs. How many devices does `jax.local_devices()` list in each process (`devices_per_process`), and
# how many processes does `jax.process_count()` report (`process_count`)?
# Hint: count GPUs per task, not per node.
# Tool: `spec([...], ntasks_per_node=..., gpus_per_task=..., container="jax", ...)`.
per_gcd_job = spec(["python", "-c", JAX_PROGRAM], partition="small-g", ntasks_per_node=2, gpus_per_task=1,
                   time="0:05:00", container="jax", env={"PYTHONNOUSERSITE": "1"})
devices_per_process = 1
process_count = 2
print("On LUMI:", render_srun(per_gcd_job, site).text())

# %% tags=["check"]
handson_checks.check_jax_per_gcd(per_gcd_job, devices_per_process, process_count)

# %% [markdown] tags=["solution"]
# **Question 10.A.** Why does JAX list two devices in this job, what would it list with
# `--ntasks-per-node=2 --gpus-per-task=1`, and what happens to a job that forgets `--gpus-per-node`?
#
# **Answer.** Slurm gives the one task both GCDs, so JAX lists two devices (on a laptop with JAX it lists the
# CPU instead: the check then only reads that a device list was printed). With `--ntasks-per-node=2 --gpus-per-task=1`
# each process would see one GCD and list one device, which is the layout a multi-node JAX run needs (one process per
# GCD, `jax.distributed.initialize`). A job without `--gpus-per-node` gets no GPU and JAX quietly falls back to the
# CPU: read the device list before trusting a timing.
