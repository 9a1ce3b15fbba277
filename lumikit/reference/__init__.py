"""Real outputs from LUMI and AMD GPUs that ship with the workbook, each with the source a lesson prints beside it.

The files live in ``lumikit/data/reference/``; ``SOURCES.toml`` there names each one's origin (repository, path,
lines, commit), date and licence. Lessons put them next to generated data so that a learner always sees what a
real machine printed::

    from lumikit import reference
    ref = reference.load("rocm-smi-8gcd-one-starved")
    print(ref.text); print(ref.source_line)
    snapshot = ref.parsed()          # through the same parser as live output

A real run becomes course data with ``lumikit reference add RUN --source TEXT --licence TEXT`` (:func:`add_run`):
the run's GPU record (``gpu/<node>.jsonl``), its markers, its ``profile/`` folder (traces, rocprof output) and
its logs are copied into a folder of the reference data, with a ``SOURCES.toml`` entry of kind ``run-record``
naming machine, date, container, command and commit from the run's manifest; ``reference.load(name).parsed()``
reads the record back (node -> session).

This module imports no wing at import time (the smi calibration reads it); :meth:`Reference.parsed` imports the
parser of its kind when called.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import LumikitError
from ..files import gunzip_bounded, read_bytes, read_text

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "data" / "reference"
SOURCES_FILE = REFERENCE_DIR / "SOURCES.toml"
KINDS = ("rocm-smi", "rocm-smi-text", "amd-smi", "trace", "hip-log", "rccl-log", "squeue", "training-log", "rocprof",
         "run-record", "ladder", "inference", "benchmark")


@dataclass(frozen=True)
class Reference:
    """One real output: its file, what it shows, where it was taken and where it was published."""

    name: str
    file: str
    kind: str
    what: str
    machine: str
    commit: str
    date: str
    licence: str
    repo: str = ""
    path: str = ""
    lines: str = ""
    note: str = ""
    # a packed run (kind "run-record"): where it came from, as its manifest says, and who gave it
    container: str = ""
    command: str = ""
    source: str = ""
    record_kind: str = ""
    folder: Path = field(default=REFERENCE_DIR, compare=False, repr=False)

    @property
    def file_path(self) -> Path:
        return self.folder / self.file

    @property
    def source_line(self) -> str:
        """One line naming the source, as lessons print it under the output."""
        if self.kind == "run-record":
            return (f"{self.record_kind or 'recorded'} run ({self.machine}, {self.date}): `{self.command}` in "
                    f"{('container ' + self.container) if self.container else 'no container'}, lumikit commit "
                    f"{self.commit[:10]}; source: {self.source} ({self.licence})")
        if self.kind in ("ladder", "inference", "benchmark"):
            return (f"recorded ({self.machine}, {self.date}) by `{self.source}`, lumikit commit {self.commit[:10]} "
                    f"({self.licence})")
        word = "lines" if any(c in self.lines for c in "-,") else "line"
        where = f"{self.path}, {word} {self.lines}" if self.lines else self.path
        return (f"real output ({self.machine}) from {self.repo}, {where} @ {self.commit[:10]} "
                f"({self.date}, {self.licence})")

    @property
    def text(self) -> str:
        """The file's text (a ``.gz`` file is decompressed); for a packed run, the list of its files."""
        if self.file_path.is_dir():
            return "\n".join(str(p.relative_to(self.file_path)) for p in sorted(self.file_path.rglob("*"))
                             if p.is_file())
        raw = read_bytes(self.file_path, "a reference file")
        if self.file.endswith(".gz"):
            raw = gunzip_bounded(raw, str(self.file_path), max_ratio=100)
        return raw.decode("utf-8", errors="replace")  # job logs may hold partial multi-byte progress bars

    def parsed(self) -> Any:
        """The output read by lumikit's own reader of its kind: a Snapshot (rocm-smi/amd-smi), a HIP table, an
        RCCL transport, a training progress table, a rocprof table or a Trace; ``text`` for the others."""
        src = f"{self.name} ({self.repo or self.source})"
        if self.kind == "run-record":
            from ..record import read_record
            return read_record(self.file_path)
        if self.kind in ("rocm-smi", "amd-smi"):
            from ..smi.parse import parse_smi
            text = self.text
            if "\n 0: " in text or text.startswith("+ srun --label"):
                text = label_table(text, task=2)
            return parse_smi(text, source=src)
        if self.kind == "hip-log":
            from ..logs.hip import parse_hip_log
            return parse_hip_log(self.text, source=src)
        if self.kind == "rccl-log":
            from ..logs.rccl import parse_rccl
            return parse_rccl(self.text, source=src)
        if self.kind == "training-log":
            from ..logs.progress import parse_progress
            return parse_progress(self.text, source=src)
        if self.kind == "rocprof":
            from ..rocprof.stats import read_rocprof_stats
            return read_rocprof_stats(self.file_path)
        if self.kind == "trace":
            from ..trace.loader import load_trace
            return load_trace(self.file_path)
        if self.kind in ("ladder", "inference", "benchmark"):  # the JSON a lumikit benchmark wrote on that machine
            from ..files import load_json_bounded, read_bytes
            return load_json_bounded(read_bytes(self.file_path), str(self.file_path))
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


@lru_cache(maxsize=8)
def _sources(folder: Path = REFERENCE_DIR) -> dict[str, Reference]:
    sources_file = folder / "SOURCES.toml"
    try:
        data = tomllib.loads(read_text(sources_file, "the reference list (SOURCES.toml)", limit=16 << 20,
                                       errors="strict"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError, LumikitError) as exc:
        raise LumikitError(f"cannot read the reference list {sources_file}: {exc}; reinstall lumikit") from None
    refs = {}
    for name, entry in data.items():
        refs[name] = Reference(name=name, folder=folder, **{k: str(v) for k, v in entry.items()})
    return refs


def names(kind: str | None = None, *, folder: str | os.PathLike[str] = REFERENCE_DIR) -> list[str]:
    """The names of the shipped real outputs (of one ``kind`` if given: rocm-smi, trace, hip-log, ...)."""
    return [n for n, r in _sources(Path(folder)).items() if kind is None or r.kind == kind]


def load(name: str, *, folder: str | os.PathLike[str] = REFERENCE_DIR) -> Reference:
    """The real output ``name`` (see :func:`names`); ``folder`` is another reference folder (a test's)."""
    refs = _sources(Path(folder))
    if name not in refs:
        raise LumikitError(f"no reference output {name!r}; shipped ones: {', '.join(refs)}")
    return refs[name]


def catalogue(*, folder: str | os.PathLike[str] = REFERENCE_DIR) -> list[Reference]:
    """Every shipped real output, in the order of ``SOURCES.toml``."""
    return list(_sources(Path(folder)).values())


# ---- a real run becomes course data ---------------------------------------------------------------------------

#: Manifest fields a packed run keeps (never the environment: it names the user's paths and settings).
KEPT_MANIFEST = ("backend", "site", "state", "job_id", "nodes", "exit_code", "spec", "git_revision", "versions",
                 "submit_time", "start_time", "end_time", "elapsed_s", "billing_estimate", "billing_actual")
#: What of a run folder is packed beside its record: logs at the top, and the profile/ folder (traces, rocprof).
LOG_PATTERNS = ("*.out", "*.err", "supervisor.log")
#: Machines by site, for the entry's ``machine`` field (``--machine`` overrides).
MACHINES = {"lumi": "LUMI-G (MI250X)", "lumi-sim": "lumi-sim (a local Slurm cluster; generated stand-in GPUs)"}


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML ones; control characters become \\uXXXX)."""
    return json.dumps(value, ensure_ascii=False)


def entry_name(run_path: Path) -> str:
    """The default entry name of a run: ``run-`` and its folder name, as a bare TOML key."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", run_path.name).strip("-") or "run"
    return slug if slug.startswith("run-") else f"run-{slug}"


def add_run(run: Any, *, source: str, licence: str, name: str | None = None, machine: str | None = None,
            what: str | None = None, folder: str | os.PathLike[str] = REFERENCE_DIR,
            allow_generated: bool = False, redact: bool = False) -> Reference:
    """Pack a run's GPU record (with its markers, ``profile/`` folder and logs) into the reference ``folder`` and
    append its ``SOURCES.toml`` entry (machine, date, container, command, commit from the manifest). Refuses to
    overwrite an entry or folder of the same name, and a record that is not ``recorded`` from a real tool unless
    ``allow_generated`` (course data is real; a generated one stays labelled generated).

    Only regular files inside the run folder are copied: a link that leads out of it is named and refused, never
    followed (links inside it, FIFOs and devices are left out). Every file is scanned for the run's secrets and
    common token shapes (:mod:`lumikit.reference.pack`): a finding refuses the pack with its file and line, or
    with ``redact`` is replaced by ``<redacted>`` in the packed copy (the entry's note says how many)."""
    from ..files import write_atomic
    from ..launch.runfolder import RunFolder, secrets_dir
    from ..record import read_record
    from .pack import plan_pack, scan, secret_names

    run_path = Path(getattr(run, "path", run))
    ref_dir = Path(folder)
    if not source.strip() or not licence.strip():
        raise LumikitError("reference add needs --source (who ran it where, e.g. 'course 2026-05, J. Doe') and "
                           "--licence (e.g. 'CC BY 4.0')")
    if not os.path.lexists(run_path / "manifest.json"):
        raise LumikitError(f"{run_path}: not a run folder (no manifest.json); give a folder printed by "
                           "`lumikit run`")
    manifest = RunFolder(run_path).read()  # a damaged one is a LaunchError naming what is wrong
    plan = plan_pack(run_path, manifest, patterns=("markers.jsonl", *LOG_PATTERNS),
                     secrets_file=secrets_dir() / f"{run_path.name}.env", redact=redact)
    kept = {k: manifest[k] for k in KEPT_MANIFEST if k in manifest}
    kept_text, found = scan((json.dumps(kept, indent=2, sort_keys=True, default=str) + "\n").encode(),
                            "manifest.json", secret_names(manifest), {}, redact)
    (plan.redacted if redact else plan.findings).extend(found)
    refusal = plan.refusal(run_path)
    if refusal:
        raise LumikitError(refusal)
    record = read_record(run_path)
    if not record:
        raise LumikitError(f"{run_path}: no GPU record (gpu/<node>.jsonl); launch the run with its GPU record on "
                           "(the default for jobs with GPUs) and add it then")
    kinds = sorted({s.header.kind for s in record.values()})
    if kinds != ["recorded"] and not allow_generated:
        raise LumikitError(f"{run_path}: its GPU record is {'/'.join(kinds)}, not recorded from a real tool; "
                           "reference data is real output. Add a run recorded on a GPU machine, or pass "
                           "--allow-generated (the entry then says generated)")
    name = name or entry_name(run_path)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise LumikitError(f"reference name {name!r}: use letters, digits, '-' and '_' only")
    sources_file = ref_dir / "SOURCES.toml"
    existing = _sources.__wrapped__(ref_dir) if sources_file.exists() else {}
    target = ref_dir / name
    if name in existing or target.exists():
        where = f"an entry [{name}] in {sources_file}" if name in existing else f"a folder {target}"
        raise LumikitError(f"reference {name!r} exists ({where}); nothing was changed. Give another --name, or "
                           f"remove [{name}] from SOURCES.toml and its folder first if you mean to replace it")
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    command = spec.get("command") if isinstance(spec.get("command"), list) else []
    site = str(manifest.get("site") or "unknown site")
    nodes = list(record)
    date = str(manifest.get("start_time") or manifest.get("submit_time") or "")[:10] or "unknown date"
    record_kind = "/".join(kinds)
    redacted = (f"; {len(plan.redacted)} secret(s) replaced with {'<redacted>'} (--redact): "
                + ", ".join(f"{f.file}:{f.line}" for f in plan.redacted[:10])) if plan.redacted else ""
    fields = {
        "file": name, "kind": "run-record",
        "what": what or (f"{record_kind} GPU record of `{shlex.join(str(c) for c in command) or '?'}` on "
                         f"{len(nodes)} node(s) ({', '.join(nodes)}), "
                         f"{spec.get('gpus_per_node') or '?'} GPUs per node, partition {spec.get('partition') or '?'}"),
        "machine": machine or MACHINES.get(site, site), "date": date,
        "container": str(spec.get("container") or ""), "command": shlex.join(str(c) for c in command),
        "commit": str(manifest.get("git_revision") or "unknown"), "source": source.strip(),
        "licence": licence.strip(), "record_kind": record_kind,
        "note": f"packed by `lumikit reference add` from run {run_path.name} (job {manifest.get('job_id') or '-'})"
                + redacted,
    }
    staging = ref_dir / f".{name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "gpu").mkdir(parents=True)
        for rel, data in plan.files.items():  # written through write_atomic: the umask's mode, never the source's
            write_atomic(staging / rel, data)
        write_atomic(staging / "manifest.json", kept_text)
        block = f"\n[{name}]\n" + "".join(f"{k} = {_toml_string(v)}\n" for k, v in fields.items())
        old = read_text(sources_file, "the reference list (SOURCES.toml)", limit=16 << 20) \
            if os.path.lexists(sources_file) else ""
        tomllib.loads(old + block)  # the new SOURCES.toml must parse before anything moves into place
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        write_atomic(sources_file, old + block)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    _sources.cache_clear()
    return load(name, folder=ref_dir)
