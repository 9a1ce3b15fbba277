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

# %% tags=["solution"]
# Exercise 04.1: In your session `ddp` one GCD is starved: it waits for input data while the others work. Which?
# Store its index in `starved_gcd`.
# Hint: a starved GCD idles at a low clock while the others work: compare the GCDs over the whole session, not one sample.
# Tool: group the session's table by `index` and average `gpu_busy_pct` or `sclk_mhz`.
per_gcd = ddp_table.groupby("index")[["gpu_busy_pct", "sclk_mhz"]].mean()
starved_gcd = int(per_gcd["gpu_busy_pct"].idxmin())
print(per_gcd.round(0).T)
print("starved:", starved_gcd)

# %% tags=["check"]
checks.check_starved_gcd(starved_gcd)

# %% tags=["solution"]
# Exercise 04.2: Which GCDs print a power reading at all (`power_gcds`, a list), and what is each package's mean
# power over the session (`package_power_w`, a dict package -> watts)?
# Hint: power is measured per package, not per GCD: see which rows carry a number.
# Tool: drop the rows whose `power_w` is missing (`dropna`), then group by `package`.
with_power = ddp_table.dropna(subset=["power_w"])
power_gcds = sorted(int(i) for i in with_power["index"].unique())
package_power_w = {int(p): float(w) for p, w in with_power.groupby("package")["power_w"].mean().items()}
print("GCDs with a power reading:", power_gcds)
print({p: round(w) for p, w in package_power_w.items()})

# %% tags=["check"]
checks.check_power_reporting(power_gcds, package_power_w)

# %%
checks.WHY_NA  # the question and its options

# %% tags=["solution"]
# Exercise 04.q1: Why do the odd GCDs print `N/A` for power? Pick one of the options shown above and store its letter in `why_na`.
# Hint: compare the odd GCDs' GPU% and clock with their power column.
why_na = "b"

# %% tags=["check"]
checks.check_why_na(why_na)

# %% tags=["solution"]
# Exercise 04.3: An MI250X package draws about 300 W with one GCD busy and about 500 W with both (the site's
# thresholds, printed above). A mean over the session mixes long waits with short bursts, so read one sample: the
# first one in which your starved GCD computes (its GPU% at or above `thresholds.busy_pct`). Store that sample's
# number in `sample`, and in `activity` a dict package -> "idle", "one" or "both" by each package's power in it.
# Hint: GPU% counts a kernel that is resident, even one that waits; power counts arithmetic. Find the first sample where the starved GCD computes, then read each package's power against the site's thresholds.
# Tool: the session table's `sample`, `gpu_busy_pct` and `power_w` columns; the thresholds in `load_site("lumi").power`.
catching_up = ddp_table[(ddp_table["index"] == starved_gcd) & (ddp_table["gpu_busy_pct"] >= thresholds.busy_pct)]
sample = int(catching_up["sample"].min())
in_sample = ddp_table[ddp_table["sample"] == sample].dropna(subset=["power_w"])
activity = {int(r.package): package_activity(r.power_w, thresholds) for r in in_sample.itertuples()}
print(f"sample {sample}:")
print(ddp_table[ddp_table["sample"] == sample][["index", "package", "power_w", "gpu_busy_pct"]].to_string(index=False))
print(activity)

# %% tags=["check"]
checks.check_package_activity(sample, activity)

# %% [markdown]
# ## Predict, then read: the power of a waiting GCD

# %%
checks.WAITING_POWER  # the question and its options

# %% tags=["solution"]
# Exercise 04.q2: Predict before you read the next cell: what will the package power of a GCD that waits in an all-reduce at 100 % GPU% be? Store the letter of your prediction in `waiting_prediction`.
# Hint: there is no wrong prediction here; think of what the arithmetic units do while a collective waits.
waiting_prediction = "c"

# %% tags=["check"]
checks.check_waiting_prediction(waiting_prediction)

# %%
# A hand-made snapshot of a DDP job stuck in an all-reduce: both GCDs of package 0 show 100 % GPU%, yet the
# package draws 115 W (the real LUMI table `lumikit.reference.load("rocm-smi-8gcd-one-starved")` reads 111-132 W).
waiting = Snapshot(devices=(
    DeviceReading(index=0, package=0, power_w=115.0, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
    DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
), format="rocm-smi")

# %% tags=["solution"]
# Exercise 04.q3: Now read the `waiting` snapshot above: which option does its package power show? Store the letter in `waiting_outcome`; the check compares it with your prediction.
# Hint: compare the `waiting` snapshot's package power with the site's thresholds (printed at the top).
waiting_outcome = {"both": "a", "one": "b", "idle": "c"}[package_activity(waiting.device(0).power_w, thresholds)]
print(f"package 0 draws {waiting.device(0).power_w:g} W at 100 % GPU%")

# %% tags=["check"]
checks.check_waiting_outcome(waiting_outcome, waiting_prediction,
                             measured={"package_power_w": waiting.device(0).power_w})

# %% tags=["solution"]
# Exercise 04.4: What does lumikit's interpretation call the `waiting` snapshot (`finding_kind`, the finding's
# kind), and are its GCDs computing (`computing`, True or False)?
# Hint: 100 % GPU% at near-idle power: is the GCD doing arithmetic?
# Tool: lumikit's `interpret` returns findings, each with a `kind`.
findings = interpret(waiting)
for finding in findings:
    print(f"[{finding.kind}] {finding.message}")
finding_kind = findings[0].kind
computing = package_activity(waiting.device(0).power_w, thresholds) != "idle"

# %% tags=["check"]
checks.check_busy_without_power(finding_kind, computing, waiting)

# %% [markdown] tags=["solution"]
# **Question 04.A.** Why does one starved GCD slow down the whole node, not only itself?
#
# **Answer.** The starved GCD is the one whose average GPU% and clock (printed in 04.1) sit far below the others':
# it waits for its next batch, and at every all-reduce the seven others wait for it, so the whole node runs at its
# pace.

# %% [markdown] tags=["solution"]
# **Question 04.B.** Why does "about 300 W means the GPU is fully used" need care on LUMI, and why read power sample
# by sample rather than its mean? Use your package powers of 04.2 and the sample of 04.3.
#
# **Answer.** Only the even GCDs print a power reading (04.2): `rocm-smi` on an MI250X reports power per
# *package*, on its first GCD, and `N/A` on the second. That is why the courses' "around 300 W" for a fully used
# GPU (the CSC summer school's demo; the LUMI AI workshop's module 04 shows 324 W with one GCD busy) needs care on
# LUMI: 300 W is one GCD's worth of a two-GCD package. The mean powers of 04.2 all sit between the idle level and
# one GCD's worth, so the thresholds would call every package "one": a mean over a run mixes long waits (100 % at
# ~130 W, as in the real LUMI table of module 04) with short bursts where every GCD computes (~500 W). One sample
# tells them apart (04.3): when the starved GCD catches up, its package alone draws one GCD's worth while the other
# packages sit near idle power at 100 % GPU%, waiting for it. Read power over time, not only its mean.

# %% [markdown] tags=["solution"]
# **Question 04.C.** Why is GPU% no proof that a GCD computes, and what should you read first?
#
# **Answer.** GPU% counts the time a kernel is resident, and a kernel spinning on a wait (a collective waiting for
# a slow rank, a copy waiting for data) counts as 100 % busy (04.3, 04.4). Power near the idle level says the
# arithmetic units are resting; read power first, then GPU%.

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

# %% tags=["solution"]
# Exercise 04.T1: Allocate one task on one GPU node with `salloc --no-shell` (partition above, `--time=00:05:00`) and
# store `sh`'s result in `allocation`. Start `training` as a step in the background (`srun --jobid=<id> ... &`,
# output to a file), then run `watch_command` as a second step with `srun --jobid=<id> --overlap` while it runs.
# Show the steps with `squeue -s -j <id>`, then release the allocation with `scancel <id>`.
# Hint: salloc prints the allocation's id; a second srun in the same allocation waits for the first unless it may overlap.
# Tool: `salloc --no-shell`, `srun --jobid=<id> --overlap`.
allocation = sh(f"salloc --no-shell --partition={partition} --nodes=1 --ntasks=1 --gpus-per-node=1 "
                f"--time=00:05:00 --job-name=watch-me", cluster)
granted = re.search(r"allocation (\d+)", allocation.stderr)  # None when Slurm refused (its message says why)
alloc_id = granted.group(1) if granted else "<id>"
sh(f"srun --jobid={alloc_id} --ntasks=1 {training} > training-{alloc_id}.log 2>&1 < /dev/null &", cluster,
   cwd=workdir)
sh("sleep 2", cluster)
sh(f"srun --jobid={alloc_id} --ntasks=1 {watch_command}", cluster, timeout=4)  # waits: the step holds the CPU
sh(f"srun --jobid={alloc_id} --overlap --ntasks=1 {watch_command}", cluster, timeout=30)
sh(f"squeue -s -j {alloc_id}", cluster)
sh("sleep 5", cluster)
sh(f"scancel {alloc_id}", cluster)
if granted:
    print("allocation:", wait_for_job(alloc_id, cluster, timeout=200))
    sh(f"cat training-{alloc_id}.log; sacct -j {alloc_id} -o JobID,JobName,State,Start,End", cluster, cwd=workdir)

# %% tags=["check"]
terminal_checks.check_overlap_steps(allocation)
