# The workbook's entry points. `make lab` opens it, `make test` checks everything.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Where torch comes from. Empty: the default package index (on Linux x86_64 that is the CUDA build, about 4 GB).
# TORCH=cpu takes PyTorch's CPU-only wheels instead (no GPU on a laptop needs them); TORCH_INDEX=URL names any index.
# When that index cannot be reached, set-up stops and says why; TORCH_FALLBACK=default goes on with the default index.
TORCH       ?=
TORCH_INDEX ?= $(if $(filter cpu,$(TORCH)),https://download.pytorch.org/whl/cpu,)
TORCH_FALLBACK ?=

.PHONY: venv lab test unit slurm-up slurm-down exercises verify clean-venv handout

venv: $(STAMP)

# Re-runs only when the project's dependency list or its one compiled part changes (idempotent). pip builds the
# optional compiled trace reader (setup.py) in place; without a C compiler it goes on, and lumikit reads traces
# with msgspec alone (same numbers, slower).
$(STAMP): pyproject.toml setup.py lumikit/trace/_fastevents.c
	@echo "== [1/4] creating $(VENV) with $(PYTHON)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "== [2/4] upgrading pip"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "== [3/4] torch: $(if $(TORCH_INDEX),from $(TORCH_INDEX),from the default package index, in step 4 with the rest)"
	bash scripts/install-torch.sh $(PY) "$(TORCH_INDEX)" "$(TORCH_FALLBACK)"
	@echo "== [4/4] installing lumikit and the workbook's packages ($(if $(TORCH_INDEX),JupyterLab and the rest: torch is in already,torch and JupyterLab and the rest)): see the README for size and time"
	@echo "   pip's output goes to $(VENV)/pip-install.log (a line here every 15 s; it is printed here if pip fails)"
	@bash scripts/with-heartbeat.sh $(VENV)/pip-install.log "lumikit and the workbook's packages" \
	    $(PY) -m pip install --progress-bar off -e '.[workbook]' || \
	    { tail -n 40 $(VENV)/pip-install.log; echo "== pip failed: the whole log is $(VENV)/pip-install.log"; exit 1; }
	touch $(STAMP)
	@echo "== $(VENV) is ready with $$($(PY) scripts/torch_build.py): the CLI is $(VENV)/bin/lumikit (or 'source $(VENV)/bin/activate', then 'lumikit')"

# JupyterLab at the repository root (notebooks/, exercises/, solutions/ all reachable), opening module 00, with the
# workbook's lab settings (jupyter-config/: no news pop-up on first open).
# Jupyter refuses to run as root without --allow-root: containers and CI boxes run as root, so add it there.
LAB_PORT ?= 8888
lab: venv
	@if [ "$$(id -u)" = 0 ]; then echo "make lab: running as root, so JupyterLab is started with --allow-root"; fi
	JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter-config$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} $(VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --port=$(LAB_PORT) --ServerApp.root_dir=. \
	    --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# Unit, conformance, integration and browser tests, then the whole workbook (lessons, solutions, exercises), timed.
# The slurm tests run beside the others (scripts/run-tests.sh), not under pytest-xdist: its loadgroup ignores the
# groups under pytest 9, so it cannot keep the lumi-sim tests apart.
test: venv
	PY=$(PY) bash scripts/run-tests.sh --durations=15
	PY=$(PY) bash scripts/run-workbook.sh

unit: venv
	$(PY) -m pytest -m "not slurm and not browser and not notebooks"

clean-venv:
	rm -rf $(VENV)

# A real Slurm 22.05 cluster ("lumi-sim") on 127.0.0.1 for integration tests and demos.
slurm-up:
	bash scripts/slurm-sim/up.sh

slurm-down:
	bash scripts/slurm-sim/down.sh

# Regenerate exercises/ from solutions/ (one source), and run the instructor verification.
exercises: venv
	$(PY) -m lumikit.checks.instructor.generate

verify: venv
	$(VENV)/bin/lumikit verify

# A graded course: a copy for learners without solutions/ (and the instructor notes, tests); grade from this one.
handout: venv
	@test -n "$(DEST)" || { echo "make handout DEST=/path/to/learners-copy"; exit 2; }
	$(VENV)/bin/lumikit handout $(DEST)
