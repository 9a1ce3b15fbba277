# %% [markdown]
# # 07 · Several GPUs: exercises
#
# The summer school's three tasks (one GPU, DDP on two, DataParallel on two) and its seven questions, answered with
# numbers from runs of the course ResNet that the cells below start. Off LUMI the runs are tiny CPU runs (a small
# ResNet on 128 generated images, one CPU thread per process so that one core plays one device; DDP ranks talk
# through `gloo`); on LUMI the same
# cells train the seed's ResNet-152 on CIFAR-100 on real GCDs. The exercises compute the answers from the run
# folders, so they hold in both places; the numbers differ. What to find, and why it matters: what a second device
# buys you, and at which cost (DDP against DataParallel, the first epoch, model and batch size), so that you ask
# LUMI for GCDs that your training can use.

# %%
import pandas as pd

import lumikit.checks.m07 as checks
from lumikit.jobs import workload_spec
from lumikit.launch import get_backend, launch, mode_line

print(mode_line())
on_slurm = get_backend().name == "slurm"
size = (dict(model="resnet152", other="resnet50", batch=128, samples=None, epochs=2, steps=50) if on_slurm else
        dict(model="tiny", other="small", batch=8, samples=128, epochs=2, steps=5))
limit = 3600 if on_slurm else 180


def resnet_job(mode: str, *, tasks: int = 1, gpus: int = 1, batch: int = size["batch"], model: str = size["model"],
               epochs: int | None = size["epochs"], steps: int | None = None):
    """A job that trains the course ResNet in `mode` with `tasks` Slurm tasks on `gpus` GCDs."""
    args = ["--mode", mode, "--model-size", model, "--batch-size", str(batch), "--no-progress"]
    args += ["--epochs", str(epochs)] if epochs else []
    args += ["--steps", str(steps)] if steps else []
    args += [] if size["samples"] is None else ["--samples", str(size["samples"])]
    return workload_spec("resnet", *args, name=f"resnet-{mode}-{model}-b{batch}", gcds=gpus,
                         ntasks_per_node=tasks, time="0:30:00")


def run_and_read(job) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Launch `job`, wait for it, and read rank 0's step rows, epoch rows and summary from its run folder."""
    run = launch(job)
    print(mode_line(), "->", run.result(timeout=limit), "|", run.stdout().strip().splitlines()[0])
    metrics = run.metrics()
    return metrics.steps, metrics.epochs, metrics.result


# %% [markdown]
# ## The three tasks
#
# Task 1 runs two epochs on one device; Tasks 2 and 3 one epoch each on two. Before you run them, predict.

# %%
checks.DP_OR_DDP  # the question and its options

# %% tags=["exercise"]
# Exercise 07.q2: Predict before the runs: on two devices, which reaches more samples per second? Store the letter of your prediction in `dp_or_ddp_prediction`.
dp_or_ddp_prediction = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.q2")
raise NotImplementedError("Exercise 07.q2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_dp_or_ddp_prediction(dp_or_ddp_prediction)

# %%
single_steps, single_epochs, single = run_and_read(resnet_job("single"))

# %%
_, ddp_epochs, ddp = run_and_read(resnet_job("ddp", tasks=2, gpus=2, epochs=1))

# %%
_, _, dp = run_and_read(resnet_job("dp", gpus=2, epochs=1))

# %%
columns = ["mode", "world_size", "batch_size", "global_batch_size", "steps_per_epoch", "mean_step_time_s",
           "global_samples_per_s", "elapsed_s"]
pd.DataFrame([{c: s[c] for c in columns} for s in (single, ddp, dp)]).set_index("mode").round(3)

# %% tags=["exercise"]
# Exercise 07.1: (question 3) How many steps make one epoch for each DDP rank? Store it in `ddp_steps_per_rank`.
# And which --batch-size per device would give the DDP run the same global batch as the single run? Store it in
# `same_global_batch`.
ddp_steps_per_rank = None
same_global_batch = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.1")
raise NotImplementedError("Exercise 07.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_ddp_steps(ddp_steps_per_rank, same_global_batch, single, ddp)

# %%
checks.FEWER_STEPS  # the question and its options

# %% tags=["exercise"]
# Exercise 07.q1: Why does each DDP rank run fewer iterations per epoch? Pick one of the options shown above and store its letter in `fewer_steps`.
fewer_steps = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.q1")
raise NotImplementedError("Exercise 07.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_fewer_steps(fewer_steps)

# %% tags=["exercise"]
# Exercise 07.2: (question 2) How many seconds longer was the first epoch of the single run than the second? Store
# it in `first_epoch_extra_s`. How much longer was its first step than the median of the other first-epoch steps?
# Store that in `first_step_extra_s`.
first_epoch_extra_s = None
first_step_extra_s = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.2")
raise NotImplementedError("Exercise 07.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_first_epoch(first_epoch_extra_s, first_step_extra_s, single_epochs, single_steps)

# %% tags=["exercise"]
# Exercise 07.3: (question 4) How many times the single run's samples/s did DDP reach (`ddp_speedup`), and what
# fraction of perfect scaling is that per rank (`ddp_efficiency`, 1.0 = two ranks give twice the samples/s)?
ddp_speedup = None
ddp_efficiency = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.3")
raise NotImplementedError("Exercise 07.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_ddp_gain(ddp_speedup, ddp_efficiency, single, ddp)

# %% tags=["exercise"]
# Exercise 07.4: (question 5) How many times the single run's samples/s did DataParallel reach (`dp_speedup`), and
# how much longer was each DP step than a single-device step (`dp_overhead`, 0.25 = 25 % longer)?
dp_speedup = None
dp_overhead = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.4")
raise NotImplementedError("Exercise 07.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_dp_cost(dp_speedup, dp_overhead, single, dp)

# %% tags=["exercise"]
# Exercise 07.q3: Now compare with your prediction: which option do the measured samples/s of DDP and DP show? Store the letter in `dp_or_ddp_outcome`.
ddp_rate = None
dp_rate = None
dp_or_ddp_outcome = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.q3")
raise NotImplementedError("Exercise 07.q3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_dp_or_ddp_outcome(dp_or_ddp_outcome, dp_or_ddp_prediction,
                               measured={"ddp_samples_per_s": ddp["global_samples_per_s"],
                                         "dp_samples_per_s": dp["global_samples_per_s"]})

# %% [markdown]
# ## Model size and batch size (questions 6 and 7)
#
# A few steps on one device with another model size (off LUMI a larger one, to keep the runs short; on LUMI the
# seed's smaller ResNet-50 against ResNet-152), then with twice the batch.

# %%
_, _, other = run_and_read(resnet_job("single", model=size["other"], epochs=None, steps=size["steps"]))

# %%
_, _, big_batch = run_and_read(resnet_job("single", batch=2 * size["batch"], epochs=1))
# Model state in float32: weights + gradients + SGD momentum = 12 bytes per parameter (activations come on top).
pd.DataFrame([{"model": s["model_size"], "batch": s["batch_size"], "parameters": s["parameters"],
               "model state (MB)": s["parameters"] * 12 / 1e6, "mean step (s)": s["mean_step_time_s"],
               "samples/s": s["global_samples_per_s"]} for s in (single, other, big_batch)]).round(3)

# %% tags=["exercise"]
# Exercise 07.5: (question 6) How many times the parameters of the base model has the other model (`param_ratio`),
# and how many times its mean step time (`step_time_ratio`)?
param_ratio = None
step_time_ratio = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.5")
raise NotImplementedError("Exercise 07.5: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_model_size(param_ratio, step_time_ratio, single, other)

# %% tags=["exercise"]
# Exercise 07.6: (question 7) With twice the batch per device, how many times the step time (`batch_step_ratio`)
# and how many times the samples/s (`batch_throughput_ratio`)?
batch_step_ratio = None
batch_throughput_ratio = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.6")
raise NotImplementedError("Exercise 07.6: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_batch_size(batch_step_ratio, batch_throughput_ratio, single, big_batch)

# %% [markdown]
# ## Discussion: the seven questions
#
# The numbers are the ones printed above, from one run of each kind. Off LUMI they come from CPU runs on a machine
# with two cores (often shared), so one run of each is mostly noise: the lesson (module 07) repeats the three
# runs, interleaved, and says which differences are beyond the noise. Read the ratios printed here with that in
# mind; each answer says what LUMI is expected to show instead, and where a real LUMI number exists, which.

# %% [markdown] tags=["exercise"]
# **Seed question 1 (utilisation and VRAM).** For each task, look at the GPU utilisation and the VRAM. How could you
# use more of the VRAM, and how do you judge utilisation on LUMI?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 2 (the first epoch).** Why is the first epoch slower than the other epochs?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 3 (fewer iterations per rank).** Why is the total number of iterations different in DDP?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 4 (DDP overheads).** Do you see any overheads for the DDP training? Where do they come from?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 5 (dataparallel against DDP).** Why is DataParallel on 2 GPUs not as fast as DDP? How much is the
# overhead?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 6 (model size).** Switching to another model size (ResNet-50 against ResNet-152 on LUMI): how does
# it affect the training speed? Does it match your expectations based on the number of parameters?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Seed question 7 (batch size).** Switching to a larger batch size: how does it affect the training speed? Does it
# match your expectations based on VRAM utilisation?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## Which two GCDs did the job get?
#
# A small-g job with `--gpus-per-node=2` gets two GCDs that Slurm picks, numbered 0 and 1 inside the job whatever they
# are. Both may sit on one MI250X (in-package link, 200 GB/s per direction) or on two (one link between packages,
# 50 GB/s). The output below is **generated** in rccl-tests' format for a pair chosen for you (no real LUMI output
# is shipped; on LUMI, `srun -n 2 all_reduce_perf -b 8 -e 256M -f 2 -g 1` in your own 2-GCD job gives the real one).

# %%
from lumikit.logs.collbench import gcds_of, link_for, links_table, parse_collbench
from lumikit.site import load_site

output = checks.pair_output()
print(output[:900])
pd.DataFrame(links_table("lumi")).T[["gb_s", "description"]]

# %% tags=["exercise"]
# Exercise 07.7: From `output`, store the two physical GCDs of the job in `pair_gcds` (a list), the name of the link
# between them (a key of the table above) in `pair_link`, and the largest out-of-place bus bandwidth as a share of
# that link's peak in `busbw_fraction`.
bench = None
pair_gcds = None
packages = None
pair_link = None
busbw_fraction = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("07.7")
raise NotImplementedError("Exercise 07.7: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_gcd_pair(pair_gcds, pair_link, busbw_fraction)
