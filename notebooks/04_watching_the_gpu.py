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
# ## Key points
#
# - Read power before GPU%: a waiting kernel can show 100 % busy.
# - On MI250X the package power is reported on the even GCD.
# - srun --overlap runs a second step in a job whose first step holds its CPUs.
