# %% [markdown]
# # 05 · Logging and profiling: exercises
#
# The setup cells run the lesson's profiled training run again: the course's tiny language model, 6 steps
# unprofiled, 1 profiler warm-up step, 4 recorded steps (schedule `"6,1,4,1"`), then the run stops. The exercises
# answer questions from what that run measured. What to find, and why it matters: how to profile only what you
# need (a profiler on every rank and step slows the job and fills the disk), where a step's time goes, and what the
# profiler itself costs (so you do not take its slowdown for your model's).

# %%
from lumikit.launch.runfolder import default_runs_dir
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

# %% tags=["solution"]
# Exercise 05.1: In a 4-rank job, profile only rank `target_rank` with torch.profiler, recording the steps `target_steps` (printed above, counted from 1 as the metrics file does), with one profiler warm-up step before them, and stop the run after the last of them. Store the job spec in `job`.
# Hint: torch's schedule skips some steps, warms up, then records; count which steps that makes, from 1 as the metrics file does, and stop the run after the last recorded one.
# Tool: `workload_spec("lm", ..., profile=..., profile_ranks=..., profile_steps=..., env={"LUMIKIT_PROFILE_SCHEDULE": "wait,warmup,active,repeat"})`.
schedule_05_1 = f"{target_steps[0] - 2},1,{len(target_steps)},1"
job = workload_spec("lm", "--mode", "ddp", gcds=4, ntasks_per_node=4, time="0:15:00", profile="torch",
                    profile_ranks=[target_rank], profile_steps=target_steps[-1],
                    env={"LUMIKIT_PROFILE_SCHEDULE": schedule_05_1})
print(f"schedule {schedule_05_1}: recorded steps",
      checks.recorded_steps(parse_schedule(schedule_05_1), job.profile_steps))

# %% tags=["check"]
checks.check_rank_profile_spec(job)

# %% tags=["solution"]
# Exercise 05.2: Over the recorded steps, what share (0-1) of the step time went to backward, and what share to the optimizer? Store them in `backward_share` and `optimizer_share`.
# Hint: a share is a phase's time over the recorded steps divided by those steps' total time.
# Tool: `phases` has one row per recorded step: `dur_us` and the time of each phase.
backward_share = phases["backward_us"].sum() / phases["dur_us"].sum()
optimizer_share = phases["optimizer_us"].sum() / phases["dur_us"].sum()
print(f"backward {backward_share:.1%}, optimizer {optimizer_share:.1%}, "
      f"forward {phases['forward_us'].sum() / phases['dur_us'].sum():.1%}")

# %% tags=["check"]
checks.check_step_shares(backward_share, optimizer_share, phases)

# %% tags=["solution"]
# Exercise 05.3: Which operator spent the most self time in the recorded steps? Store its name (e.g. "aten::add") in `top_op`.
# Hint: self time leaves out the operators called inside; total time counts them.
# Tool: lumikit's `op_summary` of the operators, and its `self_us` column.
ranking = op_summary(ops)
top_op = ranking.loc[0, "name"]
print(ranking.head(3)[["name", "calls", "total_us", "self_us", "self_share"]].round(3))

# %% tags=["check"]
checks.check_top_self_op(top_op, ops)

# %% tags=["solution"]
# Exercise 05.4: How much slower is a recorded step than an unprofiled one? Store the median recorded step time divided by the median unprofiled step time in `slowdown`.
# Hint: compare the median of the recorded steps with the median of unprofiled warm steps (step 1 warms the model up).
# Tool: `step_times` is indexed by step (from 1); the recorded steps are the trace's ProfilerStep numbers plus one.
recorded = [int(s) + 1 for s in phases["step"]]
slowdown = step_times.loc[recorded].median() / step_times.loc[2:6].median()
print(f"recorded steps {recorded}: {step_times.loc[recorded].median() * 1e3:.1f} ms median; "
      f"unprofiled steps 2-6: {step_times.loc[2:6].median() * 1e3:.1f} ms median "
      f"({step_times.loc[2:6].min() * 1e3:.1f}-{step_times.loc[2:6].max() * 1e3:.1f} ms); slowdown {slowdown:.2f}x")

# %% tags=["check"]
checks.check_profiler_slowdown(slowdown, step_times, schedule)

# %%
checks.WHY_FEW_STEPS  # the question and its options

# %% tags=["solution"]
# Exercise 05.q1: Why profile a few steps of one rank? Pick one of the options shown above and store its letter in `why_few_steps`.
# Hint: 05.4 measured what recording a step costs.
why_few_steps = "b"

# %% tags=["check"]
checks.check_why_few_steps(why_few_steps)

# %%
checks.WHY_WARMUP  # the question and its options

# %% tags=["solution"]
# Exercise 05.q2: Why does the schedule give the profiler a warm-up step? Pick one of the options shown above and store its letter in `why_warmup`.
# Hint: whose start-up does the profiler's warm-up step absorb: the model's or the profiler's?
why_warmup = "b"

# %% tags=["check"]
checks.check_why_warmup(why_warmup)

# %% [markdown] tags=["solution"]
# **Question 05.A.** Which steps does a schedule `"3,1,3,1"` record, why does the trace call them `ProfilerStep#4`
# to `#6`, and why is `"4,0,3,1"` a worse schedule for the same steps?
#
# **Answer.** With schedule `"3,1,3,1"` torch skips steps 1-3, warms up on step 4 and records 5-7
# (`ProfilerStep#4` to `#6` in the trace, since torch counts from 0); `profile_steps=7` stops the run there, and
# the rank script's `case "$SLURM_PROCID" in 3)` gives the profiler to rank 3 only. A schedule `"4,0,3,1"` records
# the same steps but keeps the profiler's start-up cost in the first recorded step.

# %% [markdown] tags=["solution"]
# **Question 05.B.** Why does backward cost about as much as the forward pass or more, and why read operators by
# *self* time rather than total time?
#
# **Answer.** The printed shares say where a step of this tiny model goes on the CPU. Backward usually costs
# about as much as the forward pass or more (it computes two gradients per matrix product), and the top operator
# by self time is a matrix product (`aten::mm` or `aten::addmm`) or, for a model this small, an element-wise
# operator of the optimizer. Ranked by *total* time a wrapper such as `aten::linear` would come first, which is
# why self time is the column to read.

# %% [markdown] tags=["solution"]
# **Question 05.C.** Is the slowdown of 05.4 the profiler's real cost, or noise? What would tell you, and why take
# step times from unprofiled steps?
#
# **Answer.** The printed slowdown is the profiler's cost for this model on this machine. It records every operator
# call, a few microseconds each, so a model that runs a couple of thousand small operators per step pays the most;
# compare the slowdown with the spread of the unprofiled steps (printed above) before calling it real: on a busy
# shared machine a few per cent is within the noise, which is why the medians are compared. On LUMI, with a model
# that keeps a GCD busy, the LUMI AI course's Q&A estimates "a few percent - say 2-5%" (LUMI-training-materials,
# `docs/ai-20251008/extra_04_CheckingGPU.md`). Either way: take step times from unprofiled steps, and profile a
# few steps of one rank.

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


runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
raw_dir = Path(tempfile.mkdtemp(prefix="05-raw-profiler-", dir=runs_dir))
print("write the trace into", raw_dir)

# %% tags=["solution"]
# Exercise 05.S1: Profile `train_step` with `torch.profiler.profile` (CPU activity) and the schedule wait=1,
# warmup=1, active=2, repeat=1. Run 6 steps, calling `prof.step()` after each; let `on_trace_ready` write a chrome
# trace to `raw_dir / "trace.json"`. Store the trace's path in `raw_trace` and the number of steps run in `steps_run`.
# Hint: the profiler hands a trace to a callback when a cycle ends; each recorded step is named in it.
# Tool: `on_trace_ready=lambda p: p.export_chrome_trace(str(path))`, `schedule(wait=..., warmup=..., active=...)`.
raw_trace = raw_dir / "trace.json"
steps_run = 6
with profile(activities=[ProfilerActivity.CPU],
             schedule=profiler_schedule(wait=1, warmup=1, active=2, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(str(raw_trace))) as prof:
    for _ in range(steps_run):
        train_step()
        prof.step()
profiled_steps = sorted({e["name"] for e in json.loads(raw_trace.read_text())["traceEvents"]
                         if e.get("name", "").startswith("ProfilerStep#")})
print(profiled_steps)

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

# %% tags=["solution"]
# Exercise 05.S2: How many kernels does the log launch (`hip_launches`, an int), and which HIP call took longest from
# its record to its `Returned` record (`slowest_call`, e.g. "hipMemcpyAsync")?
# Hint: a launch returns at once; look for the call that has to wait for the GPU.
import re

hip_launches = len(re.findall(r"\bhipLaunchKernel \(", hip_log_text))
started, durations = {}, {}
for line in hip_log_text.splitlines():
    stamp = int(re.search(r"(\d+) us:", line).group(1))
    call = re.search(r"\]\s+(hip\w+) \(", line)
    returned = re.search(r"\] (hip\w+): Returned", line)
    if call:
        started[call.group(1)] = stamp
    elif returned:
        durations[returned.group(1)] = max(durations.get(returned.group(1), 0), stamp - started[returned.group(1)])
slowest_call = max(durations, key=durations.get)
print(hip_launches, durations)

# %% tags=["check"]
seed_checks.check_hip_log_reading(hip_launches, slowest_call)

# %% [markdown]
# ## MIOpen's own log (seed hands-on)
#
# `AMD_LOG_LEVEL=4` (05.S2) logs the HIP runtime: launches and copies. Convolutions go through MIOpen, which keeps
# its own log, switched on with its own variables; with the command of each call logged, one slow convolution can
# be replayed alone with `MIOpenDriver`. Off LUMI no MIOpen runs here, so the job is built, not run.

# %%
import lumikit.checks.handson as handson_checks
from lumikit.jobs import render_srun, spec
from lumikit.site import load_site

# %% tags=["solution"]
# Exercise 05.S4: Build a one-GCD job (`miopen_job`, small-g, 10 minutes) running `python train.py` with MIOpen
# logging every call it makes, together with the MIOpenDriver command line of each call.
# Hint: MIOpen's variables start with MIOPEN_.
# Tool: MIOpen's documentation, "Debugging and logging"; `spec([...], env={...})`.
miopen_job = spec(["python", "train.py"], partition="small-g", gpus_per_node=1, time="0:10:00",
                  env={"MIOPEN_ENABLE_LOGGING": "1", "MIOPEN_ENABLE_LOGGING_CMD": "1"})
print(render_srun(miopen_job, load_site("lumi")).text())

# %% tags=["check"]
handson_checks.check_miopen_logging(miopen_job)

# %% [markdown]
# ## TensorBoard in LUMI's web interface
#
# LUMI's web interface (Open OnDemand) has a TensorBoard app (Apps → TensorBoard): its form asks for a project, the
# resources and the "TensorBoard log directory", and it starts TensorBoard as an interactive session. PyTorch's
# older profiler tutorials open traces in TensorBoard's *PyTorch Profiler* tab; the tutorial now says that plugin is
# deprecated and points to Holistic Trace Analysis.

# %% tags=["solution"]
# Exercise 05.S3: Which statement is right? Store its letter in `tensorboard_answer`.
#  (a) The PyTorch Profiler tab of the TensorBoard app shows the traces `tensorboard_trace_handler` wrote.
#  (b) The app shows the scalars written with SummaryWriter; the profiler traces are read in Perfetto or analysed
#      with lumikit.trace / HTA.
#  (c) Closing the browser tab stops the TensorBoard session.
#  (d) The app uploads the log directory to a TensorBoard server outside LUMI.
# Hint: the app is an interactive session (a Slurm job), and the profiler plugin is deprecated.
tensorboard_answer = "b"

# %% tags=["check"]
seed_checks.check_tensorboard_choice(tensorboard_answer)

# %% [markdown]
# ## ROCm warm-up: MIOpen's first-call kernel search, and where its results go
#
# The first convolution (or batch norm, or RNN) of a given shape makes MIOpen search for its fastest kernel: it
# compiles and times candidates, which can take tens of seconds, and stores the winner in its user database and the
# compiled kernels in its cache. `MIOPEN_FIND_MODE` chooses how hard it searches (`FAST` or `2`: the quickest
# acceptable kernel; the default `DYNAMIC_HYBRID` searches where no tuned result exists). Both caches, and Triton's
# (`torch.compile`), default to the home directory, which on LUMI holds 20 GB and is shared by every node of a job:
# move them to the project's scratch (`MIOPEN_USER_DB_PATH`, `MIOPEN_CUSTOM_CACHE_DIR`, `TRITON_CACHE_DIR`), and the
# next job finds its kernels already searched. The step times below are generated (not recorded): a convolutional
# model's first ten steps on one GCD, the first one carrying the search.

# %%
project = "project_465000000"
warmup = checks.warmup_steps()
print([f"{t:.3f}" for t in warmup])

# %% tags=["solution"]
# Exercise 05.W1: Store in `cache_env` (a dict) the environment that puts MIOpen's user database, MIOpen's kernel cache
# and Triton's cache in folders under /scratch/<project> (use `project` above).
# Hint: three variables; MIOPEN_FIND_MODE chooses how hard MIOpen searches, not where it keeps the results.
cache_env = {"MIOPEN_USER_DB_PATH": f"/scratch/{project}/caches/miopen",
             "MIOPEN_CUSTOM_CACHE_DIR": f"/scratch/{project}/caches/miopen",
             "TRITON_CACHE_DIR": f"/scratch/{project}/caches/triton"}

# %% tags=["check"]
checks.check_cache_env(cache_env, project)

# %% tags=["solution"]
# Exercise 05.W2: How many seconds did the first step cost beyond a steady step? Store it in `search_s`.
# Hint: the later steps are steady; compare the first with their median.
# Tool: `statistics.median` of the later steps, subtracted from the first step.
import statistics

search_s = warmup[0] - statistics.median(warmup[1:])

# %% tags=["check"]
checks.check_warmup_cost(search_s, warmup)

# %% [markdown]
# ## Precision on MI250X: no TF32, so bf16 is the lever
#
# An MI250X GCD has no TF32: `torch.backends.cuda.matmul.allow_tf32` changes nothing there, and an fp32 matrix
# multiply runs at the fp32 matrix peak, 47.9 TFLOPS per GCD, against 191.5 in bf16 (the site profile holds the
# figures and their source: `load_site("lumi").hardware["gcd_peak_tflops"]`). `torch.autocast("cuda",
# dtype=torch.bfloat16)` around the forward pass is what moves a model to the bf16 units. Model FLOPs utilisation is
# then measured against the peak of the precision the run used, for one GCD, the device PyTorch sees. The run below
# is generated (not recorded).

# %%
from lumikit.site import load_site

run_numbers = checks.precision_run()
print(run_numbers, load_site("lumi").hardware["gcd_peak_tflops"])

# %% tags=["solution"]
# Exercise 05.P1: What was the run's MFU (0-1)? Store it in `mfu`.
# Hint: MFU compares the arithmetic a step does per second with what one GCD could do at the precision the run used.
# Tool: FLOPs per step / step time / the peak of the run's precision: the site profile's `gcd_peak_tflops` table (`load_site("lumi").hardware`), in TFLOPS.
peaks = load_site("lumi").hardware["gcd_peak_tflops"]
mfu = run_numbers["flops_per_step"] / run_numbers["step_s"] / (peaks[run_numbers["precision"]] * 1e12)

# %% tags=["check"]
checks.check_mfu_for_precision(mfu, run_numbers)

# %% [markdown]
# ## The allocator and a memory snapshot
#
# PyTorch keeps freed GPU memory in its caching allocator; `torch.cuda.memory_reserved()` above
# `memory_allocated()` is that cache, and fragmentation of it can make an allocation fail while plenty is free.
# `PYTORCH_HIP_ALLOC_CONF=expandable_segments:True` (ROCm's name; `PYTORCH_CUDA_ALLOC_CONF` is read too) lets the
# allocator grow its segments instead of cutting new ones. To see what filled the memory, record a snapshot on the GPU:
#
# ```python
# torch.cuda.memory._record_memory_history(max_entries=100_000)
# ...  # a few training steps
# torch.cuda.memory._dump_snapshot("snapshot.pickle")
# ```
#
# This notebook runs without a GPU here, so the snapshot read below is generated in the documented layout (not
# recorded): `lumikit.trace.memory.load_memory` reads a recorded one the same way (`lumikit trace memory FILE`).

# %%
import pickle
import tempfile
from pathlib import Path

from lumikit.trace.memory import load_memory

frames_fwd = [{"filename": "train.py", "line": 12, "name": "forward"}]
frames_opt = [{"filename": "/opt/torch/optim/adamw.py", "line": 3, "name": "step"}]
snapshot_path = Path(tempfile.mkdtemp()) / "snapshot.pickle"
snapshot_path.write_bytes(pickle.dumps({"device_traces": [[
    {"action": "alloc", "addr": 0x1000, "size": 300 << 20, "stream": 0, "frames": frames_fwd},
    {"action": "alloc", "addr": 0x9000, "size": 200 << 20, "stream": 0, "frames": frames_fwd},
    {"action": "free_completed", "addr": 0x1000, "size": 300 << 20, "stream": 0, "frames": frames_fwd},
    {"action": "alloc", "addr": 0x20000, "size": 120 << 20, "stream": 0, "frames": frames_opt}]],
    "segments": [{"device": 0, "address": 0, "total_size": 1 << 30, "stream": 0, "segment_type": "large",
                  "allocated_size": 320 << 20, "active_size": 320 << 20, "blocks": [
                      {"address": 0x9000, "size": 200 << 20, "requested_size": 200 << 20,
                       "state": "active_allocated", "frames": frames_fwd},
                      {"address": 0x20000, "size": 120 << 20, "requested_size": 120 << 20,
                       "state": "active_allocated", "frames": frames_opt}]}]}))
print(load_memory(snapshot_path).describe())

# %% tags=["solution"]
# Exercise 05.M1: What was the peak of live allocated bytes in the snapshot? Store it (an int, bytes) in `peak_bytes`.
# Hint: the peak is a moment in the history, not what the segments hold at the end.
# Tool: lumikit's `load_memory(path).peak()` (its `bytes`) follows allocations and frees over time.
peak_bytes = load_memory(snapshot_path).peak()["bytes"]

# %% tags=["check"]
checks.check_snapshot_peak(peak_bytes, str(snapshot_path))
