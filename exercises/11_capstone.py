# %% [markdown]
# # 11 · Capstone: find the bottleneck, fix it, measure: exercises
#
# A 2-rank DDP training run of the course's language model is slower than it should be: one rank loads its data
# from slow storage (the bottleneck is planted; which rank it is depends on your user name). Find it the way you
# would on LUMI, with each tool in turn, then fix it without touching the storage and report the numbers:
#
# 1. **GPU view** (module 04): what does a run with this problem look like on a LUMI-G node?
# 2. **Profiler** (module 05): which rank spends its steps loading data?
# 3. **Trace analysis** (module 06): where do the other ranks lose the same time?
# 4. **Fix and measure** (modules 07 and 09): the step time before and after.
#
# The runs are local processes here (2 ranks on the CPU, `gloo`) and Slurm jobs on LUMI; each takes about a minute
# to start on a busy machine.
#
# What to find, and why it matters: the one rank that holds every other rank back, and the evidence for it
# (in a data-parallel job the slowest rank sets the step time of all, so the GPU hours of every rank are lost
# to one rank's storage).

# %%
import json
import statistics
from pathlib import Path

import lumikit.checks.m11 as checks
from lumikit.jobs import workload_spec
from lumikit.launch import launch, mode_line
from lumikit.smi import load_session, tidy
from lumikit.smi.plots import timeline
from lumikit.trace import TraceAnalyzer
from lumikit.trace.host_ops import host_ops, step_phases
from lumikit.workloads.capstone import case_for

case = case_for()
print(mode_line(), "· your case:", case)


def capstone_job(name: str, workers: int):
    """The capstone run: 2 ranks of DDP, 12 steps, steps 8-11 profiled (schedule 6,1,4,1)."""
    return workload_spec("capstone", "--model-size", "tiny", "--no-progress", "--steps", "12", "--mode", "ddp",
                         "--case", str(case), "--workers", str(workers), name=name, gcds=2, ntasks_per_node=2,
                         time="0:10:00", profile="torch", profile_steps=12,
                         env={"LUMIKIT_PROFILE_SCHEDULE": "6,1,4,1"})


# %% [markdown]
# ## 1 · The GPU view
#
# There is no GPU here, so this step reads the generated session `ddp-8gcd-starved`: the `rocm-smi` readings of a
# LUMI-G node running an 8-rank DDP job in which one rank's input is late (module 04 shows how to record your own
# with `srun --overlap`).

# %%
snapshots = load_session("ddp-8gcd-starved")
session_table = tidy(snapshots)
timeline(snapshots);

# %% tags=["exercise"]
# Exercise 11.1: Which GCD idles while the others work (`starved`, its index)? Which hypothesis fits (`hypothesis`)?
#  (a) that GCD is broken  (b) its rank gets its batches late, and the other ranks wait for it at each step
#  (c) the model is too small for the GPUs
per_gcd = None
starved = None
hypothesis = None
raise NotImplementedError("Exercise 11.1: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"11.1\")")

# %% tags=["check"]
checks.check_starved_gcd(starved, hypothesis)

# %% [markdown]
# ## 2 · The profiler
#
# Run the job with `torch.profiler` on every rank (the run prints where its folder is).

# %%
before = launch(capstone_job("capstone-before", workers=0))
print(mode_line(), "->", before.wait(timeout=85, progress=False), before.path)
analyzer = TraceAnalyzer.from_path(before.path / "profile")
analyzer.get_step_times().pivot(index="step", columns="rank", values="dur_us").div(1000).round(1)

# %% [markdown]
# **How to read it:** milliseconds per recorded step and rank. The columns agree: DDP keeps the ranks in step, so
# the step time alone does not say which rank is slow. The phases of each step do.

# %% tags=["exercise"]
# Exercise 11.2: Which rank spends most of its steps loading data (`slow_rank_found`), and what share (0-1) of its
# recorded step time is the data phase (`data_share`)?
phases = None
shares = None
slow_rank_found = None
data_share = None
raise NotImplementedError("Exercise 11.2: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"11.2\")")

# %% tags=["check"]
checks.check_slow_rank(before.path, slow_rank_found, data_share)

# %% [markdown]
# ## 3 · The trace analysis

# %% tags=["exercise"]
# Exercise 11.3: The fast rank's steps last as long as the slow rank's. In which phase ("forward", "backward",
# "optimizer" or "other") does it spend the time the slow rank spends loading? Store it in `waiting_phase`.
phase_names = None
share_table = None
fast_rank = None
waiting_phase = None
raise NotImplementedError("Exercise 11.3: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"11.3\")")

# %% tags=["check"]
checks.check_waiting_phase(before.path, waiting_phase)

# %% [markdown]
# ## 4 · Fix it and measure
#
# The storage stays slow (`--case` and the delay stay as they are). What you can change is *when* the slow rank
# reads: with DataLoader workers (module 09) the next batches load in other processes while the current step
# computes.

# %% tags=["exercise"]
# Exercise 11.4: Run the same job (profiled too, so both runs pay the same overhead) with DataLoader workers
# (`capstone_job("capstone-after", workers=...)`), store the run in `after`, and the speed-up (median over ranks of
# the first run's mean step time divided by the fixed run's) in `speedup`.
after = None
median_step = None
speedup = None
raise NotImplementedError("Exercise 11.4: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"11.4\")")

# %% tags=["check"]
checks.check_fix(before.path, after, speedup)

# %% [markdown] tags=["exercise"]
# **Question 11.A.** Why can the GPU view and the step times not name the slow rank, what does, and why does every
# rank get faster when only one rank's loading changed?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._
