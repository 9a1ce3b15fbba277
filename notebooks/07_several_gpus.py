# %% [markdown]
# > **Module 07 at a glance.** About **100 minutes** (lesson and exercises). Before it: module(s) 03, 05.
# >
# > **Objectives.** After it you can:
# > - run DDP with one task per GCD, and compare it with DataParallel
# > - start DDP with srun or torchrun

# %% [markdown]
# # 07 · Several GPUs on one node
#
# A LUMI-G node has 8 GCDs, and PyTorch sees each one as a GPU. There are three common ways to train one model on
# two (or eight) of them:
#
# | way | processes | what happens in every step |
# |---|---|---|
# | `nn.DataParallel` (DP) | **one** | the batch is split over the GPUs; the model is copied to every GPU, the outputs and gradients are gathered on GPU 0; one Python process (one GIL) drives all GPUs with threads |
# | `DistributedDataParallel` (DDP), one task per GCD | **one per GCD** (`srun --ntasks-per-node=2`) | each process sees both GCDs and uses device `LOCAL_RANK`, with its own model replica and batch; only the gradients travel, summed by an all-reduce (RCCL on LUMI) that overlaps the backward pass |
# | DDP started by `torchrun` | one Slurm task that starts one process per GCD | the same DDP, with `torchrun` (not Slurm) setting `RANK`, `LOCAL_RANK` and `WORLD_SIZE` |
#
# PyTorch's documentation of `DataParallel` recommends DDP instead, even on one node. The CSC summer school compares
# the three with ResNet-152 on CIFAR-100; here we do the same with the course's ResNet workload (`python -m
# lumikit.workloads.resnet`), which reads the real CIFAR-100 where it is installed and generates a stand-in of the
# same shape (3×32×32, 100 classes) elsewhere.
#
# Every process gets **one CPU thread** (`OMP_NUM_THREADS=1`, as in the summer school's DDP script). On LUMI the GCD
# does the arithmetic; without GPUs it makes one core play the part of one device, so two ranks have two "devices".

# %%
import pandas as pd

from lumikit.course_jobs import RESNET_SIZES, resnet_job as course_resnet_job, scale_for
from lumikit.jobs import render_sbatch
from lumikit.launch import get_backend, launch, mode_line

print(mode_line())
on_slurm = get_backend().name == "slurm"
# On LUMI: the seed's ResNet-152 and batch 128 on the full data set. Elsewhere (a laptop, lumi-sim's CPU-only
# nodes): a tiny ResNet on 128 generated images. The jobs come from lumikit's list of the course's jobs.
scale = scale_for()
size = RESNET_SIZES[scale]


def resnet_job(mode: str, *, tasks: int = 1, gpus: int = 1, epochs: int | None = None):
    """A job that trains the course ResNet in `mode` (single, dp or ddp) with `tasks` Slurm tasks on `gpus` GCDs."""
    return course_resnet_job(mode, tasks=tasks, gpus=gpus, epochs=epochs, scale=scale)


print(size)

# %% [markdown]
# ## Task 1: one GPU
#
# `--batch-size` is the batch **per device**. One GCD, so the global batch is the same number.

# %%
single = launch(resnet_job("single"))
print(mode_line(), "->", single.wait(timeout=3600 if on_slurm else 180))
print(single.stdout().strip())
single_metrics = single.metrics()  # rank 0's rows per step (.steps) and per epoch (.epochs), its summary (.result)
single_metrics.epochs[["epoch_end", "steps", "epoch_time_s", "loss"]]

# %% [markdown]
# **How to read it:** the first line says the model, the batch per device and the global batch, and how many steps
# make an epoch (data set size ÷ global batch; the tail that does not fill a batch is dropped). The table has one row
# per epoch. On LUMI the first epoch is expected to be the slower one: it carries MIOpen's search for the fastest
# convolution kernels (cached per node afterwards), the first reads of the data set and memory allocation (the
# CSC summer school asks why; no real LUMI epoch timings are shipped with the workbook). On a CPU only the first step
# or two are slower, so the gap is small and noise on a busy machine can hide it or reverse it:

# %%
epoch_s = single_metrics.epochs["epoch_time_s"].tolist()
print(f"epoch times here: {', '.join(f'{s:.3f} s' for s in epoch_s)}; the first epoch took "
      f"{epoch_s[0] / epoch_s[1]:.2f}x the second" if len(epoch_s) > 1 else f"epoch time here: {epoch_s[0]:.3f} s")

# %%
ax = single_metrics.steps.plot(x="step", y="step_time_s", marker=".", legend=False,
                               title="single device: time per step")
ax.set_ylabel("seconds");

# %% [markdown]
# ## Task 2: DDP on two GPUs, one task per GCD
#
# Two Slurm tasks, one per GCD; each is a full Python process with its own model replica. With the same
# `--batch-size` per device the **global** batch doubles, so each rank takes **half as many steps** per epoch.
# (To keep the global batch of Task 1, give `--batch-size` ÷ 2 instead.) Without GPUs the ranks use the `gloo`
# backend on the CPU and share this machine's cores.

# %%
ddp = launch(resnet_job("ddp", tasks=2, gpus=2))
print(mode_line(), "->", ddp.wait(timeout=3600 if on_slurm else 180))
print(ddp.stdout().strip())
ddp_metrics = ddp.metrics()
ddp_metrics.epochs[["epoch_end", "steps", "epoch_time_s", "loss"]]

# %% [markdown]
# ## Task 3: DataParallel on two GPUs
#
# One task with two GCDs; `nn.DataParallel` splits each batch of `--batch-size` × GPUs samples over them.
# **Without a GPU there is nothing to split over**: PyTorch's `DataParallel` then just calls the model in the one
# process, so here Task 3 measures only the wrapper's cost (about nothing) and the global batch stays at one device's.
# On LUMI it uses both GCDs.

# %%
dp = launch(resnet_job("dp", gpus=2, epochs=1))
print(mode_line(), "->", dp.wait(timeout=3600 if on_slurm else 180))
print(dp.stdout().strip())
dp_metrics = dp.metrics()

# %% [markdown]
# ## The three side by side

# %%
keys = {"mode": "mode", "ranks": "world_size", "device": "device", "batch per device": "batch_size",
        "global batch": "global_batch_size", "steps per epoch": "steps_per_epoch",
        "mean step (s)": "mean_step_time_s", "samples/s (all ranks)": "global_samples_per_s"}
summaries = [m.result for m in (single_metrics, ddp_metrics, dp_metrics)]
table = pd.DataFrame([{k: s[v] for k, v in keys.items()} for s in summaries]).set_index("mode")
table.round(3)

# %% [markdown]
# **How to read it:** *steps per epoch* halves with two DDP ranks because the global batch doubles; *samples/s* is
# the number to compare, not the step time. But one run of each is one sample of a noisy machine, so no chart yet:
# the next section repeats them and draws the throughput from all the runs, with their spread.

# %% [markdown]
# ## Energy per step: predict, then measure
#
# Each of the three runs recorded its GPUs (`gpu/<node>.jsonl`, module 04), so its report card has the energy of
# its training steps. **Predict first:** per *sample* (not per step), which way uses the least energy on LUMI:
# one GCD, DDP on two, or DataParallel on two? Write it in `my_prediction` before running the measurement.

# %%
my_prediction = "ddp"  # your prediction: "single", "ddp" or "dp" uses the least energy per sample

# %%
from lumikit.record.lesson import energy_per_step

runs = {"single": single, "ddp": ddp, "dp": dp}
energy = energy_per_step({m: r.report(show=False) for m, r in runs.items()},
                         {m: r.metrics().result for m, r in runs.items()})
energy

# %% [markdown]
# **How to read it:** *J per step* is the record's energy over the steps' time window divided by the steps;
# *J per sample* divides it by the global batch, which is what makes the three comparable (DDP's step carries
# twice the samples). On LUMI expect DDP to spend the least per sample: both GCDs compute, and its all-reduce
# overlaps the backward pass; DataParallel keeps GCD 1 waiting while one process scatters and gathers, and a waiting
# GCD still draws power. The *readings* column says where the numbers come from: `recorded` on LUMI; `generated` on
# lumi-sim (a stand-in tool, not a measurement: its numbers test the pipeline, not your prediction); `none` on a
# laptop, where there is no GPU to record and *why not* says so. Only recorded readings can confirm or refute
# `my_prediction`.

# %% [markdown]
# ## Is the difference real? Repeat, interleave, look at the spread
#
# Two more rounds of the three runs, one epoch each, in turn (single, DDP, DP, single, DDP, DP), so that a slow
# moment of this shared machine hits every variant rather than one:

# %%
def one_round() -> dict:
    """Single, DDP and DP once each, one epoch, in that order; their metrics by mode."""
    got = {}
    for mode, tasks, gpus in [("single", 1, 1), ("ddp", 2, 2), ("dp", 1, 2)]:
        again = launch(resnet_job(mode, tasks=tasks, gpus=gpus, epochs=1))
        print(mode_line(), "->", again.wait(timeout=3600 if on_slurm else 180))
        got[mode] = again.metrics()
    return got


rounds = [{"single": single_metrics, "ddp": ddp_metrics, "dp": dp_metrics}, one_round()]

# %%
rounds.append(one_round())

# %%
from lumikit.measure import compare as compare_runs, measured

throughput = {mode: measured(mode, [r[mode].result["global_samples_per_s"] for r in rounds])
              for mode in ("single", "ddp", "dp")}
pd.DataFrame([{"mode": m.label, "median samples/s": m.median, "lowest": m.lo, "highest": m.hi,
               "runs": len(m.values)} for m in throughput.values()]).set_index("mode").round(1)

# %%
ddp_vs_single = compare_runs(throughput["ddp"], throughput["single"])
dp_vs_single = compare_runs(throughput["dp"], throughput["single"])
ddp_vs_dp = compare_runs(throughput["ddp"], throughput["dp"])
for c in (ddp_vs_single, dp_vs_single, ddp_vs_dp):
    print(c.sentence(unit="samples/s", fmt="{:.0f}", higher="faster", lower="slower"))
print()
print("DDP against one device here:", ddp_vs_single.verdict("faster", "slower"))
print("DP against DDP here:", compare_runs(throughput["dp"], throughput["ddp"]).verdict("faster", "slower"))
# the chart of the same runs: the median of each mode, the error bar from its lowest to its highest run
medians = pd.Series({m.label: m.median for m in throughput.values()})
spread = [[m.median - m.lo for m in throughput.values()], [m.hi - m.median for m in throughput.values()]]
ax = medians.plot.barh(xerr=spread, capsize=4, color="#1f77b4", figsize=(7, 2.4),
                       title=f"training throughput: median of {len(rounds)} runs each, bars from lowest to highest")
ax.set_xlabel("samples per second");

# %% [markdown]
# **How to read it:** each line gives the median and the range of three runs, and the chart draws the same numbers
# (a bar per median, an error bar per range); a difference counts only when the ranges do not overlap and the
# medians differ by more than 20 %. The verdicts are computed from the numbers above,
# so they hold for this machine at this moment, whatever they say. Here DDP's ranks share this machine's cores
# (one thread each) and sum their gradients through `gloo`; DP has no second device to split over, so it runs the
# model in its one process like the single run. **A laptop cannot show what the course is about**: two GCDs doing
# the arithmetic. What LUMI shows instead:
#
# - DDP on several GCDs: a real 8-GCD run of the LUMI AI workshop's GPT-neo fine-tuning (global batch 32, the same
#   as the one-GCD run) is printed below with its throughput; the workshop's script says the one-GCD run of the same
#   1000 steps "should take just under 30 minutes" (a comment in
#   `03_Your_first_AI_training_job_on_LUMI/reference_solution/GPT-neo-IMDB-finetuning.py`, not a measurement).
# - DP against DDP: expected slower, because one process scatters the batch, copies the model to every GCD and
#   gathers the outputs on GCD 0 in every step (the CSC summer school asks "why is DP slower than DDP"); no real
#   LUMI timing of DP is shipped with the workbook.

# %%
from lumikit import reference
from lumikit.logs import progress_summary

lumi_ddp = reference.load("slurm-8gcd-gpt-neo")
train = progress_summary(lumi_ddp.parsed())["training"]
print(f"8 GCDs, DDP: {train['median_it_per_s']} it/s median over {train['steps']} of {train['total']} steps "
      f"-> {train['total'] / train['median_it_per_s'] / 60:.1f} min for {train['total']} steps")
print(f"-- {lumi_ddp.source_line}")
#
# ## The torchrun way
#
# Instead of one Slurm task per GCD, start **one** task with all the node's cores and let `torchrun` start one
# process per GCD. It sets `RANK`, `LOCAL_RANK` and `WORLD_SIZE` for each process; the training script is the same.
# `torchrun` is `python -m torch.distributed.run`: run it with the job's own Python (this notebook's), and the
# processes it starts use that Python too.

# %%
from lumikit.course_jobs import torchrun_job as course_torchrun_job

# One task with 2 GCDs; its command is `python -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node=2`
# followed by the workload's own command without its Python (`-m lumikit.workloads.resnet ...`).
torchrun_job = course_torchrun_job(scale)
print(render_sbatch(torchrun_job, "lumi"))

# %% [markdown]
# **Read it as:** one task with 14 cores (7 per GCD) and 2 GCDs; `torchrun --standalone` needs no `MASTER_ADDR` on one
# node. On LUMI the course found no appreciable difference in speed between torchrun and one-task-per-GCD `srun`
# (LUMI course Q&A, LUMI-training-materials `docs/ai-20250204/E08_MultipleGPUs.md`); `srun` binds each rank's
# cores (module 08), `torchrun` is the easier step to several nodes with a rendezvous.
#
# The same job runs here too (one epoch):

# %%
via_torchrun = launch(torchrun_job)
print(mode_line(), "->", via_torchrun.wait(timeout=3600 if on_slurm else 180))
print(via_torchrun.stdout().strip().splitlines()[0])
ranks = sorted(p.name for p in via_torchrun.path.glob("metrics.rank*.jsonl"))
print("metrics files:", ", ".join(ranks))

# %% [markdown]
# **How to read it:** one task, yet two metrics files: `torchrun` started two ranks, and each wrote its own timings.
#
# ## Before the run: what the model needs from one GCD
#
# The seed asks how much of the GCD's memory (VRAM) ResNet-152 uses and whether ResNet-50 should be faster "by the
# number of parameters". Both can be computed before any job: `estimate_workload` builds the workload's model on
# PyTorch's `meta` device (shapes, no data, no GPU), counts parameters, gradients, the optimizer's state (SGD with
# momentum: one value per parameter) and the activations kept for the backward pass, and counts the FLOPs of one
# training step with PyTorch's `FlopCounterMode`.

# %%
from lumikit.model_estimate import compare, estimate_workload, largest_batch

seed_models = {name: estimate_workload("resnet", name, 128) for name in ("resnet152", "resnet50")}
estimates = pd.concat({name: e.table()["value"] for name, e in seed_models.items()}, axis=1)
estimates["unit"] = seed_models["resnet50"].table()["unit"]
print("largest batch that fits one GCD (64 GiB):", {n: largest_batch(e) for n, e in seed_models.items()})
estimates.round(3)

# %% [markdown]
# **How to read it:** at batch 128 on CIFAR's 32×32 images ResNet-152 needs about 7.3 GiB of the GCD's 64 GiB, and
# almost all of it is activations, which grow with the batch: that is the answer to "how to use more of the VRAM"
# (a larger batch, up to the printed largest one), while parameters, gradients and optimizer state stay under 1 GiB.
# ResNet-50 has 2.5× fewer parameters but its step costs 2.9× fewer FLOPs: the speed follows the FLOPs, not the
# parameter count. These are estimates (the allocator's caches and MIOpen's workspaces come on top); on LUMI,
# `rocm-smi` (module 04) and the run's `peak_memory_bytes` show the measured side.
#
# The same estimate for the model this notebook trained, set against its measured step time: on LUMI the model FLOP
# utilisation (MFU) is against one GCD's peak (FP32 on the matrix cores, from AMD's ROCm documentation of the MI250X,
# in the site profile); on a CPU the same line only shows how far one core is from a GCD.

# %%
trained = estimate_workload("resnet", size["model"], size["batch"])
print(compare(trained, single_metrics.result["mean_step_time_s"],
              peak_memory_bytes=single_metrics.result.get("peak_memory_bytes")).text())

# %% [markdown]
# ## What to expect on LUMI
#
# - Each GCD has 64 GB of memory; watch it with `rocm-smi` (module 04). DP is expected to keep more on GCD 0, where
#   it gathers.
# - One GCD doing useful work draws around 300 W, shown once per MI250X package on the even GCD (real reading:
#   324 W, `reference.load("rocm-smi-one-gcd-busy")`, LUMI AI workshop). That is a promise only for a job that owns
#   its whole node: on small-g the package's power can include another user's GCD.
# - The CSC summer school's lecture (csc-training/summerschool, `hpc-ai/docs/03-gpu-computation.md`) *estimates*
#   ResNet-152 on one GCD: 60.2 M parameters, 11.5 GFLOP per forward pass, 3 × that per trained image, about 180 s
#   for one epoch of CIFAR-100 at 224×224 at 40 % of peak, and about 24 GB of VRAM at batch 128. These are
#   estimates from FLOP counts, not measurements.
# - Larger batches use more of the GCD's memory and usually more of its compute; the exercises measure it here.

# %% [markdown]
# ## Which two GCDs a small-g job gets, and the link between them
#
# A small-g job with `--gpus-per-node=2` gets two GCDs that Slurm picks; inside the job they are devices 0 and 1
# whatever they are. Both GCDs of one MI250X talk over the in-package Infinity Fabric (200 GB/s per direction);
# GCDs on two MI250X talk over one link between packages (50 GB/s), a quarter of it. The PCI bus id that
# `rocm-smi --showbus` and rccl-tests print names the physical GCD. The figures below are **generated** outputs in
# rccl-tests' format (a model at 80 % of each link, not a measurement) for the two cases:

# %%
from lumikit.logs.collbench import link_for, parse_collbench, synthesize
from lumikit.logs.plots import plot_busbw

pairs = {"GCDs 0+1 (one MI250X)": parse_collbench(synthesize((0, 1))),
         "GCDs 0+2 (two MI250X)": parse_collbench(synthesize((0, 2)))}
for label, bench in pairs.items():
    print(label, "->", link_for(bench, "lumi").text())
plot_busbw(pairs);

# %% [markdown]
# **How to read it:** small messages are latency-bound (bus bandwidth near 0); the curve flattens at large sizes,
# and that plateau is what to hold against the link's peak (dashed). Read the largest sizes, not the `Avg bus
# bandwidth` line, which averages the tiny ones in. On LUMI, measure your own pair in a 2-GCD job with
# `srun -n 2 all_reduce_perf -b 8 -e 256M -f 2 -g 1` (rccl-tests) and read it with `lumikit logs rccl-tests FILE`:
# if it plateaus near 50 GB/s, your GCDs sit on two packages.

# %% [markdown]
# ## Key points
#
# - One process per GCD (DDP) beats one process driving several (DataParallel).
# - Slurm sets RANK, LOCAL_RANK and WORLD_SIZE; torchrun is optional on LUMI.
# - Two GCDs of one small-g job may share an MI250X (200 GB/s) or not (50 GB/s): the bus ids tell, rccl-tests measures.
