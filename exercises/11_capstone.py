# %% [markdown]
# # 11 · Capstone: find the bottleneck, fix it, measure: exercises
#
# **The symptom.** A 2-rank DDP training run of the course's language model (`capstone_job` below) is slower than
# it should be, and the people who pay for its GPU hours want to know why and what to do about it. Nothing in its
# log is an error.
#
# **Your budget.** Three runs of 12 steps: the first one (launched for you below, profiled on every rank), and two
# more of your choice. Here a run takes about a minute on a busy machine; on LUMI each costs a few GPU-minutes.
# What you may change: how the job runs and loads its data (`python -m lumikit.workloads.capstone --help` lists the
# workload's options). What you may not: the storage it reads from (its `--case` and the delay stay as they are).
#
# **What you deliver.** A claim the check judges against your runs: which rank holds the job back, in which phase
# the other ranks lose the time, which fix you applied, and the step time before and after with its spread
# (`lumikit.measure`), then a written conclusion that goes to your progress folder. Modules 04 to 09 gave you every
# tool you need; choosing them is part of the exercise. `hint("11.2")` and friends are there when you are stuck.
#
# What to find, and why it matters: the one rank that holds every other rank back, and the evidence for it (in a
# data-parallel job the slowest rank sets the step time of all, so the GPU hours of every rank are lost to one
# rank's problem). The runs are local processes here (2 ranks on the CPU, `gloo`) and Slurm jobs on LUMI.

# %%
import lumikit.checks.m11 as checks
from lumikit.jobs import workload_spec
from lumikit.launch import launch, mode_line
from lumikit.measure import measured
from lumikit.smi import load_session, tidy
from lumikit.smi.plots import timeline
from lumikit.trace import TraceAnalyzer
from lumikit.trace.host_ops import host_ops, step_phases
from lumikit.workloads.capstone import case_for

case = case_for()
print(mode_line(), "· your case:", case)


def capstone_job(name: str, *options: str):
    """The capstone run: 2 ranks of DDP, 12 steps, profiled on every rank (steps 8-11 recorded); `options` are more
    options of the workload (`python -m lumikit.workloads.capstone --help`)."""
    return workload_spec("capstone", "--model-size", "tiny", "--no-progress", "--steps", "12", "--mode", "ddp",
                         "--case", str(case), *options, name=name, gcds=2, ntasks_per_node=2, time="0:10:00",
                         profile="torch", profile_steps=12, env={"LUMIKIT_PROFILE_SCHEDULE": "6,1,4,1"})


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
# Exercise 11.1: What does this session show: which GCD behaves unlike the others (`starved`, its index), and which
# hypothesis fits (`hypothesis`)?
#  (a) that GCD is broken  (b) its rank gets its batches late, and the other ranks wait for it at each step
#  (c) the model is too small for the GPUs
per_gcd = None
starved = None
hypothesis = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.1")
raise NotImplementedError("Exercise 11.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_starved_gcd(starved, hypothesis)

# %% [markdown]
# ## 2 · Your first run
#
# The run with the symptom, as it is, profiled with `torch.profiler` on every rank (the cell waits on the run's
# state, at most `checks.WAIT_S` seconds, and prints where its folder is).

# %%
before = launch(capstone_job("capstone-before"))
print(mode_line(), "->", before.wait(timeout=checks.WAIT_S, progress=False), before.path)
analyzer = TraceAnalyzer.from_path(before.path / "profile")
analyzer.get_step_times().pivot(index="step", columns="rank", values="dur_us").div(1000).round(1)

# %% [markdown]
# **How to read it:** milliseconds per recorded step and rank. The columns agree: DDP keeps the ranks in step, so
# the step time alone does not say which rank is slow. The phases of each step do.

# %% tags=["exercise"]
# Exercise 11.2: Which rank holds the others back (`slow_rank_found`), and what share (0-1) of its recorded step
# time is your evidence for it (`data_share`: the share of the phase that gives it away)?
phases = None
shares = None
slow_rank_found = None
data_share = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.2")
raise NotImplementedError("Exercise 11.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_slow_rank(before.path, slow_rank_found, data_share)

# %% [markdown]
# ## 3 · Where the others lose the time

# %% tags=["exercise"]
# Exercise 11.3: The other rank's steps last as long as the slow rank's. In which phase ("forward", "backward",
# "optimizer" or "other") does it lose the time the slow rank spends on its own problem? Store it in `waiting_phase`.
phase_names = None
share_table = None
fast_rank = None
waiting_phase = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.3")
raise NotImplementedError("Exercise 11.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_waiting_phase(before.path, waiting_phase)

# %% [markdown]
# ## 4 · Fix it, measure, claim
#
# You have two runs left. The storage stays slow; everything else about how the job runs is yours to change.

# %% tags=["exercise"]
# Exercise 11.4: Fix it: launch the fixed run (`after`, with `capstone_job("capstone-after", <your options>)`, so it
# is profiled like the first and pays the same overhead), measure both runs' warm step times with their spread, and
# state your claim in `claim`: {"rank": ..., "phase": ..., "fix": "<the options you changed>", "before": <Measured>,
# "after": <Measured>}. The check judges each part against the runs.
fix = None
after = None
warm = None
claim = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.4")
raise NotImplementedError("Exercise 11.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_claim(claim, before.path, after)

# %% tags=["exercise"]
# Exercise 11.A: Write your conclusion for the people who pay for the GPU hours (at least 60 words, as a string in
# `conclusion`): why the GPU view and the step times cannot name the slow rank, what does, why every rank got
# faster when your fix touched one rank's problem only, and your numbers (the rank, its share, the step times
# before and after). The check saves it to your progress folder, where your instructor reads it.
conclusion = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.A")
raise NotImplementedError("Exercise 11.A: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_conclusion(conclusion, before.path)

# %% [markdown] tags=["exercise"]
# **Question 11.B.** Your fix hides the slow input behind the computation. When would it stop being enough, and what
# would you then change or ask for?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._
