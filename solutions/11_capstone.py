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

# %% tags=["solution"]
# Exercise 11.1: What does this session show: which GCD behaves unlike the others (`starved`, its index), and which
# hypothesis fits (`hypothesis`)?
#  (a) that GCD is broken  (b) its rank gets its batches late, and the other ranks wait for it at each step
#  (c) the model is too small for the GPUs
# Hint: one GCD behaves unlike the seven others over the whole session, not in one sample.
# Tool: group `session_table` by "index" and compare medians of `sclk_mhz` and `power_w`.
per_gcd = session_table.groupby("index")[["sclk_mhz", "gpu_busy_pct", "power_w"]].median()
starved = int(per_gcd["sclk_mhz"].idxmin())
hypothesis = "b"
per_gcd

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

# %% tags=["solution"]
# Exercise 11.2: Which rank holds the others back (`slow_rank_found`), and what share (0-1) of its recorded step
# time is your evidence for it (`data_share`: the share of the phase that gives it away)?
# Hint: DDP holds every rank to the slowest, so the step times agree; what each rank does inside its steps does not.
# Tool: `step_phases(host_ops(analyzer.trace[rank].events))` (lumikit.trace.host_ops) splits each step into phases.
phases = {rank: step_phases(host_ops(analyzer.trace[rank].events)) for rank in analyzer.ranks}
shares = {rank: table["data_us"].sum() / table["dur_us"].sum() for rank, table in phases.items()}
slow_rank_found = int(max(shares, key=shares.get))
data_share = float(shares[slow_rank_found])
print({rank: round(share, 3) for rank, share in shares.items()})

# %% tags=["check"]
checks.check_slow_rank(before.path, slow_rank_found, data_share)

# %% [markdown]
# ## 3 · Where the others lose the time

# %% tags=["solution"]
# Exercise 11.3: The other rank's steps last as long as the slow rank's. In which phase ("forward", "backward",
# "optimizer" or "other") does it lose the time the slow rank spends on its own problem? Store it in `waiting_phase`.
# Hint: a rank that waits for another does so where the two must meet.
# Tool: the phase shares of each rank, from the same `step_phases` tables.
phase_names = ["forward", "backward", "optimizer", "other"]
share_table = {rank: {p: table[f"{p}_us"].sum() / table["dur_us"].sum() for p in phase_names}
               for rank, table in phases.items()}
fast_rank = next(rank for rank in phases if rank != slow_rank_found)
waiting_phase = max(phase_names, key=lambda p: share_table[fast_rank][p] - share_table[slow_rank_found][p])
print({rank: {p: round(v, 2) for p, v in row.items()} for rank, row in share_table.items()})

# %% tags=["check"]
checks.check_waiting_phase(before.path, waiting_phase)

# %% [markdown]
# ## 4 · Fix it, measure, claim
#
# You have two runs left. The storage stays slow; everything else about how the job runs is yours to change.

# %% tags=["solution"]
# Exercise 11.4: Fix it: launch the fixed run (`after`, with `capstone_job("capstone-after", <your options>)`, so it
# is profiled like the first and pays the same overhead), measure both runs' warm step times with their spread, and
# state your claim in `claim`: {"rank": ..., "phase": ..., "fix": "<the options you changed>", "before": <Measured>,
# "after": <Measured>}. The check judges each part against the runs.
# Hint: the slow rank's storage answers late whatever you do; what could the rank do while its step computes?
# Tool: `python -m lumikit.workloads.capstone --help` lists what you can change; `run.metrics().steps["step_time_s"]`
# and `measured(label, values)` from lumikit.measure (a median with its spread).
fix = "--workers 2"
after = launch(capstone_job("capstone-after", *fix.split()))
print(mode_line(), "->", after.wait(timeout=checks.WAIT_S, progress=False), after.path)
# warm steps: not the cold first one, nor the second (the workers fill their queue), nor the last (it writes the trace)
warm = {name: measured(name, run.metrics().steps["step_time_s"].tolist()[2:-1])
        for name, run in (("before", before), ("after", after))}
claim = {"rank": slow_rank_found, "phase": waiting_phase, "fix": fix, "before": warm["before"], "after": warm["after"]}
print(warm["before"].describe(unit="s"), "|", warm["after"].describe(unit="s"))

# %% tags=["check"]
checks.check_claim(claim, before.path, after)

# %% tags=["solution"]
# Exercise 11.A: Write your conclusion for the people who pay for the GPU hours (at least 60 words, as a string in
# `conclusion`): why the GPU view and the step times cannot name the slow rank, what does, why every rank got
# faster when your fix touched one rank's problem only, and your numbers (the rank, its share, the step times
# before and after). The check saves it to your progress folder, where your instructor reads it.
# Hint: one paragraph per view (GPU, profiler, trace), then the fix and what it changed.
# Tool: an f-string with the numbers you measured above.
conclusion = (
    f"The GPU view shows the symptom, not the cause: GCD {starved} at a low clock and low power while seven work "
    f"means its rank is late with something, and input is the usual suspect. The step times cannot find the rank, "
    f"because DDP's collectives hold every rank to the slowest one; the phases can: on rank {slow_rank_found} the "
    f"data phase takes {data_share:.0%} of the recorded step time, and on the other rank the same time reappears as "
    f"waiting in {waiting_phase}, where DDP first synchronises (it broadcasts the model's buffers in forward; with "
    f"no buffers it would be the gradient all-reduce in backward). The fix ({fix}) does not make the storage "
    f"faster: worker processes load the next batches while the current step computes, so the delay hides behind "
    f"the computation and no rank has to wait any more. The warm step time went from "
    f"{warm['before'].median * 1000:.0f} ms (range {warm['before'].lo * 1000:.0f}-{warm['before'].hi * 1000:.0f}) "
    f"to {warm['after'].median * 1000:.0f} ms (range {warm['after'].lo * 1000:.0f}-{warm['after'].hi * 1000:.0f}). "
    f"On LUMI the same three views come from rocm-smi through srun --overlap, the profiler on one rank per node, "
    f"and the trace analysis of module 06."
)
print(conclusion)

# %% tags=["check"]
checks.check_conclusion(conclusion, before.path)

# %% [markdown] tags=["solution"]
# **Question 11.B.** Your fix hides the slow input behind the computation. When would it stop being enough, and what
# would you then change or ask for?
#
# **Answer.** It works while loading the next batches takes no longer than computing the current step with the
# workers you have: each worker loads a whole batch, so a delay per batch larger than a step (or fewer cores than
# workers, on LUMI 7 cores per GCD) shows again as waiting at the first collective. Then the data itself has to
# move: a local copy on the node (`/tmp`, in memory), one large file instead of many small ones (module 09), or a
# faster file system (LUMI's flash tier, LUMI-F), which is a request to the project's storage, not to the code.
