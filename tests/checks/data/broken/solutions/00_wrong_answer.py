# %% [markdown]
# A solution whose own check fails: it counts MI250X packages, not GCDs.

# %%
import lumikit.checks.example as checks

# %% tags=["solution"]
# Exercise 00.1: How many GCDs does one LUMI-G node have? Store the number in `gcds`.
# Hint: two per MI250X package, four packages.
gcds = 4

# %% tags=["check"]
checks.check_gcd_count(gcds)
