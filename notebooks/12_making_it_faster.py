# %% [markdown]
# > **Module 12 at a glance.** About **65 minutes** (lesson and exercises). Before it: module(s) 05, 06.
# >
# > **Objectives.** After it you can:
# > - climb the optimisation ladder (fp32, bf16, a fused optimizer, torch.compile) and measure each rung with its spread
# > - say which rung helped most and why, from the trace diff and the critical path
# > - measure prefill and decode tokens/s with and without a KV cache, across batch sizes

# %% [markdown]
# # 12 · Making the step faster
#
# Modules 05 and 06 showed where a step's time goes. This module spends it better. The **optimisation ladder**
# runs the same training step rung by rung, each rung adding one knob of the course workloads to the rungs before
# it: `bf16` (autocast to bfloat16), `fused` (a fused optimizer), `compile` (`torch.compile`), `channels-last`
# (convolutions only) and `tunableop` (ROCm's GEMM tuning). Per rung it times several repeats after a warm-up,
# then records a short profiler trace, and writes `ladder.json`.
#
# Why bf16 first: on LUMI an MI250X GCD's bf16 matrix peak is **191.5 TFLOPS**, four times its FP32 matrix peak of
# **47.9 TFLOPS** (site profile `lumikit/sites/lumi.toml`). On LUMI the ladder is **expected** to show most of its
# gain there; no ladder measured on LUMI ships with the workbook yet, so every LUMI figure here is expected, not
# measured. Below, every number is either **measured on this machine** (a CPU on a laptop) or
# **recorded on an NVIDIA H100** (not LUMI), and says which.
#
# **Predict before you run it:** which rung will help most here, on a CPU, with the tiny language model? Write
# your guess down; the exercises ask for it.

# %%
# %matplotlib inline
from lumikit.ladder import ladder_table, read_ladder
from lumikit.ladder.cli import ladder_job
from lumikit.ladder.plots import ladder_bars
from lumikit.launch import launch, mode_line

# Three rungs of the tiny language model, 1 warm-up step, 3 timed repeats of 3 steps, a 4-step trace per rung
# (3 steps analysed: the trace diff below compares medians over them).
ladder_run = launch(ladder_job("--rungs", "fp32,bf16,fused", "--steps", "3", "--repeats", "3", "--warmup", "1",
                               "--profile-steps", "4"))
print(mode_line(), "->", ladder_run.wait(timeout=600, poll=0.5))

# %%
ladder = read_ladder(ladder_run.path)
print(ladder_table(ladder))
ladder_bars(ladder)

# %% [markdown]
# **How to read it:** each bar is a rung's median samples/s, its whiskers the slowest and fastest of its timed
# repeats, the label on top its speed-up over the first rung. Rungs are cumulative: `fused` runs in bf16 *and* with
# a fused optimizer. The column "vs rung above" is `lumikit.measure.compare` on the repeats: a gain counts only
# when the ranges are apart and the medians more than 20 % apart; otherwise it says "within noise". A laptop shared
# with a browser is noisy, so expect whiskers that overlap. The MFU column is tiny on purpose: a CPU measured
# against a GCD's peak. The next cell says, from these numbers alone, what each rung did here.

# %%
from lumikit.checks.m12 import steps_up

for rung, against_above in steps_up(ladder).items():
    print(f"{rung}: " + against_above.sentence(unit="samples/s", fmt="{:.1f}", higher="faster", lower="slower"))

# %% [markdown]
# **How to read it:** one sentence per rung, built from the repeats above: the two medians with their ranges, the
# ratio, and the verdict. Where it says "within noise", this machine cannot tell the rungs apart; a longer run (more
# `--repeats`) or a quieter machine might, and on LUMI's GCD the gaps are expected to be far larger than the
# noise. Where it says "beyond noise", the rung changed the step here, with one caveat: the rungs run one after
# the other, not interleaved (module 07's way), so other work on a shared machine that covers one rung's whole
# block can pass for a gain or a loss. Run the ladder again (`lumikit ladder --site laptop --wait`): a verdict that
# flips between two runs was the machine, not the rung. A rung whose rate moves several-fold between two runs (a
# 20-fold swing of the fp32 rung was seen on a shared machine) was not measured at all: the machine was busy with
# something else, and no verdict of that run means anything; run it again when the machine is quiet.
#
# ## The ladder on a real GPU, recorded on an NVIDIA H100
#
# The same command ran on an NVIDIA H100 80GB (**not LUMI's MI250X**; shipped in `lumikit.reference` with its
# source). Its fp32 products run at 66.9 TFLOPS peak, bf16 at 989.4 (`lumikit/sites/nvidia-h100.toml`).
# **Predict:** which rung helps the language model (medium, batch 64) most there, and which the ResNet-18?

# %%
from lumikit import reference
from lumikit.ladder import shipped_ladder

lm_h100, lm_h100_source = shipped_ladder("h100-ladder-lm-medium")
print(ladder_table(lm_h100))
print("--", lm_h100_source)
ladder_bars(lm_h100)

# %% [markdown]
# **How to read it (recorded on an NVIDIA H100):** fp32 gives 1460 samples/s, 53 % of the card's fp32 peak: the
# matrix products keep the GPU busy. bf16 gives 1.58x, beyond the noise; the fused optimizer adds little (1.76x,
# within the noise of bf16); `torch.compile` gives 2.68x, beyond the noise. The MFU of the bf16 rungs is low
# (6-10 % of 989.4 TFLOPS; an 8192² bf16 product reached 782 on this card, `reference.load("h100-ceilings")`):
# the trace diff below shows what the step waits for once the products are fast.
#
# The ResNet-18 (batch 256, 32x32 images) tells another story:

# %%
from lumikit.measure import compare, measured

resnet_h100, resnet_h100_source = shipped_ladder("h100-ladder-resnet18-workers4")
resnet_h100_12, _ = shipped_ladder("h100-ladder-resnet18-workers12")
print(ladder_table(resnet_h100))
print("--", resnet_h100_source)
workers = compare(measured("fp32, 12 workers", resnet_h100_12["rungs"][0]["samples_per_s"]["values"]),
                  measured("fp32, 4 workers", resnet_h100["rungs"][0]["samples_per_s"]["values"]))
print("loader workers, recorded on an NVIDIA H100:", workers.sentence(unit="samples/s", fmt="{:.0f}"))
ladder_bars(resnet_h100)

# %% [markdown]
# **How to read it (recorded on an NVIDIA H100):** every rung's median is 12-17 thousand samples/s, every one
# within the noise of fp32, with 4 loader workers or with 12; the fp32 convolutions already run on TF32 tensor
# cores (cuDNN's default), at 11 % of that peak. No rung helped, so the next question is what the step waits for:
# the profiled run's trace (3 steps, with `cuda_sync` events) answers it.

# %%
from lumikit.trace import TraceAnalyzer
from lumikit.trace.critical_path import analyzer_critical_path, bound_by_table
from lumikit.trace.idle import idle_causes

resnet_trace = TraceAnalyzer.from_path(reference.load("h100-resnet18-profile").file_path / "profile")
for report in idle_causes(resnet_trace, resnet_trace.ranks[0]):
    print(f"recorded on an NVIDIA H100: GPU idle {report.idle_us / 1e3:.1f} of {report.span_us / 1e3:.1f} ms; "
          + ", ".join(f"{kind} {us / 1e3:.1f} ms" for kind, us in report.kinds.items()))
bound_by_table(analyzer_critical_path(resnet_trace, resnet_trace.ranks[0]))

# %% [markdown]
# **How to read it:** the GPU is idle 30 % of the analysed steps, mostly *starved*: waiting for the host's next
# launch. The critical path is 44 % `gpu_compute_bound`, 39 % `cpu_bound` (the host running the operators and
# launching the kernels) and 15 % `host_untraced` (the host's Python between the operators), `data_loading` under
# 1 %. A rung that speeds up the GPU's kernels shortens
# only the GPU half, and each small kernel still costs its launch on the host: on a fast GPU, a small model's step
# waits on the host about as much as on the GPU. **Measure first**, then pick the rung.
#
# ## What a rung changed: the trace diff
#
# Each rung left a short trace in `RUN/ladder/<rung>/trace`. `lumikit trace diff A B` compares two of them section
# by section (the Python API below): which operators took more or less time per step, and the critical path.

# %%
from lumikit.trace.diff import section_table, trace_diff

fp32_trace = TraceAnalyzer.from_path(ladder_run.path / "ladder" / "fp32" / "trace")
bf16_trace = TraceAnalyzer.from_path(ladder_run.path / "ladder" / "bf16" / "trace")
fp32_vs_bf16 = trace_diff(fp32_trace, bf16_trace)
print("measured on this CPU, per step: fp32 rung (a) against bf16 rung (b)")
section_table(fp32_vs_bf16, "CPU ops (self time) that changed most, per step")

# %% [markdown]
# **How to read it:** the operators whose time per step changed most between the two rungs, in µs (`a` fp32, `b`
# bf16). Autocast changes which kernels run: matrix products (`aten::mm`, `aten::addmm`) in bf16, and new casts
# (`aten::copy_`, `aten::_to_copy`) around them. Whether bf16 products are cheaper depends on the hardware: a CPU
# without bf16 instructions converts and computes in fp32, and the casts are pure cost; a GCD's matrix cores run
# bf16 at four times the fp32 rate. Each rung's trace holds three analysed steps (the last profiled step is left
# out): `a` and `b` are the medians over them, `a_range` and `b_range` the fastest and slowest step. A host's
# scheduling moves an operator's time a lot from one step to the next, so where the two ranges overlap the verdict
# is `noise`: the steps of one rung differ among themselves by as much as the change. Read only the rows marked
# `changed` (listed first).

# %%
section_table(fp32_vs_bf16, "critical path and its categories, per step")

# %% [markdown]
# **How to read it:** the critical path is the chain of work the step had to wait for (module 06). On a CPU there
# is no GPU, so the whole path is `cpu_bound`: every operator the host runs is on it, and any rung that makes those
# operators cheaper shortens the step. On a GCD the path of a healthy step is expected to be mostly
# `gpu_compute_bound`; a rung that shortens GPU kernels off the path changes nothing, and a step bound by
# `gpu_kernel_launch_overhead` is where `torch.compile` (fewer, fused kernels) is expected to help most.

# %%
bound_by_table(analyzer_critical_path(bf16_trace, bf16_trace.ranks[0]))

# %% [markdown]
# **How to read it:** the bf16 rung's path, by category, as a share of the path and in µs. What dominates the path
# is what the next rung should attack.
#
# The same diff on the language model's H100 rungs (their traces ship with the ladder): fp32 against `compile`,
# the last rung (bf16, fused optimizer and `torch.compile` together).

# %%
h100_rungs = reference.load("h100-ladder-lm-medium").file_path.with_suffix("")
h100_diff = trace_diff(TraceAnalyzer.from_path(h100_rungs / "fp32" / "trace"),
                       TraceAnalyzer.from_path(h100_rungs / "compile" / "trace"))
print("recorded on an NVIDIA H100 (not LUMI), per step: fp32 rung (a) against compile rung (b)")
print(section_table(h100_diff, "step time").to_string(index=False))
section_table(h100_diff, "critical path bound by (share of the path)")

# %% [markdown]
# **How to read it (recorded on an NVIDIA H100):** the step falls from 47.4 to 19.6 ms. In fp32 the path is 93 %
# `gpu_compute_bound`: the products set the pace. After bf16 and `compile` the GPU's compute per step falls from
# 43 to 7 ms, and 94 % of the path is `cpu_bound`: the host, launching the compiled graphs and the optimizer, now
# sets the pace. Any next rung must shorten the host's work, not the kernels.
#
# ## The rungs not climbed here
#
# `compile` compiles the model with `torch.compile` in the warm-up (inductor needs a C compiler; where none is
# found, the rung says so in one line and runs without it), and compiling takes minutes on a laptop's CPU, so this
# lesson leaves it out. `tunableop` works on ROCm only: elsewhere it says so and does nothing. `channels-last`
# changes convolutions: try `--model resnet`. On LUMI the full ladder is one command, **expected** to run in a few
# minutes on one GCD:
#
# ```bash
# lumikit ladder --site lumi --rungs fp32,bf16,fused,compile,tunableop --wait
# ```
#
# ## Inference: prefill, decode and the KV cache
#
# Generating text has two phases. **Prefill** runs the prompt through the model in one pass, all positions at once:
# many products on large matrices, like a training step. **Decode** then adds one token per step. Without a **KV
# cache** each decode step runs the whole sequence again; with one, it runs one position and reads the keys and
# values kept from earlier steps. A decode step does little arithmetic per byte of weights it reads, so it is bound
# by memory traffic: a larger batch reads the same weights once for more rows. **Predict:** with the cache, what
# will a batch of 8 do to decode tokens/s against a batch of 1?
#
# Below: the course's tiny language model (random weights, seed 0; nothing is downloaded), greedy generation of 16
# tokens after a 32-token prompt, batches 1 and 8, with and without the cache, three rounds.

# %%
import torch

from lumikit.workloads import generate
from lumikit.workloads.lm import SIZES, TinyGPT, encode, load_corpus

torch.set_num_threads(1)  # one thread, as the course's local jobs run: other work on a shared machine disturbs less
torch.manual_seed(0)
model, text_ids = TinyGPT(SIZES["tiny"]), encode(load_corpus(None)[:20000])
rounds = [generate.measure(model, text_ids, batch_sizes=[1, 8], prompt_tokens=32, new_tokens=16, repeats=2)
          for _ in range(3)]
print(generate.table(rounds[-1], "this CPU (the last of three rounds)"))

# %%
def decode_rates(batch: int, kv_cache: bool) -> list[float]:
    return [r.decode_tokens_per_s for rows in rounds for r in rows if r.batch == batch and r.kv_cache == kv_cache]


cache_at_8 = compare(measured("batch 8, cache", decode_rates(8, True)), measured("batch 8, no cache",
                                                                                 decode_rates(8, False)))
batch_with_cache = compare(measured("batch 8, cache", decode_rates(8, True)), measured("batch 1, cache",
                                                                                      decode_rates(1, True)))
print(cache_at_8.sentence(unit="tokens/s", fmt="{:.0f}"))
print(batch_with_cache.sentence(unit="tokens/s", fmt="{:.0f}"))

# %% [markdown]
# **How to read it:** the table gives tokens/s over the whole batch; prefill is far faster per token than decode,
# because it runs all positions in one pass (with the cache it also writes the cache, so it can be slower than
# without). The two sentences compare the rounds: the cache against none at batch
# 8, then batch 8 against batch 1, both with the cache. Each says whether the gap is beyond the noise of the three
# rounds on this machine. On a GCD, where every decode step reads the weights from memory, a larger batch is
# **expected** to raise decode tokens/s until the GCD's arithmetic, not its memory, sets the pace: that is what
# vLLM's continuous batching exploits.
#
# The same measurement, recorded on an NVIDIA H100 with the medium model (128-token prompt, 64 new tokens):

# %%
h100_generate = reference.load("h100-inference-lm-medium")
h100_rows = [generate.GenerateRow(**row) for row in h100_generate.parsed()["rows"]]
print(generate.table(h100_rows, f"{h100_generate.machine}, recorded {h100_generate.date}, median of 5"))
print("--", h100_generate.source_line)

# %% [markdown]
# **How to read it (recorded on an NVIDIA H100):** at batch 128 the cache gives 51,118 decode tokens/s against
# 7,577 without (6.7x); at batch 1 only 485 against 398: one row's step of a small model is too little work to keep
# the GPU busy, so its pace is most likely set by launching kernels (no trace of it ships to check). With the
# cache, batch 128 decodes 105x the tokens/s of batch 1: the batching the vLLM recipe below relies on.
#
# ## What LUMI would run: vLLM
#
# For serving a real model, LUMI's AI Guide (chapter 10) runs vLLM from the LAIF container on two GCDs, on a Unix
# socket. `lumikit vllm --explain` prints that recipe with a line for each part. It is never run here: the output
# below is the script and its explanation, and what it says of LUMI is expected.

# %%
from lumikit.cli import main as lumikit_command

exit_status = lumikit_command(["vllm", "--explain", "--site", "lumi", "--account", "project_465000000"])

# %% [markdown]
# **How to read it:** `--tensor-parallel-size` splits the model over the job's two GCDs (a 35 B model in bf16 is
# about 70 GB; one GCD holds 64 GB), `--uds` serves on a socket only steps of this job can reach, and the caches go
# to `/scratch`. The client is a second step in the same job (`srun --overlap --jobid JOBID`); `lumikit vllm
# --client JOBID` prints it.

# %% [markdown]
# ## What to change first: `advise`
#
# Everything above is a measurement; `advise` (also `lumikit advise PATH`) turns the measurements of one trace, run
# folder or rocpd database into a ranked list: each finding with its evidence (which analysis, which numbers), an
# upper bound on what fixing it is worth (the critical path's what-if of removing or halving that cause, never more
# than the share of the path the cause holds), the remedy (the LUMI flag, variable or knob, and the course
# scripts' option) and what to measure again. It is rules, not a model: the same trace always gets the same advice.
# First on your own bf16 rung, measured on this machine:

# %%
from lumikit.advise import advise

print(advise(ladder_run.path / "ladder" / "bf16" / "trace").text())

# %% [markdown]
# **How to read it (measured on this CPU):** a CPU run has no GPU kernels, so only the host-side rules have anything
# to read, and the advice says so; a finding here is about the host, not about a GCD. The same call on the shipped
# H100 trace of the language model's bf16 rung (recorded on an NVIDIA H100, not LUMI):

# %%
print(advise(h100_rungs / "bf16" / "trace").text())

# %% [markdown]
# **How to read it (recorded on an NVIDIA H100):** the first finding is the one the diff above pointed at: after
# bf16 the host sets the pace, hundreds of small kernels per step with the GPU idle most of its span, and the remedy
# is the `compile` rung (and graphs, a larger batch). Each gain is an upper bound: read it as "no more than", and
# check with `lumikit trace diff` after the change. `advise` does not replace the investigation of the capstone: it
# names where to look first; the measurement that proves the cause is still yours.

# %% [markdown]
# ## Key points
#
# - A rung helped only if its gain is beyond the noise of your own repeats.
# - MFU is measured against the peak of the precision that ran: bf16 against 191.5 TFLOPS on an MI250X GCD, fp32 against 47.9.
# - The trace diff says which operators a rung changed; the critical path says whether that was what the step waited for.
# - `advise` ranks the causes a trace shows by what fixing each is worth at most; the measurement still decides.
# - Decode is bound by memory traffic: a KV cache saves recomputation, a larger batch reads the weights once for more tokens.
