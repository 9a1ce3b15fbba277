"""Hand-made bad inputs for every reader command: what ``lumikit <reader> BADFILE`` says about each.

Used by ``tests/test_bad_inputs.py`` (every row must exit 2 with one line that names the input) and by
``benchmarks/bad_inputs_table.py`` (the table of messages for the notes).
"""
from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from .fuzz import run_cli

#: The hostile files every reader must refuse at once with one line (issue 31): what :func:`write_hostile` makes.
HOSTILE_KINDS = ("FIFO", "/dev/zero", "3 GB sparse", "100,000 nested brackets")
NESTED = b"[" * 100_000 + b"]" * 100_000


def write_hostile(kind: str, path: Path, nested: bytes = NESTED) -> None:
    """Put one of :data:`HOSTILE_KINDS` at ``path``: a FIFO nobody writes to, a link to /dev/zero, a 3 GB sparse file
    (holes: nothing on disk) or ``nested`` (by default 100,000 brackets deep)."""
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "3 GB sparse":
        with open(path, "wb") as fh:
            fh.truncate(3 << 30)
    elif kind == "100,000 nested brackets":
        path.write_bytes(nested)
    else:
        raise ValueError(f"unknown hostile kind {kind!r}; one of {', '.join(HOSTILE_KINDS)}")


#: The reader commands: (name in the table, argv before the file, argv after it).
READERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("smi parse", ("smi", "parse"), ()),
    ("smi watch --replay", ("smi", "watch", "--count", "1", "--interval", "0.01", "--replay"), ()),
    ("trace summary", ("trace", "summary"), ()),
    ("trace slice", ("trace", "slice"), ("--start-us", "0", "--end-us", "1e18", "-o", "{tmp}/out.json.gz")),
    ("rocprof stats", ("rocprof", "stats"), ()),
    ("logs progress", ("logs", "progress"), ()),
    ("logs hip", ("logs", "hip"), ()),
    ("logs rccl", ("logs", "rccl"), ()),
    ("logs rccl-tests", ("logs", "rccl-tests"), ()),
    ("doctor", ("doctor",), ()),
)

_TRACE = (b'{"schemaVersion": 1, "traceEvents": [\n{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, '
          b'"ts": 10, "dur": 5, "args": {"stream": 0}},\n{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, '
          b'"tid": 0, "ts": 20, "dur": 5, "args": {"stream": 0}}\n]}\n')


def _bad_files(folder: Path) -> dict[str, Path]:
    """Bad inputs of every kind, written under ``folder``: {what it is: path}."""
    files = {
        "missing file": folder / "no-such-file.json",
        "a folder": folder / "a-folder",
        "empty file": folder / "empty.json",
        "binary garbage": folder / "garbage.json",
        "corrupt gzip": folder / "corrupt.json.gz",
        "invalid UTF-8 in the last event": folder / "bad-utf8.pt.trace.json",
        "trace cut in the middle": folder / "cut.pt.trace.json",
        "a Chrome trace": folder / "chrome.pt.trace.json",
        "torn recording, damaged inside": folder / "recording.jsonl",
        "26-digit call count": folder / "huge_kernel_stats.csv",
        "a FIFO nobody writes to": folder / "pipe.out",
        "/dev/zero": Path("/dev/zero"),
        "a 2 GB sparse file": folder / "sparse_kernel_stats.csv",
    }
    if not files["a FIFO nobody writes to"].exists():
        os.mkfifo(files["a FIFO nobody writes to"])
    with open(files["a 2 GB sparse file"], "wb") as fh:
        fh.truncate(2 << 30)  # holes: nothing on disk
    files["a folder"].mkdir(exist_ok=True)
    (files["a folder"] / "ignored.bin").write_bytes(b"\0" * 64)
    files["empty file"].write_bytes(b"")
    files["binary garbage"].write_bytes(bytes(range(256)) * 64)
    good = gzip.compress(_TRACE * 50, mtime=0)
    files["corrupt gzip"].write_bytes(good[:40] + bytes(b ^ 0x5A for b in good[40:80]) + good[80:])
    files["invalid UTF-8 in the last event"].write_bytes(_TRACE.replace(b'"k2"', b'"k\xff\xfe2"'))
    files["trace cut in the middle"].write_bytes(_TRACE[:len(_TRACE) // 2])
    files["a Chrome trace"].write_bytes(_TRACE)
    files["torn recording, damaged inside"].write_text(
        '{"format": "lumikit-smi-session", "name": "r", "interval_s": 1}\n'
        '{"t": 0, "exit_status": 0, "stdout": "GPU[0] : Temperature (Sensor edge) (C): 40.0\\n"}\n'
        '{"t": 1, "exit_sta\n'
        '{"t": 2, "exit_status": 0, "stdout": "GPU[0] : Temperature (Sensor edge) (C): 41.0\\n"}\n')
    files["26-digit call count"].write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
                                           '"gemm",99999999999999999999999999,5000,500,100.0\n')
    return files


#: Which bad inputs each reader is given (a reader is not given what it reads correctly: a Chrome trace is good
#: input for ``trace summary``; a log reader reads any text). Every reader is given the hostile files too.
HOSTILE = ("a FIFO nobody writes to", "/dev/zero", "a 2 GB sparse file")
_GIVEN = {
    "smi parse": ("missing file", "a folder", "empty file", "binary garbage", "a Chrome trace"),
    "smi watch --replay": ("missing file", "binary garbage", "torn recording, damaged inside"),
    "trace summary": ("missing file", "empty file", "binary garbage", "corrupt gzip",
                      "invalid UTF-8 in the last event", "trace cut in the middle"),
    "trace slice": ("missing file", "corrupt gzip", "trace cut in the middle"),
    "rocprof stats": ("missing file", "a folder", "empty file", "binary garbage", "a Chrome trace",
                      "26-digit call count"),
    "logs progress": ("missing file", "a folder", "binary garbage", "corrupt gzip"),
    "logs hip": ("missing file", "a folder", "binary garbage"),
    "logs rccl": ("missing file", "a folder", "binary garbage"),
    "logs rccl-tests": ("missing file", "a folder", "empty file", "binary garbage", "corrupt gzip", "a Chrome trace",
                        "26-digit call count"),
    "doctor": ("missing file", "binary garbage", "corrupt gzip"),
}


@dataclass(frozen=True)
class BadInputRow:
    """One command on one bad input: its exit status and what it printed on stderr."""

    command: str
    input: str
    status: int
    stderr: str


def bad_input_rows(folder: Path) -> list[BadInputRow]:
    """Run every reader command on its bad inputs (files written under ``folder``)."""
    files = _bad_files(folder)
    rows = []
    for name, before, after in READERS:
        for what in _GIVEN[name] + HOSTILE:
            path = files[what]
            argv = [*before, str(path), *(a.replace("{tmp}", str(folder)) for a in after)]
            status, _, err = run_cli(argv)
            rows.append(BadInputRow(f"lumikit {name}", what, status, err.strip()))
    return rows
