# %% [markdown]
# # 05 · Logging and profiling: exercises
#
# The setup cells run the lesson's profiled training run again: the course's tiny language model, 6 steps
# unprofiled, 1 profiler warm-up step, 4 recorded steps (schedule `"6,1,4,1"`), then the run stops. The exercises
# answer questions from what that run measured. What to find, and why it matters: how to profile only what you
# need (a profiler on every rank and step slows the job and fills the disk), where a step's time goes, and what the
# profiler itself costs (so you do not take its slowdown for your model's).

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

# %%
target_rank, target_steps = checks.profile_target()  # chosen for you
print(f"05.1: profile rank {target_rank}, recording steps {target_steps}")

# %% tags=["exercise"]
# Exercise 05.1: In a 4-rank job, profile only rank `target_rank` with torch.profiler, recording the steps `target_steps` (printed above, counted from 1 as the metrics file does), with one profiler warm-up step before them, and stop the run after the last of them. Store the job spec in `job`.
schedule_05_1 = None
job = None
raise NotImplementedError("Exercise 05.1: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.1\")")

# %% tags=["check"]
checks.check_rank_profile_spec(job)

# %% tags=["exercise"]
# Exercise 05.2: Over the recorded steps, what share (0-1) of the step time went to backward, and what share to the optimizer? Store them in `backward_share` and `optimizer_share`.
backward_share = None
optimizer_share = None
raise NotImplementedError("Exercise 05.2: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.2\")")

# %% tags=["check"]
checks.check_step_shares(backward_share, optimizer_share, phases)

# %% tags=["exercise"]
# Exercise 05.3: Which operator spent the most self time in the recorded steps? Store its name (e.g. "aten::add") in `top_op`.
ranking = None
top_op = None
raise NotImplementedError("Exercise 05.3: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.3\")")

# %% tags=["check"]
checks.check_top_self_op(top_op, ops)

# %% tags=["exercise"]
# Exercise 05.4: How much slower is a recorded step than an unprofiled one? Store the median recorded step time divided by the median unprofiled step time in `slowdown`.
recorded = None
slowdown = None
raise NotImplementedError("Exercise 05.4: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.4\")")

# %% tags=["check"]
checks.check_profiler_slowdown(slowdown, step_times, schedule)

# %%
checks.WHY_FEW_STEPS  # the question and its options

# %% tags=["exercise"]
# Exercise 05.q1: Why profile a few steps of one rank? Pick one of the options shown above and store its letter in `why_few_steps`.
why_few_steps = None
raise NotImplementedError("Exercise 05.q1: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.q1\")")

# %% tags=["check"]
checks.check_why_few_steps(why_few_steps)

# %%
checks.WHY_WARMUP  # the question and its options

# %% tags=["exercise"]
# Exercise 05.q2: Why does the schedule give the profiler a warm-up step? Pick one of the options shown above and store its letter in `why_warmup`.
why_warmup = None
raise NotImplementedError("Exercise 05.q2: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.q2\")")

# %% tags=["check"]
checks.check_why_warmup(why_warmup)

# %% [markdown] tags=["exercise"]
# **Question 05.A.** Which steps does a schedule `"3,1,3,1"` record, why does the trace call them `ProfilerStep#4`
# to `#6`, and why is `"4,0,3,1"` a worse schedule for the same steps?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 05.B.** Why does backward cost about as much as the forward pass or more, and why read operators by
# *self* time rather than total time?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 05.C.** Is the slowdown of 05.4 the profiler's real cost, or noise? What would tell you, and why take
# step times from unprofiled steps?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## torch.profiler without the wrapper
#
# `profile_steps` hides the profiler behind one call. Underneath it is `torch.profiler.profile` with a
# `schedule` and an `on_trace_ready` handler, and a loop that calls `prof.step()` at the end of every training step.
# The cell below gives a small model and one training step; you write the profiling around it.

# %%
import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler import schedule as profiler_schedule

import lumikit.checks.seeds as seed_checks

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def train_step() -> float:
    """One step on a random batch: forward, backward, optimizer."""
    inputs, labels = torch.randn(64, 128), torch.randint(0, 10, (64,))
    loss = torch.nn.functional.cross_entropy(model(inputs), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


Path("runs").mkdir(exist_ok=True)
raw_dir = Path(tempfile.mkdtemp(prefix="05-raw-profiler-", dir="runs"))
print("write the trace into", raw_dir)

# %% tags=["exercise"]
# Exercise 05.S1: Profile `train_step` with `torch.profiler.profile` (CPU activity) and the schedule wait=1,
# warmup=1, active=2, repeat=1. Run 6 steps, calling `prof.step()` after each; let `on_trace_ready` write a chrome
# trace to `raw_dir / "trace.json"`. Store the trace's path in `raw_trace` and the number of steps run in `steps_run`.
raw_trace = None
steps_run = None
prof = None
_ = None
profiled_steps = None
raise NotImplementedError("Exercise 05.S1: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.S1\")")

# %% tags=["check"]
seed_checks.check_raw_profiler(raw_trace, steps_run)

# %% [markdown]
# ## Reading the HIP log by hand
#
# `parse_hip_log` turned the log into a table above. Read one yourself: the log below was generated for this
# exercise in the ROCm 6 layout of `AMD_LOG_LEVEL=4` (no GPU is needed). Each call has a record when it starts and a
# `Returned` record when it returns, both with a timestamp in microseconds.

# %%
hip_log_text = seed_checks.hip_exercise_log()
print(hip_log_text)

# %% tags=["exercise"]
# Exercise 05.S2: How many kernels does the log launch (`hip_launches`, an int), and which HIP call took longest from
# its record to its `Returned` record (`slowest_call`, e.g. "hipMemcpyAsync")?
hip_launches = None
started = None
durations = None
line = None
stamp = None
call = None
returned = None
slowest_call = None
raise NotImplementedError("Exercise 05.S2: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.S2\")")

# %% tags=["check"]
seed_checks.check_hip_log_reading(hip_launches, slowest_call)

# %% [markdown]
# ## TensorBoard in LUMI's web interface
#
# LUMI's web interface (Open OnDemand) has a TensorBoard app (Apps → TensorBoard): its form asks for a project, the
# resources and the "TensorBoard log directory", and it starts TensorBoard as an interactive session. PyTorch's
# older profiler tutorials open traces in TensorBoard's *PyTorch Profiler* tab; the tutorial now says that plugin is
# deprecated and points to Holistic Trace Analysis.

# %% tags=["exercise"]
# Exercise 05.S3: Which statement is right? Store its letter in `tensorboard_answer`.
#  (a) The PyTorch Profiler tab of the TensorBoard app shows the traces `tensorboard_trace_handler` wrote.
#  (b) The app shows the scalars written with SummaryWriter; the profiler traces are read in Perfetto or analysed
#      with lumikit.trace / HTA.
#  (c) Closing the browser tab stops the TensorBoard session.
#  (d) The app uploads the log directory to a TensorBoard server outside LUMI.
tensorboard_answer = None
raise NotImplementedError("Exercise 05.S3: replace each None above with your answer and delete this line. Stuck? Run: from lumikit.checks import hint; hint(\"05.S3\")")

# %% tags=["check"]
seed_checks.check_tensorboard_choice(tensorboard_answer)
