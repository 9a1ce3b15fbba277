# %% [markdown]
# > **Module 04 at a glance.** About **55 minutes** (lesson and exercises). Before it: module(s) 01.
# >
# > **Objectives.** After it you can:
# > - read rocm-smi: power, clock, busy %, memory per GCD and package
# > - tell a working GCD from a waiting one
# > - look at a running job with salloc and srun --overlap

# %% [markdown]
# # 04 · Watching the GPU
#
# On LUMI you watch a running job's GPUs with `rocm-smi` in a step that overlaps the job
# (`srun --jobid <id> --overlap --pty watch -n1 rocm-smi`). Here we read that output as data. First a real one:
# `rocm-smi` during an 8-GCD ResNet-50 DDP run on LUMI, published by the LUMI AI workshop.

# %%
from lumikit import reference

real = reference.load("rocm-smi-8gcd-one-starved")
print(real.show())

# %% [markdown]
# **How to read it:** GCD 4 sits at 800 MHz and 0 %: it waits for its next batch (the data loading cannot keep up).
# The seven others show 100 %, yet their packages draw only 111-132 W, hardly more than an idle package
# (82-102 W in the real idle tables of `lumikit.reference`). They are not computing: they wait for GCD 4 inside the
# all-reduce, and a kernel spinning on a wait counts as 100 % busy. One GCD computing draws about 300 W per
# package (a real reading: 324 W, `reference.load("rocm-smi-one-gcd-busy")`).
#
# A single table is one moment. To watch a run over time without a GPU, the workbook replays a **generated**
# session in the same format (`lumikit.smi.synth`, calibrated on these real readings; no recording of a whole LUMI
# run is shipped): an 8-GCD DDP run in which GCD 4 is starved.

# %%
from lumikit.course_jobs import scale_for
from lumikit.launch import mode_line
from lumikit.smi import interpret, list_sessions, load_session, tidy

print(mode_line())
print("shipped sessions (all generated):", ", ".join(list_sessions()))
snapshots = load_session("ddp-8gcd-starved")
tidy(snapshots).groupby("index")[["power_w", "gpu_busy_pct", "sclk_mhz"]].mean().round(0)

# %% [markdown]
# **How to read it:** power is reported once per package, on the even GCD (the odd one shows no power). A GCD that
# stays near 800 MHz and 0 % while the others show 100 % is waiting for data; the means mix the long waits (100 %
# at ~130 W) with short bursts where all eight compute (~500 W per package), so read the timeline below, not
# only the means.

# %%
from lumikit.smi.plots import node_map, timeline

timeline(snapshots)

# %%
node_map(snapshots[-1], title=f"generated session, latest sample (t = {snapshots[-1].timestamp:g} s)")

# %%
print(f"findings in the latest sample (t = {snapshots[-1].timestamp:g} s) of the generated session:")
for finding in interpret(snapshots[-1]):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")
print("and in the real LUMI table above:")
for finding in interpret(real.parsed()):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")

# %% [markdown]
# ## The dashboard
#
# On LUMI pick a live source (your job's `rocm-smi`); here the generated session. The frame below is what the
# dashboard shows 60 s into it: the node map draws the latest sample, the findings hold over the last 30 samples
# (each says which).

# %%
from lumikit.widgets.gpu_dashboard import GpuDashboard

dashboard = GpuDashboard(session="ddp-8gcd-starved")
dashboard.show_frame(60)
dashboard.widget

# %% [markdown]
# ## Your own run's GPU record
#
# Every job you launch with GPUs records them: one sampler per node, started by the job itself, writes a line every
# 2 s to `gpu/<node>.jsonl` in the run folder, and `run.report()` turns the record into a **report card** after the
# job. Here the course's language model runs on one GCD (the job comes from `lumikit.course_jobs`, the list the
# instructors' rehearsal also runs). On LUMI its record holds real `rocm-smi` readings; on lumi-sim a stand-in prints
# generated ones (labelled); on a laptop there is no GPU tool, so nothing is recorded and the card of the generated
# session above is shown instead, labelled.

# %%
from lumikit.course_jobs import watched_lm_job
from lumikit.launch import launch
from lumikit.record.lesson import card_or_generated

watched = launch(watched_lm_job(scale_for()))
print(mode_line(), "->", watched.wait(timeout=900))
card, where = card_or_generated(watched)
print("report card of", where)
card.table()[["node", "gcd", "samples", "busy_mean_pct", "power_mean_w", "vram_peak_gib", "energy_j"]].round(1)

# %% [markdown]
# **How to read it:** one row per GCD of each node. `busy_mean_pct` and `power_mean_w` are means over the samples;
# power (and so energy) sits on the even GCD, which prints its whole package's power, and the odd GCD's row has
# none. `vram_peak_gib` is the most memory the GCD held at any sample: the number Slurm does not report. Energy is
# the package's power integrated over the record (or the tool's energy counter where it prints one; the card says
# which). The findings and GPU-hours of the card:

# %%
for finding in card.findings:
    print(f"[{finding['node']}] {finding['message']}")
print(card.billing_line())

# %% [markdown]
# ## A recorded run on a real GPU
#
# The records over time above are generated. The workbook ships one recording of a real GPU: the course's ResNet-18
# (batch 256, 600 steps) launched like your run, its GPU record taken every 0.5 s through NVIDIA's library,
# **recorded on an NVIDIA H100, not LUMI's MI250X** (in `lumikit.reference`). The same card and plot read it.

# %%
from lumikit.record import card_of_run
from lumikit.record.lesson import record_timeline

h100 = reference.load("h100-resnet18-record")
h100_card = card_of_run(h100.file_path)
print("report card of a run recorded on an NVIDIA H100 (not LUMI's MI250X)")
print("--", h100.source_line)
h100_card.table()[["node", "gcd", "samples", "busy_mean_pct", "power_mean_w", "vram_peak_gib", "energy_j"]].round(1)

# %%
record_timeline(h100.file_path, "ResNet-18, recorded on an NVIDIA H100 (not LUMI's MI250X): power, busy, VRAM")

# %% [markdown]
# **How to read it:** for the first 3.5 s the GPU idles: 0 % busy, 345 MHz, 73 W. At 4 s its memory in use
# doubles (480 to 1,007 MiB: most likely the workload's process taking the GPU) and the clock goes to 1980 MHz, the
# power to 123 W, still at 0 % busy: a GPU held but not computing. The steps run from about 13 s to 23 s at 80-89 %
# busy and 410-455 W; the one dip, near 16 s, falls about where the first epoch ended (4.1 s, `rank0.out`) and the
# next epoch's loader workers started. So the card's means (33 % busy, 242 W) mix ten seconds of steps with fifteen
# of start-up and shut-down: read the timeline before the means, as with the generated session.
#
# What differs from an MI250X: an H100 is one device in one package, so the library gives each GPU its own power
# and every row carries it (no even GCD holding a package's power, no odd one without, no package shared with
# another job's GCD). The card and plots still say "GCD": read "GPU".

# %% [markdown]
# ## Predict, then measure: energy
#
# Before you look at the energy column: one package of an MI250X draws about **300 W** while a GCD computes and
# about 90 W idle (real readings in `lumikit.reference`). **Predict** the mean power of each package over this
# record: write your guess in `my_watts_per_package` (the cell below starts from "computing the whole time").

# %%
my_watts_per_package = 300  # your prediction: mean watts per package over the whole record

# %%
from lumikit.record.lesson import energy_check

energy_check(card, my_watts_per_package)

# %% [markdown]
# **How to read it:** *predicted kJ* is your watts × packages × seconds; *measured kJ* is what the record holds.
# A ratio well below 1 means the packages were not computing all the time: in the generated 8-GCD session most
# GCDs show 100 % busy but draw about 130 W, because they spin in the all-reduce waiting for the starved GCD 4 —
# busy is not computing, and energy (like power) tells them apart. On a one-GCD job the ratio shows how much of the
# record was start-up and waiting for data rather than steps.

# %% [markdown]
# ## Key points
#
# - Read power before GPU%: a waiting kernel can show 100 % busy.
# - On MI250X the package power is reported on the even GCD.
# - srun --overlap runs a second step in a job whose first step holds its CPUs.
# - A run's GPU record (`gpu/<node>.jsonl`) and `run.report()` keep what Slurm does not: peak VRAM and energy.
