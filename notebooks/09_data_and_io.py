# %% [markdown]
# > **Module 09 at a glance.** About **60 minutes** (lesson and exercises). Before it: module(s) 03.
# >
# > **Objectives.** After it you can:
# > - choose where data lives on LUMI and why one file beats many small ones
# > - size DataLoader workers, and start them with spawn in multi-node jobs

# %% [markdown]
# # 09 · Data and I/O
#
# A GPU that waits for data is as wasted as an idle one, and on a parallel file system it is easy to make it wait.
# This module measures the two things that decide it: how the data is stored (many small files or one big one),
# and how many processes load it (DataLoader workers). Then it finds a starved GCD, in a real `rocm-smi` table from
# LUMI and in a generated session of a whole run.
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
# The bandwidths and the flash billing factor are the LUMI AI Guide's (Lumi-supercomputer/LUMI-AI-Guide,
# `04-data-storage/README.md`: 161 MB/s per LUMI-P and 1,710 MB/s per LUMI-F storage target, RAM 7,800 MB/s read
# and 2,900 MB/s write, LUMI-F accounting "at the time of writing 3x higher"); the 20 GB home quota is the LUMI
# user guide's (Lumi-supercomputer/lumi-userguide, `docs/storage/index.md`).
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

from lumikit.launch.runfolder import default_runs_dir
from lumikit.io_bench import measure_reads, write_image_files
from lumikit.measure import compare, measured
from lumikit.launch import mode_line

print(mode_line())
runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
files = write_image_files(tempfile.mkdtemp(prefix="09-io-", dir=runs_dir), 1500)
data = files.one_file.parent
reads = measure_reads(files, repeat=5)  # small, one, small, one, ... 5 times each
io = pd.DataFrame({"files": [files.count, 1], "read time (s)": [m.median for m in reads.values()],
                   "fastest (s)": [m.lo for m in reads.values()], "slowest (s)": [m.hi for m in reads.values()]},
                  index=list(reads))
io["MB/s"] = files.megabytes / io["read time (s)"]
print(compare(reads["many small files"], reads["one .npy file"]).sentence(unit="s", higher="slower", lower="faster"))
io.round(4)

# %%
median = io["read time (s)"].rename(lambda way: f"{way}: {io.loc[way, 'read time (s)']:.3f} s")
ax = median.plot.barh(xerr=[io["read time (s)"] - io["fastest (s)"], io["slowest (s)"] - io["read time (s)"]],
                      capsize=4, figsize=(7, 2.2), title=f"Reading {files.count} images: median and range of 5")
ax.set_xlabel("seconds (from 0: bar lengths compare directly)");

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
# takes `--workers`. Short runs with 0, 1 and 2 workers in this notebook's process (on a LUMI compute node they use
# its GPU), three rounds interleaved (0, 1, 2, 0, 1, 2, ...) so that a slow moment on a shared machine hits every
# variant; the job that runs the same on LUMI is printed first:

# %%
from lumikit.jobs import render_srun, workload_spec
from lumikit.launch import WorkloadMetrics
from lumikit.workloads import resnet

options = ["--model-size", "tiny", "--steps", "6", "--batch-size", "16", "--samples", "256", "--no-progress"]
print(render_srun(workload_spec("resnet", *options, "--workers", "7", gpus_per_node=1, cpus_per_task=7,
                                time="0:10:00"), "lumi").text())
step_times: dict[int, list[float]] = {0: [], 1: [], 2: []}
data_times: dict[int, list[float]] = {0: [], 1: [], 2: []}


def one_round() -> None:
    """One short training run each with 0, 1 and 2 DataLoader workers, in that order."""
    for workers in (0, 1, 2):
        out = data / f"workers-{workers}-round{len(step_times[workers])}"
        resnet.main([*options, "--workers", str(workers), "--out", str(out)])
        metrics = WorkloadMetrics.read(out)  # what a launched run's `run.metrics()` reads
        step_times[workers].append(metrics.result["mean_step_time_s"])
        data_times[workers].append(float(metrics.steps["data_time_s"].iloc[1:].mean()))


one_round()

# %%
one_round()

# %%
one_round()
runs = {f"{w} workers": measured(f"{w} workers", step_times[w]) for w in (0, 1, 2)}
loading = pd.DataFrame({"mean step time (s)": [m.median for m in runs.values()],
                        "fastest": [m.lo for m in runs.values()], "slowest": [m.hi for m in runs.values()],
                        "waiting for data (s)": [pd.Series(data_times[w]).median() for w in (0, 1, 2)]},
                       index=pd.Index([0, 1, 2], name="workers"))
loading.round(4)

# %%
ax = loading[["mean step time (s)", "waiting for data (s)"]].plot.bar(
    rot=0, yerr={"mean step time (s)": [loading["mean step time (s)"] - loading["fastest"],
                                 loading["slowest"] - loading["mean step time (s)"]]},
    title="Step time (median and range of 3 rounds) and time waiting for the next batch")
ax.set_ylabel("seconds per step"); ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small");

# %%
verdicts = {w: compare(runs[f"{w} workers"], runs["0 workers"]) for w in (1, 2)}
for w, c in verdicts.items():
    print(c.sentence(unit="s/step", higher="slower", lower="faster"))
faster = [w for w, c in verdicts.items() if not c.within_noise and c.ratio < 1]
slower = [w for w, c in verdicts.items() if not c.within_noise and c.ratio > 1]
if faster:
    print(f"Here {faster[0]} worker(s) made the steps faster beyond the noise: loading was part of every step.")
elif slower:
    print(f"Here {', '.join(map(str, slower))} worker(s) made the steps slower beyond the noise: the images are "
          "already in memory, so there is little loading to hide, and every worker is one more process on this "
          "machine's few cores.")
else:
    print("Here the worker count makes no difference beyond the noise: the images are already in memory and cheap "
          "to prepare, so there is little loading for workers to hide.")

# %% [markdown]
# **How to read it:** "waiting for data" is the part of each step spent waiting for the next batch. With 0 workers
# the training process loads every batch itself; with workers the batch is usually ready. The sentences above are
# computed from the three rounds: a difference counts only when the ranges do not overlap and the medians differ
# by more than 20 %. What this machine cannot show is the case the course is about: on LUMI a rank decodes and
# augments JPEG images with 7 cores of its own (`--cpus-per-task=7`), and the LUMI AI workshop starts its ResNet-50
# runs with 7 workers per GCD. No real LUMI measurement of step time against the number of workers is shipped
# with the workbook, so expect, rather than read here, that without workers the waiting part dominates on LUMI.
# Add workers until the step time stops improving, and no further: each one is a process with its own memory.
#
# ## A starved GPU
#
# What does it look like when one rank cannot load fast enough? A real `rocm-smi` table of the LUMI AI workshop's
# ResNet-50 run on 8 GCDs, reading ImageNet from `/flash` with 7 workers per GCD:

# %%
from lumikit import reference
from lumikit.smi import interpret, interpret_window, load_session, tidy

real = reference.load("rocm-smi-8gcd-one-starved")
print(real.show())
for finding in interpret(real.parsed()):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")

# %% [markdown]
# **How to read it:** GCD 4 idles at 800 MHz and 0 % while the seven others show 100 % at 111-132 W per package,
# near idle power: they wait for GCD 4 inside the all-reduce. The workshop moved the data set to `/tmp` (memory)
# and reports that training then "completes much faster"; it gives no timings.
#
# One table is one moment. A **generated** session of a whole run (calibrated on this table) shows the pattern
# over time:

# %%
from lumikit.smi.plots import timeline

snapshots = load_session("ddp-8gcd-starved")
per_gcd = tidy(snapshots).groupby("index")[["gpu_busy_pct", "sclk_mhz", "power_w"]].mean().round(0)
for finding in interpret_window(snapshots):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")
per_gcd

# %%
timeline(snapshots);

# %% [markdown]
# **How to read it:** one GCD sits at low clock and 0 % for most of the generated session while the other seven
# show 100 % at near-idle power: in DDP every rank waits for the slowest at each all-reduce. Only in the short
# bursts where all eight compute do the packages reach ~500 W. A rank starves when its loader falls behind: too
# few workers, small files on Lustre, or a shared file system under load. The fixes are the ones above: pack the data, stage it to `/tmp`, add workers.

# %% [markdown]
# ## Key points
#
# - Lustre dislikes many small files: pack them, or stage to /tmp.
# - Enough workers hide loading; more only cost memory.
# - spawn starts clean workers; fork copies GPU and RCCL state.
