"""Writing files without losing anything: atomic replace, and no silent overwrite."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LumikitError


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write (streaming writers, ``torch.save``); on success it is
    renamed into place, on any error removed, so readers never see half a file and nothing old is lost."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_path` (flushed to disk before the rename)."""
    data = text.encode() if isinstance(text, str) else text
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def write_new(path: str | os.PathLike[str], text: str | bytes, *, force: bool = False) -> Path:
    """Like :func:`write_atomic`, but refuse to replace an existing file unless ``force``."""
    p = Path(path)
    if p.exists() and not force:
        raise LumikitError(f"{p} already exists; choose another name or pass force=True (--force) to replace it")
    return write_atomic(p, text)
