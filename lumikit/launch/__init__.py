"""Launching jobs: one protocol, three backends (slurm, local, dry-run), a run folder per launch.

>>> run = launch(spec(["python", "-c", "print(42)"]))   # doctest: +SKIP
>>> run.wait(); run.stdout()                               # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
import warnings

from ..config import config_path, load_config
from ..errors import LaunchError, SiteError
from ..jobs.render import resolve
from ..jobs.spec import JobSpec
from ..jobs.validate import advice, missing_account, validate
from ..record.recorder import DEFAULT_INTERVAL_S
from ..site import Site, load_site, site_of_record
from .backend import Backend, Run, WorkloadMetrics
from .dryrun import DryRunBackend
from .gpu_record import plan as record_plan
from .local import LocalBackend
from .runfolder import RunFolder
from .slurm import SlurmBackend
from .states import FINAL, STATES

BACKENDS = {"slurm": SlurmBackend, "local": LocalBackend, "dry-run": DryRunBackend}


def get_backend(name: str | None = None, site: Site | str | None = None) -> Backend:
    """The named backend, or the site's own (LUMI -> slurm, laptop -> local)."""
    s = load_site(site)
    name = name or os.environ.get("LUMIKIT_BACKEND_OVERRIDE") or s.backend
    try:
        return BACKENDS[name](s)
    except KeyError:
        raise LaunchError(f"unknown backend {name!r}; use one of: {', '.join(BACKENDS)}") from None


def launch(spec: JobSpec, site: Site | str | None = None, backend: str | None = None,
           runs_dir: str | os.PathLike[str] | None = None, *, gpu_record: bool = True,
           gpu_record_interval: float = DEFAULT_INTERVAL_S) -> Run:
    """Resolve (the user's config is read here, once), validate (once), create a run folder, submit; returns the
    :class:`Run` (call ``.wait()`` to follow it). A Slurm site that bills a project refuses a job without one;
    things that are allowed but probably not meant (``mem="16"`` is 16 MB) are warnings.

    A job that asks for GPUs records them into ``RUN/gpu/<node>.jsonl`` every ``gpu_record_interval`` seconds
    (:mod:`lumikit.record`; ``run.report()`` reads it); ``gpu_record=False`` turns that off."""
    b = get_backend(backend, site)
    spec = resolve(spec, b.site, load_config())
    validate(spec, b.site)
    if b.name == "slurm":
        lack = missing_account(spec, b.site, str(config_path()))
        if lack:
            raise lack
    for line in advice(spec, b.site):
        if "secret" not in line:  # secrets of a launch reach the job through its private file: nothing to do
            warnings.warn(line, UserWarning, stacklevel=2)
    record = record_plan(spec, gpu_record, gpu_record_interval)
    folder = RunFolder.create(spec.name, runs_dir)
    folder.update(gpu_record=record)
    b.submit(spec, folder)
    return Run(folder, b)


def open_run(path: str | os.PathLike[str]) -> Run:
    """A run from its folder (as printed by ``lumikit run``), with the backend that launched it."""
    folder = RunFolder.open(path)
    m = folder.read()
    return Run(folder, get_backend(m.get("backend"), run_site(folder, m)))


def run_site(folder: RunFolder, manifest: dict | None = None) -> Site:
    """The site of a run, as :func:`lumikit.site.site_of_record` allows it (a shipped profile, or the caller's
    own file outside the folder, said on stderr): a run folder never chooses Slurm's configuration or a command."""
    m = folder.read() if manifest is None else manifest
    try:
        site, note = site_of_record(m.get("site"), folder.path)
    except SiteError as exc:
        raise LaunchError(str(exc)) from None
    if note:
        print(note, file=sys.stderr, flush=True)
    return site


def mode_line(site: Site | str | None = None, backend: str | None = None) -> str:
    """The one visible line that says where cells run: site, backend, and what falls back."""
    b = get_backend(backend, site)
    if b.name == "slurm":
        return f"Mode: {b.site.name} - jobs go to Slurm ({b.site.description.split(':')[0]})"
    if b.name == "local":
        return (f"Mode: {b.site.name} - jobs run as local processes, not through Slurm (no container, no GPU); "
                "GPU views replay generated sessions, beside real LUMI outputs")
    return f"Mode: {b.site.name} - dry run: commands are printed and kept, nothing runs"


__all__ = ["BACKENDS", "FINAL", "STATES", "Backend", "DryRunBackend", "LocalBackend", "Run", "RunFolder", "WorkloadMetrics",
           "SlurmBackend", "get_backend", "launch", "mode_line", "open_run", "run_site"]
