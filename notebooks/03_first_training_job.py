# %% [markdown]
# > **Module 03 at a glance.** About **70 minutes** (lesson and exercises). Before it: module(s) 01, 02.
# >
# > **Objectives.** After it you can:
# > - submit a training job and follow it with squeue and sacct
# > - plan --time from measured step times, and checkpoint and resume
# > - fix a broken #SBATCH script and cancel a job with Slurm's own commands

# %% [markdown]
# # 03 · A first training job
#
# On LUMI you do not train in the notebook: you write a **batch script** (`#SBATCH` lines for the resources, then
# `srun` and the program), hand it to `sbatch`, and the job runs when Slurm finds a node. You follow it with
# `squeue --me` and `tail -f slurm-<jobid>.out`, stop it with `scancel <jobid>`, and it is stopped for you at its
# `--time` limit. This module runs the course's training script that way: a small GPT-style language model learning
# to write movie reviews, byte by byte (`python -m lumikit.workloads.lm`, the course's GPT-neo run scaled down).

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from lumikit.launch.runfolder import default_runs_dir
from lumikit.course_jobs import first_lm_job, lm_job  # the course's jobs, one list for notebooks and rehearsals
from lumikit.jobs import render_sbatch
from lumikit.launch import launch, mode_line
from lumikit.site import load_site

site = load_site()
print(mode_line(site))


# The checkpoint must outlive the job that writes it: keep it in a folder of its own under runs/.
runs = default_runs_dir()
runs.mkdir(exist_ok=True)
checkpoint = Path(tempfile.mkdtemp(prefix="03-checkpoint-", dir=runs)) / "lm.pt"
first = first_lm_job(checkpoint)  # lm_job("lm-first", "--steps", "12", "--checkpoint", ..., "--checkpoint-every", "6")
print(render_sbatch(first, site))

# %% [markdown]
# **How to read it:** this is the batch script `sbatch` gets on LUMI. The `#SBATCH` lines ask for one GCD of a
# shared `small-g` node with its 7 cores and 60 GB for 15 minutes; `srun` starts the program once, inside the
# course's PyTorch container (`singularity exec`) and with this notebook's Python. The program trains 12 steps
# and saves a **checkpoint** (model, optimizer, step, loss curve) every 6 steps and at the end.
# `OMP_NUM_THREADS=1` keeps PyTorch to one CPU thread: the work is on the GPU, and on a small shared machine
# threads that fight over the same cores make every step many times slower.
#
# ## Submit it and follow it
#
# `launch` submits the job (on a laptop: starts it as a local process) and gives back a handle; `wait` follows it
# until it ends, and `tail` shows the end of every log of the run, as `tail -f slurm-<jobid>.out` would.

# %%
run = launch(first)
print(mode_line(), "->", run.wait(timeout=240))
print(run.tail(3))

# %% [markdown]
# **How to read it:** standard output (`rank0.out`) has what the script prints: the model (about 120 000
# parameters), the batch, and the final loss. Standard error (`rank0.err`) has the **tqdm progress bar**: each
# update is `done/total [elapsed<remaining, rate, loss]`. In a log file the updates pile up on one line, separated
# by carriage returns, which is why `tail` on a log looks garbled. `read_progress` turns them back into a table:

# %%
from lumikit.logs import read_progress

progress = read_progress(run.path / "rank0.err")
bar = progress[progress["kind"] == "progress"]
bar[["series", "step", "total", "elapsed_s", "rate", "unit"]].tail(4)

# %% [markdown]
# **How to read it:** one row per progress update the bar wrote: how many steps were done, after how many
# seconds, at what rate. This is what you can learn from any running job's log, even one that is not yours.
#
# ## What each step cost
#
# The workload also writes one JSON line per step to `metrics.rank0.jsonl` in the run folder: the loss, the step
# time and the time spent waiting for data. `run.metrics()` reads them as a table, one row per step: these are
# the numbers to reason with.

# %%
first_steps = run.metrics().steps.set_index("step")
fig, ax = plt.subplots(figsize=(7, 2.8))
ax.bar(first_steps.index, first_steps["step_time_s"] * 1000, color="#4c72b0", label="whole step")
ax.bar(first_steps.index, first_steps["data_time_s"] * 1000, color="#dd8452", label="of which waiting for data")
ax.set(xlabel="step", ylabel="time (ms)", title="Per-step time of the first run")
ax.legend()
plt.show()
first_steps[["loss", "step_time_s", "data_time_s"]].describe().loc[["mean", "50%", "min", "max"]].round(4)

# %% [markdown]
# **How to read it:** on a GPU the first step is much the slowest: it pays for memory allocation and for loading,
# compiling and tuning kernels. On a CPU that overhead is small, and other programs on the machine cause bumps of
# the same size. Once warm, the steps take about the same time; the **median** step time is the steady rate to
# plan with. `data_time_s` is the time spent waiting for the next batch: near zero here, because
# the text is small and in memory, except in the step after a checkpoint (step 7), which also pays for writing it.
#
# ## The time limit
#
# Every job has a `--time` limit (at most the partition's: 3 days on `small-g`, 3 hours on `dev-g`). When it is
# reached, Slurm sends the job's processes `SIGTERM`, waits a short grace period, kills what is left, and ends the
# job in state `TIMEOUT`; its log ends with a line like `*** JOB 1234 ON nid005001 CANCELLED AT ... DUE TO TIME
# LIMIT ***`. Whatever was not saved is lost. The workload therefore takes `--max-time SECONDS`: it watches its
# own clock and stops *before* the limit, with room for two more steps and a checkpoint. (It also stops cleanly
# when it receives `SIGTERM` or `SIGUSR1`, which `#SBATCH --signal=USR1@90` makes Slurm send 90 s early.)
#
# Here a run that asks for far more steps than fit gets `--max-time 5`:

# %%
capped_checkpoint = checkpoint.with_name("capped.pt")
capped = launch(lm_job("lm-capped", "--steps", "100000", "--max-time", "5", "--no-progress",
                       "--checkpoint", str(capped_checkpoint)))
print(mode_line(), "->", capped.wait(timeout=240))
capped_result = capped.metrics().result
print(f"stopped by {capped_result['stopped_by']} after {capped_result['steps']} steps: "
      f"{capped_result['elapsed_s']:.1f} s of training out of the 5 s; checkpoint saved: {capped_checkpoint.exists()}")

# %% [markdown]
# **How to read it:** the job ended `COMPLETED`, not `TIMEOUT`: the script stopped itself, by `max_time`, and
# wrote its checkpoint and result. The training got only part of the 5 s: the clock starts with the script, so
# building the model counts, and the script keeps a reserve for two slow steps and the checkpoint. On LUMI give `--max-time` a few minutes less than `--time`, so start-up (loading
# the container, the data) and the final save fit. If a job did run into the limit, the log doctor recognises it:

# %%
from lumikit.logs import diagnose_text

slurm_log = ("lm: 41%|####      | 412/1000 [14:52<21:13,  0.46step/s, loss=1.93]\n"
             "slurmstepd: error: *** JOB 4242424 ON nid005123 CANCELLED AT 2025-05-27T10:15:03 DUE TO TIME LIMIT ***\n")
for d in diagnose_text(slurm_log, source="slurm-4242424.out"):
    print(d.describe())

# %% [markdown]
# ## Checkpoint and resume
#
# The first run left its checkpoint at step 12. A second job with the same `--checkpoint` and `--resume` loads
# the model, the optimizer, the random state and the loss curve, and goes on to step 24, on the same batches it
# would have seen without the break. On LUMI this is the follow-up job you submit after a `TIMEOUT`.

# %%
resumed = launch(lm_job("lm-resumed", "--steps", "24", "--checkpoint", str(checkpoint), "--resume"))
print(mode_line(), "->", resumed.wait(timeout=240))
print(resumed.stdout().splitlines()[0])

# %%
resumed_steps = resumed.metrics().steps.set_index("step")
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(first_steps.index, first_steps["loss"], "o-", label=f"first job ({run.path.name[-6:]})")
ax.plot(resumed_steps.index, resumed_steps["loss"], "s-", label=f"resumed job ({resumed.path.name[-6:]})")
ax.axvline(first_steps.index.max() + 0.5, color="grey", ls=":")
ax.set(xlabel="step", ylabel="training loss (nats per byte)", title="One loss curve from two jobs")
ax.legend()
plt.show()
print(f"first job: steps {first_steps.index.min()}-{first_steps.index.max()}, "
      f"resumed job: steps {resumed_steps.index.min()}-{resumed_steps.index.max()}")

# %% [markdown]
# **How to read it:** the resumed job's first step is number 13: it did not start again from step 1, and its loss
# continues the first job's curve instead of jumping back to about 5.5 (ln 256, a model that knows nothing). Its
# `result.rank0.json` holds the whole curve of both jobs. The exercises of this module use these measurements:
# the warm step time, where a resumed run continues, and how many steps fit in a time limit.

# %% [markdown]
# ## Key points
#
# - Plan with the warm step time, not the first step.
# - A job at its time limit ends TIMEOUT: checkpoint, then resume.
# - sbatch, squeue, sacct and scancel are what lumikit runs underneath.
