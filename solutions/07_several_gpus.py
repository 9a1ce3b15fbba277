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

# %% tags=["solution"]
# Exercise 07.q2: Predict before the runs: on two devices, which reaches more samples per second? Store the letter of your prediction in `dp_or_ddp_prediction`.
# Hint: there is no wrong prediction here; think of how many Python processes drive the devices in each mode.
dp_or_ddp_prediction = "a"

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

# %% tags=["solution"]
# Exercise 07.1: (question 3) How many steps make one epoch for each DDP rank? Store it in `ddp_steps_per_rank`.
# And which --batch-size per device would give the DDP run the same global batch as the single run? Store it in
# `same_global_batch`.
# Hint: one DDP step uses a batch on every rank at once.
# Tool: the summaries' `dataset_size`, `batch_size`, `world_size`.
ddp_steps_per_rank = ddp["dataset_size"] // (ddp["batch_size"] * ddp["world_size"])
same_global_batch = single["global_batch_size"] // ddp["world_size"]
print(f"single: {single['steps_per_epoch']} steps per epoch; DDP: {ddp_steps_per_rank} per rank; "
      f"--batch-size {same_global_batch} keeps the global batch at {single['global_batch_size']}")

# %% tags=["check"]
checks.check_ddp_steps(ddp_steps_per_rank, same_global_batch, single, ddp)

# %%
checks.FEWER_STEPS  # the question and its options

# %% tags=["solution"]
# Exercise 07.q1: Why does each DDP rank run fewer iterations per epoch? Pick one of the options shown above and store its letter in `fewer_steps`.
# Hint: compare `batch_size`, `global_batch_size` and `steps_per_epoch` of the runs in the table.
fewer_steps = "b"

# %% tags=["check"]
checks.check_fewer_steps(fewer_steps)

# %% tags=["solution"]
# Exercise 07.2: (question 2) How many seconds longer was the first epoch of the single run than the second? Store
# it in `first_epoch_extra_s`. How much longer was its first step than the median of the other first-epoch steps?
# Store that in `first_step_extra_s`.
# Hint: a difference of times, epoch against epoch and the first step against a typical one.
# Tool: `single_epochs` (`epoch_time_s`) and `single_steps` (`epoch`, `step_time_s`).
first_epoch_extra_s = single_epochs["epoch_time_s"].iloc[0] - single_epochs["epoch_time_s"].iloc[1]
first_step_extra_s = (single_steps["step_time_s"].iloc[0]
                      - single_steps.loc[single_steps["epoch"] == 0, "step_time_s"].iloc[1:].median())
print(f"epoch times {single_epochs['epoch_time_s'].round(3).tolist()} s: first epoch {first_epoch_extra_s:+.3f} s; "
      f"first step {single_steps['step_time_s'].iloc[0]:.3f} s, {first_step_extra_s:+.3f} s against the median")

# %% tags=["check"]
checks.check_first_epoch(first_epoch_extra_s, first_step_extra_s, single_epochs, single_steps)

# %% tags=["solution"]
# Exercise 07.3: (question 4) How many times the single run's samples/s did DDP reach (`ddp_speedup`), and what
# fraction of perfect scaling is that per rank (`ddp_efficiency`, 1.0 = two ranks give twice the samples/s)?
# Hint: compare the work done per second by all ranks together; per rank, divide by the ranks.
# Tool: `global_samples_per_s` and `world_size`.
ddp_speedup = ddp["global_samples_per_s"] / single["global_samples_per_s"]
ddp_efficiency = ddp_speedup / ddp["world_size"]
print(f"DDP: {ddp_speedup:.2f}x the samples/s of one device = {ddp_efficiency:.0%} scaling efficiency; "
      f"threads per rank {ddp['cpu_threads']} (single run: {single['cpu_threads']}), backend {ddp['backend']}")

# %% tags=["check"]
checks.check_ddp_gain(ddp_speedup, ddp_efficiency, single, ddp)

# %% tags=["solution"]
# Exercise 07.4: (question 5) How many times the single run's samples/s did DataParallel reach (`dp_speedup`), and
# how much longer was each DP step than a single-device step (`dp_overhead`, 0.25 = 25 % longer)?
# Hint: throughput for the first answer, the step time for the second.
# Tool: `global_samples_per_s`, `mean_step_time_s`.
dp_speedup = dp["global_samples_per_s"] / single["global_samples_per_s"]
dp_overhead = dp["mean_step_time_s"] / single["mean_step_time_s"] - 1
print(f"DP: {dp_speedup:.2f}x the samples/s (global batch {dp['global_batch_size']}), step {dp_overhead:+.0%}; "
      f"DDP reached {ddp_speedup / dp_speedup:.2f}x DP's samples/s")

# %% tags=["check"]
checks.check_dp_cost(dp_speedup, dp_overhead, single, dp)

# %% tags=["solution"]
# Exercise 07.q3: Now compare with your prediction: which option do the measured samples/s of DDP and DP show? Store the letter in `dp_or_ddp_outcome`.
# Hint: "about the same" means within 5 %.
ddp_rate, dp_rate = ddp["global_samples_per_s"], dp["global_samples_per_s"]
dp_or_ddp_outcome = "a" if ddp_rate > 1.05 * dp_rate else "b" if dp_rate > 1.05 * ddp_rate else "c"
print(f"DDP {ddp_rate:.1f} samples/s, DP {dp_rate:.1f} samples/s -> ({dp_or_ddp_outcome})")

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

# %% tags=["solution"]
# Exercise 07.5: (question 6) How many times the parameters of the base model has the other model (`param_ratio`),
# and how many times its mean step time (`step_time_ratio`)?
# Hint: a ratio of the other model to the base, for the parameters and for the step time.
# Tool: the summaries' `parameters` and `mean_step_time_s`.
param_ratio = other["parameters"] / single["parameters"]
step_time_ratio = other["mean_step_time_s"] / single["mean_step_time_s"]
print(f"{other['model_size']} against {single['model_size']}: {param_ratio:.1f}x the parameters, "
      f"{step_time_ratio:.1f}x the step time")

# %% tags=["check"]
checks.check_model_size(param_ratio, step_time_ratio, single, other)

# %% tags=["solution"]
# Exercise 07.6: (question 7) With twice the batch per device, how many times the step time (`batch_step_ratio`)
# and how many times the samples/s (`batch_throughput_ratio`)?
# Hint: compare the run with the bigger batch with the single run.
# Tool: `mean_step_time_s`, `global_samples_per_s`.
batch_step_ratio = big_batch["mean_step_time_s"] / single["mean_step_time_s"]
batch_throughput_ratio = big_batch["global_samples_per_s"] / single["global_samples_per_s"]
print(f"batch {single['batch_size']} -> {big_batch['batch_size']}: {batch_step_ratio:.2f}x the step time, "
      f"{batch_throughput_ratio:.2f}x the samples/s")

# %% tags=["check"]
checks.check_batch_size(batch_step_ratio, batch_throughput_ratio, single, big_batch)

# %% [markdown]
# ## Discussion: the seven questions
#
# The numbers are the ones printed above, from one run of each kind. Off LUMI they come from CPU runs on a machine
# with two cores (often shared), so one run of each is mostly noise: the lesson (module 07) repeats the three
# runs, interleaved, and says which differences are beyond the noise. Read the ratios printed here with that in
# mind; each answer says what LUMI is expected to show instead, and where a real LUMI number exists, which.

# %% [markdown] tags=["solution"]
# **Seed question 1 (utilisation and VRAM).** For each task, look at the GPU utilisation and the VRAM. How could you
# use more of the VRAM, and how do you judge utilisation on LUMI?
#
# **Answer.** A CPU has no VRAM to watch. The model state in the table before 07.5 (weights, gradients and momentum
# in float32: 12 bytes per parameter) is small; most of a GPU's memory goes to the activations, which grow with the
# batch, so a larger batch per device uses more of it. For ResNet-152 at batch 128 the CSC summer school's lecture
# estimates about 24 GB of a GCD's 64 GB (an estimate, `hpc-ai/docs/03-gpu-computation.md` in
# csc-training/summerschool). Judge utilisation by power rather than `GPU%`: a busy GCD's package draws about 300 W
# (a real LUMI reading: 324 W, `lumikit.reference.load("rocm-smi-one-gcd-busy")`). DataParallel is expected to use
# more memory on GCD 0, where it gathers outputs.

# %% [markdown] tags=["solution"]
# **Seed question 2 (the first epoch).** Why is the first epoch slower than the other epochs?
#
# **Answer.** 07.2 shows how much of the first epoch's extra time is its first step. On a CPU that warm-up is small,
# and noise can make the second epoch the slower one. On LUMI the first epoch is expected to be slower: it carries
# MIOpen's search for the fastest convolution kernels, the first reads of the data set and memory allocation, which
# later epochs reuse (no real LUMI epoch timings are shipped with the workbook).

# %% [markdown] tags=["solution"]
# **Seed question 3 (fewer iterations per rank).** Why is the total number of iterations different in DDP?
#
# **Answer.** Each DDP rank takes its own batch every step, so one step consumes batch x ranks samples and an epoch
# has data set / (batch x ranks) steps per rank (07.1). Keeping the global batch means dividing `--batch-size` by
# the number of ranks, as the summer school's TODO suggests.

# %% [markdown] tags=["solution"]
# **Seed question 4 (DDP overheads).** Do you see any overheads for the DDP training? Where do they come from?
#
# **Answer.** Starting the ranks and joining the process group cost time before the first step (compare `elapsed_s`
# in the table), and every step ends with an all-reduce of the gradients (through `gloo` and shared memory here).
# Here the two ranks also share two cores and whatever else runs on the machine, so the speed-up of 07.3 may be
# anything from a loss to nearly 2x from one run to the next. On LUMI each rank has its own GCD and RCCL's
# all-reduce overlaps the backward pass; a real 8-GCD DDP run of the LUMI AI workshop's GPT-neo fine-tuning ran at
# about 2.2 it/s with the one-GCD run's global batch of 32 (`lumikit.reference.load("slurm-8gcd-gpt-neo")`, about
# 7.5 min for 1000 steps, against "just under 30 minutes" that the workshop's script comment gives for one GCD).

# %% [markdown] tags=["solution"]
# **Seed question 5 (dataparallel against DDP).** Why is DataParallel on 2 GPUs not as fast as DDP? How much is the
# overhead?
#
# **Answer.** Without GPUs DataParallel has nothing to split over: it runs the model in the one process with the
# single run's global batch, so whatever 07.4 prints here measures the wrapper and the noise, not DP (and 07.q3
# compares your prediction with this one run only). On LUMI DP is expected to be slower than DDP: it splits each
# batch over both GCDs but, from one Python process, copies the model to every GCD, scatters the inputs and gathers
# the outputs on GCD 0 in every step (the summer school asks why; no real LUMI timing of DP is shipped with the
# workbook).

# %% [markdown] tags=["solution"]
# **Seed question 6 (model size).** Switching to another model size (ResNet-50 against ResNet-152 on LUMI): how does
# it affect the training speed? Does it match your expectations based on the number of parameters?
#
# **Answer.** 07.5 compares the parameter ratio with the step-time ratio. Step time follows the arithmetic (FLOPs
# per image), not the parameter count: the wider and deeper convolutions work on large images early in the network,
# while many parameters sit in the last, small-image stages. For ResNet-50 against ResNet-152 the published model
# figures are 25.6 M against 60.2 M parameters and 4.1 against 11.5 GFLOP per forward pass at 224x224 (torchvision's
# model pages, pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html and ...resnet152.html;
# the 60.2 M and 11.5 GFLOP also in the summer school's lecture), so on a GCD expect a step roughly 2.5-3x faster,
# not exactly the parameter ratio.

# %% [markdown] tags=["solution"]
# **Seed question 7 (batch size).** Switching to a larger batch size: how does it affect the training speed? Does it
# match your expectations based on VRAM utilisation?
#
# **Answer.** 07.6 prints how the step time and the samples/s changed with twice the batch. On one CPU core the
# arithmetic per sample stays the same, so only the fixed cost of a step (Python, launching the operations) is
# shared by more samples, and the change can drown in noise. On a GCD a larger batch is expected to fill more of
# the compute units and more of the 64 GB, and samples/s to rise until the GCD is saturated or memory runs out.

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

# %% tags=["solution"]
# Exercise 07.7: From `output`, store the two physical GCDs of the job in `pair_gcds` (a list), the name of the link
# between them (a key of the table above) in `pair_link`, and the largest out-of-place bus bandwidth as a share of
# that link's peak in `busbw_fraction`.
# Hint: the output's bus ids say which GCDs ran; two GCDs of one MI250X share a package; the largest messages measure
# the link.
# Tool: lumikit's `parse_collbench` and `gcds_of`; the site profile's GCDs (their `package`) and links.
bench = parse_collbench(output, "07.7")
pair_gcds = sorted(gcds_of(bench, "lumi").values())
packages = {site_gcd.package for site_gcd in load_site("lumi").node.gcds if site_gcd.index in pair_gcds}
pair_link = "gcd_in_package" if len(packages) == 1 else "gcd_between_packages"
busbw_fraction = bench.peak.busbw / links_table("lumi")[pair_link]["gb_s"]
print(pair_gcds, pair_link, round(busbw_fraction, 3), "|", link_for(bench, "lumi").text())

# %% tags=["check"]
checks.check_gcd_pair(pair_gcds, pair_link, busbw_fraction)
