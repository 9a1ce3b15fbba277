"""The dry-run backend: records in the run folder what would run, and runs nothing."""
from __future__ import annotations

import os

from ..jobs.render import render_sbatch, render_srun
from ..jobs.spec import JobSpec
from ..site import Site, load_site
from ..files import write_atomic
from .runfolder import RunFolder, base_manifest, file_mode, now_iso


class DryRunBackend:
    name = "dry-run"

    def __init__(self, site: Site | str | None = None) -> None:
        self.site = load_site(site)

    def submit(self, spec: JobSpec, folder: RunFolder) -> str:
        script = render_sbatch(spec, self.site, check=False)  # launch() has validated it
        write_atomic(folder.path / "job.sbatch", script, mode=file_mode())
        command = {"srun": render_srun(spec, self.site, check=False).text(), "script": script}
        manifest = base_manifest(spec, self.site, self.name, command, dict(os.environ))
        folder.update(**{**manifest, "job_id": "dry-run", "state": "COMPLETED", "exit_code": 0,
                         "start_time": now_iso(), "end_time": now_iso(), "note": "dry run: nothing was started"})
        return "dry-run"

    def status(self, folder: RunFolder) -> str:
        return folder.read().get("state", "COMPLETED")

    def cancel(self, folder: RunFolder) -> str:
        return f"{folder.path.name} is a dry run: nothing was started, so nothing is cancelled"

    def attach_command(self, folder: RunFolder, command: list[str]) -> list[str]:
        return list(command)
