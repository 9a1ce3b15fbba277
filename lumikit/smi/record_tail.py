"""Follow a run's GPU record as it grows (:class:`RecordTail`), show sessions already read the same way
(:class:`StaticRecord`), list the runs that have one, and replay one (``lumikit smi watch --replay RUN``)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import LumikitError
from .model import Snapshot
from .parse import parse_smi
from .record_layout import GPU_DIR
from .record_layout import record_files as record_file_list
from .sessions import Frame, Session, read_session
from .sources.replay import ReplaySource


#: The most bytes one poll reads from one node's file (a record grows by ~2 kB per sample; a bigger jump is
#: read over the next polls, so a huge or hostile file never stalls a notebook).
MAX_POLL_BYTES = 8 << 20


def _natural(name: str) -> list[Any]:
    """Sort key putting ``nid5002`` before ``nid10001``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def record_folder(run: Any) -> Path:
    """The ``gpu/`` folder of a run (a :class:`lumikit.launch.Run`, a run folder path, or the ``gpu/`` folder)."""
    path = Path(getattr(run, "path", run))
    return path if path.name == GPU_DIR and not (path / GPU_DIR).is_dir() else path / GPU_DIR


def record_files(run: Any) -> dict[str, Path]:
    """``{node: file}`` of a run's GPU record (``gpu/<node>.jsonl``, see :func:`lumikit.record.record_files`),
    in node order; empty when the run has none."""
    found = {p.name[: -len(".jsonl")]: p for p in record_file_list(record_folder(run).parent)}
    return {n: found[n] for n in sorted(found, key=_natural)}


@dataclass
class _NodeTail:
    """What has been read of one node's file: where the next read starts, the header, frames and snapshots."""

    path: Path
    inode: int = -1
    offset: int = 0
    header: Any = None                              # SessionHeader once the first line is read
    frames: list[Frame] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    pending: int = 0                                # bytes of a last line not yet ended by a newline
    notes: list[str] = field(default_factory=list)
    broken: bool = False                            # not a lumikit session: read no further


class RecordTail:
    """Follow a run's GPU record: each :meth:`poll` reads only the bytes each ``gpu/<node>.jsonl`` gained since
    the last poll (no Slurm call, one ``stat`` per file when nothing changed) and parses only the new frames.

    A line not yet ended (a writer mid-line, or a job killed mid-write) waits for its newline; a damaged line in
    the middle is skipped and noted (a live view keeps going). ``snapshots(node)`` carry epoch timestamps
    (``header.started + t``) when the header has ``started``, else seconds since the start.
    """

    def __init__(self, run: Any, *, parse: bool = True) -> None:
        self.parse = parse  # False: headers and frames only (a listing), no snapshot parsed
        self.folder = record_folder(run)
        self.run_path = self.folder.parent
        self.title = f"run {self.run_path.name}"
        self._tails: dict[str, _NodeTail] = {}

    @property
    def nodes(self) -> list[str]:
        return list(self._tails)

    def poll(self) -> int:
        """Read what the record gained; returns the number of new frames over all nodes."""
        new = 0
        for node, path in record_files(self.folder).items():
            tail = self._tails.get(node)
            if tail is None:
                tail = self._tails[node] = _NodeTail(path)
            tail.path = path
            new += self._read(node, tail)
        if len(self._tails) > 1:
            self._tails = {n: self._tails[n] for n in sorted(self._tails, key=_natural)}
        return new

    def _read(self, node: str, tail: _NodeTail) -> int:
        import stat as stat_mod

        from .sessions import _frame, _header

        if tail.broken:
            return 0
        try:
            st = tail.path.stat()
        except FileNotFoundError:  # removed between listing and stat
            return 0
        if not stat_mod.S_ISREG(st.st_mode):
            tail.broken = True
            tail.notes.append(f"{tail.path}: not a regular file (a FIFO or device?); not read")
            return 0
        if st.st_ino != tail.inode or st.st_size < tail.offset:  # a new file (or one cut shorter): start over
            if tail.inode != -1:
                tail.notes.append(f"{tail.path}: replaced or cut shorter; read again from its start")
            tail.inode, tail.offset, tail.header = st.st_ino, 0, None
            tail.frames, tail.snapshots = [], []
        if st.st_size == tail.offset:
            return 0
        with tail.path.open("rb") as fh:
            fh.seek(tail.offset)
            data = fh.read(min(st.st_size - tail.offset, MAX_POLL_BYTES))
        end = data.rfind(b"\n")
        if end < 0:
            tail.pending = len(data)
            return 0
        tail.pending = len(data) - end - 1
        start_line = tail.offset
        tail.offset += end + 1
        added = 0
        for raw in data[: end + 1].split(b"\n")[:-1]:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            if tail.header is None:
                try:
                    head = json.loads(line)
                    tail.header = _header(head, tail.path, line)
                except (ValueError, RecursionError, LumikitError) as exc:
                    tail.broken = True
                    tail.notes.append(f"{tail.path}: {exc if isinstance(exc, LumikitError) else 'no JSON header'}; "
                                      "not a GPU record file")
                    return added
                continue
            frame = _frame(line)
            if frame is None:
                tail.notes.append(f"{tail.path}: a damaged line near byte {start_line} skipped ({len(line)} chars)")
                continue
            tail.frames.append(frame)
            added += 1
            if not self.parse:
                continue
            base = tail.header.started
            try:
                snap = parse_smi(frame.stdout, source=f"{node} frame {len(tail.frames) - 1}",
                                 site=tail.header.site)
            except LumikitError:
                continue  # a failed tool call (e.g. exit status 2, nothing printed): a gap in the pictures
            tail.snapshots.append(snap.with_timestamp(frame.t + base if base is not None else frame.t))
        return added

    def header(self, node: str) -> Any:
        """The node's :class:`~lumikit.smi.sessions.SessionHeader` (None before its first line is read)."""
        return self._tails[node].header

    def frames(self, node: str) -> list[Frame]:
        return self._tails[node].frames

    def snapshots(self, node: str) -> list[Snapshot]:
        """The node's parsed samples so far (frames whose tool call failed leave a gap)."""
        return self._tails[node].snapshots

    def notes(self) -> list[str]:
        """What reading had to skip, and a last line still waiting for its end."""
        out = [n for t in self._tails.values() for n in t.notes]
        out += [f"{t.path}: its last {t.pending} bytes are a line not yet ended (a writer mid-line or a killed "
                "job); the complete samples before it are shown" for t in self._tails.values() if t.pending]
        return out

    def sessions(self) -> dict[str, Session]:
        """``{node: Session}`` of what has been read (the same type every session reader returns)."""
        return {n: Session(header=t.header, frames=list(t.frames), notes=list(t.notes))
                for n, t in self._tails.items() if t.header is not None}

    def kinds(self) -> dict[str, str]:
        """``{node: kind}``: generated, recorded, or absent (no SMI tool existed on that node)."""
        return {n: t.header.kind for n, t in self._tails.items() if t.header is not None}

    def run_state(self) -> str | None:
        """The run's state from its manifest (None when unreadable): a final state means the record is complete."""
        try:
            data = json.loads((self.run_path / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        state = data.get("state") if isinstance(data, dict) else None
        return state if isinstance(state, str) else None


class StaticRecord:
    """Sessions already read (``{node: Session}``: an Omnistat export, a packed reference run) behind the same
    interface as :class:`RecordTail`, so the record dashboard shows them like a finished run's record."""

    def __init__(self, sessions: Mapping[str, Session], *, name: str = "sessions",
                 folder: str | os.PathLike[str] = ".") -> None:
        self._sessions = {n: sessions[n] for n in sorted(sessions, key=_natural)}
        self._snaps: dict[str, list[Snapshot]] = {}
        self.folder = Path(folder)
        self.run_path = Path(name)
        self.title = name
        self._read = False

    @property
    def nodes(self) -> list[str]:
        return list(self._sessions) if self._read else []

    def poll(self) -> int:
        if self._read:
            return 0
        self._read = True
        for node, sess in self._sessions.items():
            base = sess.header.started
            self._snaps[node] = [s.with_timestamp((s.timestamp or 0.0) + base if base is not None else s.timestamp)
                                 for s in sess.snapshots()]
        return sum(len(s.frames) for s in self._sessions.values())

    def header(self, node: str) -> Any:
        return self._sessions[node].header

    def frames(self, node: str) -> list[Frame]:
        return self._sessions[node].frames

    def snapshots(self, node: str) -> list[Snapshot]:
        return self._snaps.get(node, [])

    def notes(self) -> list[str]:
        return [n for s in self._sessions.values() for n in s.notes]

    def sessions(self) -> dict[str, Session]:
        return dict(self._sessions)

    def kinds(self) -> dict[str, str]:
        return {n: s.header.kind for n, s in self._sessions.items()} if self._read else {}

    def run_state(self) -> str | None:
        return None  # not a launched run: nothing to follow


def record_replay_sources(run: Any, *, speed: float | None = None) -> list[ReplaySource]:
    """One :class:`ReplaySource` per node of a run's GPU record (nodes with samples), for ``smi watch --replay``."""
    sources = []
    for node, path in record_files(run).items():
        sess = read_session(path)
        if sess.frames:
            sources.append(ReplaySource(path, speed=speed))
    if not sources:
        raise LumikitError(f"{Path(getattr(run, 'path', run))}: no GPU record with samples (no gpu/<node>.jsonl, or "
                           "only headers: the nodes had no SMI tool); launch with the record on (the default for "
                           "jobs with GPUs) or replay a shipped session: `lumikit smi sessions`")
    return sources


def is_run_record(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a run folder (or its ``gpu/`` folder) holding a GPU record."""
    p = Path(path)
    return p.is_dir() and bool(record_files(p))


def default_runs_dir() -> Path:
    """Where ``lumikit run`` puts run folders: ``$LUMIKIT_RUNS_DIR``, else ``runs/`` of the current folder (the
    clone, where the workbook's notebooks and CLI run)."""
    return Path(os.environ.get("LUMIKIT_RUNS_DIR") or "runs")


def record_listing(runs_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One row per run folder under ``runs_dir`` that holds a GPU record: run, nodes, kind (generated /
    recorded / absent), samples per node, first sample time (epoch or None) and source."""
    base = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    for folder in folders:
        if not record_files(folder):
            continue
        tail = RecordTail(folder, parse=False)
        while tail.poll():
            pass
        headers = {n: tail.header(n) for n in tail.nodes if tail.header(n) is not None}
        starts = [h.started for h in headers.values() if h.started is not None]
        rows.append({"run": folder.name, "path": str(folder), "nodes": list(headers),
                     "kind": "/".join(sorted({h.kind for h in headers.values()})) or "unreadable",
                     "samples": {n: len(tail.frames(n)) for n in headers},
                     "started": min(starts) if starts else None,
                     "source": "; ".join(sorted({h.source for h in headers.values() if h.source})) or "-",
                     "notes": tail.notes()})
    return rows


__all__ = ["MAX_POLL_BYTES", "RecordTail", "StaticRecord", "default_runs_dir", "is_run_record", "record_files",
           "record_folder", "record_listing", "record_replay_sources"]
