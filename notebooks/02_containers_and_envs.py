# %% [markdown]
# > **Module 02 at a glance.** About **55 minutes** (lesson and exercises). Before it: module(s) 01.
# >
# > **Objectives.** After it you can:
# > - run a job inside LUMI's PyTorch container with the right binds
# > - add packages in a venv on top of the container without replacing its PyTorch

# %% [markdown]
# # 02 · Containers and Python environments
#
# On LUMI, PyTorch does not come from `pip install torch`: it comes in a **Singularity container** built for the
# MI250X and LUMI's ROCm, kept in `/appl/local/containers/sif-images/`. A container is one file on the parallel
# file system instead of the tens of thousands of small files of a conda environment, which Lustre serves slowly.
# The site profile names the course's containers and how to start each one.

# %%
from pathlib import Path

import pandas as pd

from lumikit.launch.runfolder import default_runs_dir
from lumikit.launch import mode_line
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
pd.DataFrame([{"container": c.name, "start with": f"singularity {c.launch}",
               "Python environment": "activate with $WITH_CONDA" if c.with_conda else "activated by the image",
               "image": Path(c.path).name} for c in site.containers.values()]).set_index("container")

# %% [markdown]
# **How to read it:** the `sif-images` of 2024-25 are started with `singularity exec` and their conda environment
# is switched on by running `$WITH_CONDA` (a variable set inside the image that holds the activation command).
# Forget it and `python` is the system's Python 3.6 without PyTorch (`ModuleNotFoundError`). The 2026 LUMI AI
# Factory images (`laif-pytorch`) are started with `singularity run`, which activates the environment itself.
#
# ## The same job in two kinds of container
#
# The job builder knows which kind each container is. Ask for two GCDs and count what PyTorch sees:

# %%
from lumikit.jobs import render_srun, spec

count_gpus = spec(["python", "-c", "import torch; print(torch.cuda.device_count())"], partition="small-g",
                  gpus_per_node=2, time="0:05:00")
for name in ("pytorch", "laif-pytorch"):
    print(f"# {name}")
    print(render_srun(count_gpus.with_(container=name), site).text(), end="\n\n")

# %% [markdown]
# **How to read it:** the program runs inside `bash -c '...'`, in single quotes, so that `$WITH_CONDA` is expanded
# inside the container, not by your shell on the login node. The `laif-pytorch` line has no `$WITH_CONDA` and
# starts the command directly. On LUMI this is expected to print `2` (the LUMI AI workshop's module 04 says its
# two-GCD allocation "should yield 2"): PyTorch sees the GCDs you asked Slurm for, and the default is **zero**, so a
# job without `--gpus-per-node` sees no GPU at all.
#
# ## Binds: which host folders the container sees
#
# Inside a container only the image, your home folder, `/tmp` and the current folder are visible. Your data in
# `/scratch`, `/project` and `/flash` must be **bound** with `-B`. The site profile keeps two bind sets:

# %%
from lumikit.jobs import effective_binds

one_node = count_gpus.with_(container="pytorch")
two_nodes = one_node.with_(partition="standard-g", nodes=2, gpus_per_node=8, ntasks_per_node=8)
bound_one, bound_two = effective_binds(one_node, site), effective_binds(two_nodes, site)
pd.DataFrame([{"path": path, "bind set": name, "1 node": path in bound_one, "2 nodes": path in bound_two}
              for name, paths in site.binds.items() for path in paths]).set_index("path")

# %% [markdown]
# **How to read it:** the `user` set is bound in every container job. `/pfs` is there because `/scratch` and
# `/flash` are links into `/pfs`: bind only the link and the container finds nothing behind it. The `multinode`
# set (Slurm's spool folder, the Cray libraries and the Slingshot `libcxi`) is added once a job spans nodes: RCCL
# reaches the other nodes through those host libraries. Without them a multi-node job fails with errors such as
# `libmpi_cray.so.12: cannot open shared object file`.
#
# ## What this machine runs instead
#
# A laptop has no Singularity and no LUMI images, so the local backend runs the *same* rank script without the
# container; here the cell also swaps `python` for the kernel's own interpreter. The next cell shows both commands,
# then runs a probe that reports which Python it got, inside which container, and where PyTorch was found.

# %%
import shlex
import sys

from lumikit.launch import LocalBackend, get_backend, launch

PROBE = ('import os, sys, importlib.util as u; s = u.find_spec("torch"); '
         'print("python", sys.version.split()[0], "at", sys.executable); '
         'print("container:", os.environ.get("SINGULARITY_CONTAINER", "(none)")); '
         'print("torch from:", s.origin if s else "(not installed)")')
probe = spec(["python", "-c", PROBE], partition="small-g", gpus_per_node=1, time="0:05:00", container="pytorch")
print("On LUMI:    ", render_srun(probe, site).text())
if get_backend().name != "slurm":
    probe = probe.with_(command=(sys.executable, "-c", PROBE))  # no container: the kernel's own python
print("On a laptop:", shlex.join(LocalBackend("laptop").rank_argv(probe)))
run = launch(probe)
print(mode_line(), "->", run.wait(timeout=120, progress=False))
print(run.stdout(0).strip())

# %% [markdown]
# **How to read it:** on LUMI the probe is expected to say `container: /appl/local/containers/sif-images/...` and find PyTorch
# inside the image; on a laptop it says `(none)` and finds the PyTorch of your own environment. The job spec was
# the same; only the backend differs.
#
# ## A venv on top of the container
#
# An image is read-only: `pip install` cannot add packages to it. The LUMI way is a **virtual environment made
# inside the container** with `--system-site-packages`: the venv holds only your extra packages and sees
# everything the container has (PyTorch, NumPy, the ROCm libraries). The workbook's own set-up script,
# `lumi/setup-venv.sh`, does exactly this. Its dry run shows the commands and changes nothing:

# %%
import subprocess

from lumikit.config import load_config

project = load_config().account or "project_465000000"  # an example number when you have none configured
dry = subprocess.run(["bash", str(Path("..") / "lumi" / "setup-venv.sh"), "--project", project, "--dry-run",
                      "--no-check"], capture_output=True, text=True, timeout=60, check=True)
for line in dry.stdout.splitlines():
    if "venv --system-site-packages" in line or "pip install" in line:
        print(line, end="\n\n")

# %% [markdown]
# **How to read it:** both commands run *inside* the image after `$WITH_CONDA`, so `python -m venv` starts from the
# container's Python. The venv's `bin/python` is only a link to that Python, which exists inside the container
# alone: run the venv through `singularity exec ... bash -c '$WITH_CONDA; source venv/bin/activate; ...'` (or the
# script's `host-bin/python` wrapper), never directly on the login node. Thousands of small files on Lustre are
# slow; for big venvs the LUMI guides pack them into a SquashFS image bound into the container.
#
# Here we make a small venv the same way on this machine, on top of the kernel's Python, and look inside:

# %%
import tempfile

runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
venv = Path(tempfile.mkdtemp(prefix="venv-demo-", dir=runs_dir)) / "venv"
subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True,
               timeout=60)
cfg = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if " = " in line)
VENV_PROBE = ('import sys, importlib.util as u; s = u.find_spec("torch"); print("runs in prefix", sys.prefix); '
              'print("base prefix:", sys.base_prefix); print("torch from:", s.origin if s else "(not installed)")')
look = subprocess.run([str(venv / "bin" / "python"), "-c", VENV_PROBE], capture_output=True, text=True,
                      timeout=60, check=True)
print("venv/bin/python ->", (venv / "bin" / "python").resolve())
print("pyvenv.cfg:", {k: cfg[k] for k in ("home", "include-system-site-packages", "version")})
print(look.stdout.strip())

# %% [markdown]
# **How to read it:** `pyvenv.cfg`'s `home` says which Python the venv runs, and `include-system-site-packages =
# true` lets it see that Python's packages. Inside a LUMI container, `home` is the container's conda environment,
# a real installation with PyTorch in it. If the kernel here itself runs in a venv, `home` skips that venv and
# points at the Python underneath it, so `torch from:` may say `(not installed)`: a venv stacks on an
# installation, never on another venv. That is one reason to make the venv inside the container.
#
# ## Pinning: keep pip away from the container's PyTorch
#
# `pip install` of a package that wants another `torch` or `numpy` would happily download a CUDA or CPU build
# into your venv and hide the container's ROCm build. A **constraints file** pins what the base already has;
# `pip install -c constraints.txt ...` may then add packages but never replace those.

# %%
from lumikit.packages import installed_versions

base_versions = installed_versions(("torch", "numpy"))
constraints = [f"{name}=={version}" for name, version in base_versions.items()]
print("lumi-constraints.txt:", *constraints, sep="\n  ")
print("pip line:", shlex.join(["python", "-m", "pip", "install", "-c", "lumi-constraints.txt", "-r",
                               "requirements.txt"]))

# %% [markdown]
# **How to read it:** these are the versions of *this* kernel's environment (in the LUMI container on LUMI). The
# set-up script writes exactly this file from inside the container before it installs anything. Pin versions in
# your own `requirements.txt` too (`package==X.Y.Z`), so that the next course edition gets the same environment;
# module 10 does the same for JAX, whose version is part of the container's name.

# %% [markdown]
# ## Key points
#
# - The container brings ROCm's PyTorch; your venv adds only what is missing.
# - Binds decide which host folders exist inside the container.
# - Pin torch to the container's version, or pip will replace it.
