# %% [markdown]
# A check too lax to grade: it accepts any whole number, so one of its known-wrong answers passes, and its second
# check declares only one wrong answer.

# %%
from lumikit.checks import CheckFailed, check, expect_type, passed, wrong


@check("00.1", wrong("counts packages, not GCDs", answer=4), wrong("the count as text", answer="8"))
def check_lax_count(answer):
    expect_type("00.1", answer, int, what="the number of GCDs", hint="a whole number")
    return passed("00.1")


@check("00.2", wrong("a negative count", answer=-1))
def check_one_wrong(answer):
    expect_type("00.2", answer, int, what="the number of nodes", hint="a whole number")
    if answer < 1:
        raise CheckFailed("00.2", "a job has at least one node", found=answer)
    return passed("00.2")


# %% tags=["solution"]
# Exercise 00.1: How many GCDs does one LUMI-G node have? Store the number in `gcds`.
# Hint: two per MI250X package, four packages.
gcds = 2 * 4

# %% tags=["check"]
check_lax_count(gcds)

# %% tags=["solution"]
# Exercise 00.2: On how many nodes does a 16-GCD job run? Store the number in `nodes`.
# Hint: 8 GCDs per node.
nodes = 16 // 8

# %% tags=["check"]
check_one_wrong(nodes)
