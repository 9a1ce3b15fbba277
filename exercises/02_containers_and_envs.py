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

# %% tags=["exercise"]
# Exercise 02.1: Render the srun command of a job on 2 standard-g nodes (8 tasks and 8 GCDs per node) that runs
# `python train.py` in the site's PyTorch container. Store the rendered command in `two_node_command`.
two_node_job = None
two_node_command = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.1")
raise NotImplementedError("Exercise 02.1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_two_node_container(two_node_command)

# %% tags=["exercise"]
# Exercise 02.2: Which of the site's bind sets does a job need once it spans several nodes (RCCL over
# Slingshot)? Store its name in `rccl_bind_set`.
one_node_job = None
extra = None
rccl_bind_set = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.2")
raise NotImplementedError("Exercise 02.2: write your answer above, then delete this line")

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

# %% tags=["exercise"]
# Exercise 02.3: Which Python interpreter does the venv really run when you start `venv/bin/python`? Store its path
# (a string) in `venv_python`.
venv_python = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.3")
raise NotImplementedError("Exercise 02.3: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_venv_python(venv_python, pyvenv_cfg)

# %% [markdown]
# ## Pinning what the base provides
#
# The versions of PyTorch and NumPy in this kernel's environment (in the container, on LUMI):

# %%
base_versions = installed_versions(("torch", "numpy"))
print(base_versions)

# %% tags=["exercise"]
# Exercise 02.4: Write the lines of a pip constraints file that stop `pip install` from replacing the base's
# torch and numpy. Store them, one string per package, in the list `pins`.
pins = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.4")
raise NotImplementedError("Exercise 02.4: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_pins(pins, base_versions)

# %%
checks.WHY_PIN  # the question and its options

# %% tags=["exercise"]
# Exercise 02.q1: Why must pip never replace the container's torch? Pick one of the options shown above and store its letter in `why_pin`.
why_pin = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.q1")
raise NotImplementedError("Exercise 02.q1: write your answer above, then delete this line")

# %% tags=["check"]
checks.check_why_pin(why_pin)

# %% [markdown] tags=["exercise"]
# **Question 02.A.** Why does a 2-node job need the `multinode` bind set while a 1-node job does not? Name what it
# binds and who uses it.
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown] tags=["exercise"]
# **Question 02.B.** Why does the venv made in the container only work inside the container, and why do the pins
# of 02.4 keep your venv's torch the container's one?
#
# **Your answer:** _write it here, with the numbers from the cells above that support it._

# %% [markdown]
# ## A shell in the container (seed hands-on)
#
# The course's run scripts prepare the container with two module commands before they start it: one that makes
# LUMI's AI container modules known, one that loads the bindings module (it binds /project, /scratch, /flash and
# the system libraries into the container). Interactively, `singularity shell` then opens a shell inside it, where
# `python -c "import torch"` finds the container's PyTorch.

# %%
import lumikit.checks.handson as handson_checks

# %% tags=["exercise"]
# Exercise 02.S1: Write the commands, in order, that open an interactive shell in the PyTorch container
# `$CONTAINER` with the course's bindings module (`lumi-aif-singularity-bindings` from /appl/local/laifs/modules;
# older course editions load `singularity-AI-bindings` from /appl/local/containers/ai-modules, also accepted).
# Store them as a list of strings in `shell_commands`.
shell_commands = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("02.S1")
raise NotImplementedError("Exercise 02.S1: write your answer above, then delete this line")

# %% tags=["check"]
handson_checks.check_container_shell(shell_commands)

