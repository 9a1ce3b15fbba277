# %% [markdown]
# # 02 · Exercises: containers and Python environments
#
# Four exercises: the container command of a 2-node job, the bind set RCCL needs, the Python a venv really runs,
# and the pins that keep pip off the container's packages; one question on why the pins matter; the discussion
# questions at the end. What to find, and why it matters: what a job in a container needs from the host (without
# it, a 2-node job falls back to slow sockets or fails), and which Python and which torch your venv really runs
# (a wrong torch loses the GCDs without an error). The first two use the site profile and the job builder; the last
# two use a small venv made here and the versions of this kernel's environment.

# %%
import subprocess
import sys
import tempfile
from pathlib import Path

from lumikit.launch.runfolder import default_runs_dir
import lumikit.checks.m02 as checks
from lumikit.jobs import effective_binds, render_srun, spec
from lumikit.launch import mode_line
from lumikit.packages import installed_versions
from lumikit.site import load_site

site = load_site("lumi")
print(mode_line())
print("bind sets in the site profile:", ", ".join(site.binds))

# %% tags=["solution"]
# Exercise 02.1: Render the srun command of a job on 2 standard-g nodes (8 tasks and 8 GCDs per node) that runs
# `python train.py` in the site's PyTorch container. Store the rendered command in `two_node_command`.
# Hint: name the container and let lumikit choose the binds a 2-node job needs.
# Tool: `spec(..., container="pytorch")`, then `render_srun(job, site)`.
two_node_job = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
                    cpus_per_task=7, mem_per_gpu="60G", time="0:30:00", container="pytorch")
two_node_command = render_srun(two_node_job, site)
print(two_node_command.explain())

# %% tags=["check"]
checks.check_two_node_container(two_node_command)

# %% tags=["solution"]
# Exercise 02.2: Which of the site's bind sets does a job need once it spans several nodes (RCCL over
# Slingshot)? Store its name in `rccl_bind_set`.
# Hint: which paths does a 2-node job bind that a 1-node job does not?
# Tool: `effective_binds(job, site)` of both jobs.
one_node_job = spec(["python", "train.py"], gpus_per_node=1, container="pytorch")
extra = set(effective_binds(two_node_job, site)) - set(effective_binds(one_node_job, site))
print("bound only for 2 nodes:", sorted(extra))
rccl_bind_set = next(name for name, paths in site.binds.items() if paths and set(paths) <= extra)
print("bind set:", rccl_bind_set)

# %% tags=["check"]
checks.check_rccl_bind_set(rccl_bind_set)

# %% [markdown]
# ## A venv on top of a base Python
#
# The next cell makes a venv with `--system-site-packages` on top of this kernel's Python (on LUMI you make it
# inside the container, on top of the container's Python) and reads its `pyvenv.cfg`.

# %%
runs_dir = default_runs_dir()  # the clone's runs/, where every run folder goes
runs_dir.mkdir(parents=True, exist_ok=True)
venv = Path(tempfile.mkdtemp(prefix="venv-exercise-", dir=runs_dir)) / "venv"
subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True,
               timeout=60)
pyvenv_cfg = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if " = " in line)
print(venv / "bin" / "python")
print(pyvenv_cfg)

# %% tags=["solution"]
# Exercise 02.3: Which Python interpreter does the venv really run when you start `venv/bin/python`? Store its path
# (a string) in `venv_python`.
# Hint: `venv/bin/python` is only a link; the interpreter it runs lives where the venv's configuration says.
# Tool: `Path.resolve()` on the link, or `home` in pyvenv.cfg.
venv_python = str((venv / "bin" / "python").resolve())
print("venv/bin/python ->", venv_python)
print("pyvenv.cfg home: ", pyvenv_cfg["home"])

# %% tags=["check"]
checks.check_venv_python(venv_python, pyvenv_cfg)

# %% [markdown]
# ## Pinning what the base provides
#
# The versions of PyTorch and NumPy in this kernel's environment (in the container, on LUMI):

# %%
base_versions = installed_versions(("torch", "numpy"))
print(base_versions)

# %% tags=["solution"]
# Exercise 02.4: Write the lines of a pip constraints file that stop `pip install` from replacing the base's
# torch and numpy. Store them, one string per package, in the list `pins`.
# Hint: a lower bound lets pip upgrade; only an exact version keeps the base's package.
# Tool: pip's constraint lines (PEP 440 operators), one per package, read from `base_versions`.
pins = [f"{name}=={version}" for name, version in base_versions.items()]
print("\n".join(pins))

# %% tags=["check"]
checks.check_pins(pins, base_versions)

# %%
checks.WHY_PIN  # the question and its options

# %% tags=["solution"]
# Exercise 02.q1: Why must pip never replace the container's torch? Pick one of the options shown above and store its letter in `why_pin`.
# Hint: where does a torch from PyPI come from, and what was the container's torch built for?
why_pin = "b"

# %% tags=["check"]
checks.check_why_pin(why_pin)

# %% [markdown] tags=["solution"]
# **Question 02.A.** Why does a 2-node job need the `multinode` bind set while a 1-node job does not? Name what it
# binds and who uses it.
#
# **Answer.** The command printed in 02.1 starts the tasks with `singularity exec`, binds the six user paths and,
# because the job spans two nodes, the four paths of the `multinode` set printed in 02.2: Slurm's spool folder,
# `/opt/cray` and the Slingshot libraries that RCCL uses to reach the other node. A 1-node job talks through the
# node's own links and does not need them, which is why the difference of the two bind lists names the set.

# %% [markdown] tags=["solution"]
# **Question 02.B.** Why does the venv made in the container only work inside the container, and why do the pins
# of 02.4 keep your venv's torch the container's one?
#
# **Answer.** In 02.3 the printed interpreter lives in the `home` folder of pyvenv.cfg, not in the venv: the venv
# is a folder of links plus its own site-packages. On LUMI that folder is inside the container, so the venv only
# works inside it. The pins printed in 02.4 are the versions this base really has (here a CPU build of PyTorch; on
# LUMI the container's ROCm build); with them in a constraints file pip may add packages but must keep those
# versions, or stop with a conflict you can read.

# %% [markdown]
# ## A shell in the container (seed hands-on)
#
# The course's run scripts prepare the container with two module commands before they start it: one that makes
# LUMI's AI container modules known, one that loads the bindings module (it binds /project, /scratch, /flash and
# the system libraries into the container). Interactively, `singularity shell` then opens a shell inside it, where
# `python -c "import torch"` finds the container's PyTorch.

# %%
import lumikit.checks.handson as handson_checks

# %% tags=["solution"]
# Exercise 02.S1: Write the commands, in order, that open an interactive shell in the PyTorch container
# `$CONTAINER` with the course's bindings module (`lumi-aif-singularity-bindings` from /appl/local/laifs/modules;
# older course editions load `singularity-AI-bindings` from /appl/local/containers/ai-modules, also accepted).
# Store them as a list of strings in `shell_commands`.
# Hint: Lmod only loads modules from folders it knows.
# Tool: `module use FOLDER`, `module load NAME`, `singularity shell IMAGE`.
shell_commands = ["module purge", "module use /appl/local/laifs/modules",
                  "module load lumi-aif-singularity-bindings", "singularity shell $CONTAINER"]
print("\n".join(shell_commands))

# %% tags=["check"]
handson_checks.check_container_shell(shell_commands)

