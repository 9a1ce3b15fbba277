# %% [markdown]
# A check cell that works on the answer before the check sees it: on the stub's `None` it raises AttributeError,
# not the check's own message.

# %%
import lumikit.checks.example as checks

# %% tags=["solution"]
# Exercise 00.3: Which class of GPU work is a kernel named `ncclDevKernel_Generic`? Store it in `kernel_class`.
# Hint: collectives move data between GPUs.
kernel_class = "Communication"

# %% tags=["check"]
checks.check_kernel_class(kernel_class.lower())
