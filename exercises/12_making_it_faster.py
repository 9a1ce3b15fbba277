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

# %% tags=["exercise"]
# Exercise 12.q1: Predict before the ladder runs: the bf16 rung against the fp32 rung, here? Store the letter of your prediction in `bf16_prediction`.
bf16_prediction = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.q1")
raise NotImplementedError("Exercise 12.q1: write your answer above, then delete this line")

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

# %% tags=["exercise"]
# Exercise 12.q2: Now compare with your prediction: which option do your repeats show (bf16 against fp32)? Store the letter in `bf16_outcome`.
bf16_vs_fp32 = None
bf16_outcome = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.q2")
raise NotImplementedError("Exercise 12.q2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_bf16_outcome(bf16_outcome, bf16_prediction, measured=ladder_run)

# %% tags=["exercise"]
# Exercise 12.1: Which rung gained most over the rung above it (ratio of median samples/s), and is that gain beyond the noise of your repeats? Store the rung's name in `helped_most` and True or False in `beyond_noise`.
steps = None
helped_most = None
beyond_noise = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.1")
raise NotImplementedError("Exercise 12.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_helped_most(helped_most, beyond_noise, ladder_run)

# %% tags=["exercise"]
# Exercise 12.2: What is the bf16 rung's MFU (0-1) against one LUMI GCD's peak for the precision it ran in? Store it in `mfu_bf16`.
bf16_row = None
steps_per_s = None
peak_name = None
mfu_bf16 = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.2")
raise NotImplementedError("Exercise 12.2: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_rung_mfu(mfu_bf16, ladder_run)

# %%
checks.MORE_BATCH  # the question and its options

# %% tags=["exercise"]
# Exercise 12.q3: Predict before the next cell measures it: with the KV cache, what will a larger batch do to decode tokens/s? Store the letter of your prediction in `batch_prediction`.
batch_prediction = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.q3")
raise NotImplementedError("Exercise 12.q3: write your answer above, then delete this line")

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

# %% tags=["exercise"]
# Exercise 12.q4: Now compare with your prediction: which option do your rounds show (decode tokens/s with the cache, batch 8 against batch 1)? Store the letter in `batch_outcome`.
batch_effect = None
batch_outcome = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.q4")
raise NotImplementedError("Exercise 12.q4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_batch_outcome(batch_outcome, batch_prediction, measured=rounds)

# %% tags=["exercise"]
# Exercise 12.3: At batch 8, how many times the decode tokens/s with the KV cache is the decode tokens/s without it (medians over the rounds)? Store it in `cache_gain`.
cache_gain = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("12.3")
raise NotImplementedError("Exercise 12.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_cache_gain(cache_gain, rounds)

# %% [markdown] tags=["exercise"]
# **Question 12.A.** Which rung helped most on this machine, and why would the answer be different on a GCD? Use
# your ladder's numbers and the trace diff of the lesson.
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 12.B.** Why does the KV cache raise decode tokens/s (12.3), and why does a larger batch help decode
# more than prefill?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._
