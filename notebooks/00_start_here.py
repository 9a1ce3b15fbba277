# %% [markdown]
# # 00 · Start here
#
# This workbook runs in three places: on **LUMI** (real Slurm, real MI250X GPUs), on a **laptop or CI machine**
# (no Slurm, no GPU: jobs run as local processes and GPU views replay generated sessions), and against a
# **local Slurm cluster** (`make slurm-up`). Every cell that runs something says where it ran, in one line.
#
# Where am I? The next cell asks lumikit.

# %%
from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site()
print(mode_line(site))

# %% [markdown]
# **How to read it:** on a LUMI login node or in Open OnDemand the mode says `lumi` and jobs go to Slurm; on a
# laptop it says `laptop` and the same cells start local processes instead.
#
# ## The site profile: the machine as data
#
# Everything lumikit knows about LUMI lives in one file, `lumikit/sites/lumi.toml`, that an instructor edits once
# per course edition: the node's GCDs and cores, the partitions and their limits, the containers, bind sets and
# environment recipes. The laptop profile inherits it, so commands render exactly as on LUMI.

# %%
import pandas as pd

lumi = load_site("lumi")
pd.DataFrame([{"partition": p.name, "kind": p.kind, "nodes": "exclusive" if p.exclusive else "shared",
               "max nodes": p.max_nodes, "max time": p.max_time} for p in lumi.partitions.values()])

# %% [markdown]
# **Read it as:** `-g` partitions have GPUs; `standard-g` gives whole nodes, `small-g` and `dev-g` share them.
# `dev-g` is for short tests (3 hours at most).
#
# ## Your own settings
#
# Your project number and the course reservation are yours, not the workbook's: they come from
# `~/.config/lumikit/config.toml` or the variables `LUMIKIT_ACCOUNT` and `LUMIKIT_RESERVATION`.

# %%
from lumikit.config import config_path, load_config

cfg = load_config()
print(f"config file: {config_path()} ({'found' if cfg.source else 'not there'})")
missing = '(not set: add account = "project_4650XXXXX" to the file)'
print(f"account: {cfg.account or missing}")
print(f"reservation: {cfg.reservation or '(none)'}")

# %% [markdown]
# ## What runs for real here?

# %%
import shutil

checks = {
    "Slurm client (sbatch)": shutil.which("sbatch") is not None,
    "rocm-smi": shutil.which("rocm-smi") is not None,
    "nvidia-smi": shutil.which("nvidia-smi") is not None,
    "singularity": shutil.which("singularity") is not None,
}
try:
    import torch
    checks["PyTorch sees a GPU"] = torch.cuda.is_available()
except ImportError:
    checks["PyTorch installed"] = False
pd.Series(checks, name="available here").to_frame()

# %% [markdown]
# Where something is missing, the workbook falls back: jobs run as local processes, the GPU dashboard replays a
# **generated** session (written by `lumikit.smi.synth` in `rocm-smi`'s format, its readings calibrated on real LUMI
# outputs), and profiles come from small runs on the CPU. Whatever is generated says so where you meet it. Beside
# it the modules show **real outputs** taken on LUMI and on AMD GPUs, each with the page and commit it comes from
# (`lumikit.reference`, files in `lumikit/data/reference/` with their licences in `SOURCES.toml`):

# %%
from lumikit import reference

pd.DataFrame([{"real output": r.name, "kind": r.kind, "machine": r.machine, "source": f"{r.repo} ({r.licence})"}
              for r in reference.catalogue()]).set_index("real output")

# %% [markdown]
# The next module, **01**, builds your first LUMI job.
