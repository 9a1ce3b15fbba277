# %% [markdown]
# # 03 · A first training job: exercises
#
# The next cell runs two short jobs of the course's language model (on LUMI: Slurm jobs on one GCD; elsewhere:
# local processes): 12 steps with a checkpoint, then a second job that resumes from it up to step 24. The
# exercises read their logs and metrics. What to find, and why it matters: the step time to plan with, whether a
# resumed job really continues, how many steps fit in a `--time` (a job that runs out loses everything since its
# last checkpoint), and how to recognise a job that ran out.

# %%
import math
import statistics
import tempfile
from pathlib import Path

from lumikit.launch.runfolder import default_runs_dir
import lumikit.checks.m03 as checks
from lumikit.jobs import parse_time, workload_spec
from lumikit.launch import STATES, launch, mode_line
from lumikit.logs import diagnose_text

print(mode_line())


def lm_job(name: str, *options: str):
    """The course's language model as a one-GCD job: small-g, 7 cores, 60 GB, 15 minutes, one CPU thread."""
    return workload_spec("lm", "--model-size", "tiny", "--no-progress", *options, name=name, gcds=1,
                         time="0:15:00")


runs = default_runs_dir()
runs.mkdir(exist_ok=True)
checkpoint = Path(tempfile.mkdtemp(prefix="03-checkpoint-", dir=runs)) / "lm.pt"
first = launch(lm_job("lm-first", "--steps", "12", "--checkpoint", str(checkpoint)))
print(mode_line(), "->", first.result(timeout=240, progress=False))
resumed = launch(lm_job("lm-resumed", "--steps", "24", "--checkpoint", str(checkpoint), "--resume"))
print(mode_line(), "->", resumed.result(timeout=240, progress=False))

first_metrics, resumed_metrics = first.metrics().steps, resumed.metrics().steps
step_times = first_metrics["step_time_s"].tolist()
first_steps = first_metrics["step"].tolist()
resumed_steps = resumed_metrics["step"].tolist()
print(f"first job: {len(first_metrics)} metric rows; resumed job: {len(resumed_metrics)} metric rows")

# %% tags=["solution"]
# Exercise 03.1: From the first job's per-step times (`step_times`, seconds), what is the step time once warm
# (`warm_step_s`), and how much longer than that did the first step take (`first_step_overhead_s`)?
# Hint: the first step is not like the others: leave it out before you average; the overhead is how much longer step 1 took.
# Tool: Python's `statistics` module; a median is not moved by one odd step.
warm_step_s = statistics.median(step_times[1:])
first_step_overhead_s = step_times[0] - warm_step_s
print(f"warm step: {warm_step_s * 1000:.1f} ms, first step: {step_times[0] * 1000:.1f} ms "
      f"(overhead {first_step_overhead_s * 1000:+.1f} ms)")

# %% tags=["check"]
checks.check_warm_step_time(warm_step_s, first_step_overhead_s, step_times)

# %% tags=["solution"]
# Exercise 03.2: The second job resumed from the first job's checkpoint. At which step number did it continue
# (the first step it trained: `continued_at`), and how many steps did it train itself (`steps_trained`)?
# Hint: the resumed job's metrics start where the checkpoint ended.
# Tool: `resumed_steps` (the `step` of each metrics row it wrote), or `resumed.stdout()`.
continued_at = min(resumed_steps)
steps_trained = len(resumed_steps)
print(resumed.stdout().splitlines()[0])
print(f"continued at step {continued_at}, trained {steps_trained} steps (up to {max(resumed_steps)})")

# %% tags=["check"]
checks.check_resume(continued_at, steps_trained, first_steps, resumed_steps)

# %% tags=["solution"]
# Exercise 03.3: On LUMI this job would get `--time=0:15:00`. Keeping 60 s for start-up and the last checkpoint,
# how many whole steps at the warm step time of 03.1 fit? Store the number in `steps_that_fit`.
# Hint: what else must the time limit leave room for, and what becomes of a step that would not finish in time?
# Tool: `parse_time` (lumikit.jobs) turns a Slurm time into seconds; take the reserve off, divide by the warm step time and round down (`math.floor`).
steps_that_fit = math.floor((parse_time("0:15:00") - 60) / warm_step_s)
print(f"{parse_time('0:15:00') - 60} s / {warm_step_s * 1000:.1f} ms per step -> {steps_that_fit:,} steps")

# %% tags=["check"]
checks.check_steps_in_limit(steps_that_fit, step_times, time_limit="0:15:00", reserve_s=60)

# %%
# A job that ran into its limit: the last lines of its slurm-<jobid>.out.
slurm_log = ("epoch 0: loss 2.1043, epoch time 301.22s\n"
             "lm:  62%|######1   | 620/1000 [14:41<09:00,  0.70step/s, loss=1.88]\n"
             "slurmstepd: error: *** JOB 7345012 ON nid005077 CANCELLED AT 2025-05-27T11:03:44 DUE TO TIME LIMIT ***\n")

# %% tags=["solution"]
# Exercise 03.4: Which signature id does the log doctor give `slurm_log`'s last line (`time_limit_signature`), and
# in which state does `sacct` then show the job (`final_state`)?
# Hint: the log doctor names what a log's last lines show; Slurm has a state for a job whose --time ran out.
# Tool: `diagnose_text(text)` (lumikit.logs) returns diagnoses with a `signature`; the states are in `STATES`.
diagnoses = diagnose_text(slurm_log, source="slurm-7345012.out")
time_limit_signature = diagnoses[-1].signature
final_state = "TIMEOUT"  # one of STATES: the --time ran out
print("job states:", ", ".join(STATES))
print(diagnoses[-1].describe())

# %% tags=["check"]
checks.check_time_limit(time_limit_signature, final_state, slurm_log)

# %%
checks.AT_THE_LIMIT  # the question and its options

# %% tags=["solution"]
# Exercise 03.q1: What happens when a job reaches its `--time` limit? Pick one of the options shown above and store its letter in `at_the_limit`.
# Hint: the log in 03.4 and the state `sacct` shows tell you.
at_the_limit = "b"

# %% tags=["check"]
checks.check_at_the_limit(at_the_limit)

# %% [markdown] tags=["solution"]
# **Question 03.A.** Why is the first step slower than the others, and why plan with the warm (median) step time
# rather than with the mean of a short run?
#
# **Answer.** The printed overhead is usually positive: the first step allocates memory and, on a GPU, compiles
# and tunes kernels, so it says little about the steps that follow. The mean of a short run carries that cost
# (and any noisy step) into every step you plan; the median of the warm steps does not.

# %% [markdown] tags=["solution"]
# **Question 03.B.** Why does the resumed job train on the same batches the uninterrupted run would have used?
#
# **Answer.** The resumed job continued one step after the step its checkpoint held (both printed above): model,
# optimizer, random state and loss curve came back, and the data order depends only on the seed and the step
# number, so it trains on the batches the uninterrupted run would have used.

# %% [markdown] tags=["solution"]
# **Question 03.C.** Why is the number of steps of 03.3 only an estimate, and why give `--max-time` a margin below
# `--time`?
#
# **Answer.** It is only as good as the step time it is built on: a laptop CPU and one MI250X GCD give very
# different answers for the same script, and a machine shared with other work gives noisy ones, so measure where
# the job will run. A job that hits its limit gets `SIGTERM` and is then killed; `sacct` shows `TIMEOUT`, and the
# log doctor's `time-limit` signature names the cure: `--max-time` (a clean stop with a checkpoint) with a margin,
# and a follow-up job with `--resume`.

# %% [markdown]
# ## In a terminal: a broken batch script, fixed and submitted
#
# Until now lumikit wrote and submitted the scripts. Here you do it with Slurm's own commands. The script below is
# built from two mistakes found in the course's seed notes: an account option written twice
# (`--account=--account=...`), and one task for all the GPUs of the node, so only one process runs and it sees
# every GPU. It is written for the Slurm cluster this notebook reaches (LUMI, or the local lumi-sim cluster with
# 2 cores and 8 GPUs per node); on a laptop without Slurm the cells show the commands without running them. You
# can type every command below in a JupyterLab terminal instead (File → New → Terminal; on lumi-sim run
# `source /tmp/lumikit-slurm-sim/env.sh` first).

# %%
import lumikit.checks.terminal as terminal_checks
from lumikit.launch.terminal import find_cluster, sh, wait_for_job

cluster, why = find_cluster()
print(cluster or f"not checked here: {why}")
gpus = cluster.tasks_per_node if cluster else 8           # one task per GPU fits on the node
cores_per_task = cluster.cpus_per_node // gpus if cluster else 7
partition = cluster.gpu_partition if cluster else "standard-g"
account = (cluster.account if cluster else None) or "project_465000000"  # an example where none is configured
workdir = Path("runs/terminal").resolve()
workdir.mkdir(parents=True, exist_ok=True)
broken_script = f"""#!/bin/bash
#SBATCH --job-name=first-sbatch
#SBATCH --account=--account={account}
#SBATCH --partition={partition}
#SBATCH --nodes=1
#SBATCH --tasks-per-node=1
#SBATCH --cpus-per-task={cores_per_task * gpus}
#SBATCH --gpus-per-node={gpus}
#SBATCH --time=00:05:00
#SBATCH --output=%x-%j.out
srun bash -c 'echo "rank $SLURM_PROCID on $(hostname) sees GPU(s) $ROCR_VISIBLE_DEVICES"'
"""
(workdir / "broken.sh").write_text(broken_script)
print(broken_script)
sh("sbatch broken.sh", cluster, cwd=workdir);  # Slurm's own answer to the first mistake

# %% tags=["solution"]
# Exercise 03.T1: Fix both mistakes (one `--account`, one task per GPU with `--cpus-per-task` divided to match),
# write the script to `workdir / "fixed.sh"` and store its path in `fixed_script`. Submit it with
# `sh("sbatch --parsable fixed.sh", cluster, cwd=workdir)` and store the result in `fixed_submit`; wait for the job
# (`wait_for_job(job_id, cluster)`) and print its output file.
# Hint: the value of `--account` must be the project itself; each GPU gets its own task.
# Tool: the `#SBATCH` options for the account, the tasks per node and the CPUs per task (`man sbatch`).
fixed_text = (broken_script.replace("--account=--account=", "--account=")
              .replace("--tasks-per-node=1", f"--tasks-per-node={gpus}")
              .replace(f"--cpus-per-task={cores_per_task * gpus}", f"--cpus-per-task={cores_per_task}"))
fixed_script = workdir / "fixed.sh"
fixed_script.write_text(fixed_text)
fixed_submit = sh("sbatch --parsable fixed.sh", cluster, cwd=workdir)
if fixed_submit.ran and fixed_submit.returncode == 0:
    fixed_id = fixed_submit.stdout.strip().split(";")[0]
    print("final state:", wait_for_job(fixed_id, cluster, timeout=200))
    sh(f"cat first-sbatch-{fixed_id}.out; sacct -j {fixed_id} -o JobID,JobName,State,NTasks,Account", cluster,
       cwd=workdir)

# %% tags=["check"]
terminal_checks.check_fixed_script(fixed_script, fixed_submit)

# %% [markdown]
# ### squeue, then scancel
#
# A job you no longer want should be cancelled, not left to run into its time limit (it is billed until then).

# %% tags=["solution"]
# Exercise 03.T2: Submit `sbatch --parsable --wrap "sleep 300"` (with the partition above and `--time=00:06:00`),
# store `sh`'s result in `to_cancel`; while it is queued or running, store `sh("squeue -j <id>")` in
# `squeue_seen`; then stop it with `scancel <id>` and wait until sacct says it ended.
# Hint: sbatch --parsable prints the job id first; sacct remembers who cancelled a job.
# Tool: `scancel <id>`, then `sacct -j <id>` (it shows `CANCELLED by <uid>`).
to_cancel = sh(f'sbatch --parsable --partition={partition} --time=00:06:00 --job-name=to-cancel --wrap "sleep 300"',
               cluster, cwd=workdir)
cancel_id = to_cancel.stdout.strip().split(";")[0]
squeue_seen = sh(f"squeue -j {cancel_id}", cluster)
if to_cancel.ran and cancel_id.isdigit():  # an empty id: Slurm refused the job (its message says why)
    sh(f"scancel {cancel_id}", cluster)
    print("final state:", wait_for_job(cancel_id, cluster, timeout=200))

# %% tags=["check"]
terminal_checks.check_cancelled_job(to_cancel, squeue_seen)
