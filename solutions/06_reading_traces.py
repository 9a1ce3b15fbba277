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

# %% tags=["solution"]
# Exercise 06.1: Which kernel class (compute, communication or memory) takes the most GPU time on rank 0? Store it in `top_class`.
# Hint: GPU time per kernel class, for the rank asked about.
# Tool: the analyzer's kernel breakdown (its `kclass` and `total_us` columns).
breakdown = analyzer.get_kernel_breakdown()
rank0 = breakdown[breakdown["rank"] == 0]
top_class = str(rank0.loc[rank0["total_us"].idxmax(), "kclass"])
print(rank0[["kclass", "total_us", "fraction"]].round(3).to_string(index=False))
print("top class on rank 0:", top_class)

# %% tags=["check"]
checks.check_top_kernel_class(top_class, analyzer.get_kernel_breakdown(), rank=0)

# %% tags=["solution"]
# Exercise 06.2: Which rank is the straggler, and how long (µs per step) do the other ranks wait for it? Store them in `straggler` and `wait_us`.
# Hint: the straggler arrives last at each all-reduce: what does that do to its own wait there, and to the others'?
# Tool: the analyzer's straggler table: the mean of the other ranks' `mean_comm_us` minus the straggler's.
stragglers = analyzer.get_stragglers()
straggler = int(stragglers.loc[stragglers["straggler_steps"].idxmax(), "rank"])
others = stragglers[stragglers["rank"] != straggler]
mine = float(stragglers.loc[stragglers["rank"] == straggler, "mean_comm_us"].iloc[0])
wait_us = float(others["mean_comm_us"].mean() - mine)
print(stragglers.to_string(index=False))
print(f"straggler: rank {straggler}; the others wait {wait_us:.0f} µs per step "
      f"(step time {stragglers['mean_step_us'].mean():.0f} µs)")

# %% tags=["check"]
checks.check_straggler(straggler, wait_us, analyzer.get_stragglers())

# %%
checks.WHY_NOT_STEP_TIME  # the question and its options

# %% tags=["solution"]
# Exercise 06.q1: Why can the step time not name the straggler? Pick one of the options shown above and store its letter in `why_not_step_time`.
# Hint: compare `mean_step_us` of the ranks in the table printed by 06.2.
why_not_step_time = "b"

# %% tags=["check"]
checks.check_why_not_step_time(why_not_step_time)

# %% tags=["solution"]
# Exercise 06.3: What fraction of the straggler's GPU span is idle, and which idle category (host_wait, kernel_wait or other) holds most of the idle time on its compute stream? Store them in `idle_fraction` and `idle_reason`.
# Hint: idle time is the GPU span without kernels; look at the stream where the rank's compute kernels run.
# Tool: `get_temporal_breakdown()` (`idle_fraction`) and `get_idle_time_breakdown()` (one row per rank and stream).
straggler = analyzer.get_straggler()
gpu = analyzer.gpu(straggler)
compute_stream = int(gpu[gpu["kclass"] == "compute"].groupby("stream")["dur"].sum().idxmax())
temporal = analyzer.get_temporal_breakdown()
idle_fraction = float(temporal.loc[temporal["rank"] == straggler, "idle_fraction"].iloc[0])
idle = analyzer.get_idle_time_breakdown()
lane = idle[(idle["rank"] == straggler) & (idle["stream"] == compute_stream)].iloc[0]
idle_reason = max(("host_wait", "kernel_wait", "other"), key=lambda k: lane[f"{k}_us"])
print(temporal[["rank", "idle_fraction", "compute_fraction", "non_compute_fraction"]].round(3).to_string(index=False))
print(f"rank {straggler}: idle {idle_fraction:.1%} of its span; on stream {compute_stream}: "
      f"host wait {lane['host_wait_us']:.0f} µs, kernel wait {lane['kernel_wait_us']:.0f} µs, "
      f"other {lane['other_us']:.0f} µs -> {idle_reason}")

# %% tags=["check"]
checks.check_idle(idle_fraction, idle_reason, analyzer, rank=analyzer.get_straggler())

# %% tags=["solution"]
# Exercise 06.4: With Holistic Trace Analysis (HTA), what share of the straggler's GPU time is idle, in percent? Store HTA's number in `hta_idle_pct`.
# Hint: HTA and lumikit define the span differently (HTA leaves out the last step): the answer is HTA's own number.
# Tool: `trace_analysis(...)` from `lumikit.trace.hta_bridge` and its `get_temporal_breakdown(visualize=False)`.
from lumikit.trace.hta_bridge import trace_analysis

hta = trace_analysis(run.path / "traces")
hta_temporal = hta.get_temporal_breakdown(visualize=False)
straggler = analyzer.get_straggler()
hta_idle_pct = float(hta_temporal.loc[hta_temporal["rank"] == straggler, "idle_time_pctg"].iloc[0])
ours = TraceAnalyzer(analyzer.trace, include_last_step=True).get_temporal_breakdown()  # every step, last included
print(f"rank {straggler} idle: HTA {hta_idle_pct:.2f} % · lumikit over every step "
      f"{100 * float(ours.loc[ours['rank'] == straggler, 'idle_fraction'].iloc[0]):.2f} %")
print("HTA's steps:", sorted(hta.t.get_trace(0)["iteration"].unique()), "· lumikit's:", analyzer.get_profiler_steps())

# %% tags=["check"]
checks.check_hta_idle(hta_idle_pct, run.path / "traces", rank=analyzer.get_straggler())

# %% tags=["solution"]
# Exercise 06.5: Write step 11 of the straggler rank as a gzip slice for ui.perfetto.dev under `run.path / "slices"`. Store the written file in `slice_path`.
# Hint: a slice keeps one rank and one step of the trace, written as gzip for Perfetto.
# Tool: `slice_trace` (lumikit.trace) returns the files it wrote.
straggler = analyzer.get_straggler()
written = slice_trace(None, run.path / "slices" / f"rank{straggler}-step11.pt.trace.json.gz", steps=(11, 11),
                      ranks=[straggler], trace=analyzer.trace)
slice_path = written[0]
print(f"{slice_path.name}: {slice_path.stat().st_size / 1e3:.1f} kB, to open at https://ui.perfetto.dev")

# %% tags=["check"]
checks.check_perfetto_slice(slice_path, rank=analyzer.get_straggler(), step=11)

# %% [markdown] tags=["solution"]
# **Question 06.A.** Why is communication so large on rank 0 (compare the fractions printed in 06.1) when the
# network is not that busy?
#
# **Answer.** Compute and communication are close on rank 0 (which one is on top depends on your trace). The
# all-reduce kernels sit on their stream waiting for the straggler, and the trace counts that waiting as
# communication time.

# %% [markdown] tags=["solution"]
# **Question 06.B.** What would fixing the straggler save, and on which ranks?
#
# **Answer.** The printed `wait_us` is what each of the other three ranks loses in every step, waiting for the
# straggler at the all-reduce. Fixing the one slow rank (here a slow data loader) would save that much on all of
# them.

# %% [markdown] tags=["solution"]
# **Question 06.C.** Why is the straggler's idle time *host wait*, and what would you change on a real run?
#
# **Answer.** The straggler's GPU is idle for a large part of its span, and on its compute stream that idle time is
# *host wait*: the GPU drained its queue and the host had not launched the next kernel yet, because it was still
# loading data. On a real run the next step is the data loader: more workers, pinned memory, data staged to local
# storage (module 09).

# %% [markdown] tags=["solution"]
# **Question 06.D.** Why does HTA's idle share of 06.4 differ from lumikit's, and why do their overlaps agree?
#
# **Answer.** HTA leaves out the last step (printed: HTA's steps against lumikit's), so its temporal breakdown
# covers fewer steps and gives another share. Both define communication/computation overlap the same way
# (communication time during which a compute kernel runs, over all communication time), so for the overlap they
# agree. Where they disagree on a ROCm trace, check the stream-0 kernels: HTA gives them no iteration.

# %% [markdown] tags=["solution"]
# **Question 06.E.** What do you look at first when you open the slice of 06.5 in Perfetto?
#
# **Answer.** The slice holds one step of one rank, a few kB instead of the whole file, and Perfetto opens it at
# once. Look at the gap at the start of the compute stream (the host wait of 06.3) and at the long collectives on
# the other ranks' slices.

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

# %% tags=["solution"]
# Exercise 06.C1: Which kernels had fewer waves than the GCD has compute units? Store their names in a list `starved`.
# Hint: every kernel was busy for its whole run; count waves per compute unit instead.
per_dispatch = waves_per_cu(counter_table)
starved = sorted(per_dispatch.loc[per_dispatch["waves_per_cu"] < 1, "kernel"])

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

# %% tags=["solution"]
# Exercise 06.P1: Which cause holds the most GPU idle time in `idle_trace`, and how many µs? Store the cause, as the `cause` column writes it, in `top_cause` and its idle time in `top_cause_us`.
# Hint: each gap has one cause; a cause's time is the sum of its gaps, whatever their number or length.
# Tool: lumikit's `idle_causes_table` of the trace (its `cause`, `idle_us` and `gaps` columns).
causes = idle_causes_table(idle_trace)
top = causes.loc[causes["idle_us"].idxmax()]
top_cause, top_cause_us = str(top["cause"]), float(top["idle_us"])
print(causes[["cause", "gaps", "idle_us", "share"]].to_string(index=False))

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

# %% tags=["solution"]
# Exercise 06.P2: Which of `checks.WHAT_IF_CANDIDATES`, made 2x faster, shortens the critical path of `what_if_trace` the most, and by how many percent? Store the name in `best_op` and the gain in `gain_pct`.
# Hint: measure, do not estimate: work beside the path gains nothing, and work on it gains only until another branch becomes the longest.
# Tool: `analyzer_critical_path` with its `what_if=` scalings, and `what_if_table` of the result (`speedup_pct`).
result = analyzer_critical_path(what_if_trace, what_if_trace.ranks[0],
                                what_if=[f"{name}=2" for name in checks.WHAT_IF_CANDIDATES])
measured = what_if_table(result)
best = measured.loc[measured["speedup_pct"].idxmax()]
best_op, gain_pct = str(best["pattern"]), float(best["speedup_pct"])
print(measured.round(2).to_string(index=False))

# %% tags=["check"]
checks.check_what_if(best_op, gain_pct)

# %% [markdown] tags=["solution"]
# **Question 06.F.** Was your prediction right? Why does the longest kernel gain nothing, and why does halving
# `gemm_kernel` save less than half of its time?
#
# **Answer.** The all-reduce on stream 1 is the longest kernel, but it ends before stream 0's chain does, so the
# sync never waits for it: it is beside the path, and its what-if gains 0 %. Halving `gemm_kernel` shortens stream
# 0's chain until it is shorter than the all-reduce's branch; from then on the all-reduce is on the path, so the
# gain stops at the difference between the two branches. `optimizer_step` runs after the sync, alone on the path,
# so all of its halved time is saved. Which of the two wins depends on your trace: the what-if table says.

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

# %% tags=["solution"]
# Exercise 06.R1: Of the matrix kernels in `points` (their `dominant` starts with `mfma`), which one has the arithmetic intensity furthest below the ridge point of its roof, and by what factor? Store its name in `memory_bound_kernel` and the factor (ridge point / intensity) in `below_ridge`.
# Hint: the ridge point is in FLOPs per byte: the roof's peak FLOP/s over the peak HBM bytes per second. The roofline's x counts the bytes that moved to and from HBM.
# Tool: `peaks()` (the `HBM, peak` roof and `<roof>, peak`, e.g. `BF16 matrix, peak`); the table's `roof`, `flops` and `hbm_bytes` columns.
peak = {r.name.removesuffix(", peak"): r.value for r in peaks()}
matrix = points[points["dominant"].str.startswith("mfma")]
factors = {row.kernel: peak[row.roof] / peak["HBM"] / (row.flops / row.hbm_bytes) for row in matrix.itertuples()}
memory_bound_kernel = max(factors, key=factors.get)
below_ridge = float(factors[memory_bound_kernel])
print({k: round(v, 2) for k, v in factors.items()})

# %% tags=["check"]
checks.check_memory_bound_gemm(memory_bound_kernel, below_ridge, points)
