"""Writing files without losing anything: atomic replace, and no silent overwrite."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import LumikitError


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write to a temporary file beside ``path`` and rename it into place (readers never see half a file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def write_new(path: str | os.PathLike[str], text: str | bytes, *, force: bool = False) -> Path:
    """Like :func:`write_atomic`, but refuse to replace an existing file unless ``force``."""
    p = Path(path)
    if p.exists() and not force:
        raise LumikitError(f"{p} already exists; choose another name or pass force=True (--force) to replace it")
    return write_atomic(p, text)
