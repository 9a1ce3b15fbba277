# %% [markdown]
# A check cell that passes a constant instead of the learner's answer: it can never fail.

# %%
import lumikit.checks.example as checks

# %% tags=["solution"]
# Exercise 00.1: How many GCDs does one LUMI-G node have? Store the number in `gcds`.
# Hint: two per MI250X package, four packages.
gcds = 2 * 4

# %% tags=["check"]
checks.check_gcd_count(8)
