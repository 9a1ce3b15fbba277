# %% [markdown]
# # 12 · Making the step faster: exercises
#
# Your own ladder and your own generation runs, measured on this machine (a CPU off LUMI), judged against your own
# spread: a gain counts only when `lumikit.measure.compare` calls it beyond the noise of your repeats. What to find,
# and why it matters: whether bf16 helped here (predict first), which rung helped most and whether that is more
# than noise, the MFU of a rung against one GCD's peak for the precision it ran in, and what a KV cache and a larger
# batch do to decode tokens/s. On LUMI the same cells measure a GCD; the LUMI figures in the answers are expected.

# %%
import torch

import lumikit.checks.m12 as checks
from lumikit.ladder import read_ladder
from lumikit.ladder.cli import ladder_job
from lumikit.launch import launch, mode_line
from lumikit.measure import compare, measured
from lumikit.site import load_site
from lumikit.workloads import generate
from lumikit.workloads.lm import SIZES, TinyGPT, encode, load_corpus

print(mode_line())
torch.set_num_threads(1)  # one thread, as the course's local jobs run: other work on a shared machine disturbs less
checks.BF16_HERE  # the question and its options

# %% tags=["solution"]
# Exercise 12.q1: Predict before the ladder runs: the bf16 rung against the fp32 rung, here? Store the letter of your prediction in `bf16_prediction`.
# Hint: there is no wrong prediction here; think of whether this CPU has fast arithmetic for 16-bit brain floats, and of the casts autocast adds.
bf16_prediction = "b"

# %% tags=["check"]
checks.check_bf16_prediction(bf16_prediction)

# %%
# Your ladder: the tiny language model, three rungs, 1 warm-up step and 3 timed repeats of 3 steps each.
ladder_run = launch(ladder_job("--rungs", "fp32,bf16,fused", "--steps", "3", "--repeats", "3", "--warmup", "1",
                               "--profile-steps", "4"))
print(mode_line(), "->", ladder_run.wait(timeout=600, poll=0.5))
ladder = read_ladder(ladder_run.path)
rates = checks.rung_rates(ladder)  # rung -> its timed repeats, samples/s
for rung, values in rates.items():
    print(measured(rung, values).describe("{:.1f}", "samples/s"))

# %% tags=["solution"]
# Exercise 12.q2: Now compare with your prediction: which option do your repeats show (bf16 against fp32)? Store the letter in `bf16_outcome`.
# Hint: a difference smaller than the spread of the repeats is no difference.
# Tool: `compare` of two `measured(...)` series from `lumikit.measure`: its `within_noise` and `ratio`.
bf16_vs_fp32 = compare(measured("bf16", rates["bf16"]), measured("fp32", rates["fp32"]))
print(bf16_vs_fp32.sentence(unit="samples/s", fmt="{:.1f}"))
bf16_outcome = "b" if bf16_vs_fp32.within_noise else "a" if bf16_vs_fp32.ratio > 1 else "c"

# %% tags=["check"]
checks.check_bf16_outcome(bf16_outcome, bf16_prediction, measured=ladder_run)

# %% tags=["solution"]
# Exercise 12.1: Which rung gained most over the rung above it (ratio of median samples/s), and is that gain beyond the noise of your repeats? Store the rung's name in `helped_most` and True or False in `beyond_noise`.
# Hint: the ladder is cumulative: compare each rung with the one above it, not with the first.
# Tool: the module's checks have a helper that compares each rung of a ladder with the rung above it.
steps = checks.steps_up(ladder)
helped_most = max(steps, key=lambda rung: steps[rung].ratio)
beyond_noise = not steps[helped_most].within_noise
print(steps[helped_most].sentence(unit="samples/s", fmt="{:.1f}"))

# %% tags=["check"]
checks.check_helped_most(helped_most, beyond_noise, ladder_run)

# %% tags=["solution"]
# Exercise 12.2: What is the bf16 rung's MFU (0-1) against one LUMI GCD's peak for the precision it ran in? Store it in `mfu_bf16`.
# Hint: model FLOPs per second = FLOPs per step x steps per second; a step is one batch of samples.
# Tool: `ladder["step_flops"]`, `ladder["batch_size"]`, the rung's `samples_per_s["median"]` and `precision` (a CPU without 16-bit matrix instructions runs the rung in fp32, whose peak is `fp32_matrix`), and `load_site("lumi").hardware["gcd_peak_tflops"]`.
bf16_row = next(row for row in ladder["rungs"] if row["rung"] == "bf16")
steps_per_s = bf16_row["samples_per_s"]["median"] / ladder["batch_size"]
peak_name = {"fp32": "fp32_matrix"}.get(bf16_row["precision"], bf16_row["precision"])  # the precision it ran in
mfu_bf16 = ladder["step_flops"] * steps_per_s / (load_site("lumi").hardware["gcd_peak_tflops"][peak_name] * 1e12)

# %% tags=["check"]
checks.check_rung_mfu(mfu_bf16, ladder_run)

# %%
checks.MORE_BATCH  # the question and its options

# %% tags=["solution"]
# Exercise 12.q3: Predict before the next cell measures it: with the KV cache, what will a larger batch do to decode tokens/s? Store the letter of your prediction in `batch_prediction`.
# Hint: there is no wrong prediction here; think of what one decode step reads, and for how many rows.
batch_prediction = "a"

# %% tags=["check"]
checks.check_batch_prediction(batch_prediction)

# %%
# Greedy generation with the course's tiny model (random weights, seed 0): batches 1 and 8, with and without the
# KV cache, three rounds; each round's rows as dicts (what the checks read).
torch.manual_seed(0)
model, text_ids = TinyGPT(SIZES["tiny"]), encode(load_corpus(None)[:20000])
rounds = []
for _ in range(3):
    rows = generate.measure(model, text_ids, batch_sizes=[1, 8], prompt_tokens=32, new_tokens=16, repeats=2)
    rounds.append([row.to_dict() for row in rows])
print(generate.table(rows, "this CPU (the last of three rounds)"))


def decode_rates(batch: int, kv_cache: bool) -> list[float]:
    """Decode tokens/s of one batch size, with or without the cache, over the three rounds."""
    return [r["decode_tokens_per_s"] for rows in rounds for r in rows
            if r["batch"] == batch and r["kv_cache"] == kv_cache]

# %% tags=["solution"]
# Exercise 12.q4: Now compare with your prediction: which option do your rounds show (decode tokens/s with the cache, batch 8 against batch 1)? Store the letter in `batch_outcome`.
# Hint: compare the rounds' decode tokens/s, not one round.
# Tool: `decode_rates(batch, cache)` gives each round's rate; `compare` two `measured(...)` series of them.
batch_effect = compare(measured("batch 8", decode_rates(8, True)), measured("batch 1", decode_rates(1, True)))
print(batch_effect.sentence(unit="tokens/s", fmt="{:.0f}"))
batch_outcome = "b" if batch_effect.within_noise else "a" if batch_effect.ratio > 1 else "c"

# %% tags=["check"]
checks.check_batch_outcome(batch_outcome, batch_prediction, measured=rounds)

# %% tags=["solution"]
# Exercise 12.3: At batch 8, how many times the decode tokens/s with the KV cache is the decode tokens/s without it (medians over the rounds)? Store it in `cache_gain`.
# Hint: how many times faster: the faster rate over the slower one.
cache_gain = measured("cache", decode_rates(8, True)).median / measured("no cache", decode_rates(8, False)).median

# %% tags=["check"]
checks.check_cache_gain(cache_gain, rounds)

# %% [markdown] tags=["solution"]
# **Question 12.A.** Which rung helped most on this machine, and why would the answer be different on a GCD? Use
# your ladder's numbers and the trace diff of the lesson.
#
# **Answer.** 12.1 names the rung and says whether its gain is beyond the noise of the three repeats; on a CPU the
# bf16 rung often loses (12.q2 says whether it did here), because a CPU without fast bf16 arithmetic converts
# around every product and the trace diff shows the casts (`aten::copy_`, `aten::_to_copy`) growing. On an MI250X
# GCD the bf16 matrix peak is 191.5 TFLOPS against 47.9 for fp32, so bf16 is expected to be the largest rung, and
# `torch.compile` is expected to help where the critical path shows kernel-launch overhead.

# %% [markdown] tags=["solution"]
# **Question 12.B.** Why does the KV cache raise decode tokens/s (12.3), and why does a larger batch help decode
# more than prefill?
#
# **Answer.** Without the cache every decode step runs the whole sequence again; with it, one position, reading the
# cached keys and values: 12.3 measured the gain at batch 8. A decode step reads all weights for very little
# arithmetic per row, so it is bound by memory traffic; more rows in the batch share the same read (12.q4 says
# whether your rounds showed it beyond the noise). Prefill already runs all prompt positions in one pass, so its
# products are large and a bigger batch adds less.
