# %% [markdown]
# > **Module 06 at a glance.** About **100 minutes** (lesson and exercises). Before it: module(s) 05.
# >
# > **Objectives.** After it you can:
# > - split GPU time into compute, communication and idle
# > - find a straggler rank and hidden communication in multi-rank traces
# > - say why the GPU waited and what would make the step faster: idle causes, the critical path, a what-if
# > - place kernels on the MI250X roofline from counters or from shapes

# %% [markdown]
# # 06 · Reading traces
#
# `torch.profiler` writes one JSON file per rank (Kineto's Chrome-trace format, `rank0.<id>.pt.trace.json`). Inside
# are three kinds of events: what the **host** did (PyTorch operators, `ProfilerStep#N` spans, data loading), the
# **runtime calls** that enqueue work (`hipLaunchKernel`, `hipMemcpyAsync`), and what the **GPU** ran: kernels,
# copies and memsets, each on a *stream*, linked back to its launch by a correlation id. On LUMI the compute kernels
# of a ROCm trace run on stream 0 and the RCCL collectives on a stream of their own.
#
# A profile taken on a CPU-only machine has the host part only: no kernels, no streams, no communication, so none
# of the GPU questions below can be asked of it. This module therefore writes its own **generated multi-rank
# GPU-like trace** with `lumikit.trace.synth`: 4 ranks of a DDP job on MI250X GCDs, 5 profiled steps, and one
# rank (2) whose data loader is slow. The last section profiles a few real CPU steps on this machine to show the difference.

# %%
# %matplotlib inline
from lumikit.launch import mode_line
from lumikit.launch.runfolder import RunFolder
from lumikit.trace import TraceAnalyzer
from lumikit.trace.synth import SynthSpec, write_synthetic

print(mode_line())
run = RunFolder.create("06-synthetic-trace")
files = write_synthetic(run.path / "traces", SynthSpec(ranks=4, steps=5, layers=8, straggler=2))
for f in files:
    print(f"{f.name}: {f.stat().st_size / 1e3:.0f} kB")
analyzer = TraceAnalyzer.from_path(run.path / "traces")
print("ranks:", analyzer.ranks, "· profiled steps:", analyzer.get_profiler_steps())

# %% [markdown]
# The trace above is **generated**. Before using it, a **real** ROCm trace read the same way: the PyTorch profiler
# on a small training run on an MI250 with ROCm 6.2 (test data of Holistic Trace Analysis, MIT licence):

# %%
from lumikit import reference

real = reference.load("trace-mi250")
print(real.source_line)
real_analyzer = TraceAnalyzer.from_path(real.file_path)
print("ranks:", real_analyzer.ranks, "· profiled steps:", real_analyzer.get_profiler_steps())
print(real_analyzer.get_temporal_breakdown()[["span_us", "idle_fraction", "compute_fraction"]].round(3))
real_top = real_analyzer.get_top_kernels(n=4)
real_top.assign(name=real_top["name"].str.slice(0, 70))[["name", "kclass", "count", "total_us"]]

# %% [markdown]
# **How to read it:** real kernels from a ROCm run: host-to-device copies, Tensile GEMMs (`Cijk_...`) and a PyTorch
# reduction, each on stream 0 as ROCm runs compute. The toy
# model leaves the GPU idle for most of the profiled span (`idle_fraction` above): a few microseconds of work per
# launch from Python. That is the real-world counterpart of the "idle" category below. The generated trace adds
# what this one lacks: several ranks, RCCL collectives and a straggler.

# %% [markdown]
# `TraceAnalyzer` is a facade with `get_*` methods in the style of Holistic Trace Analysis (HTA). Each returns a
# pandas table, one row per rank (and per step, stream or kernel where that applies). Times are in µs.
#
# ## Step times

# %%
steps = analyzer.get_step_times()
steps.pivot(index="step", columns="rank", values="dur_us")

# %% [markdown]
# **How to read it:** in a synchronous data-parallel job every rank finishes a step together, because the gradient
# all-reduce waits for everyone. The same step time on every rank therefore does not show who is slow. The GPU busy
# time per step does:

# %%
steps.groupby("rank")[["dur_us", "gpu_busy_us", "gpu_activities"]].mean()

# %% [markdown]
# **How to read it:** rank 2's GPU is busy for less of each step than the others. Below we find out why.
#
# ## Kernel time by class
#
# Every GPU activity has one of three classes (`lumikit.kernels.classify_kernel`): **compute** (GEMMs,
# elementwise, optimizer), **communication** (RCCL/NCCL collectives) and **memory** (copies, memsets).

# %%
from lumikit.trace.plots import kernel_breakdown_bars

breakdown = analyzer.get_kernel_breakdown()
print(breakdown.pivot(index="kclass", columns="rank", values="fraction").round(3))
kernel_breakdown_bars(analyzer)

# %% [markdown]
# **How to read it:** the fractions are summed kernel durations, so overlapping kernels both count. On ranks
# 0, 1 and 3 about as much kernel time goes to communication as to compute: the all-reduce kernels sit on
# their stream waiting for rank 2. The waiting happens *inside* the collective kernel, so a trace shows it as
# communication time, not as idle time.

# %%
top = analyzer.get_top_kernels(n=4)
top[top["rank"] == 0][["name", "kclass", "count", "total_us", "mean_us", "fraction"]].round(3)

# %% [markdown]
# **How to read it:** `Cijk_...` names are rocBLAS/Tensile GEMMs (the tile sizes and the `ISA90a` target, MI250X,
# are part of the name); `ncclDevKernel_Generic` is RCCL's all-reduce. A long kernel name tells you which library
# ran it.
#
# ## One step on the timeline

# %%
from lumikit.trace.plots import step_timeline

step_timeline(analyzer, rank=0, step=11)

# %%
step_timeline(analyzer, rank=2, step=11)

# %% [markdown]
# **How to read it:** each lane is one GPU stream; grey is the host's `ProfilerStep`. On rank 0 the red
# all-reduce kernels start during the backward pass and stretch out until rank 2 is ready. On rank 2 the compute
# stream starts late: the host was still loading data, so the GPU had nothing to do.
#
# ## Where the GPU time goes: idle, compute, non-compute
#
# HTA's temporal breakdown divides the GPU's span (first activity to last) into **idle** (nothing runs),
# **compute** (at least one compute kernel runs) and **non-compute** (only communication or memory work runs).

# %%
from lumikit.trace.plots import temporal_bars

temporal = analyzer.get_temporal_breakdown()
print(temporal[["rank", "span_us", "idle_fraction", "compute_fraction", "non_compute_fraction"]].round(3))
temporal_bars(analyzer)

# %% [markdown]
# **How to read it:** the straggler is the rank with the *most* idle time and the *least* non-compute time. The
# others keep the GPU busy, but partly with waiting inside the all-reduce.
#
# ## Why the GPU is idle
#
# Each gap between two activities on a stream is sorted into one of three categories, as HTA does. **host wait**:
# the next launch came after the stream had drained, so the CPU was late. **kernel wait**: a short gap between
# back-to-back kernels, which is launch overhead. **other**: the rest, for example a stream waiting on another stream.

# %%
from lumikit.trace.plots import idle_chart

idle = analyzer.get_idle_time_breakdown()
print(idle)
idle_chart(analyzer)

# %% [markdown]
# **How to read it:** on rank 2's compute stream (stream 0) almost all idle time is *host wait*, the slow data
# loader. On the other ranks the compute stream mostly waits in *other*: the optimizer has to wait until the
# all-reduce on stream 2 is done. The communication streams (s2) are idle most of the time anyway: they only
# work during the all-reduce.
#
# ## Communication hidden behind computation
#
# The overlap is the share of communication time during which a compute kernel also runs. Higher is better: the
# all-reduce then costs no extra time.

# %%
from lumikit.trace.plots import overlap_chart

overlap = analyzer.get_comm_comp_overlap()
print(overlap.round(3))
overlap_chart(analyzer)

# %% [markdown]
# **How to read it:** rank 2 seems to overlap best, but only because its collectives are short: it arrives last
# and waits least. Overlap is meaningful when you compare ranks doing the same amount of waiting, or one rank
# before and after a change.
#
# ## Launch delays

# %%
launches = analyzer.get_kernel_launch_delays()
launches.groupby(["rank", "kclass"])["launch_delay"].describe()[["count", "50%", "max"]].round(1)

# %% [markdown]
# **How to read it:** the launch delay is the time from the end of the host's launch call to the start of the
# kernel on the GPU. Short delays (a few µs) mean the GPU is starved: it runs each kernel as soon as it arrives.
# Long delays mean a queue of work is waiting, which is what you want. The collectives wait longest because they
# queue behind the other ranks.
#
# ## The straggler

# %%
stragglers = analyzer.get_stragglers()
print(stragglers)
print("straggler rank:", analyzer.get_straggler())

# %% [markdown]
# **How to read it:** the slowest rank is the one that spends the *least* time in communication kernels, because
# it arrives last at each all-reduce and does not wait. The difference in `mean_comm_us` is how long the other
# ranks wait for it in every step.
#
# ## Exploring by hand
#
# The explorer puts a rank and a step picker, a kernel-name filter, the timeline and the kernel table together.
# Try rank 2, or type `nccl` into the filter. The button writes the chosen step as a small trace for Perfetto.

# %%
from lumikit.widgets.trace_explorer import TraceExplorer

explorer = TraceExplorer(analyzer, export_dir=run.path / "slices")
explorer

# %% [markdown]
# ## A slice for Perfetto
#
# [ui.perfetto.dev](https://ui.perfetto.dev) opens these files in the browser, and nothing is uploaded. A real
# trace of a few hundred MB is slow to load, so cut out one step of one rank first:

# %%
from lumikit.trace import slice_trace

cut = slice_trace(None, run.path / "slices" / "rank2-step11.pt.trace.json.gz", steps=(11, 11), ranks=[2],
                  trace=analyzer.trace)
print(f"{cut[0].name}: {cut[0].stat().st_size / 1e3:.1f} kB (gzip); open it at https://ui.perfetto.dev")
TraceAnalyzer.from_path(cut[0]).get_step_times()

# %% [markdown]
# **How to read it:** the slice keeps every event that overlaps the step window, including the kernels that finish
# after the host has moved on, and the metadata, so Perfetto names the lanes. From the command line, the same cut
# is `lumikit trace slice <trace> --steps 11-11 --ranks 2 -o <out>.json.gz`.
#
# ## The same questions with Holistic Trace Analysis
#
# HTA (`import hta`) is the reference tool for these analyses. `lumikit.trace.hta_bridge.trace_analysis` gives it
# an explicit rank → file mapping. HTA's own file discovery expects `"rank": N` with a space, and without it
# every file silently becomes rank 0.

# %%
from lumikit.trace.hta_bridge import trace_analysis

hta = trace_analysis(run.path / "traces")
hta.get_temporal_breakdown(visualize=False)

# %%
hta.get_comm_comp_overlap(visualize=False)

# %% [markdown]
# **How to read it:** HTA leaves out the last profiled step unless asked (`include_last_profiler_step=True`), and
# `TraceAnalyzer` does the same by default (`include_last_step=True` counts it; `summary()` says which it did),
# because the last step is often cut short when the profiler stops. Like HTA, it also leaves out GPU work whose
# launch call is not in the trace (kernels still running from before the profiler started), wherever it runs.
# HTA also rounds timestamps to whole µs and
# counts host syncs as GPU time, so its shares can differ from `get_temporal_breakdown` in detail. The story is the
# same: rank 2 idles most and waits least. The overlap per rank agrees with `get_comm_comp_overlap` above. On ROCm traces, use HTA
# carefully. Compute kernels on stream 0 get no iteration, so its per-step views and TraceDiff drop them.
# `get_cuda_kernel_launch_stats` knows CUDA launch names only and comes back empty. `get_potential_stragglers` looks
# for `ncclKernel` names, and RCCL's `ncclDevKernel_*` kernels do not match. For those questions use
# `TraceAnalyzer`.

# %%
print("HTA launch statistics on a ROCm trace:", {r: len(t) for r, t in
                                                  hta.get_cuda_kernel_launch_stats(visualize=False).items()})

# %% [markdown]
# ## A real trace from this machine
#
# Five steps of a tiny model, profiled with `lumikit.profiler.profile_steps` (schedule: 1 step skipped, 1 warm-up,
# 3 recorded). Where PyTorch sees a GPU, this cell runs on it and the trace gets kernels. On a CPU-only machine it
# has host events only.

# %% tags=["nbval-ignore-output"]
import torch

from lumikit.gpu import torch_sees_gpu
from lumikit.profiler import profile_steps

torch.set_num_threads(1)
device = "cuda" if torch_sees_gpu() else "cpu"  # ROCm builds of PyTorch call the GPU "cuda"
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 64, device=device), torch.randint(0, 10, (32,), device=device)


def train_steps(prof, steps: int = 5) -> None:
    """The small model's training steps, each ended with prof.step() (the profiler's schedule counts them)."""
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()


with profile_steps(enabled=True, rank=0, out_dir=run.path / "cpu-profile", schedule="1,1,3,1") as prof:
    train_steps(prof)
real = TraceAnalyzer.from_path(prof.trace_dir)
print(mode_line(), "-> device", device, "· steps", real.get_profiler_steps(),
      "· GPU activities:", len(real.gpu(0)))

# %%
events = real.trace[0].events
host_ops = events[events["cat"] == "cpu_op"].groupby("name", observed=True)["dur"].agg(["count", "sum"])
host_ops.sort_values("sum", ascending=False).head(6).round(1)

# %% [markdown]
# **How to read it:** without a GPU the trace holds host operators only (`aten::addmm`, `aten::mm`, the backward
# functions), and every GPU table above would be empty. On a LUMI GCD the same cell records the kernels as well, and
# every analysis in this module applies to it.

# %% [markdown]
# ## Why did the GPU wait, and what would make the step faster?
#
# The idle categories above say *that* the host was late. `lumikit.trace.idle` says *why*, gap by gap, from what
# the host was doing when the GPU ran out of work:
#
# - **sync drain**: the host was inside a call that waits for the GPU (a synchronize, a blocking copy), so it had
#   queued nothing behind the last kernel. `loss.item()`, `.cpu()` and `print(loss)` in the loop do this;
# - **starved**: the host was busy elsewhere and launched late, named after what took most of the gap: a CPU op,
#   *data loading*, *launch overhead*, or *nothing traced* (Python between operators);
# - **queued**: the next work was launched in time but waited on the GPU side.
#
# The causes add up to the idle time of the temporal breakdown, plus the time from the first analysed step's start
# to the first GPU work (the host had launched nothing yet: that is idle time too). First your own trace, profiled
# above (`lumikit trace idle <run>/cpu-profile` on the command line):

# %% tags=["nbval-ignore-output"]
from lumikit.trace.idle import idle_causes_table

own_causes = idle_causes_table(real)
print(f"your trace ({device}):", "no GPU work, so no idle gap to explain" if own_causes.empty else
      f"{own_causes['idle_us'].sum():.0f} µs of GPU idle time")
own_causes

# %% [markdown]
# **How to read it:** on a CPU-only machine the table is empty: without GPU work there is no gap. On a LUMI GCD
# each row is one cause, with its idle time, its share of the idle time and the number of gaps it explains. The
# same table for the **generated** 4-rank trace, and rank 2's step 11 on the timeline:

# %%
from lumikit.trace.plots import idle_causes_timeline

print(idle_causes_table(analyzer).to_string(index=False))
causes_figure = idle_causes_timeline(analyzer, rank=2, step=11)
causes_figure.axes[0].set_title("Generated trace · " + causes_figure.axes[0].get_title())
causes_figure

# %% [markdown]
# **How to read it:** every gap between this generated trace's steps has one cause, `sync drain:
# hipStreamSynchronize`. At the end of each step the host waits for the GPU (the loss copied to the host), so when
# the GPU has finished there is nothing queued behind it. (Each rank's `starved: data loading` row is the time
# before its first GPU work: the first step starts by loading data, 37 µs, or 437 µs on rank 2.) How long the gap
# then lasts depends on what the host does next. Ranks 0, 1 and 3 have three gaps of 85 µs (255 µs). Rank 2 has
# three gaps of 485 µs (1455 µs), because its data loader runs for 416 µs before the next copy is launched. In the
# picture, the red gap opens when step 11's GPU work ends, while the host waits in the sync, and lasts into step 12
# while the host loads data. The sync is why the queue ran dry; the data loader is why it stayed dry. Which of the
# two does the step's time depend on? The critical path says.
#
# ### The critical path
#
# The critical path is the longest chain of work the steps waited on, from the first op to the last: CPU ops in
# order on each thread, a launch to its kernel, kernels in order on a stream, and a sync to the GPU work it waited
# for. Each µs on it falls into one of HTA's categories (`cpu_bound`, `data_loading`, `gpu_compute_bound`,
# `gpu_communication_bound`, `gpu_kernel_launch_overhead`, `gpu_kernel_kernel_overhead`) or one of three that
# HTA does not have: `host_untraced` (host time on the step's thread that no op covers: Python between operators,
# preprocessing the profiler saw only as Python functions), `gpu_queue_wait` (work that waited behind GPU work
# launched before the window, or on another stream) and `unexplained_wait` (a wait nothing in the trace explains).
# A wait on the GPU is never counted as launch overhead: the fix for it is on the GPU, not in the launches. The
# result also says the window's wall time (`window_us`) and how much of it no traced op covers (`coverage`). On a
# ROCm trace the sync calls carry no stream, so lumikit infers which stream a sync waited for and counts those
# edges (`docs/critical-path.md`).

# %%
from lumikit.trace.critical_path import analyzer_critical_path, bound_by_table

path = analyzer_critical_path(analyzer, 2)
print(f"generated trace, rank 2, {path['window']['label']}: critical path {path['path_us']:.0f} µs of a "
      f"{path['window_us']:.0f} µs window ({path['coverage']['untraced_share']:.1%} of it covered by no traced op); "
      f"sync edges {path['sync_edges']} read from the trace, {path['inferred_edges']} inferred")
bound_by_table(path).round(3)

# %% [markdown]
# **How to read it:** rank 2's path over its 4 analysed steps is 6536 µs of a 6544 µs window, of which 67.4 % is
# GPU compute and 25.5 % is data loading (416 µs per step). The GPU runs nothing during the data loading, and
# nothing else runs beside it, so the steps really wait for it. Of the all-reduces, only the last of each step is on
# the path (`gpu_communication_bound` 3.7 %, 60 µs per step): the optimizer's stream waits for it (a
# `hipStreamWaitEvent`). The host's own time between operators (`host_untraced`, 2.4 %) and the launches (1.0 %)
# are the rest.
# The others run on their own stream beside the backward GEMMs and are done before anything needs them. The 24
# inferred edges are the 4 `hipStreamSynchronize` calls, whose stream the trace does not record, and the 20
# `hipStreamWaitEvent` calls, whose event it does not record.
#
# Your own trace has a critical path too:

# %% tags=["nbval-ignore-output"]
own_path = analyzer_critical_path(real, real.ranks[0])
print(f"your trace ({device}), {own_path['window']['label']}: critical path {own_path['path_us']:.0f} µs")
bound_by_table(own_path).round(3)

# %% [markdown]
# **How to read it:** without a GPU the whole path is the host's: its operators (`cpu_bound`) and the Python
# between them (`host_untraced`; HTA gives that time no weight, so its path is shorter than the steps). On a LUMI
# GCD the same cell shows how much of the path the GPU's kernels hold.
#
# ### Predict, then measure: which would you make 2x faster?
#
# On rank 2 of the generated trace, three candidates: the GEMMs (`Cijk`, the most kernel time), the all-reduce
# (`nccl`, where ranks 0, 1 and 3 spend so long), or the data loader (`DataLoader`). **Which one, made 2x faster,
# shortens rank 2's steps the most, and by how much?** Write your guess in the next cell before you run the one
# after it.

# %%
my_guess = "nccl"  # your prediction: "Cijk", "nccl" or "DataLoader"

# %% [markdown]
# A what-if divides the time of the matching kernels or CPU ops by the factor and finds the longest path again.
# The command line does the same: `lumikit trace critical-path <run>/traces --rank 2 --what-if 'Cijk=2'
# --what-if 'nccl=2' --what-if 'DataLoader=2'`.

# %%
from lumikit.trace.critical_path import what_if_table

measured = what_if_table(analyzer_critical_path(analyzer, 2, what_if=["Cijk=2", "nccl=2", "DataLoader=2"]))
print(f"your guess: {my_guess} · measured best: {measured.loc[measured['speedup_pct'].idxmax(), 'pattern']} "
      "(generated trace, rank 2)")
measured.round(2)

# %% [markdown]
# **How to read it:** the GEMMs win: 22.8 % shorter. Their kernels hold 3828 of the path's 6536 µs, but half of
# that (29 % of the path) is not all gained: once they run twice as fast, the host's launches hold some of them
# back. The data loader gains 12.7 %, half of its 25.5 %. The all-reduce gains 1.8 %: only the last one of each
# step is on rank 2's path. Kernel time says where the GPU was busy; only the path says what the
# step waited for.
#
# A what-if is a prediction. To measure it, make the change and profile again. Here, the **generated** trace again
# with rank 2's data loader at 208 µs instead of 416 µs, compared with `lumikit trace diff` (the Python API below):

# %%
from lumikit.trace.diff import section_table, trace_diff

faster = TraceAnalyzer.from_path(write_synthetic(run.path / "traces-faster-loader", SynthSpec(
    ranks=4, steps=5, layers=8, straggler=2, straggler_delay_us=192))[0].parent)
before_after = trace_diff(analyzer, faster, rank_a=2, rank_b=2)
print("generated traces, rank 2, per step: before (a) and with the data loader 2x faster (b)")
section_table(before_after, "critical path and its categories, per step").query("a != 0 or b != 0")

# %% [markdown]
# **How to read it:** the path per step drops from 1634 to 1426 µs, -12.7 %, as the what-if predicted, and all of
# the change is `data_loading` (416 to 208 µs). The step time in the same comparison drops by the same 208 µs.
# Here the prediction and the measurement agree because nothing else changed. On a real run, profile the change
# and compare the two traces with `lumikit trace diff before/ after/`.

# %% [markdown]
# ## How fast could each kernel go? A roofline for MI250X
#
# The critical path says which kernels the step waits for. A **roofline** says how much faster each of them could
# run, and what holds it back. Each kernel is one point:
#
# - **x**, its *arithmetic intensity*: the FLOPs it computed per byte it moved to and from HBM;
# - **y**, the FLOP/s it reached (FLOPs / its time).
#
# Two roofs bound every point. The **bandwidth roof** (y = x x HBM bytes per second) and the **compute roof** (the
# peak FLOP/s of the unit the kernel ran on: the matrix cores for a BF16 GEMM, the vector units for an elementwise
# kernel). They meet at the **ridge point**. Left of it a kernel is *memory-bound*: only more FLOPs per byte (a
# bigger tile, more tokens per call, fused kernels) can lift it. Right of it, it is *compute-bound*. On one MI250X
# GCD the BF16 matrix ridge point is 191.5 TFLOP/s / 1.6 TB/s = 120 FLOPs per byte.
#
# The FLOPs and bytes come from hardware counters: `SQ_INSTS_VALU_*` and `SQ_INSTS_VALU_MFMA_MOPS_*` count the
# instructions, and the `TCC_EA_*` requests count the bytes that moved between the L2 cache and HBM. The
# formulas are rocprof-compute's for MI200 (`lumikit/rocprof/roofline.py` cites them). gfx90a counts at most 8 SQ,
# 4 TCP and 4 TCC counters in one pass, so `profile="roofline"` runs the program three times with the passes
# rocprof-compute uses. This is the rank script it renders for LUMI. It is printed here, **not run**; on LUMI
# the `pass_1/` ... `pass_3/` folders under `profile/rank0/` are the **expected** result.

# %%
from lumikit.jobs import rank_script, workload_spec
from lumikit.jobs.profiling import ROOFLINE_PASSES, input_file_text
from lumikit.jobs.python import job_python
from lumikit.site import load_site

roofline_job = workload_spec("lm", "--model-size", "medium", gcds=1, time="0:15:00", profile="roofline",
                             profile_steps=10)
# the job's Python is this kernel's own; on LUMI it is the workbook's Python there, so the script names it by a word
lumi_script = rank_script(roofline_job, load_site("lumi")).replace(job_python(), "$WORKBOOK_PYTHON")
print("rank script on LUMI (expected, not run here; $WORKBOOK_PYTHON: the Python your LUMI route installs, "
      "lumi/README.md):\n ", lumi_script)
print("\nthe input file it writes first, one pmc: line per pass:")
print(input_file_text(ROOFLINE_PASSES))

# %% [markdown]
# **How to read it:** `rocprofv3 -i <file>` runs the program once per `pmc:` line. Each pass counts its own
# counters, which is why `LUMIKIT_MAX_STEPS=10` matters three times over. `lumikit rocprof roofline
# <run>/profile/rank0` joins the passes by dispatch.
#
# No public rocprofv3 output with these counters exists that this workbook could ship: the counter files in its
# real fixtures hold none of them. So the next cell writes a **generated** roofline run of the course's kernels.
# Their FLOPs and bytes are derived from their shapes, and their times from assumed shares of the measured
# ceilings (`lumikit/rocprof/course_counters.py` gives every formula). It is not a recording.

# %%
import pandas as pd

from lumikit.rocprof.course_counters import course_kernels, write_course_counters
from lumikit.rocprof.roofline import read_roofline

roof_run = read_roofline(write_course_counters(run.path / "generated-roofline"))
print("generated counters, derived from shapes (not recorded):", roof_run.source)
pd.DataFrame([{"kernel": k.name, "what (shapes)": k.what} for k in course_kernels()]).set_index("kernel")

# %%
points = roof_run.table()
xy = points[["kernel", "dispatches", "arithmetic_intensity", "flops_per_s", "roof", "bound", "pct_of_roof"]]
xy = xy.rename(columns={"arithmetic_intensity": "x: FLOPs per HBM byte", "flops_per_s": "y: FLOP/s",
                        "pct_of_roof": "% of its roof"})
xy.round({"x: FLOPs per HBM byte": 3, "% of its roof": 1})

# %% [markdown]
# **How to read it:** this table answers the question a LUMI learner asked at a course: "the x and y coordinate
# for each kernel". `roof` is the peak the kernel is held against and `bound` the side of the ridge point it is
# on. `% of its roof` is how close it came to the lower of its two roofs at its x. The two big GEMMs are right of
# the ridge point, compute-bound, at the 62 % of peak the generator gives them. The QKV projection for 32 decode
# tokens is a GEMM too, but with 28.8 FLOPs per byte it sits left of the BF16 ridge point (120). It reaches only
# 15 % of even its memory roof: a 4 µs kernel is held by its launch and ramp-up. The batch norm and the residual
# add do a FLOP or less per element, so they are memory-bound by nature. The all-reduce reaches 9 % of its roof:
# its pace is set by the link to the other GCD (50 GB/s), not by HBM. `rl.table()` has all the columns. Export it
# for your own plot, or use `lumikit rocprof roofline <run> --csv points.csv`:

# %%
points.to_csv(run.path / "roofline-points.csv", index=False)
print("wrote", (run.path / "roofline-points.csv").relative_to(run.path), "with", len(points), "kernels")

# %%
from lumikit.rocprof.plots import plot_roofline

plot_roofline(roof_run, generated=True)

# %% [markdown]
# **How to read it:** solid lines are the published peaks of one GCD (the site profile, `lumikit/sites/lumi.toml`);
# dashed lines are measured ceilings (rocprof-compute's own MI200 test data and an AMD instructor at a LUMI course);
# the numbers in brackets point to the sources under the plot. A point on a line runs as fast as that roof allows.
# A point far below its roof (the QKV projection, the all-reduce) is held back by something the roofline does not
# draw: launch latency, or a link. Moving a point right (more FLOPs per byte) is the only way past the bandwidth
# roof.
#
# ### Your own trace: a roofline from shapes
#
# Without counters, a torch profiler trace recorded with `record_shapes=True` still gives each operator's FLOPs and
# bytes from its tensor shapes (`lumikit rocprof roofline TRACE.json`). The cell profiles three steps of the small
# model above again, this time with shapes.

# %% tags=["nbval-ignore-output"]
from lumikit.profiler import trace_files
from lumikit.rocprof.shape_roofline import shape_roofline

with profile_steps(enabled=True, rank=0, out_dir=run.path / "shapes-profile", schedule="1,1,3,1",
                   record_shapes=True) as prof:
    train_steps(prof)
own_roof = shape_roofline(trace_files(run.path / "shapes-profile")[-1])
print(f"your trace ({device}):", *own_roof.notes, sep="\n- ")
own_roof.table()[["kernel", "dispatches", "flops", "hbm_bytes", "arithmetic_intensity", "flops_per_s",
                  "bound"]].round({"arithmetic_intensity": 2})

# %% [markdown]
# **How to read it:** one row per operator and shape: the forward pass's two `addmm`, the backward pass's `mm`,
# the ReLU and its backward (`threshold_backward`), and SGD's `add_` on each parameter. The **cache assumption**
# is the first note: every input read from HBM once and every output written once. So x is an upper bound: real
# traffic (counters) can only move a point left. On this machine the times are the CPU's, so y is what the CPU
# reached.

# %% tags=["nbval-ignore-output"]
own_figure = plot_roofline(own_roof)
own_figure.axes[0].set_title(f"From shapes, your trace ({device}): x from shapes, y from "
                             + ("the GPU's kernel times" if device == "cuda" else "CPU times, not a GPU's"))
own_figure

# %% [markdown]
# **How to read it:** the roofs are still one MI250X GCD's, so on a CPU-only machine the points sit far below
# them: a laptop core is not a GCD. Compare x, not y. The FP32 GEMMs of this tiny model have 4 to 10 FLOPs per
# byte, left of the FP32 matrix ridge point (47.9 / 1.6 = 30): too small to keep the matrix cores busy even on
# LUMI. On a LUMI GCD the same cell
# takes y from the kernels each operator launched, and the points show how close they came.

# %% [markdown]
# ## Key points
#
# - Idle time says the GPU waited; the host side says for what.
# - Communication that overlaps computation costs nothing extra.
# - One slow rank makes every rank's step slow.
# - Only work on the critical path makes the step shorter when it gets faster.
