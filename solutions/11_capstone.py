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

# %% tags=["solution"]
# Exercise 11.1: Measure the symptom: the first run's throughput per warm step (samples per second), with its
# spread, as `before_rate`. Warm steps: not the cold first one, nor the second (loader workers, if any, fill their
# queue), nor the last (it writes the profiler's trace).
# Hint: one number per step, kept together, so the spread says what is noise.
# Tool: `before.metrics().steps["samples_per_s"]` and `measured(label, values)` from lumikit.measure.
before_rate = measured("before", steps["samples_per_s"].tolist()[2:-1])
print(before_rate.describe(unit="samples/s"))

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

# %% tags=["solution"]
# Exercise 11.2: Which phase takes the largest share of the recorded steps (`largest_phase`), and what share (0-1)
# of their time (`largest_share`)?
# Hint: a share is of the recorded steps' own time, taken over all of them: one step can mislead.
# Tool: the `phases` table above: sum each `<phase>_us` column and divide by the sum of `dur_us`.
shares = {p: phases[f"{p}_us"].sum() / phases["dur_us"].sum() for p in ("data", "forward", "backward", "optimizer",
                                                                         "other")}
largest_phase = max(shares, key=shares.get)
largest_share = float(shares[largest_phase])
print({p: round(s, 2) for p, s in shares.items()})

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

# %% tags=["solution"]
# Exercise 11.3: Fix it: launch the fixed run (`after = start("capstone-after", <the option and its value>)`),
# measure its throughput as you measured the first, and state your claim in `claim`: {"cause": <a letter of
# checks.CAUSES>, "fix": "<the option you changed and its value>", "before": <Measured>, "after": <Measured>,
# "evidence": <the phase of the first run's profile that takes the largest share (your 11.2)>}. The check judges the
# whole claim against both runs; a claim without the first run's profile reading does not pass.
# Hint: the operators inside the largest phase, the wait for batches, and the log's settings each point somewhere;
# the cause is the one your evidence points to, and the fix removes it without touching the rest.
# Tool: `compare(after_rate, before_rate).sentence(unit="samples/s")` says whether it is beyond the noise.
warm = steps.iloc[2:-1]
settings = before.metrics().result
operators = op_summary(ops).set_index("name")["self_share"]
readings = {"step ms": phases["dur_us"].sum() / len(phases) / 1000,
            "summary ms": marked.set_index("name")["total_us"].get("weights summary", 0.0) / len(phases) / 1000,
            "waiting": warm["data_time_s"].median() / warm["step_time_s"].median(),
            "matrix share": sum(operators.get(name, 0.0) for name in ("aten::mm", "aten::addmm", "aten::bmm"))}
pinned = settings.get("cpu_cores", 1) < settings.get("cores_given", 1)  # the log's "cpus:" line
if (largest_phase == "data" or readings["waiting"] > 0.3) and settings["workers"] == 0:
    cause, fix = "a", "--workers 2"          # the batches arrive late: load them in other processes
elif pinned and settings["workers"] > 0:
    cause, fix = "e", "--cpus all"           # the workers load on the one core the training runs on
elif readings["summary ms"] > 0.25 * readings["step ms"]:
    cause, fix = "b", "--log-every 0"        # the weights' summary copies every weight out in every step
elif settings["batch_size"] < 8:
    cause, fix = "d", "--batch-size 16"      # short steps of few samples: fixed costs per step dominate
else:
    cause, fix = "c", "--precision bf16"     # matrix products fill the step, and they run in fp32
print({k: round(v, 2) for k, v in readings.items()}, "->", f"({cause}) {fix}")
after = start("capstone-after", *fix.split())
print(mode_line(), "->", after.wait(timeout=checks.WAIT_S, progress=False), after.path)
after_rate = measured("after", after.metrics().steps["samples_per_s"].tolist()[2:-1])
print(compare(after_rate, before_rate).sentence(unit="samples/s", higher="faster", lower="slower"))
claim = {"cause": cause, "fix": fix, "before": before_rate, "after": after_rate, "evidence": largest_phase}

# %% tags=["check"]
checks.check_claim(claim, before.path, after)

# %% tags=["solution"]
# Exercise 11.A: Write your conclusion for the people who pay for the GPU hours (at least 60 words, as a string in
# `conclusion`): the cause and the tool reading that shows it, the fix and why it works, the throughput before and
# after with its spread. A rubric judges it (cause with evidence from a tool, the fix, before and after with
# spread, your own sentences); the check saves it with the rubric to your progress folder, where your instructor
# reads it.
# Hint: one paragraph each for what the tools showed, what you changed and why, and what it changed.
# Tool: an f-string with the numbers you measured above.
evidence = {
    "a": f"the profiler's step phases put {shares['data']:.0%} of each recorded step in data, and the step metrics "
         f"show each step waiting {readings['waiting']:.0%} of its time for its batch: every sample is read inside "
         f"the training process, one after another, while nothing computes",
    "b": f"the trace shows an annotation, `weights summary`, taking {readings['summary ms']:.0f} of the "
         f"{readings['step ms']:.0f} ms of a recorded step inside forward: every step copies every weight to the "
         f"host as Python numbers before it goes on",
    "c": f"the profiler's operator summary gives matrix products (aten::mm, aten::addmm) {readings['matrix share']:.0%} "
         f"of the recorded operators' own time, and the run's result says it ran in "
         f"{settings['knobs']['precision']}: the products run at the fp32 rate",
    "d": f"no phase stands out in the profiler's trace ({largest_phase} leads with {largest_share:.0%}) and the log "
         f"says the batch is {settings['batch_size']} samples: each step pays its fixed costs for very few samples",
    "e": f"the log says the run is pinned to {settings.get('cpu_cores')} of the {settings.get('cores_given')} cores "
         f"the job gave it while {settings['workers']} worker processes load its batches, and the profiler's recorded "
         f"steps take {readings['step ms']:.0f} ms, most of it in forward and backward: the workers and the "
         f"training take turns on that one core",
}[cause]
why = {"a": "worker processes read the next batches while the current step computes, so the reads overlap the work",
       "b": "the summary is no longer computed in every step, so nothing copies the weights out and waits for it",
       "c": "autocast runs the matrix products in bf16, which the matrix units compute faster than fp32",
       "d": "each step now carries more samples for the same fixed costs, which fills the device better",
       "e": "the run and its workers now use every core the job gave them, so loading no longer takes the "
            "training's core"}[cause]
conclusion = (
    f"The run was slow because of cause ({cause}): {evidence}. "
    f"The fix was one option, {fix}, and nothing else changed; {why}. "
    f"Measured over the warm steps of each run, the throughput went from {before_rate.median:.1f} samples/s "
    f"(range {before_rate.lo:.1f} to {before_rate.hi:.1f}) to {after_rate.median:.1f} samples/s (range "
    f"{after_rate.lo:.1f} to {after_rate.hi:.1f}), about {after_rate.median / before_rate.median:.1f} times faster, "
    f"beyond the spread of either run. On LUMI the same method reads the GPU side as well: rocm-smi through srun "
    f"--overlap for the symptom, the profiler on one rank per node, and trace idle with the critical path for the "
    f"reason the GCD waited."
)
print(conclusion)

# %% tags=["check"]
checks.check_conclusion(conclusion, claim, before.path, after)

# %% [markdown] tags=["solution"]
# **Question 11.B.** Your fix removed the cause you found. How would you know whether the run now has another
# bottleneck, and what would you look at first on LUMI?
#
# **Answer.** Profile the fixed run the same way and read it the same way: if one phase still dominates, or the
# GPU view shows the GCD idle between steps, there is a next cause. On LUMI the first looks are the GPU's side:
# `lumikit trace idle` names why the GCD waited (a sync drain, a host that launched late), the critical path says
# which chain of work sets the step time, and the report card compares the achieved rate with the GCD's peak for
# the precision the run uses (a run still in fp32 leaves three quarters of the bf16 matrix rate unused).
# `lumikit advise RUN` reads the same measurements and ranks the causes it finds by what fixing each is worth at
# most: a list of where to look first, not a conclusion. The capstone stays an investigation: the cause is named
# by the measurement you show (the phase, the operators, the setting), and `advise` can only point at one.
