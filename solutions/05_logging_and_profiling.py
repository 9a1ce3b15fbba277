# %% [markdown]
# # 05 · Logging and profiling: exercises
#
# The setup cells run the lesson's profiled training run again: the course's tiny language model, 6 steps
# unprofiled, 1 profiler warm-up step, 4 recorded steps (schedule `"6,1,4,1"`), then the run stops. The exercises
# answer questions from what that run measured.

# %%
import lumikit.checks.m05 as checks
from lumikit.jobs import workload_spec
from lumikit.launch import launch, mode_line
from lumikit.profiler import parse_schedule
from lumikit.trace import load_trace
from lumikit.trace.host_ops import host_ops, op_summary, step_phases

print(mode_line())
schedule = "6,1,4,1"
train = workload_spec("lm", "--model-size", "tiny", "--no-progress", name="lm-profiled", gcds=1,
                      time="0:10:00", profile="torch",
                      profile_steps=11, env={"LUMIKIT_PROFILE_SCHEDULE": schedule})
run = launch(train)
print(mode_line(), "->", run.wait(timeout=300, poll=0.25))

# %%
trace = load_trace(run.path / "profile")
ops = host_ops(trace[0].events)
phases = step_phases(ops)
step_times = run.metrics().steps.set_index("step")["step_time_s"]
print("recorded trace steps:", list(phases["step"]), "· metrics steps:", list(step_times.index))
phases.set_index("step").round(0)

# %% tags=["solution"]
# Exercise 05.1: In a 4-rank job, profile only rank 3 with torch.profiler, recording steps 5, 6 and 7 (counted from 1, as the metrics file does), and stop the run after step 7. Store the job spec in `job`.
# Hint: `workload_spec("lm", "--mode", "ddp", gcds=..., ntasks_per_node=..., profile=..., profile_ranks=[...], profile_steps=..., env={"LUMIKIT_PROFILE_SCHEDULE": "wait,warmup,active,repeat"})`; torch skips `wait` steps and warms up for `warmup` before it records.
job = workload_spec("lm", "--mode", "ddp", gcds=4, ntasks_per_node=4, time="0:15:00", profile="torch",
                    profile_ranks=[3],
                    profile_steps=7, env={"LUMIKIT_PROFILE_SCHEDULE": "3,1,3,1"})
print("recorded steps:", checks.recorded_steps(parse_schedule("3,1,3,1"), job.profile_steps))

# %% tags=["check"]
checks.check_rank_profile_spec(job)

# %% tags=["solution"]
# Exercise 05.2: Over the recorded steps, what share (0-1) of the step time went to backward, and what share to the optimizer? Store them in `backward_share` and `optimizer_share`.
# Hint: `phases` has one row per recorded step: its duration `dur_us` and the time of each phase.
backward_share = phases["backward_us"].sum() / phases["dur_us"].sum()
optimizer_share = phases["optimizer_us"].sum() / phases["dur_us"].sum()
print(f"backward {backward_share:.1%}, optimizer {optimizer_share:.1%}, "
      f"forward {phases['forward_us'].sum() / phases['dur_us'].sum():.1%}")

# %% tags=["check"]
checks.check_step_shares(backward_share, optimizer_share, phases)

# %% tags=["solution"]
# Exercise 05.3: Which operator spent the most self time in the recorded steps? Store its name (e.g. "aten::add") in `top_op`.
# Hint: self time leaves out the operators called inside; `op_summary(ops)` ranks by it.
ranking = op_summary(ops)
top_op = ranking.loc[0, "name"]
print(ranking.head(3)[["name", "calls", "total_us", "self_us", "self_share"]].round(3))

# %% tags=["check"]
checks.check_top_self_op(top_op, ops)

# %% tags=["solution"]
# Exercise 05.4: How much slower is a recorded step than an unprofiled one? Store the median recorded step time divided by the median unprofiled step time in `slowdown`.
# Hint: `step_times` is indexed by step (from 1); recorded steps are the trace's ProfilerStep numbers plus one; unprofiled are steps 2-6 (step 1 warms the model up, step 7 the profiler).
recorded = [int(s) + 1 for s in phases["step"]]
slowdown = step_times.loc[recorded].median() / step_times.loc[2:6].median()
print(f"recorded steps {recorded}: {step_times.loc[recorded].median() * 1e3:.1f} ms median; "
      f"unprofiled steps 2-6: {step_times.loc[2:6].median() * 1e3:.1f} ms median "
      f"({step_times.loc[2:6].min() * 1e3:.1f}-{step_times.loc[2:6].max() * 1e3:.1f} ms); slowdown {slowdown:.2f}x")

# %% tags=["check"]
checks.check_profiler_slowdown(slowdown, step_times, schedule)

# %% [markdown] tags=["solution"]
# **Discussion.** 05.1: with schedule `"3,1,3,1"` torch skips steps 1-3, warms up on step 4 and records 5-7
# (`ProfilerStep#4` to `#6` in the trace, since torch counts from 0); `profile_steps=7` stops the run there, and
# the rank script's `case "$SLURM_PROCID" in 3)` gives the profiler to rank 3 only. A schedule `"4,0,3,1"` records
# the same steps but keeps the first recorded step's start-up cost in the trace.
#
# 05.2 and 05.3: the printed shares say where a step of this tiny model goes on the CPU. Backward usually costs
# about as much as the forward pass or more (it computes two gradients per matrix product), and the top operator
# by self time is a matrix product (`aten::mm` or `aten::addmm`) or, for a model this small, an element-wise
# operator of the optimizer. Ranked by *total* time a wrapper such as `aten::linear` would come first, which is
# why self time is the column to read.
#
# 05.4: the printed slowdown is the profiler's cost for this model on this machine. It records every operator
# call, a few microseconds each, so a model that runs a couple of thousand small operators per step pays the most;
# compare the slowdown with the spread of the unprofiled steps (printed above) before calling it real: on a busy
# shared machine a few per cent is within the noise, which is why the medians are compared. On LUMI, with a model
# that keeps a GCD busy, the LUMI AI course's Q&A estimates "a few percent - say 2-5%" (LUMI-training-materials,
# `docs/ai-20251008/extra_04_CheckingGPU.md`). Either way: take step times from unprofiled steps, and profile a
# few steps of one rank.
