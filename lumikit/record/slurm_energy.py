"""Slurm's own energy figure of a finished job (``sacct -o ConsumedEnergyRaw``), kept in the run's manifest.

LUMI's job-energy page: the node counters behind it make sense only for jobs that had whole nodes, so the card
shows it for those alone. A cluster without an energy plugin (lumi-sim) reports 0 or nothing: said, not shown as
0 J. Asked once per run (the answer is kept as ``consumed_energy`` in the manifest).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping

from ..errors import LumikitError
from ..launch.states import FINAL



def ask_sacct(job_id: str, timeout: float = 15.0) -> dict[str, Any]:
    """``{"joules": int, "from": ...}`` or ``{"joules": None, "why": ...}`` for one job."""
    if not shutil.which("sacct"):
        return {"joules": None, "why": "sacct is not on PATH here"}
    try:
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", str(job_id), "-o", "ConsumedEnergyRaw"],
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"joules": None, "why": f"sacct did not answer ({type(exc).__name__})"}
    word = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    if not word.isdigit() or int(word) == 0:
        return {"joules": None, "why": "Slurm has no energy figure for this job (no energy accounting plugin, or "
                                       "none kept)"}
    return {"joules": int(word), "from": f"sacct ConsumedEnergyRaw of job {job_id}"}


def consumed_energy(manifest: Mapping[str, Any], folder: Path) -> dict[str, Any] | None:
    """The manifest's ``consumed_energy``, asked of sacct once the Slurm job has ended (None before, or for a
    run that is not a Slurm job); the answer is written into the manifest."""
    kept = manifest.get("consumed_energy")
    if isinstance(kept, dict):
        return kept
    if manifest.get("backend") != "slurm" or not manifest.get("job_id") or manifest.get("state") not in FINAL:
        return None
    answer = ask_sacct(str(manifest["job_id"]))
    try:
        from ..launch.runfolder import RunFolder

        RunFolder(folder).update(consumed_energy=answer)
    except (LumikitError, OSError):  # a read-only copy of a run: the answer is still shown
        pass
    return answer


__all__ = ["ask_sacct", "consumed_energy"]
