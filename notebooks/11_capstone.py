# %% [markdown]
# > **Module 11 at a glance.** About **60 minutes** (lesson and exercises). Before it: module(s) 04, 05, 06, 07, 09.
# >
# > **Objectives.** After it you can:
# > - find a planted bottleneck with the GPU view, the profiler and the trace analysis
# > - fix it and report before/after numbers

# %% [markdown]
# # 11 · Capstone: find a bottleneck, fix it, measure
#
# A slow multi-rank run, and the four views that find why: the GPU view, the profiler, the trace analysis, then a
# measured fix.

# %% [markdown]
# ## The method
#
# | Step | Tool | What to read | What it cannot tell |
# |---|---|---|---|
# | 1. Symptom | GPU view: `rocm-smi` through `srun --overlap` (module 04) | which GCD idles (low clock, low power) while others work | why |
# | 2. Location | `torch.profiler` on every rank, or one rank per node (module 05) | per rank, the phases of a step: data, forward, backward, optimizer | the other ranks' side |
# | 3. Explanation | trace analysis across ranks (module 06) | where the fast ranks spend the slow rank's delay (waiting at a collective) | the fix |
# | 4. Fix and measure | the same job, one change | step time before and after, same steps, same ranks | |
#
# Under DDP the ranks meet at every collective, so **every rank reports the same step time**: a slow rank makes
# all of them slow, and the step time alone cannot say which rank is at fault. The phases can.
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
# The exercise (`exercises/11_capstone.ipynb`) runs a 2-rank DDP job in which one rank, chosen by your user name,
# reads slowly. Find it in the order of the table above, fix it without changing the storage, and report the speed-up.
# The solution is in `solutions/11_capstone.ipynb`.

# %% [markdown]
# ## Key points
#
# - Symptom, location, explanation, then one change and a new measurement.
# - Under DDP every rank shows the slowest rank's step time: compare phases.
# - A fix is a number measured with the cause still present.
