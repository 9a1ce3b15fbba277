"""The pm_counters source: HPE Cray's node energy counters (:mod:`lumikit.smi.pm_counters`) behind the one
source interface, so a recorder samples them like the GPUs (their values come in ``Sample.counters``)."""
from __future__ import annotations

import os
import time

from ..model import Snapshot
from ..pm_counters import VALUE_FILES, counters_dir, read_counters
from .base import Sample


def energies_of(counters: dict[str, float]) -> dict[str, float]:
    """The energy counters of a reading and its time and generation (what a record keeps between start and end)."""
    return {k: v for k, v in counters.items() if k in ("time", "generation") or
            (k in VALUE_FILES and k.endswith("energy"))}


class PmCountersSource:
    """Read ``/sys/cray/pm_counters`` (or ``$LUMIKIT_PM_COUNTERS``, or ``folder``) at each read: a few small files,
    no process. ``available`` is False where the node has no such folder; a read there gives empty counters."""

    how = "counters"
    paced = False

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = folder if folder is not None else counters_dir()
        self.name = f"pm_counters:{self.folder}" if self.folder is not None else "pm_counters (none on this node)"

    @property
    def available(self) -> bool:
        return self.folder is not None and os.path.isdir(self.folder)

    def read(self) -> Sample:
        counters = read_counters(self.folder) if self.folder is not None else {}
        return Sample(snapshot=Snapshot(devices=(), format="pm_counters", timestamp=time.time(), source=self.name),
                      counters=counters)

    def read_energies(self) -> dict[str, float]:
        """Only the energies (plus time and generation) of a read; ``{}`` without counters."""
        counters = self.read().counters or {}
        return energies_of(dict(counters))

    def cancel(self) -> None:
        return None


__all__ = ["PmCountersSource", "energies_of"]
