"""Reading job logs as text: any bytes (logs mix encodings and cut UTF-8 mid-character), carriage returns kept."""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import LumikitError

#: Terminal control sequences (cursor up, colours) that tqdm and coloured loggers leave in logs.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def read_log_text(path: str | os.PathLike[str]) -> str:
    """The text of a log file; undecodable bytes become U+FFFD and ``\\r`` stays (tqdm's updates need it)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise LumikitError(f"{p}: no such file; give the path of a job log (for example slurm-<jobid>.out)") from None
    except IsADirectoryError:
        raise LumikitError(f"{p}: is a folder; give a log file inside it") from None
    return data.decode("utf-8", errors="replace")


def looks_binary(path: str | os.PathLike[str]) -> bool:
    """Whether a file is binary (a NUL byte in its first 8 KiB), so log readers can pass it by."""
    with open(path, "rb") as fh:
        return b"\0" in fh.read(8192)


def clean(segment: str) -> str:
    """A log segment without terminal control sequences and surrounding blanks."""
    return (ANSI.sub("", segment) if "\x1b" in segment else segment).strip()
