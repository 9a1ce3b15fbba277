"""The replay source: a session (a shipped generated one, or one recorded with ``lumikit smi record``) read again."""
from __future__ import annotations

import os
import time

from ...errors import LumikitError
from ..model import Snapshot
from ..parse import parse_smi
from ..sessions import Frame, read_session
from .base import EndOfSource, Sample


class ReplaySource:
    """Replay a session (a shipped generated one, or one recorded with ``lumikit smi record``).

    ``speed=None`` gives the session's next frame on every read (deterministic, for tests and ``--count``);
    ``speed=k`` gives the frame at ``k`` times the elapsed wall time since the first read. ``loop``
    starts over at the end instead of ending.
    """

    how = "replay"
    paced = False

    def __init__(self, session: str | os.PathLike[str], *, speed: float | None = 1.0, loop: bool = False) -> None:
        sess = read_session(session)
        if not sess.frames:
            raise LumikitError(f"session {sess.header.name!r} has no frames to replay")
        self.session = sess
        self.name = f"replay:{sess.header.label}"
        # a run record may hold failed tool calls (nothing printed): those frames are passed over, and counted
        self.frames: list[Frame] = []
        self.snapshots: list[Snapshot] = []
        base = sess.header.started  # a run record: samples at their clock time (started + t)
        for i, fr in enumerate(sess.frames):
            try:
                snap = parse_smi(fr.stdout, source=f"{sess.header.label} frame {i}", site=sess.header.site)
            except LumikitError:
                continue
            self.frames.append(fr)
            self.snapshots.append(snap.with_timestamp(fr.t + base if base is not None else fr.t))
        self.skipped = len(sess.frames) - len(self.frames)
        if not self.frames:
            raise LumikitError(f"session {sess.header.name!r}: none of its {len(sess.frames)} frames is a reading "
                               "(every tool call failed?); nothing to replay")
        self.speed = speed
        self.loop = loop
        self._next = 0
        self._t0: float | None = None

    def _position(self) -> int:
        if self.speed is None:
            i = self._next
            self._next += 1
            return i
        now = time.monotonic()
        if self._t0 is None:
            self._t0 = now
        t = (now - self._t0) * self.speed
        span = self.frames[-1].t
        if t > span and self.loop and span > 0:
            t %= span
        elif t > span + max(self.session.header.interval_s, 1e-9):
            return len(self.snapshots)
        return max(0, max((i for i, f in enumerate(self.frames) if f.t <= t), default=0))

    def read(self) -> Sample:
        i = self._position()
        if i >= len(self.snapshots):
            if not self.loop:
                raise EndOfSource(self.name)
            i %= len(self.snapshots)
            self._next = i + 1
        frame: Frame = self.frames[i]
        return Sample(snapshot=self.snapshots[i], raw=frame.stdout, exit_status=frame.exit_status)

    def cancel(self) -> None:
        return None


__all__ = ["ReplaySource"]
