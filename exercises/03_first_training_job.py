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

# %% tags=["exercise"]
# Exercise 03.1: From the first job's per-step times (`step_times`, seconds), what is the step time once warm
# (`warm_step_s`), and how much longer than that did the first step take (`first_step_overhead_s`)?
warm_step_s = None
first_step_overhead_s = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.1")
raise NotImplementedError("Exercise 03.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_warm_step_time(warm_step_s, first_step_overhead_s, step_times)

# %% tags=["exercise"]
# Exercise 03.2: The second job resumed from the first job's checkpoint. At which step number did it continue
# (the first step it trained: `continued_at`), and how many steps did it train itself (`steps_trained`)?
continued_at = None
steps_trained = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.2")
raise NotImplementedError("Exercise 03.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_resume(continued_at, steps_trained, first_steps, resumed_steps)

# %% tags=["exercise"]
# Exercise 03.3: On LUMI this job would get `--time=0:15:00`. Keeping 60 s for start-up and the last checkpoint,
# how many whole steps at the warm step time of 03.1 fit? Store the number in `steps_that_fit`.
steps_that_fit = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.3")
raise NotImplementedError("Exercise 03.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_steps_in_limit(steps_that_fit, step_times, time_limit="0:15:00", reserve_s=60)

# %%
# A job that ran into its limit: the last lines of its slurm-<jobid>.out.
slurm_log = ("epoch 0: loss 2.1043, epoch time 301.22s\n"
             "lm:  62%|######1   | 620/1000 [14:41<09:00,  0.70step/s, loss=1.88]\n"
             "slurmstepd: error: *** JOB 7345012 ON nid005077 CANCELLED AT 2025-05-27T11:03:44 DUE TO TIME LIMIT ***\n")

# %% tags=["exercise"]
# Exercise 03.4: Which signature id does the log doctor give `slurm_log`'s last line (`time_limit_signature`), and
# in which state does `sacct` then show the job (`final_state`)?
diagnoses = None
time_limit_signature = None
final_state = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.4")
raise NotImplementedError("Exercise 03.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_time_limit(time_limit_signature, final_state, slurm_log)

# %%
checks.AT_THE_LIMIT  # the question and its options

# %% tags=["exercise"]
# Exercise 03.q1: What happens when a job reaches its `--time` limit? Pick one of the options shown above and store its letter in `at_the_limit`.
at_the_limit = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.q1")
raise NotImplementedError("Exercise 03.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_at_the_limit(at_the_limit)

# %% [markdown] tags=["exercise"]
# **Question 03.A.** Why is the first step slower than the others, and why plan with the warm (median) step time
# rather than with the mean of a short run?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 03.B.** Why does the resumed job train on the same batches the uninterrupted run would have used?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 03.C.** Why is the number of steps of 03.3 only an estimate, and why give `--max-time` a margin below
# `--time`?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

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

# %% tags=["exercise"]
# Exercise 03.T1: Fix both mistakes (one `--account`, one task per GPU with `--cpus-per-task` divided to match),
# write the script to `workdir / "fixed.sh"` and store its path in `fixed_script`. Submit it with
# `sh("sbatch --parsable fixed.sh", cluster, cwd=workdir)` and store the result in `fixed_submit`; wait for the job
# (`wait_for_job(job_id, cluster)`) and print its output file.
fixed_text = None
fixed_script = None
fixed_submit = None
fixed_id = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.T1")
raise NotImplementedError("Exercise 03.T1: write your answer above, then delete this line")

# %% tags=["check"]
terminal_checks.check_fixed_script(fixed_script, fixed_submit)

# %% [markdown]
# ### squeue, then scancel
#
# A job you no longer want should be cancelled, not left to run into its time limit (it is billed until then).

# %% tags=["exercise"]
# Exercise 03.T2: Submit `sbatch --parsable --wrap "sleep 300"` (with the partition above and `--time=00:06:00`),
# store `sh`'s result in `to_cancel`; while it is queued or running, store `sh("squeue -j <id>")` in
# `squeue_seen`; then stop it with `scancel <id>` and wait until sacct says it ended.
to_cancel = None
cancel_id = None
squeue_seen = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("03.T2")
raise NotImplementedError("Exercise 03.T2: write your answer above, then delete this line")

# %% tags=["check"]
terminal_checks.check_cancelled_job(to_cancel, squeue_seen)
