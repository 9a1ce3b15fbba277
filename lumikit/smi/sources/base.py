"""What every GPU source gives and how it is asked: :class:`Sample`, :class:`Source`, :class:`EndOfSource`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol

from ...errors import LaunchError
from ..model import Snapshot

#: The shortest interval a recorder samples at (a GPU's own counters update about this often; faster only costs).
MIN_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Sample:
    """What one read of a source gave: the snapshot, the raw text when the source printed one, the GPUs' energy
    counters in joules where the source has them (``{gpu: J}``), and pm_counters values for that source."""

    snapshot: Snapshot
    raw: str | None = None
    exit_status: int | None = None
    energies: Mapping[int, float] | None = None
    counters: Mapping[str, float] | None = None


class EndOfSource(Exception):
    """A finite source (a replay, a stream whose process ended) has nothing more to give."""


class UnreadOutput(LaunchError):
    """A tool printed something the parsers do not read: the output and exit status are kept for the record."""

    def __init__(self, message: str, raw: str, exit_status: int | None) -> None:
        super().__init__(message)
        self.raw = raw
        self.exit_status = exit_status


class Source(Protocol):
    """One way to read the GPUs: ``read()`` gives the next :class:`Sample` (raising :class:`EndOfSource` when a
    finite source is done), ``cancel()`` ends what it started. ``how`` is ``library``, ``stream``, ``per-call``,
    ``replay`` or ``counters``; a ``paced`` source waits for its own next reading (a stream), the others answer at
    once and the caller keeps the interval."""

    name: str
    how: str
    paced: bool

    def read(self) -> Sample: ...

    def cancel(self) -> None: ...


__all__ = ["EndOfSource", "MIN_INTERVAL_S", "Sample", "Source", "UnreadOutput"]
