"""Labels that cannot lie: generated material says "generated" where a learner meets it; "recorded" appears only
next to real recordings (the profiler recording the learner's own steps, `lumikit smi record`); "On LUMI this
prints" comes with a real output or says "expected"."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lumikit.smi import synth
from lumikit.smi.sessions import list_sessions, read_session

REPO = Path(__file__).resolve().parents[1]
SCANNED = sorted([*REPO.glob("notebooks/*.py"), *REPO.glob("solutions/*.py"), *REPO.glob("exercises/*.py"),
                  *(p for p in (REPO / "lumikit").rglob("*") if p.suffix in (".py", ".toml", ".md")),
                  REPO / "README.md"])
# what a real recording is: the profiler's recorded steps (the learner's own run), what rocprof recorded, lumikit's
# `smi record`, what a run folder's manifest recorded about its supervisor, the learner's own check answers and
# results recorded in their progress folder (and regraded from there), what a flight recorder or a rocpd database
# recorded of a real run, the job-side GPU recorder, the course's real recordings on an NVIDIA H100 (lumikit.reference,
# issue 32), or a sentence that names both kinds
REAL_RECORDING = re.compile(r"H100|real GPU|recorder|"
                            r"step|profiler|profiled|profiling|rocprof|smi record|supervisor|manifest|generated|kind|recorded from|"
                            r"recorded with|\(recorded\)|progress|recorded answers?|recorded (check )?results?|"
                            r"prediction recorded|results? recorded|answers? recorded|recorded as \"not checked|grading|"
                            r"flight.recorder|TORCH_FR|rocpd|class_records", re.IGNORECASE)
GENERATED_THINGS = re.compile(r"ddp-8gcd-starved|single-gcd-training|idle-node|rccl_debug_log|lumikit\.smi\.synth|"
                              r"trace\.synth|write_synthetic")
REAL_CLAIMS = re.compile(r"\brecorded\b|taken on LUMI|from a real|real job|real run", re.IGNORECASE)
LUMI_PRINTS = re.compile(r"on LUMI (this|it|the \w+) (prints|says|lists|shows)", re.IGNORECASE)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _where(path: Path, no: int) -> str:
    return f"{path.relative_to(REPO)}:{no}"


def test_the_scan_covers_the_course() -> None:
    names = {p.relative_to(REPO).as_posix() for p in SCANNED}
    assert "notebooks/04_watching_the_gpu.py" in names and "solutions/09_data_and_io.py" in names
    assert "exercises/04_watching_the_gpu.py" in names and "lumikit/smi/synth.py" in names


def test_recorded_appears_only_next_to_real_recordings() -> None:
    bad = []
    for path in SCANNED:
        lines = _lines(path)
        for i, line in enumerate(lines):
            if "recorded" not in line.lower():
                continue
            context = " ".join([path.name, *lines[max(0, i - 2): i + 1]])
            if not REAL_RECORDING.search(context):
                bad.append(f"{_where(path, i + 1)}: {line.strip()}")
    assert not bad, "'recorded' away from a real recording:\n" + "\n".join(bad)


def test_generated_material_is_never_called_real() -> None:
    bad = []
    for path in SCANNED:
        lines = _lines(path)
        for i, line in enumerate(lines):
            if not GENERATED_THINGS.search(line):
                continue
            context = " ".join(lines[max(0, i - 2): i + 3])
            if REAL_CLAIMS.search(context) and not re.search(r"generated|synthetic", context, re.IGNORECASE):
                bad.append(f"{_where(path, i + 1)}: {line.strip()}")
    assert not bad, "generated material next to a claim that it is real:\n" + "\n".join(bad)


def test_what_lumi_prints_is_shown_or_expected() -> None:
    bad = []
    for path in SCANNED:
        lines = _lines(path)
        for i, line in enumerate(lines):
            if LUMI_PRINTS.search(line):
                context = " ".join(lines[i: i + 3])
                if not re.search(r"expected|reference|real output", context, re.IGNORECASE):
                    bad.append(f"{_where(path, i + 1)}: {line.strip()}")
    assert not bad, "a claim of what LUMI prints without a real output or 'expected':\n" + "\n".join(bad)


@pytest.mark.parametrize("name", list_sessions())
def test_shipped_sessions_say_they_are_generated(name: str) -> None:
    header = read_session(name).header
    assert name in synth.PLANS, f"{name} ships without a generator: a recording needs a SOURCES entry"
    assert header.kind == "generated" and header.description.startswith("generated")
    assert not header.command, "a generated session must not carry a command (no invented job ids)"
    assert "jobid" not in header.source.lower() and "srun" not in header.source.lower()


def test_the_mode_line_says_generated() -> None:
    from lumikit.launch import mode_line
    line = mode_line("laptop", backend="local")
    assert "generated sessions" in line and "recorded" not in line
