# %% [markdown]
# # 06 · Reading traces: exercises
#
# Answer each question with the numbers the analyses measure on a trace. The setup cell writes a generated 4-rank
# GPU-like trace with `lumikit.trace.synth` (a CPU-only profile has no kernels to analyse). Your trace is your own:
# which rank has a slow data loader (never rank 0), how slow, and the model's size are chosen for you. Then it
# loads the trace with `TraceAnalyzer`. What to find, and why it matters: where the GPU time goes, which rank holds
# the others back and by how much (the time every other rank could save), why that rank's GPU idles, what HTA
# says and why it can differ from lumikit, how to cut one step out for Perfetto, and, on two more generated traces,
# why the GPU waited and which change would make a step faster (only work on the critical path counts).

# %%
import lumikit.checks.m06 as checks
from lumikit.launch import mode_line
from lumikit.launch.runfolder import RunFolder
from lumikit.trace import TraceAnalyzer, slice_trace
from lumikit.trace.synth import write_synthetic

print(mode_line())
run = RunFolder.create("06-exercises")
write_synthetic(run.path / "traces", checks.exercise_trace_spec())
analyzer = TraceAnalyzer.from_path(run.path / "traces")
print("ranks:", analyzer.ranks, "· steps:", analyzer.get_profiler_steps())

# %% tags=["exercise"]
# Exercise 06.1: Which kernel class (compute, communication or memory) takes the most GPU time on rank 0? Store it in `top_class`.
breakdown = None
rank0 = None
top_class = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.1")
raise NotImplementedError("Exercise 06.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_top_kernel_class(top_class, analyzer.get_kernel_breakdown(), rank=0)

# %% tags=["exercise"]
# Exercise 06.2: Which rank is the straggler, and how long (µs per step) do the other ranks wait for it? Store them in `straggler` and `wait_us`.
stragglers = None
straggler = None
others = None
mine = None
wait_us = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.2")
raise NotImplementedError("Exercise 06.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_straggler(straggler, wait_us, analyzer.get_stragglers())

# %%
checks.WHY_NOT_STEP_TIME  # the question and its options

# %% tags=["exercise"]
# Exercise 06.q1: Why can the step time not name the straggler? Pick one of the options shown above and store its letter in `why_not_step_time`.
why_not_step_time = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.q1")
raise NotImplementedError("Exercise 06.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_why_not_step_time(why_not_step_time)

# %% tags=["exercise"]
# Exercise 06.3: What fraction of the straggler's GPU span is idle, and which idle category (host_wait, kernel_wait or other) holds most of the idle time on its compute stream? Store them in `idle_fraction` and `idle_reason`.
straggler = None
gpu = None
compute_stream = None
temporal = None
idle_fraction = None
idle = None
lane = None
idle_reason = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.3")
raise NotImplementedError("Exercise 06.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_idle(idle_fraction, idle_reason, analyzer, rank=analyzer.get_straggler())

# %% tags=["exercise"]
# Exercise 06.4: With Holistic Trace Analysis (HTA), what share of the straggler's GPU time is idle, in percent? Store HTA's number in `hta_idle_pct`.
hta = None
hta_temporal = None
straggler = None
hta_idle_pct = None
ours = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.4")
raise NotImplementedError("Exercise 06.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_hta_idle(hta_idle_pct, run.path / "traces", rank=analyzer.get_straggler())

# %% tags=["exercise"]
# Exercise 06.5: Write step 11 of the straggler rank as a gzip slice for ui.perfetto.dev under `run.path / "slices"`. Store the written file in `slice_path`.
straggler = None
written = None
slice_path = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.5")
raise NotImplementedError("Exercise 06.5: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_perfetto_slice(slice_path, rank=analyzer.get_straggler(), step=11)

# %% [markdown] tags=["exercise"]
# **Question 06.A.** Why is communication so large on rank 0 (compare the fractions printed in 06.1) when the
# network is not that busy?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 06.B.** What would fixing the straggler save, and on which ranks?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 06.C.** Why is the straggler's idle time *host wait*, and what would you change on a real run?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 06.D.** Why does HTA's idle share of 06.4 differ from lumikit's, and why do their overlaps agree?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 06.E.** What do you look at first when you open the slice of 06.5 in Perfetto?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## Hardware counters: GPU% 100 only says a kernel was resident
#
# `rocm-smi`'s GPU% is the share of time the GPU had any work; one wave on one compute unit keeps it at 100.
# `rocprofv3 --pmc GRBM_GUI_ACTIVE SQ_WAVES -- python train.py` counts, per kernel dispatch, the busy cycles
# (`GRBM_GUI_ACTIVE`, what GPU% sees) and the waves launched (`SQ_WAVES`). A GCD has 110 compute units: a kernel with
# fewer waves than that left most of them idle, busy or not. The counter file below is generated in rocprofv3's
# documented columns (not recorded); `lumikit rocprof counters FILE` reads a recorded one, or the rocpd database.

# %%
from lumikit.rocprof.counters import counters_per_kernel, parse_counter_csv, waves_per_cu

counter_csv = checks.counter_exercise_csv()
counter_table = parse_counter_csv(counter_csv)
print(counters_per_kernel(counter_table))

# %% tags=["exercise"]
# Exercise 06.C1: Which kernels had fewer waves than the GCD has compute units? Store their names in a list `starved`.
per_dispatch = None
starved = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.C1")
raise NotImplementedError("Exercise 06.C1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_starved_kernels(starved, counter_csv)

# %% [markdown]
# ## Why did the GPU wait, and what would make the step faster?
#
# Two more **generated** traces, each made from your seed, so your numbers are your own. The first is one step
# whose GPU idle gaps each have a cause: the host waited in a sync, loaded data, ran a slow CPU op, or sat in a
# long launch call. The second is one step with two streams and a CPU op after a sync, for a what-if.

# %%
from lumikit.trace.critical_path import analyzer_critical_path, what_if_table
from lumikit.trace.idle import idle_causes_table
from lumikit.trace.synth import write_events

idle_trace = TraceAnalyzer.from_path(write_events(run.path / "idle-causes.pt.trace.json",
                                                  checks.idle_exercise_events()))
print("generated trace, GPU idle:", f"{idle_trace.get_temporal_breakdown()['idle_us'].iloc[0]:.0f} µs")

# %% tags=["exercise"]
# Exercise 06.P1: Which cause holds the most GPU idle time in `idle_trace`, and how many µs? Store the cause, as the `cause` column writes it, in `top_cause` and its idle time in `top_cause_us`.
causes = None
top = None
top_cause = None
top_cause_us = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.P1")
raise NotImplementedError("Exercise 06.P1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_top_idle_cause(top_cause, top_cause_us)

# %% [markdown]
# The second trace: on stream 0 the host launches `gemm_kernel`, then `attention_kernel`; on stream 1 an
# all-reduce (`ncclDevKernel_AllReduce`) runs beside them; then the host waits in `hipDeviceSynchronize` and runs
# the CPU op `optimizer_step`. **Predict first**: which of the four, made 2x faster, would shorten the step most,
# and by how much? Write your guess down, then measure it.

# %%
what_if_trace = TraceAnalyzer.from_path(write_events(run.path / "what-if.pt.trace.json",
                                                     checks.what_if_exercise_events()))
kernels = what_if_trace.get_top_kernels(n=5)[["name", "count", "total_us"]]
ops = what_if_trace.trace[0].events.query("cat == 'cpu_op'")[["name", "dur"]]
print("generated trace: kernels\n", kernels.to_string(index=False), "\nCPU ops\n", ops.to_string(index=False))
print("candidates:", checks.WHAT_IF_CANDIDATES)

# %% tags=["exercise"]
# Exercise 06.P2: Which of `checks.WHAT_IF_CANDIDATES`, made 2x faster, shortens the critical path of `what_if_trace` the most, and by how many percent? Store the name in `best_op` and the gain in `gain_pct`.
result = None
measured = None
best = None
best_op = None
gain_pct = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.P2")
raise NotImplementedError("Exercise 06.P2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_what_if(best_op, gain_pct)

# %% [markdown] tags=["exercise"]
# **Question 06.F.** Was your prediction right? Why does the longest kernel gain nothing, and why does halving
# `gemm_kernel` save less than half of its time?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## A roofline: which matrix kernel waits on memory?
#
# The setup writes **generated** roofline counters for the course's kernels. They are derived from each kernel's
# shapes, not recorded. They sit in the `pass_1/` ... `pass_3/` folders that `rocprofv3 -i` writes and are read
# with rocprof-compute's MI200 formulas. The QKV projection's token count is chosen for you. Each kernel's
# intensity (FLOPs per HBM byte) is compared with the **ridge point** of its roof: the roof's published peak FLOP/s
# divided by the published HBM peak. That is the lowest intensity at which the kernel could reach that peak.

# %%
from lumikit.rocprof.roofline import peaks, read_roofline

rl = read_roofline(checks.write_roofline_exercise(run.path / "generated-roofline"))
points = rl.table()
print("generated counters (from the kernels' shapes, not recorded):", rl.source)
print(points[["kernel", "dispatches", "flops", "hbm_bytes", "l2_bytes", "arithmetic_intensity", "flops_per_s",
              "dominant", "roof", "bound"]].to_string(index=False))
print("\n".join(f"{r.name}: {r.value:.4g}" for r in peaks()))

# %% tags=["exercise"]
# Exercise 06.R1: Of the matrix kernels in `points` (their `dominant` starts with `mfma`), which one has the arithmetic intensity furthest below the ridge point of its roof, and by what factor? Store its name in `memory_bound_kernel` and the factor (ridge point / intensity) in `below_ridge`.
peak = None
matrix = None
factors = None
memory_bound_kernel = None
below_ridge = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("06.R1")
raise NotImplementedError("Exercise 06.R1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_memory_bound_gemm(memory_bound_kernel, below_ridge, points)
