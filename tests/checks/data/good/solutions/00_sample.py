# %% [markdown]
# # 00 A sample module
#
# A small notebook in the shape of the workbook's modules, used to test the exercise machinery.
# It reads `../data/step_times.txt`, so it must run with its own folder as the working directory.

# %%
from pathlib import Path

import lumikit.checks.example as checks

step_times = [float(x) for x in Path("../data/step_times.txt").read_text().split()]
print(f"{len(step_times)} steps measured")

# %% tags=["solution"]
# Exercise 00.1: How many GCDs (PyTorch's "GPUs") does one LUMI-G node have? Store the number in `gcds`.
# Hint: `load_site("lumi").node` describes the node; each MI250X package holds two GCDs.
from lumikit.site import load_site

node = load_site("lumi").node
gcds = len(node.gcds)

# %% tags=["check"]
checks.check_gcd_count(gcds)

# %% tags=["solution"]
# Exercise 00.2: What is the mean step time once the model is warm? Store it in `mean_step`.
# Hint: the first step includes the warm-up; leave it out.
steady = step_times[1:]
mean_step = sum(steady) / len(steady)
print(f"{mean_step:.3f} s per step")

# %% tags=["check"]
checks.check_mean_step_time(mean_step, step_times)

# %% tags=["solution"]
# Exercise 00.3: Which class of GPU work is a kernel named `ncclDevKernel_Generic`? Store it in `kernel_class`.
# Hint: `lumikit.kernels.classify_kernel` knows.
from lumikit.kernels import classify_kernel

kernel_class = classify_kernel("ncclDevKernel_Generic")

# %% tags=["check"]
checks.check_kernel_class(kernel_class)

# %% [markdown] tags=["solution"]
# **Question.** Why is the first step slower than the others, and which steps should you compare?
#
# **Answer.** The first step is slower because it includes the warm-up; the steady steps are what to compare.
