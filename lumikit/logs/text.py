"""Reading job logs as text: any bytes (logs mix encodings and cut UTF-8 mid-character), carriage returns kept."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import LumikitError
from ..files import open_regular, read_bytes

#: Terminal control sequences (cursor up, colours) that tqdm and coloured loggers leave in logs.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def read_log_text(path: str | os.PathLike[str]) -> str:
    """The text of a log file; undecodable bytes become U+FFFD and ``\\r`` stays (tqdm's updates need it)."""
    p = Path(path)
    data = read_bytes(p, "the path of a job log (for example slurm-<jobid>.out)")
    head = data[:8192]
    if head[:2] == b"\x1f\x8b":
        raise LumikitError(f"{p}: gzip-compressed data, not a text log; gunzip it first (zcat {p.name} > log.txt)")
    if is_binary(head):
        raise LumikitError(f"{p}: binary data (control bytes), not a text log; give the job's .out/.err file")
    return data.decode("utf-8", errors="replace")


_CONTROL = bytes(set(range(32)) - {9, 10, 13, 27}) + b"\x7f"  # not in text (tab, newlines and ESC are)


def is_binary(head: bytes) -> bool:
    """Whether bytes are binary rather than a log: more than 10 % control bytes (a log padded with a few NULs by
    a crashed node, or coloured with escape codes, is still text)."""
    return len(head) > 0 and len(head) - len(head.translate(None, _CONTROL)) > len(head) // 10


def looks_binary(path: str | os.PathLike[str]) -> bool:
    """Whether a file is binary (a NUL byte in its first 8 KiB), so log readers can pass it by."""
    with open_regular(path, "a job log") as fh:
        return b"\0" in fh.read(8192)


def clean(segment: str) -> str:
    """A log segment without terminal control sequences and surrounding blanks."""
    return (ANSI.sub("", segment) if "\x1b" in segment else segment).strip()


#: Characters of one line that the pattern-based readers (doctor, RCCL, HIP) look at: the first and the last half.
#: Real messages are far shorter; a longer line is a progress bar or binary debris, and bounding it keeps every
#: reader linear whatever a job printed.
MAX_LINE_CHARS = 1 << 16


def bound_lines(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` with each line longer than ``limit`` cut to its first and last ``limit // 2`` characters (joined
    by " … "), so line numbers stay the same."""
    if len(text) <= limit or max(map(len, text.split("\n"))) <= limit:
        return text
    half = limit // 2
    return "\n".join(line if len(line) <= limit else f"{line[:half]} … {line[-half:]}" for line in text.split("\n"))
