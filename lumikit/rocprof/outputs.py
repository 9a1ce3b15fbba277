"""Finding rocprof's outputs in a run folder, so that a learner never has to name the files.

rocprof v1 writes ``results.*`` (or ``<name>.*`` with ``-o <name>.csv``) beside the program; rocprofv3 writes
``<host>/<pid>/<pid>_kernel_stats.csv`` and friends, and since ROCm 7 by default ``<host>/<pid>/<pid>_results.db``
(rocpd, :mod:`.rocpd`) or, with ``--output-format pftrace``, ``<host>/<pid>_results.pftrace`` (:mod:`.pftrace`).
:func:`find_outputs` sorts what it finds by role and :func:`rocprof_kernels` turns a file or a folder into the one
ranked kernel table.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import open_regular, regular_file
from ..sniff import looks_like_sentence
from .stats import combine_stats, read_rocprof_stats, stats_from_durations, stats_kind
from .traces import is_rocprof_json, read_kernel_trace, read_rocprof_json


@dataclass(frozen=True)
class RocprofOutputs:
    """rocprof files found under one folder, by role (each tuple sorted by path)."""

    folder: Path
    kernel_stats: tuple[Path, ...] = ()
    copy_stats: tuple[Path, ...] = ()
    api_stats: tuple[Path, ...] = ()
    domain_stats: tuple[Path, ...] = ()
    kernel_traces: tuple[Path, ...] = ()
    json_traces: tuple[Path, ...] = ()
    perfetto_traces: tuple[Path, ...] = ()
    databases: tuple[Path, ...] = ()

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self) if f.name != "folder")

    def describe(self) -> str:
        """One line per role that has files, for a notebook or the command line."""
        lines = [f"rocprof outputs under {self.folder}:"]
        for f in fields(self):
            found = getattr(self, f.name)
            if f.name != "folder" and found:
                lines.append(f"  {f.name.replace('_', ' ')}: " + ", ".join(str(p.relative_to(self.folder))
                                                                       for p in found))
        if len(lines) == 1:
            lines.append("  none")
        return "\n".join(lines)


def _role(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".csv"):
        if name.endswith("kernel_trace.csv"):
            return "kernel_traces"
        if not (name.endswith("stats.csv")):
            return None
        kind = stats_kind(path)
        return {"kernel": "kernel_stats", "copy": "copy_stats", "domain": "domain_stats"}.get(kind, "api_stats")
    if name.endswith(".json"):
        from .rocprofv3_outputs import is_rocprofv3_json

        return "json_traces" if is_rocprof_json(path) or is_rocprofv3_json(path) else None
    if name.endswith(".pftrace"):
        return "perfetto_traces"
    if name.endswith((".db", ".rpd")) and ("results" in name or "rocpd" in name or name[0].isdigit()):
        return "databases"
    return None


def find_outputs(folder: str | os.PathLike[str]) -> RocprofOutputs:
    """Every rocprof output under ``folder`` (searched recursively, hidden folders skipped), sorted by role.

    Kernel statistics are v1 ``*.stats.csv`` and v3 ``*_kernel_stats.csv``; API statistics the HIP/HSA ones;
    JSON traces are recognised by their first bytes, so PyTorch profiler traces in the same folder are left
    for the trace readers.
    """
    root = Path(folder)
    if not root.is_dir():
        raise LumikitError(f"{root}: not a folder; give the run folder that holds the rocprof outputs")
    found: dict[str, list[Path]] = {f.name: [] for f in fields(RocprofOutputs) if f.name != "folder"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            role = _role(path)
            if role:
                found[role].append(path)
    return RocprofOutputs(folder=root, **{k: tuple(sorted(v)) for k, v in found.items()})


def activities(path: str | os.PathLike[str]):
    """Kernels, copies and API calls of a rocprofv3 database or Perfetto trace, or of a folder of them (the
    databases win when both are there): an :class:`~lumikit.rocprof.activities.Activities`."""
    from .pftrace import read_pftrace
    from .rocpd import read_rocpd

    p = Path(path)
    if p.is_dir():
        outputs = find_outputs(p)
        if outputs.databases:
            return read_rocpd(outputs.databases)
        if outputs.perfetto_traces:
            return read_pftrace(outputs.perfetto_traces)
        raise LumikitError(f"{p}: no rocprofv3 database (*_results.db) or Perfetto trace (*.pftrace) found")
    regular_file(p, "a rocprofv3 database (.db), a Perfetto trace (.pftrace) or a run folder")
    if p.name.lower().endswith(".pftrace"):
        return read_pftrace(p)
    if p.name.lower().endswith((".db", ".rpd", ".sqlite")):
        return read_rocpd(p)
    raise LumikitError(f"{p}: not a rocprofv3 database (.db) or Perfetto trace (.pftrace)")


def _kernels_from_file(path: Path) -> pd.DataFrame:
    name = path.name.lower()
    if name.endswith((".db", ".rpd", ".sqlite")):
        from .rocpd import rocpd_kernel_stats

        return rocpd_kernel_stats(path)  # added up inside SQLite: millions of dispatches never enter pandas
    if name.endswith(".pftrace"):
        return activities(path).kernel_stats()
    if name.endswith("kernel_trace.csv"):
        events = read_kernel_trace(path)
        table = stats_from_durations(events[["name", "duration_ns"]])
    elif name.endswith(".json") and not is_rocprof_json(path):
        from .rocprofv3_outputs import is_rocprofv3_json, json_kernel_table

        if not is_rocprofv3_json(path):
            with open_regular(path) as fh:
                head = fh.read(8192)
            raise ParseError("neither rocprofv3's JSON output (that starts with '{\"rocprofiler-sdk-tool\"') nor "
                             "rocprof v1's results.json (that starts with '{ \"traceEvents\":[{}')"
                             + looks_like_sentence(head, unless="results.json"), source=str(path))
        table = stats_from_durations(json_kernel_table(path))
        table.attrs.update(source=str(path), generation="v3 json", notes=[])
        return table
    elif name.endswith(".json"):
        if not is_rocprof_json(path):
            with open_regular(path) as fh:
                head = fh.read(8192)
            raise ParseError("not rocprof v1's results.json (that starts with '{ \"traceEvents\":[{}')"
                             + looks_like_sentence(head, unless="results.json"), source=str(path))
        events = read_rocprof_json(path)
        table = stats_from_durations(events.loc[events["kind"] == "kernel", ["name", "duration_ns"]])
    else:
        return read_rocprof_stats(path)
    table.attrs.update(source=str(path), generation="v3" if name.endswith(".csv") else "v1",
                       notes=[f"{path}: {note}" for note in events.attrs.get("notes", [])])
    return table


def rocprof_kernels(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The ranked kernel table of a rocprof file or of a run folder.

    A folder is searched with :func:`find_outputs`; the first role present wins: kernel statistics, else kernel
    traces, else v1 JSON traces, else rocpd databases, else Perfetto traces. Several files of that role (one per
    process or rank) are combined into one table (see :func:`~lumikit.rocprof.stats.combine_stats`).
    ``table.attrs["source"]`` names what was read.
    """
    p = Path(path)
    if p.is_dir():
        outputs = find_outputs(p)
        for role in ("kernel_stats", "kernel_traces", "json_traces"):
            files = getattr(outputs, role)
            if files:
                return combine_stats(_kernels_from_file(f) for f in files)
        if outputs.databases:
            from .rocpd import rocpd_kernel_stats

            return rocpd_kernel_stats(outputs.databases)
        if outputs.perfetto_traces:
            return activities(p).kernel_stats()
        raise LumikitError(f"{p}: no rocprof kernel outputs found (results.stats.csv, *_kernel_stats.csv, "
                           "*_kernel_trace.csv, results.json, *_results.db or *.pftrace); run with "
                           "`rocprof --hip-trace --stats` or `rocprofv3 --kernel-trace --stats`")
    if not p.exists():
        raise LumikitError(f"{p}: no such file or folder; give a rocprof output file or a run folder")
    regular_file(p, "a rocprof output file or a run folder")
    return _kernels_from_file(p)
