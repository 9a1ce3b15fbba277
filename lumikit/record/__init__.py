"""The GPU record of a launched run: what its GPUs did, kept in the run folder beside the logs.

- ``RUN/gpu/<node>.jsonl``: one session per node (:mod:`lumikit.smi.sessions` format; samples as numbers per GCD,
  :mod:`lumikit.smi.readings`), written by the job-side recorder (:mod:`lumikit.record.recorder`; ``kind``
  recorded / generated / absent), and ``<node>.jsonl.end``, how its recorder ended (stopped, disk full);
- ``RUN/gpu/recorder-node*.log``: what each node's recorder step printed (shown by the card of a missing record and
  by ``lumikit tail``);
- ``RUN/markers.jsonl``: one line per :func:`mark` call in user code;
- :func:`read_record` (node -> Session) and :func:`report_card` (a pure function of sessions or streamed record
  files, manifest and markers: :mod:`lumikit.record.card`, summed in one pass by :mod:`~lumikit.record.accumulate`
  with the one rule of :mod:`~lumikit.record.integrate`, MI250X packages by :mod:`~lumikit.record.packages`) read
  them; ``lumikit report RUN`` and ``run.report()`` show the card.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from ..errors import LumikitError
from ..files import load_json_bounded
from ..smi.record_layout import GPU_DIR, record_files
from ..smi.record_layout import run_folder as _run_dir
from ..smi.sessions import Session, read_session
from .recorder import RUN_DIR_ENV, node_name

MARKERS = "markers.jsonl"


def read_record(run_or_path: Any) -> dict[str, Session]:
    """Node -> :class:`~lumikit.smi.sessions.Session` of a run's GPU record (``{}`` when the run has none).

    ``run_or_path`` is a :class:`~lumikit.launch.Run`, its folder, or a single ``gpu/<node>.jsonl`` file. A torn
    last line (a killed job) is dropped and noted in ``session.notes``; a file that is not a session at all is a
    :class:`~lumikit.errors.ParseError` naming it.
    """
    p = Path(getattr(run_or_path, "path", run_or_path))
    if p.is_file():
        files = [p]
    else:
        if not p.is_dir():
            raise LumikitError(f"{p}: no such run folder; give a folder printed by `lumikit run`")
        files = record_files(p, not_regular=True)  # a FIFO there is refused by name, not skipped
    sessions = []
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the torn-line note stays in session.notes
            sessions.append(read_session(f))
    # a node sampled twice (a requeued job): the first file keeps the node's name, the next is "node#2"
    sessions.sort(key=lambda s: (s.header.name, s.header.started or 0.0))
    out: dict[str, Session] = {}
    for sess in sessions:
        name = sess.header.name
        key, n = name, 1
        while key in out:
            n += 1
            key = f"{name}#{n}"
        out[key] = sess
    return out


def mark(name: str, *, run_dir: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """Write a marker (``{"time", "name", "rank", "node"}``) into the run folder's ``markers.jsonl``, so the report
    card gives energy and mean power per phase. Outside a launched run (no ``$LUMIKIT_RUN_DIR``) it does
    nothing and returns None; inside, it returns the marker written.

    >>> import lumikit
    >>> lumikit.mark("training")   # doctest: +SKIP
    """
    import time

    folder = run_dir or os.environ.get(RUN_DIR_ENV)
    if not folder:
        return None
    rank = os.environ.get("RANK") or os.environ.get("SLURM_PROCID")
    marker = {"time": round(time.time(), 3), "name": str(name), "rank": int(rank) if rank and rank.isdigit() else None,
              "node": node_name()}
    data = (json.dumps(marker, sort_keys=True) + "\n").encode()
    fd = os.open(Path(folder) / MARKERS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)  # one write on an O_APPEND file: ranks marking at once never interleave a line
    finally:
        os.close(fd)
    return marker


#: The most of a markers or metrics file read (far more than any run writes; a guard against the wrong file).
MAX_SIDE_FILE_BYTES = 64 * 2**20


def read_capped(path: Path, limit: int = MAX_SIDE_FILE_BYTES) -> str:
    """The text of a regular file, at most ``limit`` bytes of it ('' for a FIFO, a device or a missing file)."""
    try:
        if not path.is_file():
            return ""
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def read_markers(run_or_path: Any) -> list[dict[str, Any]]:
    """The run's markers in time order; damaged lines are skipped (a marker is a hint, never a reading): each line
    is bounded JSON (:func:`lumikit.files.load_json_bounded`) with a finite ``time`` and a string ``name``."""
    out = []
    for line in read_capped(_run_dir(run_or_path) / MARKERS).splitlines()[:100_000]:
        try:
            m = load_json_bounded(line, MARKERS, max_depth=4)
        except LumikitError:
            continue
        t = m.get("time") if isinstance(m, dict) else None
        finite = isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 1e12
        if finite and isinstance(m.get("name"), str):
            out.append({**m, "time": float(t), "name": m["name"][:200]})
    return sorted(out, key=lambda m: m["time"])


def report_card(*args: Any, **kwargs: Any) -> Any:
    """See :func:`lumikit.record.card.report_card`."""
    from .card import report_card as _card

    return _card(*args, **kwargs)


def card_of_run(run_or_path: Any) -> Any:
    """See :func:`lumikit.record.card.card_of_run` (a run folder's card: record, manifest, markers, steps)."""
    from .card import card_of_run as _of_run

    return _of_run(run_or_path)


__all__ = ["GPU_DIR", "MARKERS", "RUN_DIR_ENV", "card_of_run", "mark", "read_markers", "read_record", "record_files",
           "report_card"]
