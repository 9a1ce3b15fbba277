# The workbook's entry points. `make lab` opens it, `make test` checks everything.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv lab test unit slurm-up slurm-down exercises verify clean-venv

venv: $(STAMP)

# Re-runs only when the project's dependency list changes (idempotent).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[workbook]'
	touch $(STAMP)

lab: venv
	$(VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --notebook-dir=notebooks

# Unit, conformance, integration and browser tests, then the whole workbook (lessons, solutions, exercises), timed.
test: venv
	$(PY) -m pytest
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
	$(PY) -m lumikit.checks.generate

verify: venv
	$(VENV)/bin/lumikit verify
