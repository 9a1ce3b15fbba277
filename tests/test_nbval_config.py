"""How nbval runs the workbook's notebooks, and what the sanitize file masks in compared outputs.

CI runs, from the repository root:

    python -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=90 \
        --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly notebooks/

Lax mode executes every cell (an error fails the notebook) but compares only cells tagged `nbval-check-output` (cell
metadata, which a learner never reads in the code; in a Jupytext .py: `# %% tags=["nbval-check-output"]`);
`--nbval-current-env` runs them in this Python, as `lumikit verify` does.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns

SANITIZE = Path(__file__).with_name("nbval_sanitize.cfg")
REPO = Path(__file__).resolve().parents[1]
NBVAL_ARGS = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=90", f"--nbval-sanitize-with={SANITIZE}"]


def sanitize(text: str) -> str:
    """Apply the patterns the way nbval does: in file order, each with re.sub."""
    for regex, replace in get_sanitize_patterns(SANITIZE.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_every_section_of_the_file_is_a_pattern_nbval_reads() -> None:
    text = SANITIZE.read_text()
    sections = re.findall(r"^\[(\w+)\]$", text, flags=re.MULTILINE)
    patterns = get_sanitize_patterns(text)
    assert len(patterns) == len(sections) == 17
    for regex, replace in patterns:
        re.compile(regex)
        assert replace == replace.strip(), f"trailing space in the replacement for {regex}"


@pytest.mark.parametrize("raw, clean", [
    ("Submitted batch job 7123456", "Submitted batch job JOBID"),
    ("job 17 finished; see slurm-17.out and slurm-7123456_3.err", "job JOBID finished; see slurm-JOBID.out and "
                                                                   "slurm-JOBID.err"),
    ("JOBID=10 SLURM_JOB_ID=10 --jobid 17", "JOBID=JOBID SLURM_JOB_ID=JOBID --jobid JOBID"),
    ("local job 412345678 rank 0", "local job JOBID rank 0"),
    ("node=nid005001 list=nid[005001-005002,005010]", "node=NODE list=NODELIST"),
    ("logged in on uan02 and lumi-uan04", "logged in on LOGIN_NODE and LOGIN_NODE"),
    ("started 2024-05-29T10:11:12.345+03:00, ended 2024-05-29 10:12:00", "started TIMESTAMP, ended TIMESTAMP"),
    ("Wed May 29 10:11:12 EEST 2024", "TIMESTAMP"),
    ("step took 0.512 s, epoch 12.5 seconds, kernel 35us, 2 min", "step took DURATION, epoch DURATION, "
                                                                  "kernel DURATION, DURATION"),
    ("elapsed 0:00:01.234567", "elapsed DURATION"),
    ("100%|##########| 10/10 [00:01<00:00,  7.21it/s]", "100%|##########| 10/10 [PROGRESS]"),
    ("wrote /work/x/runs/20250101-120000-train-a1b2c3/manifest.json",
     "wrote runs/RUN/manifest.json"),
    ("<Figure object at 0x7f3a2b1c4d50>", "<Figure object at 0xADDRESS>"),
    ("/scratch/project_465001707/data and /users/alice/.cache", "/scratch/project_ID/data and /users/USER/.cache"),
    ("kernel pid 12345 in /tmp/tmpab12cd/x.json", "kernel pid PID in /tmp/TMP"),
])
def test_what_changes_between_runs_is_masked(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


@pytest.mark.parametrize("stable", [
    "--cpu-bind=mask_cpu:0x00fe000000000000,0xfe00000000000000",
    "--time=00:15:00 --nodes=2 --gpus-per-node=8",
    "8 GCDs on 4 packages, 64 GB each, 2 sockets",
    "partition small-g, account from LUMIKIT_ACCOUNT",
])
def test_what_a_lesson_teaches_is_left_alone(stable: str) -> None:
    assert sanitize(stable) == stable


def test_no_notebook_shows_a_test_marker_to_learners() -> None:
    """nbval's markers are cell tags, never `# NBVAL_...` comments in the code a learner reads."""
    root = Path(__file__).resolve().parents[1]
    marked = [f"{p.relative_to(root)} cell {i}" for folder in ("notebooks", "exercises", "solutions")
              for p in sorted((root / folder).glob("*.ipynb"))
              for i, cell in enumerate(nbformat.read(p, as_version=4).cells) if "NBVAL" in cell.source]
    assert not marked, f"test markers in learners' code: {marked}"


def _notebook_with_stored_output(path: Path, code: str, stored: str) -> Path:
    cell = nbformat.v4.new_code_cell(f"print({code!r})", metadata={"tags": ["nbval-check-output"]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored + "\n")]
    cell.execution_count = 1
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    return path


@pytest.mark.notebooks
def test_nbval_in_lax_mode_fails_only_on_output_the_sanitize_file_does_not_mask(tmp_path: Path) -> None:
    # Both notebooks ran before on another node with another job id; the second also counted GCDs differently.
    _notebook_with_stored_output(tmp_path / "01_masked.ipynb", "Submitted batch job 7654321 on nid005002",
                                 "Submitted batch job 1234567 on nid005001")
    _notebook_with_stored_output(tmp_path / "02_changed.ipynb", "job 7654321 used 8 GCDs",
                                 "job 1234567 used 4 GCDs")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *NBVAL_ARGS,
                          "01_masked.ipynb", "02_changed.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout
    assert "FAILED 02_changed.ipynb::Cell 0" in run.stdout


def test_notebooks_put_run_folders_in_the_clones_runs_folder() -> None:
    """A kernel runs in notebooks/ (or exercises/, solutions/): a relative "runs" there would make a second runs
    folder beside the clone's. Every notebook asks lumikit for the one place (default_runs_dir)."""
    relative = re.compile(r"""Path\(["']runs["']\)|dir=["']runs["']|runs_dir=["']runs["']""")
    bad = [f"{p.relative_to(REPO)}:{i}: {line.strip()}"
           for folder in ("notebooks", "exercises", "solutions") for p in sorted((REPO / folder).glob("*.py"))
           for i, line in enumerate(p.read_text().splitlines(), 1) if relative.search(line)]
    assert not bad, "relative runs folders:\n" + "\n".join(bad)
