# %% [markdown]
# # 04 · Watching the GPU: exercises
#
# These exercises read a **generated** `rocm-smi` session (`lumikit.smi.synth`) in the format of a LUMI-G node
# running a DDP job on all 8 GCDs, its readings calibrated on real LUMI tables (`lumikit.reference`): the
# workbook's generated `ddp-8gcd-starved` session with its packages shuffled for you, so your starved GCD and
# package powers are your own. It ships with the workbook, so it works anywhere; on LUMI, `lumikit smi record`
# records your own. `tidy` turns a session into one row per sample and GCD. What to find, and why it matters: which
# GCD holds the whole node back, what the power readings of an MI250X really measure, and why GPU% alone can call
# a waiting GPU busy (the course's central lesson: read power before GPU%).

# %%
import lumikit.checks.m04 as checks
from lumikit.launch import mode_line
from lumikit.site import load_site
from lumikit.smi import DeviceReading, Snapshot, interpret, tidy
from lumikit.smi.interpret import package_activity

print(mode_line())
ddp = checks.exercise_session()
ddp_table = tidy(ddp)
thresholds = load_site("lumi").power
print(f"your generated session: {len(ddp)} samples of {ddp_table['index'].nunique()} GCDs")
print(f"site power thresholds: idle below {thresholds.idle_below_w:g} W, one GCD busy ~{thresholds.one_gcd_busy_w:g} W, "
      f"both busy ~{thresholds.both_gcds_busy_w:g} W per package")
ddp_table[["sample", "index", "package", "power_w", "gpu_busy_pct", "sclk_mhz"]].head(8)

# %% tags=["exercise"]
# Exercise 04.1: In your session `ddp` one GCD is starved: it waits for input data while the others work. Which?
# Store its index in `starved_gcd`.
per_gcd = None
starved_gcd = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.1")
raise NotImplementedError("Exercise 04.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_starved_gcd(starved_gcd)

# %% tags=["exercise"]
# Exercise 04.2: Which GCDs print a power reading at all (`power_gcds`, a list), and what is each package's mean
# power over the session (`package_power_w`, a dict package -> watts)?
with_power = None
power_gcds = None
package_power_w = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.2")
raise NotImplementedError("Exercise 04.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_power_reporting(power_gcds, package_power_w)

# %%
checks.WHY_NA  # the question and its options

# %% tags=["exercise"]
# Exercise 04.q1: Why do the odd GCDs print `N/A` for power? Pick one of the options shown above and store its letter in `why_na`.
why_na = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.q1")
raise NotImplementedError("Exercise 04.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_why_na(why_na)

# %% tags=["exercise"]
# Exercise 04.3: An MI250X package draws about 300 W with one GCD busy and about 500 W with both (the site's
# thresholds, printed above). A mean over the session mixes long waits with short bursts, so read one sample: the
# first one in which your starved GCD computes (its GPU% at or above `thresholds.busy_pct`). Store that sample's
# number in `sample`, and in `activity` a dict package -> "idle", "one" or "both" by each package's power in it.
catching_up = None
sample = None
in_sample = None
activity = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.3")
raise NotImplementedError("Exercise 04.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_package_activity(sample, activity)

# %% [markdown]
# ## Predict, then read: the power of a waiting GCD

# %%
checks.WAITING_POWER  # the question and its options

# %% tags=["exercise"]
# Exercise 04.q2: Predict before you read the next cell: what will the package power of a GCD that waits in an all-reduce at 100 % GPU% be? Store the letter of your prediction in `waiting_prediction`.
waiting_prediction = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.q2")
raise NotImplementedError("Exercise 04.q2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_waiting_prediction(waiting_prediction)

# %%
# A hand-made snapshot of a DDP job stuck in an all-reduce: both GCDs of package 0 show 100 % GPU%, yet the
# package draws 115 W (the real LUMI table `lumikit.reference.load("rocm-smi-8gcd-one-starved")` reads 111-132 W).
waiting = Snapshot(devices=(
    DeviceReading(index=0, package=0, power_w=115.0, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
    DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
), format="rocm-smi")

# %% tags=["exercise"]
# Exercise 04.q3: Now read the `waiting` snapshot above: which option does its package power show? Store the letter in `waiting_outcome`; the check compares it with your prediction.
waiting_outcome = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.q3")
raise NotImplementedError("Exercise 04.q3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_waiting_outcome(waiting_outcome, waiting_prediction,
                             measured={"package_power_w": waiting.device(0).power_w})

# %% tags=["exercise"]
# Exercise 04.4: What does lumikit's interpretation call the `waiting` snapshot (`finding_kind`, the finding's
# kind), and are its GCDs computing (`computing`, True or False)?
findings = None
finding = None
finding_kind = None
computing = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.4")
raise NotImplementedError("Exercise 04.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_busy_without_power(finding_kind, computing, waiting)

# %% [markdown] tags=["exercise"]
# **Question 04.A.** Why does one starved GCD slow down the whole node, not only itself?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 04.B.** Why does "about 300 W means the GPU is fully used" need care on LUMI, and why read power sample
# by sample rather than its mean? Use your package powers of 04.2 and the sample of 04.3.
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 04.C.** Why is GPU% no proof that a GCD computes, and what should you read first?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## In a terminal: salloc, then `srun --overlap` into the job
#
# The session above is generated in the format of the course's way of watching on LUMI: `salloc` reserves a GPU
# node, the training runs as one job step, and a second step (`srun --jobid=<id> --overlap rocm-smi`) looks at the
# same GPUs while it runs. Here you do the same with Slurm's own commands on the cluster this notebook reaches
# (LUMI, or the local lumi-sim cluster, which has no `rocm-smi`: its watch step prints the node's load instead). On
# a laptop without Slurm the cells show the commands without running them. The same commands work in a JupyterLab
# terminal (File → New → Terminal; on lumi-sim run `source /tmp/lumikit-slurm-sim/env.sh` first).

# %%
import re
from pathlib import Path

import lumikit.checks.terminal as terminal_checks
from lumikit.launch.terminal import find_cluster, sh, wait_for_job

cluster, why = find_cluster()
print(cluster or f"not checked here: {why}")
partition = cluster.gpu_partition if cluster else "small-g"
watch_command = "cat /proc/loadavg" if cluster is not None and cluster.name == "lumi-sim" else "rocm-smi"
workdir = Path("runs/terminal").resolve()
workdir.mkdir(parents=True, exist_ok=True)
# the "training": a step that works for 8 seconds, printing one line a second
training = "bash -c 'for i in $(seq 8); do echo step $i; sleep 1; done'"

# %% tags=["exercise"]
# Exercise 04.T1: Allocate one task on one GPU node with `salloc --no-shell` (partition above, `--time=00:05:00`) and
# store `sh`'s result in `allocation`. Start `training` as a step in the background (`srun --jobid=<id> ... &`,
# output to a file), then run `watch_command` as a second step with `srun --jobid=<id> --overlap` while it runs.
# Show the steps with `squeue -s -j <id>`, then release the allocation with `scancel <id>`.
allocation = None
granted = None
alloc_id = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("04.T1")
raise NotImplementedError("Exercise 04.T1: write your answer above, then delete this line")

# %% tags=["check"]
terminal_checks.check_overlap_steps(allocation)
