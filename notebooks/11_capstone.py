# %% [markdown]
# > **Module 11 at a glance.** About **60 minutes** (lesson and exercises). Before it: module(s) 04, 05, 06, 07, 09.
# >
# > **Objectives.** After it you can:
# > - find a planted bottleneck with the step metrics, the profiler and the trace analysis
# > - fix it with one change and claim it with before/after numbers and their spread

# %% [markdown]
# # 11 · Capstone: find a bottleneck, fix it, measure
#
# A run that is slower than it should be, the views that find why, and a measured fix.

# %% [markdown]
# ## The method
#
# | Step | Tool | What to read | What it cannot tell |
# |---|---|---|---|
# | 1. Symptom | the step metrics (`run.metrics()`); on LUMI also the GPU view, `rocm-smi` through `srun --overlap` (module 04) | samples per second per step, with its spread; a GCD at low clock and power | why |
# | 2. Location | `torch.profiler` and `step_phases` (module 05) | which phase of the step (data, forward, backward, optimizer) holds the time | which operator, and why |
# | 3. Explanation | the operators and annotations inside that phase (`host_ops`, `op_summary`); on a GCD `lumikit trace idle` and `lumikit trace critical-path` (module 06); the run's log and settings | what runs there, and what the device waited for | the fix |
# | 4. Fix and measure | the same job, one option changed | throughput before and after, same steps, with spread | |
#
# Change one thing per run: a run with two changes cannot say which one helped. And judge the difference against
# the spread of the steps (module 05's `lumikit.measure`): on a busy machine a single number says little.
#
# **Causes you will meet.** Five kinds recur: the input (samples read one after another inside the training
# process), a host readback in the loop (values copied to the host in every step), fp32 where bf16 belongs, a batch
# too small to fill the device, and a CPU binding that gives the process and the processes it starts fewer cores
# than the job has. On a GCD all five are expected to show. On a laptop's CPU the first, second and fourth always
# do; bf16 gains only on a CPU with bf16 instructions, and a binding only where two cores are free, so the exercise
# measures this machine first and deals you one of those two only where your own runs can show its fix.
#
# One part of the exercise's runs is simulated, and labelled so: on a CPU every step pays a fixed 15 ms (`step
# setup` in the profile), whatever its batch. It stands for what a step costs on a GCD besides its arithmetic
# (kernel launches, the host's Python, waits for the device), which a CPU running one thread hardly has; on a GPU
# the real costs are there, and nothing is added.
#
# ## A small rehearsal in this kernel
#
# One process, the course's language model data, and a data set whose every sample takes 4 ms longer to read (as
# from slow storage). The profiler records 3 steps; `step_phases` splits each step into its phases.

# %%
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from lumikit.launch import mode_line
from lumikit.launch.runfolder import default_runs_dir
from lumikit.profiler import profile_steps
from lumikit.trace import load_trace
from lumikit.trace.host_ops import host_ops, step_phases
from lumikit.workloads.capstone import SlowInput
from lumikit.workloads.lm import TextWindows, encode, load_corpus

print(mode_line())
torch.manual_seed(0)
torch.set_num_threads(1)
data = SlowInput(TextWindows(encode(load_corpus(None)[:20000]), 32), delay_s=0.004)
model = torch.nn.Sequential(torch.nn.Embedding(256, 64), torch.nn.Flatten(), torch.nn.Linear(32 * 64, 256))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
runs = default_runs_dir()  # the clone's runs/, where `lumikit run` puts its run folders too
runs.mkdir(exist_ok=True)


def rehearse(workers: int) -> tuple[float, float]:
    """Profile 3 of 6 steps with ``workers`` loader processes; (mean step ms, data share of the step)."""
    out = Path(tempfile.mkdtemp(prefix=f"11-rehearsal-w{workers}-", dir=runs))
    loader = DataLoader(data, batch_size=16, num_workers=workers)
    with profile_steps(enabled=True, rank=0, out_dir=out, schedule="2,1,3,1") as prof:
        for step, (inputs, targets) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(inputs), targets[:, -1])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
            if step == 5:
                break
    phases = step_phases(host_ops(load_trace(out)[0].events))
    return phases["dur_us"].mean() / 1000, phases["data_us"].sum() / phases["dur_us"].sum()


for workers in (0, 2):
    step_ms, share = rehearse(workers)
    print(f"workers={workers}: {step_ms:.0f} ms per step, {share:.0%} of it waiting for data")

# %% [markdown]
# **How to read it:** with `workers=0` the process loads each batch itself, so most of a step is the data phase
# (16 samples × 4 ms = 64 ms). With 2 workers the next batches load in other processes while the step computes, and
# the step gets shorter; the data share stays visible because this model computes for only a few milliseconds. The
# numbers are measured on this machine and vary from run to run; compare the two lines, not the absolute values.
#
# ## Your turn
#
# The exercise (`exercises/11_capstone.ipynb`) gives you a run that is slow for a reason drawn from your seed (one of
# the kinds whose fix this machine can measure; your neighbour may have another). You have a budget of four runs: find the cause
# in the order of the table above, fix it with one option, and state one claim (cause, fix, throughput before and
# after with spread) that the check judges whole. The solution is in `solutions/11_capstone.ipynb`.

# %% [markdown]
# ## Key points
#
# - Symptom, location, explanation, then one change and a new measurement.
# - A phase says where the time goes; the operators inside it and the run's settings say why.
# - A fix is a difference beyond the spread, measured with everything else unchanged.
