# %% [markdown]
# # 11 · Capstone: find the bottleneck, fix it, measure: exercises
#
# **The symptom.** A training run of the course's language model (`start` below launches it) delivers fewer samples
# per second than it should, and the people who pay for its GPU hours want to know why and what to do about it.
# Why it matters: a step twice as slow as it could be bills twice the GPU-hours for the same model, and a fix that
# is a guess is often no fix at all. Nothing in its log is an error. Your run is slow in its own way: your case, drawn from your seed, picks one of
# several causes, so your neighbour's answer is not yours.
#
# **Your budget.** Four runs of your case: the first one (launched for you below, profiled), and three more of your
# choice. `start` counts them; the claim's check says when you went over (it never stops you). Here a run takes
# about a minute on a busy machine; on LUMI each costs GPU-minutes.
# What you may change: how the job runs (`python -m lumikit.workloads.capstone --help` lists the options). What you
# may not: the case (`start` passes it).
#
# **What you deliver.** One claim the check judges whole against your runs: the cause (a letter of `checks.CAUSES`),
# the fix (the one option you changed, as launched) and the throughput before and after with its spread
# (`lumikit.measure`). If any part does not hold, the check says so without saying which: your evidence is in your
# runs, not in the check. Then a written conclusion, judged by a rubric your instructor reads in the class export.
# Modules 05 to 09 gave you the tools; choosing them is part of the exercise. `hint("11.2")` and friends help
# when you are stuck.
#
# The causes a run can have are listed below. Your case is drawn only among those whose fix your own runs can
# measure where they go: on a CPU without a bf16 speed-up, or with cores that other work keeps busy, (c) or (e) is
# not dealt, and the list says why next to it; it stays listed, so that the list does not give your cause away.
# (The first cell measures this machine for a few seconds to decide; where progress is recorded it keeps the
# decision, so your case stays the same after a restart.)
#
# One thing in these runs is simulated, and labelled: on a CPU every step pays a fixed 15 ms (`step setup` in the
# profile), as a step on a GCD pays for kernel launches and the host's Python whatever its batch. On a GPU the real
# costs are there, and nothing is added.

# %%
import lumikit.checks.m11 as checks
from lumikit.jobs import workload_spec
from lumikit.launch import launch, mode_line
from lumikit.measure import compare, measured
from lumikit.trace import TraceAnalyzer
from lumikit.trace.host_ops import host_ops, op_summary, step_phases
from lumikit.workloads.capstone import case_for

case = case_for()
launched = []
print(mode_line(), "· your case:", case)
for line in checks.choices():
    print(line)


def start(name: str, *options: str):
    """Launch a capstone run of your case: 16 steps, steps 7-10 profiled; ``options`` are more options of the
    workload (``python -m lumikit.workloads.capstone --help``). Counts the run against your budget."""
    launched.append(name)
    if len(launched) > checks.RUN_BUDGET:
        print(f"note: run {len(launched)}, over your budget of {checks.RUN_BUDGET}")
    job = workload_spec("capstone", "--model-size", "tiny", "--no-progress", "--steps", "16", "--case", case,
                        *options, name=name, gcds=1, time="0:10:00", profile="torch", profile_steps=16,
                        env={"LUMIKIT_PROFILE_SCHEDULE": "6,1,4,1"})
    return launch(job)


# %% [markdown]
# ## 1 · Your first run
#
# The run with the symptom, as it is, profiled with `torch.profiler` (the cell waits on the run's state, at most
# `checks.WAIT_S` seconds, and prints where its folder is), and its per-step metrics.

# %%
before = start("capstone-before")
print(mode_line(), "->", before.wait(timeout=checks.WAIT_S, progress=False), before.path)
print(before.tail())
steps = before.metrics().steps
steps[["step", "step_time_s", "data_time_s", "samples", "samples_per_s"]].round(3)

# %% tags=["exercise"]
# Exercise 11.1: Measure the symptom: the first run's throughput per warm step (samples per second), with its
# spread, as `before_rate`. Warm steps: not the cold first one, nor the second (loader workers, if any, fill their
# queue), nor the last (it writes the profiler's trace).
before_rate = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.1")
raise NotImplementedError("Exercise 11.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_first_run(before.path, before_rate)

# %% [markdown]
# ## 2 · Where the time goes
#
# The profiler recorded four steps. `step_phases` splits each recorded step into its phases (data, forward,
# backward, optimizer, other); `host_ops` lists every operator and annotation with its nesting, so you can look
# inside a phase.

# %%
analyzer = TraceAnalyzer.from_path(before.path / "profile")
ops = host_ops(analyzer.trace[0].events)
phases = step_phases(ops)
phases.div(1000).round(1)

# %% tags=["exercise"]
# Exercise 11.2: Which phase takes the largest share of the recorded steps (`largest_phase`), and what share (0-1)
# of their time (`largest_share`)?
shares = None
largest_phase = None
largest_share = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.2")
raise NotImplementedError("Exercise 11.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_largest_phase(before.path, largest_phase, largest_share)

# %% [markdown]
# A phase says where the time goes, not why. Look inside it: the operators with the most time of their own
# (`op_summary`), the regions the code marks for the profiler (`op_summary` of the annotations, by their whole
# time), the time each step waited for its batch (`data_time_s` in the step metrics), and what the run's log
# said it was doing. On a GCD, `lumikit trace idle` and `lumikit trace critical-path` add why the GPU waited.

# %%
print(op_summary(ops).head(8).round(3).to_string())  # operators, by the time of their own
marked = op_summary(ops, categories=("user_annotation",))  # regions the code marks, by their whole time
print(marked.head(8).round(3).to_string())

# %% [markdown]
# ## 3 · Fix, measure, claim
#
# You have three runs left. Change one option, so the measurement says what that option did.

# %% tags=["exercise"]
# Exercise 11.3: Fix it: launch the fixed run (`after = start("capstone-after", <the option and its value>)`),
# measure its throughput as you measured the first, and state your claim in `claim`: {"cause": <a letter of
# checks.CAUSES>, "fix": "<the option you changed and its value>", "before": <Measured>, "after": <Measured>,
# "evidence": <the phase of the first run's profile that takes the largest share (your 11.2)>}. The check judges the
# whole claim against both runs; a claim without the first run's profile reading does not pass.
warm = None
settings = None
operators = None
readings = None
pinned = None
cause = None
fix = None
after = None
after_rate = None
claim = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.3")
raise NotImplementedError("Exercise 11.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_claim(claim, before.path, after)

# %% tags=["exercise"]
# Exercise 11.A: Write your conclusion for the people who pay for the GPU hours (at least 60 words, as a string in
# `conclusion`): the cause and the tool reading that shows it, the fix and why it works, the throughput before and
# after with its spread. A rubric judges it (cause with evidence from a tool, the fix, before and after with
# spread, your own sentences); the check saves it with the rubric to your progress folder, where your instructor
# reads it.
evidence = None
why = None
conclusion = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("11.A")
raise NotImplementedError("Exercise 11.A: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_conclusion(conclusion, claim, before.path, after)

# %% [markdown] tags=["exercise"]
# **Question 11.B.** Your fix removed the cause you found. How would you know whether the run now has another
# bottleneck, and what would you look at first on LUMI?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._
