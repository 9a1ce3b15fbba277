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
# The GCD numbering does not follow the core numbering. The next exercise asks about one GCD, `k`, chosen for
# you (each learner gets their own).

# %%
k = checks.gcd_to_study()
print(f"your GCD: k = {k}")

# %% tags=["solution"]
# Exercise 01.2: Which cores and which NUMA domain sit next to GCD `k`? Store the core numbers (a list) in
# `cores_k` and the NUMA domain (an int) in `numa_k`.
# Hint: `site.node.gcd(k)` holds both; GCD k is not next to cores 8k to 8k+7.
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
# Hint: `problems(rejected, site)` lists every rule it breaks; `rejected.with_(name=value)` makes a changed copy.
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
