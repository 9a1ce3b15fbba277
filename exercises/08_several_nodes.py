# %% [markdown]
# # 08 · Several nodes: exercises
#
# Four questions on a 2-node job: the CPU mask of one task, GPU-direct RDMA and its proof in RCCL's log, MIOpen's
# cache problem, and profiling one rank; two questions on why; the discussion questions at the end. The setup cells
# build the job and write two short generated logs in the formats RCCL and MIOpen print. What to find, and why it
# matters: a task's cores on the second node, the proof that RCCL uses the fast path between nodes (without it a
# multi-node job scales poorly, and nothing fails), the fix for an error that stops training at start-up, and
# a profile of one rank that does not slow down the other fifteen.

# %%
import tempfile
from pathlib import Path

from lumikit.launch.runfolder import default_runs_dir
import lumikit.checks.m08 as checks
from lumikit.jobs import cpu_masks, render_sbatch, spec
from lumikit.launch import mode_line
from lumikit.logs import diagnose, rccl_transport
from lumikit.logs.samples import rccl_debug_log
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
two_nodes = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                 cpus_per_task=7, exclusive=True, cpu_bind="auto", container="pytorch", time="1:00:00")
print(render_sbatch(two_nodes, site).splitlines()[-1][:160], "...")
task = checks.task_to_study()
print(f"your task for 08.1: SLURM_PROCID={task}")

# %%
# Two logs as a 2-node job writes them: rank 7's RCCL log (NCCL_DEBUG=INFO) and a job output with a MIOpen error.
runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
logs = Path(tempfile.mkdtemp(prefix="08-exercise-logs-", dir=runs_dir))
rccl_log = logs / "rccl-rank7.txt"
rccl_log.write_text(rccl_debug_log(plugin=True, gdr=True))
miopen_log = logs / "slurm-miopen.out"
miopen_log.write_text("epoch 0 step 12\nMIOpen Error: /src/MIOpen/src/sqlite_db.cpp:220: Internal error while "
                      "accessing SQLite database: locking protocol\n")
print(rccl_transport(rccl_log).describe())

# %% tags=["exercise"]
# Exercise 08.1: In `two_nodes` (2 nodes x 8 tasks), which CPU mask does your task (SLURM_PROCID=`task`, printed above) get? Store the mask string (like '0x00fe000000000000') in `mask_task`.
local_id = None
mask_task = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.1")
raise NotImplementedError("Exercise 08.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_task_mask(mask_task, tasks_per_node=two_nodes.ntasks_per_node)

# %% tags=["exercise"]
# Exercise 08.2: Which of the site's environment recipes asks RCCL for GPU-direct RDMA? Store its name in `gdr_recipe`. Which line of `rccl_log` (counting from 1) is the first proof that RCCL used it? Store the number in `gdr_line`.
gdr_recipe = None
rccl_text = None
gdr_line = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.2")
raise NotImplementedError("Exercise 08.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_gdr(gdr_recipe, gdr_line, rccl_log.read_text())

# %%
checks.WHY_NOT_PROOF  # the question and its options

# %% tags=["exercise"]
# Exercise 08.q1: Why is the line echoing NCCL_NET_GDR_LEVEL no proof of GDR? Pick one of the options shown above and store its letter in `why_not_proof`.
why_not_proof = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.q1")
raise NotImplementedError("Exercise 08.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_why_not_proof(why_not_proof)

# %% tags=["exercise"]
# Exercise 08.3: Run the log doctor on `miopen_log`. Which environment recipe of the site applies the fix it suggests? Store its name in `miopen_recipe`.
found = None
miopen_recipe = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.3")
raise NotImplementedError("Exercise 08.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_miopen_fix(miopen_recipe, miopen_log.read_text())

# %%
checks.WHY_MIOPEN_LOCK  # the question and its options

# %% tags=["exercise"]
# Exercise 08.q2: Why does MIOpen's database fail on Lustre? Pick one of the options shown above and store its letter in `why_miopen_lock`.
why_miopen_lock = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.q2")
raise NotImplementedError("Exercise 08.q2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_why_miopen_lock(why_miopen_lock)

# %% tags=["exercise"]
# Exercise 08.4: Profile exactly one rank of `two_nodes` with rocprof, and pick a rank on the second node. Store the job spec in `profiled`.
profiled = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.4")
raise NotImplementedError("Exercise 08.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_profile_one_rank(profiled, nodes=2, tasks_per_node=8)

# %% [markdown] tags=["exercise"]
# **Question 08.A.** Why does your task of 08.1 get the same mask as a task of the first node, and which one?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 08.B.** Which line proves GPU-direct RDMA and which one only asks for it? Why does the MIOpen error go
# away with the `miopen` recipe, and why is one profiled rank enough?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## In a terminal: which GPU does each rank see?
#
# Three layers decide which GPU a process uses. **Slurm** gives a job step its GPUs and, with `--gpus-per-task=1`
# (or a GPU binding), sets `ROCR_VISIBLE_DEVICES` per task. **ROCR_VISIBLE_DEVICES** is read by the ROCm runtime
# underneath HIP: devices it leaves out do not exist for the process, and those left are renumbered from 0.
# **HIP_VISIBLE_DEVICES** is read by HIP on top of that, counting among the devices ROCR left. PyTorch's `cuda:0`
# is the first device left after both. The seeds set `HIP_VISIBLE_DEVICES=0` by hand in a 2-GCD allocation, and
# printed `$ROCR_VISIBLE_DEVICES` in a binding test.
#
# Run a 2-node job on the Slurm cluster this notebook reaches (LUMI, or lumi-sim: 2 nodes with 2 cores each, so 2
# tasks per node there and 8 on LUMI); on a laptop without Slurm the cell shows the command only.

# %%
import lumikit.checks.seeds as seed_checks
import lumikit.checks.terminal as terminal_checks
from lumikit.launch.terminal import find_cluster, sh

cluster, why = find_cluster()
print(cluster or f"not checked here: {why}")
tasks_per_node = cluster.tasks_per_node if cluster else 8
partition = "standard-g" if cluster is None or cluster.name != "lumi-sim" else cluster.gpu_partition
report = "echo $SLURM_PROCID $SLURMD_NODENAME ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES"

# %% tags=["exercise"]
# Exercise 08.T1: Run `report` in every task of a job on 2 nodes with `tasks_per_node` tasks per node and one GPU per
# task, with `sh(...)`; store the result in `visibility_run`.
visibility_run = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.T1")
raise NotImplementedError("Exercise 08.T1: write your answer above, then delete this line")

# %% tags=["check"]
terminal_checks.check_gpu_visibility(visibility_run, nodes=2, tasks_per_node=tasks_per_node)

# %% tags=["exercise"]
# Exercise 08.S1: A task runs with ROCR_VISIBLE_DEVICES=4,5 and HIP_VISIBLE_DEVICES=1. How many devices does
# `torch.cuda.device_count()` return (`device_count`), and which GCD of the node (0-7) is `cuda:0` (`physical_gcd`)?
rocr_visible = None
hip_visible = None
device_count = None
physical_gcd = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.S1")
raise NotImplementedError("Exercise 08.S1: write your answer above, then delete this line")

# %% tags=["check"]
seed_checks.check_visible_gcd(physical_gcd, device_count)

# %% [markdown]
# ## Scaling efficiency across nodes (seed hands-on)
#
# `scaling_runs()` holds **generated** images/s of one job on 1 to 32 GCDs (8 per node), different for every
# learner; no published LUMI series of one job on 1 to 32 GCDs ships with the workbook. Beside it, a **real** LUMI
# log: the LUMI user guide's CNN trained with DDP on 32 GCDs (4 nodes), printed below with its source.

# %%
import pandas as pd

import lumikit.checks.handson as handson_checks
from lumikit.reference import load as load_reference

scaling = pd.DataFrame(handson_checks.scaling_runs())
print("GENERATED runs (not a measurement):")
print(scaling.to_string(index=False))
lumi_log = load_reference("slurm-images-per-sec-32gcd")
print(lumi_log.show())

# %% tags=["exercise"]
# Exercise 08.S3: What is the scaling efficiency at 32 GCDs of the generated runs (`efficiency_32`, 1.0 = perfect),
# and at how many GCDs does it first fall below 90 % (`first_below_90`)? From the real LUMI log, how many images/s
# did each GCD process (`lumi_per_gcd`)?
one_gcd = None
efficiency_32 = None
first_below_90 = None
lumi_per_gcd = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.S3")
raise NotImplementedError("Exercise 08.S3: write your answer above, then delete this line")

# %% tags=["check"]
handson_checks.check_scaling_efficiency(efficiency_32, first_below_90, lumi_per_gcd)

# %% [markdown]
# ## Per-task variables: escaping `$SLURM_*` (seed hands-on)
#
# In a batch script the script's own shell reads every line first. `$SLURM_PROCID` written there is expanded once,
# before srun starts any task; each task needs its own. The seed's scripts either protect the `$` inside the
# `bash -c "..."` that each task runs, or start a wrapper `run.sh` in every task that reads the variables itself.

# %% tags=["exercise"]
# Exercise 08.S4: Write the srun line of a batch script (`srun_line`) that runs `python train.py` in the container
# `$CONTAINER` through `bash -c "..."`, exporting RANK, LOCAL_RANK and WORLD_SIZE from Slurm's per-task variables;
# and the text of a wrapper `run.sh` (`wrapper`) that exports the same three and then runs the command it is given.
srun_line = None
wrapper = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.S4")
raise NotImplementedError("Exercise 08.S4: write your answer above, then delete this line")

# %% tags=["check"]
handson_checks.check_slurm_escaping(srun_line, wrapper)

# %% [markdown]
# ## A reading: DeepSpeed
#
# The course's last day ran DeepSpeed's ImageNet example in the PyTorch container (which ships DeepSpeed) with the
# config `ds_fp16_z1_config.json`: fp16 training with **ZeRO stage 1**. ZeRO (DeepSpeed's Zero Redundancy Optimizer)
# removes copies that plain DDP keeps on every rank: stage 1 partitions the optimizer states across the ranks,
# stage 2 the gradients too, stage 3 the parameters too (gathered when a layer needs them). The launch is the one
# of this module: one task per GCD, the same binding and RCCL environment; DeepSpeed reads `RANK`, `LOCAL_RANK`,
# `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT` like `torch.distributed` does. The seed also asks to set the
# `spawn` start method for its data loaders (module 09).

# %% tags=["exercise"]
# Exercise 08.S2: With `ds_fp16_z1_config.json`, what is split across the ranks? Store the letter in `zero_answer`.
#  (a) the optimizer states  (b) gradients and optimizer states  (c) parameters, gradients and optimizer states
#  (d) nothing: it is plain data parallelism
zero_answer = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.S2")
raise NotImplementedError("Exercise 08.S2: write your answer above, then delete this line")

# %% tags=["check"]
seed_checks.check_zero_stage(zero_answer)

# %% [markdown]
# ## A communication baseline: all_reduce_perf in a node and across two
#
# Before blaming the model, measure the network alone with rccl-tests' `all_reduce_perf`: two ranks on the two GCDs
# of one MI250X, then one rank on each of two nodes. The two outputs below are **generated** in rccl-tests' format
# for you (no real LUMI output is shipped); on LUMI the lesson's commands give the real ones.

# %%
import pandas as pd

from lumikit.logs.collbench import link_for, parse_collbench

baseline = checks.baseline_outputs()
print(baseline["two_nodes"][:700])

# %% tags=["exercise"]
# Exercise 08.5: Read both outputs. Store the largest out-of-place bus bandwidth inside one node in `node_busbw`,
# the one across two nodes in `cross_busbw`, and the name of the link that limits the two-node run (a key of the
# site's `[hardware.links]`) in `bottleneck`.
one_node = None
across = None
node_busbw = None
cross_busbw = None
bottleneck = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.5")
raise NotImplementedError("Exercise 08.5: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_comm_baseline(node_busbw, cross_busbw, bottleneck)

# %% [markdown]
# ## Hangs: which rank never joined collective N?
#
# A hung job prints nothing: every rank waits in a collective for one that never comes. PyTorch's flight recorder
# keeps each rank's last collectives (`TORCH_NCCL_TRACE_BUFFER_SIZE` entries) and writes them out when the watchdog
# times out (`TORCH_NCCL_DUMP_ON_TIMEOUT=1`). The table below is a **generated**, simplified summary of such dumps
# for a 16-rank job: each rank's last entry, with the dump's field names.

# %%
hang = pd.DataFrame(checks.hang_records()).set_index("rank")
hang

# %% tags=["exercise"]
# Exercise 08.6: Store in `recorder_env` the environment (a dict) that keeps the flight recorder and dumps it on a
# timeout; from the table, store the rank that never joined the collective the others wait in, in `missing_rank`,
# and that collective's `collective_seq_id` in `stuck_seq`.
recorder_env = None
missing_rank = None
stuck_seq = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("08.6")
raise NotImplementedError("Exercise 08.6: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_hang(recorder_env, missing_rank, stuck_seq)
