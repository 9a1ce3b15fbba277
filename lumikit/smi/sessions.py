"""Sessions: a tool's raw output at each sample time, kept so that views and exercises work offline.

A session is either ``recorded`` (``lumikit smi record`` or a run's GPU record read a real tool) or ``generated``
(written by :mod:`lumikit.smi.synth`, as every session the workbook ships is, or printed by lumi-sim's stand-in
tool); its header says which (``kind``) and where it came from (``source``), and every view shows both. A run's
GPU record on a node without any SMI tool is a header alone with ``kind = "absent"`` and a description saying which
tools were looked for on which node (:mod:`lumikit.record`).

A session is a JSON-lines file (optionally gzip-compressed): a header object, then one object per sample with
``t`` (seconds since the session start), ``exit_status`` and ``stdout`` (the tool's output, byte for byte as it
printed it, in its real format); a reader ignores other fields (a run's record adds ``time`` and ``tool``). Keeping the raw text means that a better parser reads old sessions better.
A run's record written since ``record_format = "lumikit-readings-1"`` keeps the parsed numbers per GCD instead
(``{"t", "r", "x"}``, :mod:`lumikit.smi.readings`; the first sample keeps the raw output too, for provenance):
readers take both kinds of line.
The sessions the workbook ships live in ``lumikit/data/smi/``.
"""
from __future__ import annotations

import gzip
import io
import json
import math
import os
import warnings
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ..errors import LumikitError, ParseError
from ..files import gunzip_bounded, read_bytes, write_atomic
from .model import DEVICE_FIELDS, Snapshot
from .parse import parse_smi
from .readings import frame_text

if TYPE_CHECKING:
    import pandas as pd

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "smi"
SUFFIXES = (".jsonl.gz", ".jsonl")
MAGIC = "lumikit-smi-session"


@dataclass(frozen=True)
class SessionHeader:
    """What a session is: its name, a sentence on what it shows, whether it was recorded or generated (``kind``)
    and from where (``source``), and the command that produced it (recordings only)."""

    name: str
    description: str = ""
    command: tuple[str, ...] = ()
    interval_s: float = 1.0
    site: str = "lumi"
    started: float | None = None  # epoch seconds of t = 0 (None for generated sessions)
    kind: str = "unknown"         # "recorded" (a real tool was read), "generated" (lumikit.smi.synth, a stand-in
    #                               tool) or "absent" (a run's record where no SMI tool exists: no frames)
    source: str = ""              # the command or source it was recorded from, or the generator
    job_gpus: tuple[int, ...] = ()  # a run's record: the node's GPUs Slurm gave the job (physical numbers)
    job_gpus_from: str = ""       # the variable they came from (SLURM_STEP_GPUS, SLURM_JOB_GPUS...)
    record_format: str = ""       # a run's record: "lumikit-readings-1" where samples are stored as numbers

    @property
    def label(self) -> str:
        """``name (generated)`` or ``name (recorded)``: how views name the session."""
        return f"{self.name} ({self.kind})"


@dataclass(frozen=True)
class Frame:
    """One sample of a session: when, and what the tool printed."""

    t: float
    stdout: str
    exit_status: int | None = 0


@dataclass
class Session:
    header: SessionHeader
    frames: list[Frame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what reading the file had to drop (a torn last line)

    def snapshots(self) -> list[Snapshot]:
        """Every frame parsed, with ``timestamp`` = seconds since the session start."""
        src = self.header.label  # "name (generated)": pictures of these snapshots say so (smi.plots)
        out = []
        for i, fr in enumerate(self.frames):
            snap = parse_smi(fr.stdout, source=f"{src} frame {i}", site=self.header.site)
            out.append(snap.with_timestamp(fr.t))
        return out


def session_path(name_or_path: str | os.PathLike[str]) -> Path:
    """The file of a shipped session name, or the path itself."""
    p = Path(name_or_path)
    if p.suffix in (".gz", ".jsonl") or p.exists():
        if not p.exists():
            raise LumikitError(f"no session file {str(p)!r}; record one with `lumikit smi record`")
        return p
    for suffix in SUFFIXES:
        cand = DATA_DIR / f"{name_or_path}{suffix}"
        if cand.exists():
            return cand
    raise LumikitError(f"no session {str(name_or_path)!r}; shipped (generated) sessions: "
                       f"{', '.join(list_sessions()) or 'none'}; or give the path of a .jsonl(.gz) file")


def list_sessions() -> list[str]:
    """Names of the sessions the workbook ships (all generated: ``single-gcd-training``, ``ddp-8gcd-starved``...)."""
    names = set()
    for p in DATA_DIR.glob("*.jsonl*"):
        for suffix in SUFFIXES:
            if p.name.endswith(suffix):
                names.add(p.name[: -len(suffix)])
    return sorted(names)


def session_listing() -> list[dict[str, str]]:
    """One row per shipped session: name, kind (generated / recorded), samples, format, source, what it shows."""
    rows = []
    for name in list_sessions():
        sess = read_session(name)
        first = sess.snapshots()[0] if sess.frames else None
        rows.append({"name": name, "kind": sess.header.kind, "samples": str(len(sess.frames)),
                     "format": first.format if first else "-", "source": sess.header.source or "-",
                     "description": sess.header.description})
    return rows


#: The most a session file (or its decompressed gzip) may hold: the sample objects built from it take several
#: times its size.
SESSION_MAX_BYTES = 128 << 20


def _read_text(path: Path) -> str:
    """The text of a session file (gzip or plain); a broken file becomes a :class:`ParseError` naming it."""
    data = read_bytes(path, "a session file (.jsonl or .jsonl.gz)")
    try:
        if data[:2] == b"\x1f\x8b":
            # a day of a node's samples every 2 s is ~85 MB of JSON lines; real sessions shrink up to ~90x
            data = gunzip_bounded(data, str(path), limit=SESSION_MAX_BYTES, max_ratio=100)
        return data.decode("utf-8")
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise ParseError(f"not a readable gzip file ({exc}); record the session again or give the plain .jsonl",
                         source=str(path)) from None
    except UnicodeDecodeError as exc:
        line_no = data[:exc.start].count(b"\n") + 1
        raise ParseError(f"bytes that are not UTF-8 at offset {exc.start} (a session is UTF-8 JSON lines); "
                         f"the file is damaged: record it again", source=str(path), line_no=line_no) from None


def _header(head: object, path: Path, line: str) -> SessionHeader:
    if not isinstance(head, dict) or head.get("format") != MAGIC:
        raise ParseError(f"not a lumikit session (the header lacks format={MAGIC!r})", source=str(path),
                         line_no=1, line=line)
    try:
        header = SessionHeader(name=str(head.get("name", path.stem)),
                               description=str(head.get("description", "")),
                               command=tuple(str(c) for c in head.get("command", ())),
                               interval_s=float(head.get("interval_s", 1.0)), site=str(head.get("site", "lumi")),
                               started=None if head.get("started") is None else float(head["started"]),
                               kind=str(head.get("kind", "unknown")), source=str(head.get("source", "")),
                               job_gpus=tuple(int(g) for g in head.get("job_gpus") or ()),
                               job_gpus_from=str(head.get("job_gpus_from", "")),
                               record_format=str(head.get("record_format", "")))
    except (TypeError, ValueError, OverflowError):
        raise ParseError("a session header with a command that is not a list or a number field that is not a "
                         "number (interval_s, started)", source=str(path), line_no=1, line=line) from None
    if not (0 < header.interval_s < 1e7) or not (header.started is None or 0 <= header.started < 1e11):
        raise ParseError(f"a session header with interval_s {header.interval_s!r} and started {header.started!r} "
                         "(a positive interval and a time since 1970 expected); the header is damaged",
                         source=str(path), line_no=1, line=line)
    return header


def _frame(line: str) -> Frame | None:
    """A frame line, or None when it is neither ``{"t": number, "stdout": text, "exit_status": int or null}`` nor
    a run record's compact line ``{"t": number, "r": [[numbers per GCD], ...], "x": exit status}``
    (:mod:`lumikit.smi.readings`: its frame text is the readings as ``parse_smi`` reads them)."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return None
    compact = isinstance(rec.get("r"), list)
    if not compact and not isinstance(rec.get("stdout"), str):
        return None
    t, status = rec.get("t"), rec.get("x", 0) if compact else rec.get("exit_status")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None
    if status is not None and (isinstance(status, bool) or not isinstance(status, int)):
        return None
    return Frame(t=float(t), stdout=frame_text(rec) if compact else rec["stdout"], exit_status=status)


def read_session(name_or_path: str | os.PathLike[str]) -> Session:
    """The header and frames of a session (a shipped name or a path).

    A last line cut short (the recorder was killed mid-write) costs that line only: the complete frames are kept
    and ``session.notes`` says what was dropped. A damaged line anywhere else is a :class:`ParseError` naming it.
    """
    path = session_path(name_or_path)
    numbered_lines = [(no, ln) for no, ln in enumerate(_read_text(path).split("\n"), start=1) if ln.strip()]
    if not numbered_lines:
        raise ParseError("an empty session file", source=str(path))
    first = numbered_lines[0][1]
    try:
        head = json.loads(first)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"the first line is not a JSON header ({getattr(exc, 'msg', exc)})", source=str(path),
                         line_no=numbered_lines[0][0], line=first) from None
    header = _header(head, path, first)
    frames, notes = [], []
    for i, (no, ln) in enumerate(numbered_lines[1:], start=2):
        frame = _frame(ln)
        if frame is not None:
            frames.append(frame)
        elif i == len(numbered_lines):
            notes.append(f"{path}: line {no}, the last one, is cut short or damaged ({len(ln)} characters); "
                         f"kept the {len(frames)} complete frames before it")
        else:
            raise ParseError("a frame line that is not {'t': seconds, 'stdout': text, 'exit_status': int}; the "
                             "file is damaged in the middle: delete that line (or cut the file there) and read it "
                             "again", source=str(path), line_no=no, line=ln[:200])
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return Session(header=header, frames=frames, notes=notes)


def load_session(name_or_path: str | os.PathLike[str]) -> list[Snapshot]:
    """Every sample of a session as snapshots (``timestamp`` = seconds since its start)."""
    return read_session(name_or_path).snapshots()


def tidy(snapshots: Iterable[Snapshot]) -> pd.DataFrame:
    """One row per sample x device: ``time``, ``sample``, ``format`` and the device fields."""
    import pandas as pd  # here, not at the top: the job-side recorder and the stand-in tool import this module

    rows = []
    for i, snap in enumerate(snapshots):
        for d in snap.devices:
            rows.append((snap.timestamp, i, snap.format, *(getattr(d, f) for f in DEVICE_FIELDS)))
    return pd.DataFrame.from_records(rows, columns=["time", "sample", "format", *DEVICE_FIELDS])


def session_frame(name_or_path: str | os.PathLike[str]) -> pd.DataFrame:
    """:func:`tidy` of a session."""
    return tidy(load_session(name_or_path))


#: Header fields written only where set (a run's record): sessions without them keep their bytes.
RECORD_ONLY = ("job_gpus", "job_gpus_from", "record_format")


def header_dict(header: SessionHeader) -> dict:
    """The header as its JSON object (``format`` first; the record-only fields only where set)."""
    d = asdict(header)
    d["command"] = list(header.command)
    d["job_gpus"] = list(header.job_gpus)
    for key in RECORD_ONLY:
        if not d[key]:
            del d[key]
    return {"format": MAGIC, **d}


def _header_json(header: SessionHeader) -> str:
    return json.dumps(header_dict(header), sort_keys=True)


def _frame_json(fr: Frame) -> str:
    return json.dumps({"t": round(fr.t, 3), "exit_status": fr.exit_status, "stdout": fr.stdout}, sort_keys=True)


def session_bytes(session: Session, *, gzip_it: bool) -> bytes:
    """The file content of a session (gzip without a name or time in its header, so output is reproducible)."""
    text = "\n".join([_header_json(session.header), *(_frame_json(f) for f in session.frames)]) + "\n"
    raw = text.encode("utf-8")
    if not gzip_it:
        return raw
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    return buf.getvalue()


def write_session(session: Session, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write a whole session atomically (``.gz`` names are compressed); refuses to overwrite unless ``force``."""
    p = Path(path)
    if p.exists() and not force:
        raise LumikitError(f"{p} exists; choose another name or pass force=True (--force) to overwrite it")
    data = session_bytes(session, gzip_it=p.name.endswith(".gz"))
    return write_atomic(p, data)


class SessionWriter:
    """Write a session frame by frame as `lumikit smi record` reads it: into ``<path>.partial`` (flushed after
    every frame, so a killed recording keeps what it had), renamed to ``path`` on :meth:`close`. JSON lines only."""

    def __init__(self, path: str | os.PathLike[str], header: SessionHeader, *, force: bool = False) -> None:
        self.path = Path(path)
        if self.path.name.endswith(".gz"):
            raise LumikitError(f"{self.path}: a recording is written as plain .jsonl; drop the .gz")
        if self.path.exists() and not force:
            raise LumikitError(f"{self.path} exists; choose another name or pass --force to overwrite it")
        self.partial = self.path.with_name(self.path.name + ".partial")
        self._fh = self.partial.open("w", encoding="utf-8")
        self._fh.write(_header_json(header) + "\n")
        self._fh.flush()
        self.frames = 0

    def add(self, frame: Frame) -> None:
        self._fh.write(_frame_json(frame) + "\n")
        self._fh.flush()
        self.frames += 1

    def close(self) -> Path:
        self._fh.close()
        os.replace(self.partial, self.path)
        return self.path


def snapshots_at(snapshots: Sequence[Snapshot], t: float) -> list[Snapshot]:
    """The snapshots up to time ``t`` (what a live view would have seen at ``t``)."""
    return [s for s in snapshots if s.timestamp is None or s.timestamp <= t]
