# %% [markdown]
# # 01 · Exercises: a LUMI-G node and Slurm
#
# Three exercises on the node's layout and on jobs LUMI accepts. Every answer can be found with the site profile
# (`load_site("lumi")`) and the job builder (`lumikit.jobs`); the check under each exercise says whether it is
# right. Nothing here is submitted: these are the commands you would run on LUMI.

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
# Hint: masks need whole nodes (standard-g, or exclusive=True); the option's value is the masks joined by commas.
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
# The GCD numbering does not follow the core numbering. The next exercise asks about one GCD, `k`.

# %%
k = 2
print(f"GCD {k}")

# %% tags=["solution"]
# Exercise 01.2: Which cores and which NUMA domain sit next to GCD `k`? Store the core numbers (a list) in
# `cores_k` and the NUMA domain (an int) in `numa_k`.
# Hint: `site.node.gcd(k)` holds both; GCD k is not next to cores 8k to 8k+7.
gcd = site.node.gcd(k)
cores_k = list(gcd.cores)
numa_k = gcd.numa
print(f"GCD {k}: NUMA {numa_k}, cores {cores_k}, mask {gcd.mask_hex}")

# %% tags=["check"]
checks.check_gcd_neighbours(k, cores_k, numa_k)

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
# Hint: `problems(rejected, site)` lists every rule it breaks; `rejected.with_(name=value)` makes a changed copy.
found = problems(rejected, site)
for err in found:
    print(err)
bad_field = found[0].field
fixed_job = rejected.with_(cpus_per_task=site.node.cpus_per_gcd)
print("after the fix:", problems(fixed_job, site) or "no problems")

# %% tags=["check"]
checks.check_rejected_job(bad_field, fixed_job, rejected)

# %% [markdown] tags=["solution"]
# **Discussion.** The masks printed in 01.1 come straight from the site profile: task *i* on each node gets the
# cores next to GCD *i*, so the first mask covers cores 49-55 (NUMA 3), not cores 1-7. The same list repeats on
# the second node, because `--cpu-bind` masks are per node. In 01.2 the printed cores of GCD 2 are 17-23 on NUMA 1:
# the first core of every group of 8 (here 16) is reserved for the system, which is why a GCD has 7 cores, not 8.
# In 01.3 the printed problem is the CPU count: 8 tasks × 8 cores = 64 cores for 8 GCDs, but only 7 per GCD (56)
# are usable on a node, so `--cpus-per-task=7` is the fix; fewer GCDs would not help (the node still has 56
# usable cores), and more cores than 8 per GCD are allowed but billed as more GCDs.
