# %% [markdown]
# > **Module 08 at a glance.** About **85 minutes** (lesson and exercises). Before it: module(s) 07.
# >
# > **Objectives.** After it you can:
# > - write a multi-node batch script with binding and RCCL's environment
# > - prove from RCCL's log that the network was used
# > - know which GPU each rank sees (Slurm, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES)

# %% [markdown]
# # 08 · Several nodes
#
# A model that trains on the 8 GCDs of one node trains on 16 or 1 024 GCDs without changing its code. What changes
# is the job around it: every rank needs the CPU cores next to its GCD, RCCL must talk over the Slingshot network
# (and you must be able to prove that it does), caches must not be shared through Lustre, every rank must find the
# first node (`MASTER_ADDR`), and profiling every rank would drown you in data. This module takes these five in turn.

# %%
import pandas as pd

from lumikit.launch.runfolder import default_runs_dir
from lumikit.jobs import cpu_masks, render_sbatch, spec
from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
two_nodes = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                 cpus_per_task=7, exclusive=True, cpu_bind="auto", container="pytorch", time="1:00:00")
masks = cpu_masks(two_nodes, site)  # one per task on a node; every node repeats them
per_node = two_nodes.ntasks_per_node
pd.DataFrame([{"task (SLURM_PROCID)": t, "node (SLURM_NODEID)": t // per_node, "local id": t % per_node,
               "GCD": t % per_node, "cores": "{}-{}".format(*site.node.gcd(t % per_node).cores[::6]),
               "mask": masks[t % per_node]} for t in range(two_nodes.total_tasks)]).set_index("task (SLURM_PROCID)")

# %% [markdown]
# **How to read it:** Slurm numbers the 16 tasks across the job (`SLURM_PROCID` 0-15) and within each node
# (`SLURM_LOCALID` 0-7). A task drives the GCD of its *local* id, so its mask depends only on that: task 9 gets the
# same cores as task 1. `--cpu-bind=mask_cpu:` takes one list of 8 masks and Slurm applies it on every node. Masks
# only make sense on whole nodes (`standard-g`, or `--exclusive`).
#
# ## The batch script
#
# The same spec, with three of the site's **environment recipes** switched on: `rccl` (which network interfaces
# RCCL uses), `rccl-debug` (RCCL writes what it chose to a file per rank) and `miopen` (MIOpen's caches in `/tmp`).

# %%
job = two_nodes.with_(env_recipes=("rccl", "rccl-debug", "miopen"))
print(render_sbatch(job, site))

# %% [markdown]
# **Read the script:** `MASTER_ADDR` is the first host name of the job's node list, computed with `scontrol`
# *before* `srun`, outside the container (there are no Slurm tools inside it); `MASTER_PORT` is derived from the
# job id so two jobs on one node do not collide. The multi-node binds (`/var/spool/slurmd`, `/opt/cray`, `libcxi`)
# were added because `nodes=2`: without them RCCL cannot reach the network from inside the container. The recipe
# values are exported inside the rank script, so `$SLURM_NODEID` and `$USER` expand on each node.
#
# ## The environment recipes
#
# The recipes are data in the site profile (`lumikit/sites/lumi.toml`), edited once per course edition:

# %%
recipes = ["rccl", "rccl-gdr", "rccl-debug", "miopen"]
pd.DataFrame([{"recipe": name, "variable": k, "value": v} for name in recipes
              for k, v in site.env_recipe(name).items()]).set_index(["recipe", "variable"])

# %% [markdown]
# **How to read it:** `NCCL_SOCKET_IFNAME=hsn0,...,hsn3` points RCCL at the four Slingshot interfaces.
# `NCCL_NET_GDR_LEVEL=PHB` (recipe `rccl-gdr`) lets RCCL move data between a GCD and the network card directly
# (GPU-direct RDMA) instead of through host memory. Older course editions always set it (the LUMI AI workshop's
# module 09 still does). The recipe is kept apart because the course material has grown wary of it: the May 2025
# course Q&A says it is not needed "from ROCm 6.2 on" though it "does not harm" (LUMI-training-materials,
# `docs/ai-20250527/extra_08_MultipleGPUs.md`), the workshop's 2024 bonus scripts warn that it is "known to cause
# crashes/hangs when using more than 256 nodes", and the LUMI AI Guide removed it after multi-node hangs
# (its PR #97, laifs-container-recipes issue #30).
# `NCCL_DEBUG=INFO` makes RCCL say what it chose, and `NCCL_DEBUG_FILE` sends that to a file in the run folder
# instead of the job's output (printing from hundreds of ranks slows them down; in the name NCCL fills in `%h`, the
# host, and `%p`, the process id). `rccl` and `miopen` are switched on for every multi-node job anyway; naming them
# here only makes that visible.
#
# ## Did RCCL use the network? Read its log
#
# RCCL reaches Slingshot through the **aws-ofi-rccl** plugin (libfabric, provider `cxi`). The LUMI containers ship
# the plugin; a container from the internet usually does not, and RCCL then falls back silently to TCP sockets,
# many times slower between nodes. The only proof is the `NCCL_DEBUG=INFO` log. First the real lines: the LUMI
# user guide names the two that must appear, and a learner's self-built container without the host binds printed
# the warning below it (LUMI course Q&A):

# %%
from lumikit import reference
from lumikit.logs import rccl_transport

for name in ("rccl-aws-ofi-rccl", "rccl-warn-no-fabric-domain"):
    real = reference.load(name)
    found = real.parsed()
    print(real.show())
    print(f"   -> lumikit reads: {found.transport}, ok={found.ok}: {found.describe()}\n")

# %% [markdown]
# No complete real `NCCL_DEBUG=INFO` log of a LUMI job is published in the course material, so the two longer logs
# below are **generated** by `lumikit.logs.samples` in RCCL's format (host:pid:tid [device] NCCL INFO ...): one for
# a job with the plugin, one for a container without it.

# %%
import tempfile
from pathlib import Path

from lumikit.logs.samples import rccl_debug_log

runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
logs = Path(tempfile.mkdtemp(prefix="08-rccl-logs-", dir=runs_dir))
(logs / "generated-good-rank7.txt").write_text(rccl_debug_log(plugin=True, gdr=True))
(logs / "generated-no-plugin-rank7.txt").write_text(rccl_debug_log(plugin=False, gdr=False))
for name in ("generated-good-rank7.txt", "generated-no-plugin-rank7.txt"):
    found = rccl_transport(logs / name)
    print(f"{name} (generated): {found.transport}, ok={found.ok}\n  {found.describe()}")
    for line in found.evidence:
        print(f"  line {line.line_no}: {line.text}")

# %% [markdown]
# **How to read it:** `NET/OFI Using aws-ofi-rccl` and `Selected Provider is cxi` say that RCCL talks through the
# plugin over Slingshot: that is the line to look for in every new container. In the second log the plugin did not
# load and `Using network Socket` follows. And GPU-direct RDMA? That shows in the **transport line** of each
# channel: `via NET/AWS Libfabric/0/GDRDMA` means the data goes straight from GCD memory to the network card:

# %%
good = (logs / "generated-good-rank7.txt").read_text().splitlines()
[(no, line.split("NCCL INFO ")[1]) for no, line in enumerate(good, start=1) if "via NET/" in line]

# %% [markdown]
# Without `/GDRDMA` at the end, the data is staged through host memory: correct, but slower.
#
# ## MIOpen's caches and the SQLite lock
#
# MIOpen (AMD's library of convolution kernels) compiles kernels on first use and keeps what it learned in SQLite
# databases, by default under your home folder. Home is on Lustre, and Lustre does not give SQLite the file locks it
# needs when hundreds of processes on many nodes open the same database. The job then stops with an error like the
# one below (a generated log around the real message that the LUMI course Q&A of January 2023 quotes); the log
# doctor recognises it:

# %%
from lumikit.logs import diagnose

(logs / "generated-slurm-miopen.out").write_text(
    "epoch 0 step 12\n"
    "MIOpen(HIP): Error [Prepare] SQLite prepare error: locking protocol\n"
    "MIOpen Error: /long_pathname_so_that_rpms_can_package_the_debug_info/src/MIOpen/src/sqlite_db.cpp:220: "
    "Internal error while accessing SQLite database: locking protocol\n")
for d in diagnose(logs / "generated-slurm-miopen.out"):
    print(d.describe())
print("recipe miopen:", dict(site.env_recipe("miopen")))

# %% [markdown]
# **How to read it:** the doctor names the cause and the fix; the site's `miopen` recipe applies it: one cache per
# node in `/tmp` (`$SLURM_NODEID` in the path). `/tmp` on a compute node lives in memory, counts against the job's
# memory and is not cleaned for you: copy the cache somewhere persistent at the end of the job if the next job
# should start warm, and delete it.
#
# ## MASTER_ADDR: the rendezvous
#
# Every rank joins the process group at `MASTER_ADDR:MASTER_PORT`. On one node `$(hostname)` would do; across nodes
# every rank must name the *first* node of the job, which only Slurm knows. In a batch script (the `srun` of a job
# that already has its nodes) two exports before `srun` say it:

# %%
from lumikit.jobs import render_srun

for name, value in render_srun(two_nodes, site, in_allocation=True).exports:
    print(f"export {name}={value}")
step_shell = render_srun(two_nodes, site).argv[-1]  # what a printed srun starts on each node
print(step_shell.split(" && exec ")[0] + " && exec ...")

# %% [markdown]
# A `srun` typed on a login node has no job yet, so there is nothing to take the first node of: the `srun` that
# `lumikit srun` prints computes the same two lines *inside* the step, in a shell on each node that then starts the
# container (the last line above, which goes on with `exec singularity exec ...`).

# %% [markdown]
# Now a real 2-node-shaped job: 2 nodes with one task each, running `lumikit.workloads.ddp_check` (a few DDP steps
# over gloo). On LUMI it goes to Slurm; here the local backend starts both ranks with the environment Slurm would
# give them, `MASTER_ADDR` included.

# %%
from lumikit.jobs import workload_spec
from lumikit.launch import launch

ddp = workload_spec("ddp_check", "--steps", "3", name="ddp-2nodes", nodes=2, ntasks_per_node=1, time="0:05:00")
run = launch(ddp)
print(mode_line(), "->", run.wait(timeout=120, progress=False))
for rank in range(ddp.total_tasks):
    print(run.stdout(rank).strip())

# %% [markdown]
# **How to read it:** each rank says where it runs and which master it met; both print the same `FINAL loss`,
# because the last loss is averaged over the ranks with an all-reduce. If `MASTER_ADDR` were missing or wrong, the
# ranks would wait at the rendezvous until the timeout and the job would fail.
#
# `ddp_check` talks over gloo on the CPUs. The course's GPU job over two nodes is `course_job("08", "gpu-2nodes")`:
# the ResNet with DDP, one task and one GCD per node, so every all-reduce crosses the network. Its promise is that
# RCCL's log shows aws-ofi-rccl with the CXI provider (`ofi/cxi`), never the socket fallback; `lumikit rehearse`
# runs it and checks that promise.
#
# A real 8-rank job on LUMI (the LUMI AI workshop's GPT-neo fine-tuning, one task per GCD, no torchrun) printed
# the same kind of lines; its Slurm output shows the master every rank met and each rank's view of the node:

# %%
gpt = reference.load("slurm-8gcd-gpt-neo")
lines = gpt.text.splitlines()
print("\n".join(ln for ln in lines if "MASTER_ADDR=" in ln and ln.startswith("+ export")))
print("\n".join(sorted({ln.strip() for ln in lines if ln.startswith("Rank ")})))
print(f"-- {gpt.source_line}")
#
# ## Profiling one rank
#
# Training is usually balanced, so one rank tells you about all of them, and profiling all 16 costs 16 times the
# overhead and data. The job spec profiles only the ranks in `profile_ranks`; here rank 14, on the second node:

# %%
profiled = two_nodes.with_(profile="rocprof", profile_ranks=(14,), profile_steps=32)
script = render_sbatch(profiled, site)
print(script.splitlines()[-1].split("bash -c ")[1])

# %% [markdown]
# **How to read it:** the rank script branches on `$SLURM_PROCID`: rank 14 runs under `rocprof --hip-trace
# --stats` (its output goes to the run folder's `profile/rank14/`), every other rank runs the plain command.
# `LUMIKIT_MAX_STEPS=32` keeps the profiled run short. In the trace, watch the RCCL kernels (`ncclDevKernel...`):
# the moment they dominate the step, the job is bound by the network, and more nodes will not make it faster.

# %% [markdown]
# ## A communication baseline: all_reduce_perf in a node and across two
#
# Measure the network alone before the model: rccl-tests' `all_reduce_perf` (ROCm/rccl-tests, built against the
# container's RCCL) with two ranks, first on the two GCDs of one MI250X, then on one GCD in each of two nodes.
# lumikit renders both runs with the module's binding and RCCL recipes:

# %%
bench_cmd = ["all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1"]
in_node = spec(bench_cmd, partition="small-g", ntasks_per_node=2, gpus_per_node=2, cpus_per_task=7, time="0:10:00")
two_node = spec(bench_cmd, partition="standard-g", nodes=2, gpus_per_node=1, cpus_per_task=7, time="0:10:00",
                env_recipes=("rccl",))
for job in (in_node, two_node):
    print(render_srun(job, site).text()[:230], "...\n")

# %% [markdown]
# Each run prints a table, one row per message size. The two below are **generated** in rccl-tests' format (a model,
# not a measurement; no real LUMI output is published with a licence to ship); `lumikit logs rccl-tests FILE` reads
# a real one the same way:

# %%
from lumikit.logs.collbench import describe, parse_collbench, synthesize
from lumikit.logs.plots import plot_busbw

runs = {"2 GCDs, one MI250X": parse_collbench(synthesize((0, 1))),
        "1 GCD on each of 2 nodes": parse_collbench(synthesize((0,), nodes=2))}
for bench in runs.values():
    print("\n".join(describe(bench, site)[:4]))
plot_busbw(runs, site);

# %% [markdown]
# **How to read it:** `algbw` is bytes / time; `busbw` scales it by what each link really carried (all-reduce:
# 2(n-1)/n, nccl-tests' `PERFORMANCE.md`), so it is the number to hold against a link. Small messages measure
# latency; read the plateau of the large ones, not the `Avg bus bandwidth` line. Inside an MI250X the plateau is
# bounded by the 200 GB/s in-package link; between nodes by the Slingshot NIC, 25 GB/s per MI250X. A real run far
# below its link points at the setup: RCCL on TCP sockets (this module's RCCL log reader), or GCDs on two packages.
#
# ## Every rank at once: which rank the others waited for
#
# A rank's all-reduce kernel runs from the moment that rank arrives until every rank has arrived and the
# reduction is done, so its duration includes its wait for the others. Matching the same collective on every
# rank (by process group and Kineto's `Seq` number) separates the two: the **true time** is the shortest duration
# over the ranks (the last rank to arrive waited for nobody), each rank's **wait** is its duration minus that, and
# the rank with the shortest duration **arrived last**. Only durations are used, each read on one rank's own
# clock: the nodes' clocks never need to agree. The run below is **generated** (a model of a 2-node job, not a
# recording): 4 ranks on 2 nodes, the second node's clock 37 ms behind, rank 2 computing 3 ms longer before each of
# 6 all-reduces, each all-reduce taking 2 ms once all ranks are in.

# %%
import tempfile
from pathlib import Path

from lumikit.trace.matched import collect_calls, describe_matched, match_collectives
from lumikit.trace.plots import collective_waits_chart
from lumikit.trace.synth_ranks import RanksSpec, write_straggler_ranks

two_node_traces = Path(tempfile.mkdtemp(prefix="lumikit-08-")) / "traces"
write_straggler_ranks(two_node_traces, RanksSpec(ranks=4, ranks_per_node=2))
matched = match_collectives(collect_calls(two_node_traces), links=site.links)
print("\n".join(describe_matched(matched)))
collective_waits_chart(matched);

# %% [markdown]
# **How to read it (generated):** in every all-reduce, ranks 0, 1 and 3 wait 3 ms and rank 2 none: rank 2 is the
# straggler, and the others' time in the collective is mostly waiting, not communication. The bus bandwidth is
# computed from the 2 ms true time; computed from rank 0's 5 ms kernels it would blame the network for rank 2's
# slowness. The clock line is a by-product: aligning the collectives' common ends finds the 37 ms the second
# node's clock is behind. `lumikit trace collectives DIR` prints the same; `--via slurm` reads many ranks as a job
# array.
#
# The next question is what rank 2 was doing while the others waited. The critical path across ranks answers it:
# rank 0's path, on reaching a collective it waited in, continues along the path of the rank that arrived last.

# %%
from lumikit.trace.cross_path import cross_rank_path, describe_cross

across = cross_rank_path(two_node_traces, 0, what_if=["2:backward_gemm=1.3"])
print("\n".join(describe_cross(across, top=4)))

# %% [markdown]
# **How to read it (generated):** almost all of rank 0's path is rank 2's work, led by rank 2's backward GEMM:
# speeding up rank 0 would change nothing. The what-if makes only rank 2's backward 1.3x faster and says how much
# shorter rank 0's steps become. On a real job the next step is rank 2's own trace (`lumikit trace critical-path
# --rank 2`): a different binding, more data in its shard, or a slower node.
#
# ## Hangs: which rank never joined collective N?
#
# A hung job prints nothing: every rank waits in a collective for one that never arrives, until the watchdog's
# timeout. Two tools say why (sources: PyTorch docs, "ProcessGroupNCCL environment variables" and the tutorial
# "Debugging hangs with the flight recorder"; on LUMI the same names drive RCCL's process group):
#
# - **The flight recorder**: `TORCH_NCCL_TRACE_BUFFER_SIZE=2000` keeps each rank's last 2000 collectives,
#   `TORCH_NCCL_DUMP_ON_TIMEOUT=1` writes them out on a timeout (to `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` + rank,
#   default `/tmp/nccl_trace_rank_`; on LUMI point it at the run folder, `/tmp` is per node). Every entry has a
#   `collective_seq_id`: the ranks that waited show the same number, `started`; the rank that never joined stops
#   one before it.
# - **py-spy** shows where that rank's Python is, without stopping it, through a step that overlaps the job:

# %%
from lumikit.jobs import attach_argv

print(" ".join(attach_argv(1234567, ["py-spy", "dump", "--pid", "<PID of the rank>"], node="nid005002", pty=False)))

# %% [markdown]
# **How to read it:** `srun --overlap` joins the running job on the node of the rank the flight recorder named (job
# 1234567 and the node are examples); `py-spy dump` (expected to work where py-spy is installed in the job's venv)
# prints that process's Python stack: a data loader, a checkpoint write or a branch that skipped the collective.

# %% [markdown]
# ## Key points
#
# - Masks depend on the local task id; the same list repeats on every node.
# - ROCR_VISIBLE_DEVICES filters first, HIP_VISIBLE_DEVICES counts among what is left.
# - DeepSpeed's ZeRO partitions optimizer state (stage 1), gradients (2), parameters (3).
# - Measure the network alone first: all_reduce_perf's busbw plateau against the link it crossed.
# - A collective's true time is its shortest duration over the ranks; the rank that waited least arrived last, and the critical path across ranks follows the others' wait into that rank's work.
# - A hang: the flight recorder names the rank that never joined collective N; py-spy via srun --overlap shows why.
