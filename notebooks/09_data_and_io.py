# %% [markdown]
# > **Module 09 at a glance.** About **45 minutes** (lesson and exercises). Before it: module(s) 03.
# >
# > **Objectives.** After it you can:
# > - choose where data lives on LUMI and why one file beats many small ones
# > - size DataLoader workers, and start them with spawn in multi-node jobs

# %% [markdown]
# # 09 · Data and I/O
#
# A GPU that waits for data is as wasted as an idle one, and on a parallel file system it is easy to make it wait.
# This module measures the two things that decide it: how the data is stored (many small files or one big one),
# and how many processes load it (DataLoader workers). Then it finds a starved GCD in a recorded `rocm-smi` session.
#
# ## Where data can live on LUMI
#
# | Path | What it is | Good for | Keep in mind |
# |---|---|---|---|
# | `/users/<user>` (home) | Lustre, backed up | config, small scripts | 20 GB quota: caches (Hugging Face, pip, Singularity) fill it |
# | `/project/<project>` | Lustre, persistent for the project's lifetime | software, containers, shared code | small quota; share with the project |
# | `/scratch/<project>` | LUMI-P: Lustre on hard disks, 32 storage targets of ~160 MB/s each | data sets, checkpoints | files are removed after a while; no backup |
# | `/flash/<project>` | LUMI-F: Lustre on SSDs, ~1.7 GB/s per storage target | data read every epoch | billed at 3 times the rate of scratch |
# | `/tmp` on a compute node | a RAM disk: ~7.8 GB/s read, ~2.9 GB/s write | staging a data set for one job | counts as the job's memory (a shared `small-g` job sees 64 GB unless it asks `--mem 0 --exclusive`); gone at the end |
#
# `lumi-quota` shows your quotas: space **and number of files**. Lustre keeps every file's name and place on a
# metadata server, so each `open()` is a network round trip, shared by everyone on the machine. A data set of
# a million small images is a million round trips per epoch. `/scratch` and `/flash` are symbolic links into
# `/pfs`: bind `/pfs` into the container too.
#
# ## Many small files or one file?
#
# The same images (CIFAR-sized: 3 072 bytes each), stored two ways in a folder under `runs/`: one file per image,
# and one array file. Reading both from this machine's disk:

# %%
import tempfile
import time
from pathlib import Path

import pandas as pd

from lumikit.io_bench import time_reads, write_image_files
from lumikit.launch import mode_line

print(mode_line())
Path("runs").mkdir(exist_ok=True)
files = write_image_files(tempfile.mkdtemp(prefix="09-io-", dir="runs"), 1500)
data = files.one_file.parent
read_times = time_reads(files)
io = pd.DataFrame({"files": [files.count, 1], "read time (s)": list(read_times.values())}, index=list(read_times))
io["MB/s"] = files.megabytes / io["read time (s)"]
print(f"one file is {read_times['many small files'] / read_times['one .npy file']:.0f} times faster to read")
io.round(4)

# %%
ax = io["read time (s)"].plot.barh(logx=True, title=f"Reading {files.count} images (log scale)")
ax.set_xlabel("seconds");

# %% [markdown]
# **How to read it:** the bytes are the same; the difference is one `open()` per image. Here the file system is a
# local disk with its metadata in memory, so an `open()` costs microseconds; on Lustre it costs a network round trip
# to a busy metadata server, and the gap grows by orders of magnitude. Formats that pack a data set into few files
# (an array file, HDF5, LMDB, a SquashFS image, tar shards) avoid it.
#
# ## Staging to `/tmp`
#
# For a job that reads its data every epoch, copy it once to the node's RAM disk. A single archive moves fastest
# (one big sequential read); unpack it on each node, one task per node:
#
# ```bash
# srun --ntasks-per-node=1 tar -C /tmp -xf /flash/<project>/data-sets/data-resnet-small.tar
# ```
#
# Here the same step, timed: pack the small files into a tar, and unpack it into a staging folder.

# %%
import subprocess

subprocess.run(["tar", "-C", str(data), "-cf", str(data / "images.tar"), "small-files"], check=True)
(data / "staged").mkdir()
start = time.perf_counter()
subprocess.run(["tar", "-C", str(data / "staged"), "-xf", str(data / "images.tar")], check=True)
stage_s = time.perf_counter() - start
staged = sorted((data / "staged" / "small-files").iterdir())
print(f"unpacked {len(staged)} files ({(data / 'images.tar').stat().st_size / 1e6:.1f} MB tar) in {stage_s:.3f} s")

# %% [markdown]
# **How to read it:** on LUMI the `-C` target is `/tmp`, memory, so every epoch after this one reads at memory speed
# and the metadata server is asked once per node instead of once per image and epoch. The staged copy counts as the
# job's memory and disappears with the job; copy results back to `/scratch` before the end.
#
# ## DataLoader workers
#
# `DataLoader(num_workers=N)` loads batches in N extra processes while the GPU computes. On LUMI each GCD has 7 cores
# (`--cpus-per-task=7`); with one rank per GCD, 6 or 7 workers per rank is the usual start. The ResNet workload
# takes `--workers`. Three short runs with 0, 1 and 2 workers, in this notebook's process (on a LUMI compute node
# they use its GPU); the job that runs the same on LUMI is printed first:

# %%
from lumikit.jobs import render_srun, workload_spec
from lumikit.launch import WorkloadMetrics
from lumikit.workloads import resnet

options = ["--model-size", "tiny", "--steps", "6", "--batch-size", "16", "--samples", "256", "--no-progress"]
print(render_srun(workload_spec("resnet", *options, "--workers", "7", gpus_per_node=1, cpus_per_task=7,
                                time="0:10:00"), "lumi").text())
step_times, data_times = {}, {}
for workers in (0, 1, 2):
    out = data / f"workers-{workers}"
    resnet.main([*options, "--workers", str(workers), "--out", str(out)])
    metrics = WorkloadMetrics.read(out)  # what a launched run's `run.metrics()` reads
    step_times[workers] = metrics.result["mean_step_time_s"]
    data_times[workers] = float(metrics.steps["data_time_s"].iloc[1:].mean())
loading = pd.DataFrame({"mean step time (s)": step_times, "waiting for data (s)": data_times})
loading.index.name = "workers"
loading.round(4)

# %%
ax = loading.plot.bar(title="Step time and time waiting for the next batch")
ax.set_ylabel("seconds per step");

# %% [markdown]
# **How to read it:** "waiting for data" is the part of each step spent waiting for the next batch. With 0 workers
# the training process loads every batch itself; with workers the batch is usually ready. This workload's images
# are already in memory and cheap to prepare, and this machine has few cores, so extra processes may cost more
# than they save here; with JPEG decoding and augmentation on LUMI, the waiting part dominates without workers.
# Add workers until the step time stops improving, and no further: each one is a process with its own memory.
#
# ## A starved GPU
#
# What does it look like when one rank cannot load fast enough? A recorded `rocm-smi` session of an 8-GCD DDP run:

# %%
from lumikit.smi import interpret_window, load_session, tidy
from lumikit.smi.plots import timeline

snapshots = load_session("ddp-8gcd-starved")
per_gcd = tidy(snapshots).groupby("index")[["gpu_busy_pct", "sclk_mhz", "power_w"]].mean().round(0)
for finding in interpret_window(snapshots):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")
per_gcd

# %%
timeline(snapshots);

# %% [markdown]
# **How to read it:** one GCD sits at low clock and low busy % for most of the recording while the other seven
# work, and its package draws less power. In DDP every rank waits for the slowest at each all-reduce, so the busy
# GCDs are partly waiting too. A rank starves when its loader falls behind: too few workers, small files on Lustre,
# or a shared file system under load. The fixes are the ones above: pack the data, stage it to `/tmp`, add workers.

# %% [markdown]
# ## Key points
#
# - Lustre dislikes many small files: pack them, or stage to /tmp.
# - Enough workers hide loading; more only cost memory.
# - spawn starts clean workers; fork copies GPU and RCCL state.
