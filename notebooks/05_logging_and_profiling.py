# %% [markdown]
# > **Module 05 at a glance.** About **95 minutes** (lesson and exercises). Before it: module(s) 03.
# >
# > **Objectives.** After it you can:
# > - read a HIP log (AMD_LOG_LEVEL=4) and rocprof's tables
# > - profile a few steps with torch.profiler, with and without lumikit's wrapper
# > - diagnose a failed job from its log

# %% [markdown]
# # 05 · Logging and profiling
#
# Module 04 watched the GPU from outside. This one looks inside a run, in the order the LUMI courses climb:
#
# 1. **HIP logging** (`AMD_LOG_LEVEL=4`): the runtime writes every copy and kernel launch to stderr. No tool
#    needed, but the log grows by megabytes per second.
# 2. **rocprof** (`rocprof --hip-trace --stats`, and from ROCm 6.2 `rocprofv3`): wraps the command and writes
#    kernel statistics and a timeline you open in Perfetto.
# 3. **torch.profiler**: PyTorch records its own operators (and, on a GPU, the kernels they launch) as a Chrome
#    trace, one file per rank.
#
# Profile a **few steps** of **one rank**: a profile of a whole run is huge and a multi-node job needs only one.
# In a job spec that is `profile=` (the mode), `profile_ranks=` (which ranks) and `profile_steps=` (where the run
# stops, through `LUMIKIT_MAX_STEPS`).

# %%
import pandas as pd

from lumikit.launch.runfolder import default_runs_dir
from lumikit.jobs import PROFILE_MODES
from lumikit.launch import get_backend, mode_line

print(mode_line())
on_slurm = get_backend().name == "slurm"
pd.DataFrame([{"mode": m.name, "what you get": m.summary, "wraps the command with": " ".join(m.prefix[:4]) or "-",
               "sets": ", ".join(k for k, _ in m.env) or "-"} for m in PROFILE_MODES.values()]).set_index("mode")

# %% [markdown]
# **How to read it:** two kinds of mode. `rocprof` and `rocprofv3` *wrap* the command (the profiler starts the
# program); the others only *set variables* that the ROCm runtime, RCCL, MIOpen or our training script read.
# Every mode writes into the run folder's `profile/`, where lumikit's readers look.
#
# ## 1 · The HIP log
#
# With `AMD_LOG_LEVEL=4` each HIP call becomes a few records on stderr:
# `:<level>:<source file>:<line>: <time> us: <pid> : [tid:<thread>] <message>` (ROCm 7 writes
# `[pid:<pid> tid: <thread>]`). A kernel launch is a `hipLaunchKernel` (or `hipExtModuleLaunchKernel`) record,
# then `ShaderName : <kernel symbol>`, a `Dispatch Header` with the grid and workgroup sizes, and
# `Returned hipSuccess`. On LUMI the next cell runs a small matrix product with `profile="hiplog"`; without a GPU
# there is no HIP runtime to log, so the cell writes a few **generated** records in the same format (ROCm 6
# layout) instead; a real LUMI log follows it.

# %%
from pathlib import Path

from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.logs import hip_summary, parse_hip_log

if on_slurm:
    probe = spec(["python", "-c", "import torch; x = torch.randn(512, 512, device='cuda'); print((x @ x).sum().item())"],
                 name="hiplog", partition="small-g", gpus_per_node=1, cpus_per_task=7, mem_per_gpu="60G",
                 time="0:05:00", container="pytorch", profile="hiplog")
    hip_run = launch(probe)
    print(mode_line(), "->", hip_run.wait(timeout=600, poll=2))
    hip_text = hip_run.stderr(0)
else:
    hip_text = """\
:3:hip_memory.cpp           :1552: 2210432118 us: 51873 : [tid:0x7f3a1c5ff700]  hipMemcpyAsync ( 0x7f36d2a00000, 0x7f3a0b2c4040, 4096, hipMemcpyHostToDevice, stream:0x5594c1a3e2d0 )
:3:hip_memory.cpp           :1553: 2210432131 us: 51873 : [tid:0x7f3a1c5ff700] hipMemcpyAsync: Returned hipSuccess :
:3:hip_module.cpp           :662 : 2210432140 us: 51873 : [tid:0x7f3a1c5ff700]  hipLaunchKernel ( 0x7f3a7c1e3c10, {64,1,1}, {128,1,1}, 0x7f3a1c5fd1b0, 0, stream:0x5594c1a3e2d0 )
:3:rocvirtual.cpp           :2853: 2210432146 us: 51873 : [tid:0x7f3a1c5ff700] ShaderName : _ZN2at6native12_GLOBAL__N_122indexSelectLargeIndexIfllLi2ELi2ELin2ELb1EEEvNS_4cuda6detail10TensorInfoIT_T1_EES7_NS4_IT0_S6_EEiiS6_S6_l
:4:rocvirtual.cpp           :891 : 2210432150 us: 51873 : [tid:0x7f3a1c5ff700] HWq=0x7f3a0ee00000, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), setup=3, grid=[8192, 1, 1], workgroup=[128, 1, 1], private_seg_size=0, group_seg_size=0, kernel_obj=0x7f3a4e220000, kernarg_address=0x7f3a0ec70000, completion_signal=0x0
:3:hip_module.cpp           :663 : 2210432154 us: 51873 : [tid:0x7f3a1c5ff700] hipLaunchKernel: Returned hipSuccess :
:3:hip_module.cpp           :662 : 2210432171 us: 51873 : [tid:0x7f3a1c5ff700]  hipExtModuleLaunchKernel ( 0x7f3a6d0c2e40, 16384, 1, 1, 256, 1, 1, 0, stream:0x5594c1a3e2d0 )
:3:rocvirtual.cpp           :2853: 2210432176 us: 51873 : [tid:0x7f3a1c5ff700] ShaderName : Cijk_Alik_Bljk_SB_MT64x64x16_MI32x32x2x1_SN_1LDSB0_GRVW4_TT2_32_WG32_8_1
:4:rocvirtual.cpp           :891 : 2210432179 us: 51873 : [tid:0x7f3a1c5ff700] HWq=0x7f3a0ee00000, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), setup=3, grid=[16384, 1, 1], workgroup=[256, 1, 1], private_seg_size=0, group_seg_size=16384, kernel_obj=0x7f3a4e5c1000, kernarg_address=0x7f3a0ec70400, completion_signal=0x0
:3:hip_module.cpp           :663 : 2210432183 us: 51873 : [tid:0x7f3a1c5ff700] hipExtModuleLaunchKernel: Returned hipSuccess :
:3:hip_memory.cpp           :1552: 2210432412 us: 51873 : [tid:0x7f3a1c5ff700]  hipMemcpyWithStream ( 0x7ffd5e3b1a4c, 0x7f36d2c00000, 4, hipMemcpyDeviceToHost, stream:0x5594c1a3e2d0 )
:3:hip_memory.cpp           :1553: 2210432530 us: 51873 : [tid:0x7f3a1c5ff700] hipMemcpyWithStream: Returned hipSuccess :
"""
    print("no GPU here: a generated HIP log, written by this cell in the ROCm 6 layout (not a recording)")
hip = parse_hip_log(hip_text, source="rank0.err")
hip[["ts_us", "api", "kind", "name", "kernel_class", "grid", "workgroup", "bytes", "direction", "api_us"]].head(12)

# %%
summary = hip_summary(hip, top=5)
{k: summary[k] for k in ("layout", "records", "launches", "copies", "bytes_by_direction", "kernel_classes")}

# %% [markdown]
# **How to read it:** one row per launch or copy. `grid` counts *work-items* (the dispatch header's numbers), not
# blocks: 8192 items in workgroups of 128 are 64 blocks, the `{64,1,1}` of the launch call. `api_us` is how long
# the call took on the host: launches return at once (the kernel runs later), while the 4-byte device-to-host copy
# (a `loss.item()`) waits for the GPU to finish everything queued before it. Names tell the library: `Cijk_...`
# is a Tensile GEMM from rocBLAS/hipBLASLt, `at::native::...` a PyTorch kernel. The same table comes from the
# command line: `lumikit logs hip rank0.err`.
#
# The same reader on a **real** log: `AMD_LOG_LEVEL=4` lines of PyTorch on LUMI (ROCm 6), as the LUMI AI workshop
# published them (its page runs the lines together; the reader splits them at each record):

# %%
from lumikit import reference

real_hip = reference.load("hip-log-level4")
print(real_hip.source_line)
parse_hip_log(real_hip.text, source=real_hip.name)[["ts_us", "api", "kind", "name", "grid", "workgroup"]]

# %% [markdown]
# **How to read it:** a real `hipLaunchKernel` of a PyTorch copy kernel (`direct_copy_kernel`, the kernel behind
# `tensor.to()` and `.copy_()`): its grid of 16 777 216 work-items is the launch call's 32768 blocks of 512.
#
# ## 2 · torch.profiler on a few steps
#
# `lumikit.profiler.profile_steps` wraps `torch.profiler` for the course's training scripts. The profiler follows a
# **schedule**: skip `wait` steps, run `warmup` steps with the profiler on but discard them (the first profiled
# step is slow), record `active` steps, `repeat` times. Turn it on with the workload's `--profile` flag, or for
# chosen ranks with the job spec's `profile="torch"`, which exports `LUMIKIT_PROFILE=torch` for those ranks;
# `LUMIKIT_PROFILE_SCHEDULE="wait,warmup,active,repeat"` sets the schedule and `profile_steps` stops the run.
#
# Below: the course's language model (`lumikit.workloads.lm`, tiny size), 6 steps unprofiled, 1 warm-up, 4
# recorded, then the run ends. Locally it trains on the CPU, with one thread (`OMP_NUM_THREADS=1`) so that other
# work on a shared machine does not make the step times jump; on LUMI the same spec gets a GCD.

# %%
from lumikit.jobs import workload_spec

schedule = "6,1,4,1"
train = workload_spec("lm", "--model-size", "tiny", "--no-progress", name="lm-profiled", gcds=1,
                      time="0:10:00", profile="torch",
                      profile_steps=11, env={"LUMIKIT_PROFILE_SCHEDULE": schedule, "LUMIKIT_PROFILE_MEMORY": "1"})
run = launch(train)
print(mode_line(), "->", run.wait(timeout=300, poll=0.25))
print(run.stdout(0))

# %% [markdown]
# The trace lands in the run folder, `profile/rank<R>.<id>.pt.trace.json`, one file per profiled rank.

# %%
from lumikit.profiler import trace_files
from lumikit.trace import TraceAnalyzer, load_trace

files = trace_files(run.path / "profile")
for f in files:
    print(f.relative_to(run.path), f"{f.stat().st_size / 1e6:.1f} MB")
trace = load_trace(run.path / "profile")
headline = TraceAnalyzer(trace).summary()["ranks"]["0"]
print(f"rank 0: {headline['events']} events, {headline['gpu_activities']} GPU activities")
pd.DataFrame(headline["steps"]).set_index("step")

# %% [markdown]
# **How to read it:** the recorded steps are named `ProfilerStep#7` ... `#10`: torch counts steps from 0, so they
# are steps 8-11 of the run. Without a GPU the trace holds host events only (`gpu_activities` 0); on LUMI it also
# holds the kernels, and module 06 reads those in depth.
#
# ### What did each step spend its time on?
#
# On the host, operators nest (`aten::linear` calls `aten::addmm`); `lumikit.trace.host_ops` finds the nesting,
# each operator's **self time** (its time minus that of the operators inside it) and the phases of each step.

# %%
from lumikit.trace.host_ops import host_ops, op_summary, step_phases

ops = host_ops(trace[0].events)
phases = step_phases(ops)
phase_ms = phases.set_index("step")[["data_us", "forward_us", "backward_us", "optimizer_us", "other_us"]] / 1e3
ax = phase_ms.rename(columns=lambda c: c.removesuffix("_us")).plot.barh(stacked=True, figsize=(8, 2.6))
ax.set_xlabel("host time (ms)"); ax.set_ylabel("ProfilerStep #"); ax.invert_yaxis()
ax.legend(loc="center left", bbox_to_anchor=(1, 0.5));

# %% [markdown]
# **How to read it:** each bar is one recorded step. *forward* is the model and the loss, *backward* the autograd
# engine's functions, *optimizer* AdamW's `step` and `zero_grad`, *data* the DataLoader, *other* host time in none
# of them. On a CPU the bars are the compute itself. On a GPU the host only *launches* kernels, so short host bars
# with a long step mean the host waits for the GPU (good), and long host bars mean the GPU waits for the host.

# %%
op_summary(ops).head(8).round({"total_us": 0, "self_us": 0, "self_share": 3})

# %% [markdown]
# **How to read it:** `total_us` includes the operators called inside, `self_us` does not; rank by self time to
# find where the time really goes. `calls` over the four recorded steps shows how many small operators a step
# runs: each costs the profiler a little, which is why profiling slows a step down.
#
# ### What the profiler costs
#
# The run wrote every step's time to `metrics.rank0.jsonl` (`run.metrics().steps` reads it). Steps 2-6 ran before
# the profiler started, step 7 was its warm-up, steps 8-11 were recorded.

# %%
times = run.metrics().steps.set_index("step")["step_time_s"]
recorded = [int(s) + 1 for s in phases["step"]]
kind = ["first step" if s == 1 else "recorded" if s in recorded else "warm-up" if s == min(recorded) - 1
        else "not profiled" for s in times.index]
colors = {"first step": "grey", "not profiled": "#1f77b4", "warm-up": "#ff7f0e", "recorded": "#d62728"}
ax = (times * 1e3).plot.bar(color=[colors[k] for k in kind], figsize=(8, 2.6))
ax.set_ylabel("step time (ms)"); ax.set_title("grey: first step · blue: not profiled · orange: warm-up · red: recorded");
pd.Series(kind, index=times.index).to_frame("kind").assign(ms=(times * 1e3).round(1)).groupby("kind")["ms"].median()

# %% [markdown]
# **How to read it:** compare the red (recorded) steps with the blue ones, and both with how much the blue ones
# vary among themselves: a difference smaller than that spread is noise. The profiler pays a little for every
# operator call, so its cost grows with the number of small operators per step; on a GPU, where each kernel runs
# long, the LUMI AI course's Q&A puts profiling overhead "in the order of a few percent - say 2-5%"
# (LUMI-training-materials, `docs/ai-20251008/extra_04_CheckingGPU.md`; an instructor's estimate, not a
# measurement). The first step (and the profiler's warm-up) are slow for other reasons. Take step times from
# unprofiled steps.
#
# ### What filled the memory?
#
# `LUMIKIT_PROFILE_MEMORY=1` (in the spec above) turns on the profiler's `profile_memory=True`: every allocation
# and free becomes a `[memory]` event in the trace, on the CPU as on a GCD. `lumikit.trace.memory` adds them up:
# the **peak**, what it is made of, and the largest blocks alive at that moment.

# %%
from lumikit.trace.memory import load_memory
from lumikit.trace.plots import memory_timeline

memory = load_memory(files[0])
print(memory.describe(top=5))
memory_timeline(memory)

# %% [markdown]
# **How to read it:** memory climbs during the forward pass, which keeps every layer's activations for the
# backward pass, and falls as the backward pass frees them (while it allocates gradients). The peak sits near the
# turn from forward to backward, and its largest blocks are activations: a bigger batch or a longer sequence grows
# exactly these. That is the usual story behind `HIP out of memory` on a 64 GB GCD, and why lowering the batch per
# GCD, bf16 or activation checkpointing are the fixes. On a GCD, `torch.cuda.memory._dump_snapshot` gives the same
# view (`load_memory("snapshot.pickle")`), with the stack of every allocation and the failed request itself.
#
# ## 3 · rocprof: the command, then the tables
#
# rocprof is a program that starts yours. With `profile="rocprof"` or `"rocprofv3"` the rank script puts it in
# front of the command and sends its output to the run folder (a folder per rank for v1, a name per rank for v3):

# %%
from lumikit.jobs import rank_script
from lumikit.site import load_site

lumi = load_site("lumi")
gpu_run = workload_spec("lm", "--model-size", "medium", gcds=1, time="0:15:00", profile_steps=10)
for mode in ("rocprof", "rocprofv3"):
    print(f"{mode}:\n  {rank_script(gpu_run.with_(profile=mode), lumi)}\n")

# %% [markdown]
# **How to read it:** `LUMIKIT_MAX_STEPS=10` keeps the run short (the course's scripts stop there, as the LUMI
# course edits `max_steps=10` by hand). v1 writes `results.stats.csv` (kernels by total time), `results.hip_stats.csv`
# and `results.json` (open it in Perfetto); v3 writes `rank0_kernel_stats.csv` and `rank0_kernel_trace.csv` in a
# folder per host and process. rocprofv3 needs `libdw`, which some LUMI containers lack (`lumikit doctor` knows the
# error). Without a GPU rocprof has nothing to measure, so the next cell writes our own run's operator self times
# in rocprofv3's `kernel_stats.csv` layout, to show the reader on a file of that shape; on LUMI, point
# `rocprof_kernels` at the run folder of a `profile="rocprofv3"` job instead.

# %%
from lumikit.rocprof import find_outputs, rocprof_kernels, stats_from_durations, write_rocprof_stats
from lumikit.rocprof.plots import plot_kernel_ranking

host = ops[(ops["cat"] == "cpu_op") & (ops["step"] >= 0)]
stats = stats_from_durations(pd.DataFrame({"name": host["name"], "duration_ns": host["self_us"] * 1e3}))
demo = default_runs_dir() / f"{run.path.name}-as-rocprofv3" / "localhost" / "0"
write_rocprof_stats(stats, demo / "rank0_kernel_stats.csv")
print(find_outputs(demo.parent.parent).describe())
kernels = rocprof_kernels(demo.parent.parent)
plot_kernel_ranking(kernels, top=8, title="Top 8 CPU operators of this run by self time (not GPU kernels)")

# %% [markdown]
# **How to read it:** `rocprof_kernels` found the statistics file by its name, ranked the rows by total time and
# classified each name (compute, communication, memory) with the same rules the trace analyses use. The file
# above holds this machine's CPU operators, not GPU kernels (the chart's title says so); long names are cut in the
# middle, so `..._backward` stays readable at the end. Real GPU statistics files read the same way: rocprofv3's
# `kernel_stats.csv` of a PyTorch ResNet training (AMD's HPC training examples, an AMD Instinct GPU, not LUMI) and
# rocprof v1's `results.stats.csv` of a HIP copy kernel (CSC's HIP course):

# %%
for name in ("rocprofv3-kernel-stats-resnet", "rocprof-v1-stats"):
    ref = reference.load(name)
    table = ref.parsed()[["rank", "name", "kernel_class", "calls", "total_ns", "percent"]].head(5)
    print(table.assign(name=table["name"].str.slice(0, 60)).to_string(index=False))
    print(f"-- {ref.source_line}\n")

# %% [markdown]
# **How to read it:** in the real ResNet profile copies (`__amd_rocclr_copyBuffer`) and MIOpen's batch-norm kernels
# top the ranking, not the convolutions: a small model on CIFAR-sized images spends much of its GPU time outside
# the arithmetic. On a multi-node job, the moment RCCL kernels (`ncclDevKernel...`) top the ranking, the job is
# waiting on the network.
#
# ## 4 · When a job fails: `lumikit doctor`
#
# Many failures on LUMI leave a known line in the log. The doctor knows these signatures:

# %%
from lumikit.logs import SIGNATURES, diagnose

pd.DataFrame([{"signature": s.id, "what": s.title, "severity": s.severity} for s in SIGNATURES]).set_index("signature")

# %% [markdown]
# Our profiled run is clean (the doctor reads every `.out`, `.err`, `.log` and `.txt` in a run folder). A log with
# two classic mistakes, container Python without `$WITH_CONDA` and a batch too big for a GCD, is not:

# %%
import subprocess
import sys

print("diagnoses of the profiled run:", diagnose(run.path))
broken = run.path.parent / f"{run.path.name}-broken.log"
broken.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                  "ModuleNotFoundError: No module named 'torch'\n"
                  "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                  "capacity of 63.98 GiB of which 1.12 GiB is free.\n")
doctor = subprocess.run([sys.executable, "-m", "lumikit", "doctor", str(broken)], capture_output=True, text=True)
print(doctor.stdout, "exit status", doctor.returncode)

# %% [markdown]
# **How to read it:** each diagnosis gives the file and line, the evidence, the cause and the fix; the exit status
# is 1 when a problem was found, so a batch script can run `lumikit doctor slurm-$SLURM_JOB_ID.out` at its end.
# For the out-of-memory line its fix points back at the memory view above (`lumikit trace memory FILE`).
# Next, module **06** reads GPU traces: kernels, streams, idle time and the rank that holds everyone back.

# %% [markdown]
# ## Key points
#
# - Profile a few steps of one rank after a warm-up; take step times from unprofiled steps.
# - A kernel launch returns at once; a copy to the host waits for the GPU.
# - TensorBoard's profiler plugin is deprecated: read traces in Perfetto or with an analysis.
