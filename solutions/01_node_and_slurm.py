# %% [markdown]
# # 01 · Exercises: a LUMI-G node and Slurm
#
# Three exercises on the node's layout and on jobs LUMI accepts, two questions on why LUMI works that way, and
# the discussion questions at the end. What to find, and why it matters: which cores sit next to which GCD (a task
# on the wrong cores pays for every copy to its GCD), and what makes Slurm refuse a job before it ever runs (a
# refused job costs you a queue wait). Every answer can be found with the site profile (`load_site("lumi")`) and
# the job builder (`lumikit.jobs`); the check under each exercise says whether it is right, and records your
# result (`lumikit progress` sums them up). Nothing here is submitted: these are the commands you would run on
# LUMI.

# %%
import lumikit.checks.m01 as checks
from lumikit.jobs import problems, render_srun, spec
from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
print(f"{site.node.gcd_count} GCDs per node, {site.node.cpus_per_gcd} usable cores per GCD")

# %% tags=["solution"]
# Exercise 01.1: Build a job on 2 full nodes, one task per GCD, each task bound to the cores next to its GCD
# (`cpu_bind="auto"`). Store the spec in `two_node_job`, render it with `render_srun(two_node_job, site)` and store
# the CPU masks of its `--cpu-bind=mask_cpu:` option, in GCD order, in the list `masks`.
# Hint: a mask needs the whole node, and each task gets the cores next to its own GCD; the rendered command carries them.
# Tool: `spec(..., partition="standard-g", cpu_bind="auto")`, `render_srun(job, site).argv` (the `--cpu-bind=mask_cpu:` token).
two_node_job = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                    cpus_per_task=7, mem_per_gpu="60G", time="0:30:00", cpu_bind="auto")
command = render_srun(two_node_job, site)
bind = next(token for token in command.argv if token.startswith("--cpu-bind="))
masks = bind.split(":", 1)[1].split(",")
print(bind)
print("site profile, GCD order:", site.node.masks() == masks)

# %% tags=["check"]
checks.check_full_node_job(two_node_job, masks)

# %% [markdown]
# ## Which cores sit next to a GCD?
#
# The GCD numbering does not follow the core numbering. The next exercise asks about one GCD, `k`, chosen for
# you (each learner gets their own).

# %%
k = checks.gcd_to_study()
print(f"your GCD: k = {k}")

# %% tags=["solution"]
# Exercise 01.2: Which cores and which NUMA domain sit next to GCD `k`? Store the core numbers (a list) in
# `cores_k` and the NUMA domain (an int) in `numa_k`.
# Hint: GCD numbers are not core groups: GCD k is not next to cores 8k to 8k+7; the site profile maps each GCD to its cores.
# Tool: the node's GCD objects in the site profile (`site.node.gcd`), with their `.cores` and `.numa`.
gcd = site.node.gcd(k)
cores_k = list(gcd.cores)
numa_k = gcd.numa
print(f"GCD {k}: NUMA {numa_k}, cores {cores_k}, mask {gcd.mask_hex}")

# %% tags=["check"]
checks.check_gcd_neighbours(cores_k, numa_k)

# %%
checks.WHY_SEVEN_CORES  # the question and its options

# %% tags=["solution"]
# Exercise 01.q1: Why does each GCD's task get 7 cores, not 8? Pick one of the options shown above and store its letter in `why_seven_cores`.
# Hint: look at the cores of your GCD in 01.2: which core of its group of 8 is missing?
why_seven_cores = "b"

# %% tags=["check"]
checks.check_why_seven_cores(why_seven_cores)

# %% [markdown]
# ## The job LUMI rejects
#
# This job asks for a whole node on `small-g` and would be refused at submission.

# %%
rejected = spec(["python", "train.py"], partition="small-g", ntasks_per_node=8, gpus_per_node=8, cpus_per_task=8,
                mem_per_gpu="60G", time="1:00:00")
print(rejected)

# %% tags=["solution"]
# Exercise 01.3: Which field of `rejected` breaks LUMI's rules? Store its name (e.g. "time") in `bad_field`, and a
# corrected copy of the job (same nodes, GCDs and tasks) in `fixed_job`.
# Hint: LUMI checks each field against the node; the fix keeps the job's shape and gives each task what sits next to its GCD.
# Tool: lumikit's `problems` lists the rules a job breaks (each with a `.field`); a job's `.with_` makes a changed copy.
found = problems(rejected, site)
for err in found:
    print(err)
bad_field = found[0].field
fixed_job = rejected.with_(cpus_per_task=site.node.cpus_per_gcd)
print("after the fix:", problems(fixed_job, site) or "no problems")

# %% tags=["check"]
checks.check_rejected_job(bad_field, fixed_job, rejected)

# %%
checks.WHY_BIND  # the question and its options

# %% tags=["solution"]
# Exercise 01.q2: Why bind each task to the cores next to its own GCD? Pick one of the options shown above and store its letter in `why_bind`.
# Hint: think of where a task's memory lives and which way a copy to its GCD travels.
why_bind = "b"

# %% tags=["check"]
checks.check_why_bind(why_bind)

# %% [markdown] tags=["solution"]
# **Question 01.A.** Why does the first mask of 01.1 cover cores 49-55 and not cores 1-7, and why does the same
# list of masks serve the second node too? (It matters: a hand-written mask in core order binds every task to the
# wrong NUMA domain.)
#
# **Answer.** The masks come straight from the site profile: task *i* on each node gets the cores next to GCD
# *i*, and GCD 0 sits next to cores 49-55 (NUMA 3). The same list repeats on the second node, because
# `--cpu-bind` masks are per node: a task's mask depends on its local id only.

# %% [markdown] tags=["solution"]
# **Question 01.B.** Why is `--cpus-per-task=7` the fix for the rejected job of 01.3, and why are 1 core, or
# fewer GCDs, not fixes? (A "fix" that LUMI accepts can still waste the node you pay for.)
#
# **Answer.** 8 tasks × 8 cores = 64 cores for 8 GCDs, but only 7 per GCD (56) are usable: the first core of every
# group of 8 is reserved for the system. With 7 cores per task the job keeps its shape and uses every usable
# core. One core per task (or none given, which Slurm reads as one) is accepted but leaves 6 of each GCD's 7
# cores idle, starving data loading. Fewer GCDs would be a different, smaller job, and would not help: the node
# still has 56 usable cores. More cores than 8 per GCD are allowed, but billed as more GCDs.

# %% [markdown]
# ## In a terminal: masks from the machine's own outputs, then checked inside a job
#
# So far the site profile gave the masks. On LUMI you can derive them yourself from two commands run on a GPU
# node: `rocm-smi --showtoponuma` says which NUMA domain each GCD hangs off, and `lscpu` says which cores form each
# NUMA domain. Each domain has two groups of 8 cores (two CCDs) and two GCDs; the lower GCD takes the lower group,
# and the first core of every group is reserved for the system. The cell below shows both outputs and where they
# come from: measured on this node, a real LUMI output that ships with the workbook, or generated from the site
# profile.

# %%
import lumikit.checks.terminal as terminal_checks
from lumikit.launch.terminal import find_cluster, sh
from lumikit.smi import parse_smi
from lumikit.smi.topology import lscpu_numa_output, toponuma_output

topo = toponuma_output()
cpus = lscpu_numa_output(on_lumi=site.name == "lumi" and topo.origin == "measured here")
for out in (topo, cpus):
    print(f"$ {out.command}    # {out.origin}\n{out.text}")

# %% tags=["solution"]
# Exercise 01.T1: From the two outputs above, derive the CPU mask of every GCD (GCD 0 first) as hex strings such as
# "0x00fe000000000000", and store the list in `derived_masks`.
# Hint: GCD -> NUMA from the first output; a NUMA domain's first 16 cores (lscpu) are two groups of 8; the first core of each group is reserved.
# Tool: a mask sets bit n for core n (a shift, `1 << n`); Python's `hex` prints an int in hex digits.
numa_of = {d.index: d.numa_node for d in parse_smi(topo.text).devices}
first_core = {}
for line in cpus.text.splitlines():
    if "NUMA node" in line and "CPU(s)" in line:
        domain = int(line.split("node", 1)[1].split()[0])
        first_core[domain] = int(line.split(":", 1)[1].strip().split("-")[0])
derived_masks = []
for gcd_index in sorted(numa_of):
    domain = numa_of[gcd_index]
    second = [g for g in sorted(numa_of) if numa_of[g] == domain].index(gcd_index)  # 0: lower GCD of the pair
    group = first_core[domain] + 8 * second
    derived_masks.append(f"0x{sum(1 << c for c in range(group + 1, group + 8)):016x}")
print(derived_masks)

# %% tags=["check"]
terminal_checks.check_topology_masks(derived_masks)

# %% [markdown]
# Now check that Slurm applies a mask. One of the course's seeds ran this test on LUMI with one mask per GCD but
# without a task count, so Slurm started **one** task, which printed **one** mask, and the test proved nothing.
# Below, the same test runs on the Slurm cluster this notebook reaches (LUMI, or the local lumi-sim cluster: in its
# `real` profile the nodes have this machine's 2 cores, so its masks are `0x1` and `0x2`; its default LUMI-shaped
# nodes take LUMI's masks but do not apply them, and the check says so). Each task prints its rank and the `Cpus_allowed_list`
# line of `/proc/self/status`, which is what the kernel lets it run on (`taskset -p $$` prints the same as a mask).
# You can type the same command in a JupyterLab terminal (File → New → Terminal; on lumi-sim first
# `source /tmp/lumikit-slurm-sim/env.sh`).

# %%
cluster, why = find_cluster()
print(cluster or f"not checked here: {why}")
if cluster is not None and cluster.name == "lumi-sim" and cluster.applies_binding:
    task_masks = [f"0x{1 << i:x}" for i in range(cluster.cpus_per_node)]
else:  # LUMI, or shown only: one mask per GCD, from the site profile
    task_masks = site.node.masks()
seed_command = (f"srun --partition=standard-g --nodes=1 --time=05:00 --cpu-bind=mask_cpu:{','.join(task_masks)} "
                "bash -c 'echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status)'")
print("the seed's test:", seed_command)

# %% tags=["solution"]
# Exercise 01.T2: Fix the seed's test so it starts one task per mask, run it with `sh(...)` and store the command
# line in `bind_command` and `sh`'s result in `bind_run`. On lumi-sim use partition `small-g` and `--time=1`.
# Hint: one task per mask: the test proves nothing with one task; read the printed lists, one line per rank.
# Tool: `--ntasks` (or `--ntasks-per-node`) on the `srun` line.
partition = cluster.gpu_partition if cluster else "standard-g"
bind_command = (f"srun --partition={partition} --nodes=1 --ntasks={len(task_masks)} --time=1 "
                f"--cpu-bind=mask_cpu:{','.join(task_masks)} "
                "bash -c 'echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status)' | sort -n")
bind_run = sh(bind_command, cluster, timeout=200)

# %% tags=["check"]
terminal_checks.check_bind_test(bind_command, bind_run)

# %% [markdown]
# ## One rule for devices and cores per rank
#
# One rank per GCD: `--gpus-per-node=G` with G tasks per node, every rank sees the node's G devices and takes device
# `LOCAL_RANK`; each rank gets the 7 cores next to its GCD, bound with its mask on whole nodes. `taskset -p $$` in
# each rank prints the mask the kernel applies. The next exercise asks about one local rank, `r`, chosen for you.

# %%
from lumikit.jobs.ranks import rank_table

r = checks.rank_to_check()
print(f"your local rank: r = {r}")

# %% tags=["solution"]
# Exercise 01.4: Build a one-node job on standard-g that follows the rule (one rank per GCD, 7 cores each, bound
# with `cpu_bind="auto"`) and store it in `rule_job`. Then store the mask that `taskset -p $$` prints in local
# rank `r` (hex digits, as taskset prints them) in `rank_mask`.
# Hint: every rank gets one GCD and the cores next to it; its mask is those cores as bits.
# Tool: lumikit's `rank_table` lists every rank of a job: devices seen, the device used, its GCD, cores and mask.
rule_job = spec(["python", "train.py"], partition="standard-g", gpus_per_node=8, ntasks_per_node=8, cpus_per_task=7,
                cpu_bind="auto", time="0:30:00")
table = rank_table(rule_job, site)
print(table)
rank_mask = table.loc[r, "mask"]

# %% tags=["check"]
checks.check_rank_rule(rule_job, rank_mask)
