"""Real outputs from LUMI and AMD GPUs that ship with the workbook, each with the source a lesson prints beside it.

The files live in ``lumikit/data/reference/``; ``SOURCES.toml`` there names each one's origin (repository, path,
lines, commit), date and licence. Lessons put them next to generated data so that a learner always sees what a
real machine printed::

    from lumikit import reference
    ref = reference.load("rocm-smi-8gcd-one-starved")
    print(ref.text); print(ref.source_line)
    snapshot = ref.parsed()          # through the same parser as live output

This module imports no wing at import time (the smi calibration reads it); :meth:`Reference.parsed` imports the
parser of its kind when called.
"""
from __future__ import annotations

import gzip
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import LumikitError

REFERENCE_DIR = Path(__file__).resolve().parent / "data" / "reference"
SOURCES_FILE = REFERENCE_DIR / "SOURCES.toml"
KINDS = ("rocm-smi", "rocm-smi-text", "amd-smi", "trace", "hip-log", "rccl-log", "squeue", "training-log", "rocprof")


@dataclass(frozen=True)
class Reference:
    """One real output: its file, what it shows, where it was taken and where it was published."""

    name: str
    file: str
    kind: str
    what: str
    machine: str
    repo: str
    path: str
    commit: str
    date: str
    licence: str
    lines: str = ""
    note: str = ""

    @property
    def file_path(self) -> Path:
        return REFERENCE_DIR / self.file

    @property
    def source_line(self) -> str:
        """One line naming the source, as lessons print it under the output."""
        word = "lines" if any(c in self.lines for c in "-,") else "line"
        where = f"{self.path}, {word} {self.lines}" if self.lines else self.path
        return (f"real output ({self.machine}) from {self.repo}, {where} @ {self.commit[:10]} "
                f"({self.date}, {self.licence})")

    @property
    def text(self) -> str:
        """The file's text (a ``.gz`` file is decompressed)."""
        raw = self.file_path.read_bytes()
        if self.file.endswith(".gz"):
            raw = gzip.decompress(raw)
        return raw.decode("utf-8", errors="replace")  # job logs may hold partial multi-byte progress bars

    def parsed(self) -> Any:
        """The output read by lumikit's own reader of its kind: a Snapshot (rocm-smi/amd-smi), a HIP table, an
        RCCL transport, a training progress table, a rocprof table or a Trace; ``text`` for the others."""
        src = f"{self.name} ({self.repo})"
        if self.kind in ("rocm-smi", "amd-smi"):
            from .smi.parse import parse_smi
            text = self.text
            if "\n 0: " in text or text.startswith("+ srun --label"):
                text = label_table(text, task=2)
            return parse_smi(text, source=src)
        if self.kind == "hip-log":
            from .logs.hip import parse_hip_log
            return parse_hip_log(self.text, source=src)
        if self.kind == "rccl-log":
            from .logs.rccl import parse_rccl
            return parse_rccl(self.text, source=src)
        if self.kind == "training-log":
            from .logs.progress import parse_progress
            return parse_progress(self.text, source=src)
        if self.kind == "rocprof":
            from .rocprof.stats import read_rocprof_stats
            return read_rocprof_stats(self.file_path)
        if self.kind == "trace":
            from .trace.loader import load_trace
            return load_trace(self.file_path)
        return self.text

    def show(self, *, max_lines: int | None = 30) -> str:
        """The output (at most ``max_lines`` lines) followed by its source line, ready to print."""
        lines = self.text.splitlines()
        body = lines if max_lines is None or len(lines) <= max_lines else [
            *lines[:max_lines], f"... ({len(lines) - max_lines} more lines in {self.file})"]
        return "\n".join([*body, f"-- {self.source_line}"])


def label_table(text: str, task: int) -> str:
    """The lines of one task from ``srun --label`` output, without their ``" N: "`` prefix."""
    prefix = f"{task:>2}:"
    out = [ln[len(prefix) + 1:] if ln.startswith(prefix + " ") else "" for ln in text.splitlines()
           if ln.startswith(prefix)]
    # `sort -s -n` keeps every task's lines together; one task's first table ends at its first "End of" line
    end = next((i for i, ln in enumerate(out) if "End of ROCm SMI Log" in ln), len(out) - 1)
    return "\n".join(out[: end + 1]) + "\n"


@lru_cache(maxsize=1)
def _sources() -> dict[str, Reference]:
    try:
        data = tomllib.loads(SOURCES_FILE.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LumikitError(f"cannot read the reference list {SOURCES_FILE}: {exc}; reinstall lumikit") from None
    refs = {}
    for name, entry in data.items():
        refs[name] = Reference(name=name, **{k: str(v) for k, v in entry.items()})
    return refs


def names(kind: str | None = None) -> list[str]:
    """The names of the shipped real outputs (of one ``kind`` if given: rocm-smi, trace, hip-log, ...)."""
    return [n for n, r in _sources().items() if kind is None or r.kind == kind]


def load(name: str) -> Reference:
    """The real output ``name`` (see :func:`names`)."""
    refs = _sources()
    if name not in refs:
        raise LumikitError(f"no reference output {name!r}; shipped ones: {', '.join(refs)}")
    return refs[name]


def catalogue() -> list[Reference]:
    """Every shipped real output, in the order of ``SOURCES.toml``."""
    return list(_sources().values())
