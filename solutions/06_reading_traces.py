# %% [markdown]
# # 06 · Reading traces: exercises
#
# Answer each question with the numbers the analyses measure on a trace. The setup cell writes a generated 4-rank
# GPU-like trace with `lumikit.trace.synth` (a CPU-only profile has no kernels to analyse). Your trace is your own:
# which rank has a slow data loader (never rank 0), how slow, and the model's size are chosen for you. Then it
# loads the trace with `TraceAnalyzer`.

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
# Hint: `analyzer.get_kernel_breakdown()` has one row per rank and class, with `total_us`.
breakdown = analyzer.get_kernel_breakdown()
rank0 = breakdown[breakdown["rank"] == 0]
top_class = str(rank0.loc[rank0["total_us"].idxmax(), "kclass"])
print(rank0[["kclass", "total_us", "fraction"]].round(3).to_string(index=False))
print("top class on rank 0:", top_class)

# %% tags=["check"]
checks.check_top_kernel_class(top_class, analyzer.get_kernel_breakdown(), rank=0)

# %% tags=["solution"]
# Exercise 06.2: Which rank is the straggler, and how long (µs per step) do the other ranks wait for it? Store them in `straggler` and `wait_us`.
# Hint: `analyzer.get_stragglers()`: the straggler arrives last at each all-reduce, so it spends the least time in communication (`mean_comm_us`).
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

# %% tags=["solution"]
# Exercise 06.3: What fraction of the straggler's GPU span is idle, and which idle category (host_wait, kernel_wait or other) holds most of the idle time on its compute stream? Store them in `idle_fraction` and `idle_reason`.
# Hint: the compute stream is the one with the most compute time in `analyzer.gpu(rank)`; `get_temporal_breakdown()` has `idle_fraction`; `get_idle_time_breakdown()` has one row per rank and stream.
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
# Hint: `trace_analysis(run.path / "traces")` from `lumikit.trace.hta_bridge` builds HTA's `TraceAnalysis`; its `get_temporal_breakdown(visualize=False)` has `idle_time_pctg`. lumikit's own number is not the answer: compare the two.
from lumikit.trace.hta_bridge import trace_analysis

hta = trace_analysis(run.path / "traces")
hta_temporal = hta.get_temporal_breakdown(visualize=False)
straggler = analyzer.get_straggler()
hta_idle_pct = float(hta_temporal.loc[hta_temporal["rank"] == straggler, "idle_time_pctg"].iloc[0])
ours = analyzer.get_temporal_breakdown()
print(f"rank {straggler} idle: HTA {hta_idle_pct:.2f} % · lumikit "
      f"{100 * float(ours.loc[ours['rank'] == straggler, 'idle_fraction'].iloc[0]):.2f} %")
print("HTA's steps:", sorted(hta.t.get_trace(0)["iteration"].unique()), "· lumikit's:", analyzer.get_profiler_steps())

# %% tags=["check"]
checks.check_hta_idle(hta_idle_pct, run.path / "traces", rank=analyzer.get_straggler())

# %% tags=["solution"]
# Exercise 06.5: Write step 11 of the straggler rank as a gzip slice for ui.perfetto.dev under `run.path / "slices"`. Store the written file in `slice_path`.
# Hint: `slice_trace(None, <file>.json.gz, steps=(11, 11), ranks=[rank], trace=analyzer.trace)` returns the files it wrote.
straggler = analyzer.get_straggler()
written = slice_trace(None, run.path / "slices" / f"rank{straggler}-step11.pt.trace.json.gz", steps=(11, 11),
                      ranks=[straggler], trace=analyzer.trace)
slice_path = written[0]
print(f"{slice_path.name}: {slice_path.stat().st_size / 1e3:.1f} kB, to open at https://ui.perfetto.dev")

# %% tags=["check"]
checks.check_perfetto_slice(slice_path, rank=analyzer.get_straggler(), step=11)

# %% [markdown] tags=["solution"]
# **Discussion.** Read the printed values above.
#
# * 06.1: compute is on top on rank 0, but communication is close behind (compare the printed fractions). The
#   network is not that busy. The all-reduce kernels sit on their stream waiting for the straggler, and the trace
#   counts that waiting as communication time.
# * 06.2: every rank has the same step time (the collectives synchronise them), so the step time cannot name the
#   straggler. The time spent in communication can: the straggler arrives last and waits least. The printed
#   `wait_us` is what the other three ranks lose in every step. Fixing the one slow rank (here a slow data loader)
#   would save that much on all of them.
# * 06.3: the straggler's GPU is idle for a large part of its span, and on its compute stream that idle time is
#   *host wait*: the GPU drained its queue and the host had not launched the next kernel yet, because it was still
#   loading data. On a real run the next step is the data loader: more workers, pinned memory, data staged to
#   local storage (module 09).
# * 06.4: HTA and lumikit define overlap the same way (communication time during which a compute kernel runs,
#   over all communication time), so they agree even though HTA leaves out the last step. Where they disagree on
#   a ROCm trace, check the stream-0 kernels: HTA gives them no iteration.
# * 06.5: the slice holds one step of one rank, a few kB instead of the whole file, and Perfetto opens it at once.
#   In Perfetto, look at the gap at the start of the compute stream (the host wait of 06.3) and at the long
#   collectives on the other ranks' slices.
