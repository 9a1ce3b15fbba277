"""Files: writing without losing anything (atomic replace, no silent overwrite), and reading hostile input safely
(regular files only, refused at once otherwise; files read whole are bounded in size)."""
from __future__ import annotations

import json
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from .errors import LumikitError, ParseError


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o077)  # elsewhere: set and restore at once (a thread creating a file meanwhile gets 077)
    os.umask(old)
    return old


@contextmanager
def atomic_path(path: str | os.PathLike[str], mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write (streaming writers, ``torch.save``); on success it is
    renamed into place, on any error removed, so readers never see half a file and nothing old is lost. The file
    gets ``mode`` whatever the umask (a run folder's files: see ``launch.runfolder.file_mode``; grades: 0600),
    else the mode a plain ``open`` would give it (0666 less the umask, so a project group keeps read access), not
    the temporary file's private 0600; secrets are written elsewhere, 0600 on purpose."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask() if mode is None else mode)
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], text: str | bytes, mode: int | None = None) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_path` (flushed to disk before the rename; ``mode``: the
    file's mode whatever the umask)."""
    data = text.encode() if isinstance(text, str) else text
    with atomic_path(path, mode) as tmp, open(tmp, "wb") as fh:
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
        if limit != max_read_bytes():  # a reader's own bound (a manifest, a dump): no setting raises it
            raise LumikitError(f"{p}: {_size(size)}, above the {_size(limit)} that this kind of file ever holds; "
                               "is it the right file?")
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


#: What a gzip file read whole may expand to, per compressed byte (real logs, sessions and traces shrink 5-25
#: times), above a floor for small files: the budget of :func:`gunzip_bounded` with ``max_ratio``.
GZIP_MIN_BYTES = 64 << 20
_GZIP_STEP = 1 << 20


def gunzip_bounded(data: bytes, source: str, *, limit: int | None = None, max_ratio: int | None = None) -> bytes:
    """Decompress gzip ``data`` to at most ``limit`` bytes (default :func:`max_read_bytes`), and with ``max_ratio``
    to at most that many times its compressed size (at least :data:`GZIP_MIN_BYTES`): a small file that inflates
    to gigabytes is refused after the budget, in 1 MB steps, never held whole. ``OSError``/``EOFError``/
    ``zlib.error`` for damaged data."""
    limit = max_read_bytes() if limit is None else limit
    if max_ratio is not None:
        limit = min(limit, max(GZIP_MIN_BYTES, max_ratio * len(data)))
    out = bytearray()
    rest = data
    while rest:  # one gzip member after another, as gzip.decompress reads them
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = rest
        while not unzip.eof:
            piece = unzip.decompress(pending, _GZIP_STEP)
            out += piece
            if len(out) > limit and max_ratio is None:
                raise LumikitError(f"{source}: decompresses to more than the {_size(limit)} limit for files read "
                                   f"whole; raise it with {MAX_READ_ENV} if the file is genuine")
            if len(out) > limit:
                raise LumikitError(f"{source}: decompresses to more than {_size(limit)} ({len(out) // len(data)}x "
                                   f"its {_size(len(data))}), more than this kind of file ever holds: a gzip bomb or "
                                   "the wrong file")
            pending = unzip.unconsumed_tail
            if not piece and not pending:
                break
        if not unzip.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = unzip.unused_data.lstrip(b"\0")  # gzip allows zero padding after a member
    return bytes(out)


# -- JSON from untrusted files: bounded depth, finite numbers of a sane size ------------------------------------
#: JSON nested deeper than this is refused: no file lumikit reads nests a tenth as deep, and deep nesting is what
#: blows the parser's stack or a later recursive walk.
DEFAULT_MAX_JSON_DEPTH = 100
#: Integers with more digits than this are refused: no count, time stamp or id a tool writes has more, and Python
#: refuses to print one of over 4,300 digits.
DEFAULT_MAX_JSON_INT_DIGITS = 40


class _JsonNumber(ValueError):
    """A number the bounded loader refuses (said in its message)."""


def _bounded_int(max_digits: int):  # noqa: ANN202 - json's parse_int hook
    def parse(text: str) -> int:
        if len(text.lstrip("-")) > max_digits:
            raise _JsonNumber(f"an integer of {len(text.lstrip('-')):,} digits (at most {max_digits} are read)")
        return int(text)
    return parse


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _JsonNumber(f"the number {text[:40]} is beyond a double's range (1.8e308)")
    return value


def _no_constant(name: str) -> None:
    raise _JsonNumber(f"{name} is not a JSON number")


def load_json_bounded(data: bytes | str, source: str, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH,
                      max_int_digits: int = DEFAULT_MAX_JSON_INT_DIGITS) -> Any:
    """Parse JSON from an untrusted file (read with :func:`read_bytes`): a :class:`ParseError` naming ``source``
    for invalid JSON, nesting deeper than ``max_depth``, ``NaN``/``Infinity``, numbers beyond a double's range and
    integers longer than ``max_int_digits``, so no caller meets a value it cannot print or compare."""
    try:
        value = json.loads(data, parse_int=_bounded_int(max_int_digits), parse_float=_finite_float,
                           parse_constant=_no_constant)
    except RecursionError:
        raise ParseError(f"JSON nested more than {max_depth} levels deep; no lumikit input nests so deep (a "
                         "damaged or hostile file?)", source=source) from None
    except _JsonNumber as exc:
        raise ParseError(f"{exc}; is this the right file?", source=source) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ParseError(f"not valid JSON ({str(exc)[:160]}); was it cut while being written?",
                         source=source) from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:  # iterative: a walk of a deep value must not recurse either
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > max_depth:
                raise ParseError(f"JSON nested more than {max_depth} levels deep; no lumikit input nests so deep (a "
                                 "damaged or hostile file?)", source=source)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return value
