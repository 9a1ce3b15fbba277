"""Files: writing without losing anything (atomic replace, no silent overwrite), and reading hostile input safely
(regular files only, refused at once otherwise; files read whole are bounded in size)."""
from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import LumikitError, ParseError


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


# -- reading: regular files only, of a bounded size ----------------------------------------------------------
#: Files read whole (logs, CSVs, tool outputs, Perfetto traces) above this many megabytes are refused: reading
#: one takes about twice its size in memory. ``LUMIKIT_MAX_READ_MB`` overrides it; streamed readers (Kineto
#: traces, rocpd databases) take any size.
DEFAULT_MAX_READ_MB = 512
MAX_READ_ENV = "LUMIKIT_MAX_READ_MB"

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def max_read_bytes() -> int:
    """The size above which files read whole are refused: ``LUMIKIT_MAX_READ_MB`` megabytes, else 512."""
    raw = os.environ.get(MAX_READ_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_READ_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        raise LumikitError(f"{MAX_READ_ENV}={raw!r}: write a number of megabytes, e.g. {MAX_READ_ENV}=2048") from None
    if not mb > 0:
        raise LumikitError(f"{MAX_READ_ENV}={raw!r}: write a positive number of megabytes")
    return int(min(mb, 2**40) * 2**20)


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB" if n >= 2**20 else f"{n:,} bytes"


def _refuse_kind(p: Path, mode: int, what: str) -> None:
    for test, kind in _KINDS:
        if test(mode):
            fix = f"give {what}" if kind == "a folder" else \
                f"lumikit reads saved files only (a pipe or a device could block or never end): give {what}"
            raise LumikitError(f"{p}: is {kind}, not a regular file; {fix}")
    if not stat.S_ISREG(mode):
        raise LumikitError(f"{p}: not a regular file; give {what}")


def _refuse_size(p: Path, size: int, limit: int) -> None:
    if size > limit:
        raise LumikitError(f"{p}: {_size(size)}, above the {_size(limit)} limit for files read whole; give a "
                           f"smaller file, or raise the limit with {MAX_READ_ENV}={max(2 * size >> 20, 1)} (reading "
                           f"needs about twice the file's size in memory)")


def regular_file(path: str | os.PathLike[str], what: str = "a file", *, limit: int | None = None) -> os.stat_result:
    """Stat ``path`` without opening it: a :class:`LumikitError` naming it and why unless it is a regular file
    (a FIFO would block a reader for ever, ``/dev/zero`` never ends) of at most ``limit`` bytes (None: any size)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise LumikitError(f"{p}: no such file; give {what}") from None
    except NotADirectoryError:
        raise LumikitError(f"{p}: no such file (a part of the path is a file, not a folder); give {what}") from None
    _refuse_kind(p, st.st_mode, what)
    if limit is not None:
        _refuse_size(p, st.st_size, limit)
    return st


def open_regular(path: str | os.PathLike[str], what: str = "a file", *, limit: int | None = None) -> BinaryIO:
    """Open a regular file for binary reading, refusing anything else at once (see :func:`regular_file`).

    The file is stat-ed before it is opened, then opened with ``O_NONBLOCK`` and fstat-ed, so a FIFO swapped in
    between the two never blocks the open; the returned file reads normally."""
    p = Path(path)
    regular_file(p, what, limit=limit)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        _refuse_kind(p, st.st_mode, what)
        if limit is not None:
            _refuse_size(p, st.st_size, limit)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], what: str = "a file", *, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (default :func:`max_read_bytes`), never read past
    the limit: a file that grows while it is read is refused too."""
    limit = max_read_bytes() if limit is None else limit
    with open_regular(path, what, limit=limit) as fh:
        data = fh.read(limit + 1)
    _refuse_size(Path(path), len(data), limit)
    return data


def read_text(path: str | os.PathLike[str], what: str = "a file", *, limit: int | None = None,
              errors: str = "replace") -> str:
    """The text of a regular file with :func:`read_bytes`'s checks, read as ``Path.read_text`` reads it: UTF-8
    (undecodable bytes become U+FFFD unless ``errors`` says otherwise), ``\r\n`` and a lone ``\r`` as ``\n``.
    Logs, whose ``\r`` matters (progress bars), use :func:`read_bytes`."""
    text = read_bytes(path, what, limit=limit).decode("utf-8", errors=errors)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def gunzip_bounded(data: bytes, source: str, *, limit: int | None = None) -> bytes:
    """Decompress gzip ``data`` to at most ``limit`` bytes (default :func:`max_read_bytes`): a small file that
    inflates to gigabytes is refused, not read. ``OSError``/``EOFError``/``zlib.error`` for damaged data."""
    limit = max_read_bytes() if limit is None else limit
    out = bytearray()
    rest = data
    while rest:  # one gzip member after another, as gzip.decompress reads them
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += unzip.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            raise LumikitError(f"{source}: decompresses to more than the {_size(limit)} limit for files read "
                               f"whole; raise it with {MAX_READ_ENV} if the file is genuine")
        if not unzip.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = unzip.unused_data.lstrip(b"\0")  # gzip allows zero padding after a member
    return bytes(out)


#: The deepest nesting :func:`loads_json_bounded` accepts by default (course records nest a handful of levels).
JSON_MAX_DEPTH = 64
#: A JSON string (skipped whole, brackets inside it do not count) or one bracket.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def loads_json_bounded(text: str, source: str, *, max_depth: int = JSON_MAX_DEPTH) -> object:
    """The value of JSON ``text``, refusing nesting deeper than ``max_depth`` before parsing (Python's parser and
    every reader of the result recurse, so a file of nested brackets would end in ``RecursionError``).

    Raises :class:`ParseError` naming ``source`` for text nested too deep or that is not JSON."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                raise ParseError(f"JSON nested more than {max_depth} levels deep at character {token.start():,}; "
                                 f"not a file lumikit writes", source=source)
        elif bracket in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ParseError(f"not valid JSON ({str(err)[:120]})", source=source) from None
