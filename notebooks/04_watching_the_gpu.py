# %% [markdown]
# > **Module 04 at a glance.** About **45 minutes** (lesson and exercises). Before it: module(s) 01.
# >
# > **Objectives.** After it you can:
# > - read rocm-smi: power, clock, busy %, memory per GCD and package
# > - tell a working GCD from a waiting one
# > - look at a running job with salloc and srun --overlap

# %% [markdown]
# # 04 · Watching the GPU
#
# On LUMI you watch a running job's GPUs with `rocm-smi` in a step that overlaps the job
# (`srun --jobid <id> --overlap --pty watch -n1 rocm-smi`). Here we read that output as data. Without a GPU the
# workbook replays a session recorded in the same format: an 8-GCD DDP run in which one GCD is starved.

# %%
from lumikit.launch import mode_line
from lumikit.smi import interpret, list_sessions, load_session, tidy

print(mode_line())
print("recorded sessions:", ", ".join(list_sessions()))
snapshots = load_session("ddp-8gcd-starved")
tidy(snapshots).groupby("index")[["power_w", "gpu_busy_pct", "sclk_mhz"]].mean().round(0)

# %% [markdown]
# **How to read it:** power is reported once per package, on the even GCD (the odd one shows no power). A GCD that
# stays near 800 MHz and 0 % while the others work is waiting for data.

# %%
from lumikit.smi.plots import node_map, timeline

timeline(snapshots)

# %%
node_map(snapshots[-1])

# %%
for finding in interpret(snapshots[-1]):
    print(f"[{finding.kind}] GCDs {finding.devices}: {finding.message}")

# %% [markdown]
# ## The dashboard
#
# On LUMI pick a live source (your job's `rocm-smi`); here a recorded session. The frame below is what the
# dashboard shows 60 s into the recording.

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
