"""Streaming reader of Chrome/Kineto trace files: header, ``traceEvents`` in parseable chunks, trailer.

Parsing a whole trace with one ``json.loads`` costs five to seven times the file size in memory. This reader
splits the ``traceEvents`` array at event boundaries into chunks of a few megabytes that can be parsed one at a
time (or in parallel), so memory stays flat whatever the file size. It also recognises truncated files (a job
killed mid-write) and, on request, keeps the complete events of such a file.
"""
from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

import orjson

from ..errors import TraceError
from ..files import open_regular
from ..sniff import looks_like_sentence

CHUNK_BYTES = 1 << 20
BLOCK_BYTES = 1 << 20
#: The first read of a file cut into byte ranges: a Kineto header takes a few kilobytes (a longer one is read on).
_HEAD_BYTES = 64 << 10
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# A boundary between two events: "}" "," "{" followed by a key that starts an event. A quote cannot appear
# unescaped inside a JSON string, so this never matches inside a kernel name such as "{lambda()#1}, {...}".
_BOUNDARY = re.compile(rb'\}\s*,\s*\{\s*"(?:ph|name|cat|pid|tid|ts|dur|args|id)"\s*:')
_MAX_END_TRIES = 64
#: The most bytes held at once in one piece: the part before the events, one event, the end of a file with no
#: event boundary. Real ones are kilobytes; a damaged or hostile file (a 2 GB run of zeros after "{") is refused
#: here instead of being read whole.
MAX_PIECE_BYTES = 64 << 20
#: A gzip trace is decompressed within a budget matched to what the loader builds from it: at most
#: :data:`GZIP_MAX_RATIO` times its compressed size (real Kineto traces shrink 9-22 times) and at most
#: :data:`GZIP_EVENTS_PER_BYTE` events per compressed byte (each event costs ~170 bytes of columns however small
#: its JSON: real traces hold ~0.03 per byte, a 1 MB gzip of 8 million identical tiny events 6.6), with floors
#: for small files. A gzip bomb is refused with one line before the columns grow.
GZIP_MAX_RATIO, GZIP_MIN_BYTES = 40, 64 << 20
GZIP_EVENTS_PER_BYTE, GZIP_MIN_EVENTS = 0.25, 1_000_000


class MalformedChunk(TraceError):
    """A piece of a trace did not parse: the file is damaged, or a chunk boundary fell inside an event's args
    (``load_trace`` then reads the file again with :attr:`TraceStream.careful`)."""


def salvage_hint(path: Path | str) -> str:
    """The sentence that tells a learner how to keep what a truncated trace still holds."""
    return (f"load it with salvage=True (command line: --salvage) to keep the complete events, "
            f"or re-run the profiled job to get a complete {Path(path).name}")


def open_bytes(path: Path) -> BinaryIO:
    """Open a trace file for binary reading, decompressing gzip transparently (detected by magic bytes)."""
    fh = open_regular(path, "a trace file (.json/.json.gz) or a run folder")  # streamed: any size
    magic = fh.read(2)
    fh.seek(0)
    if magic == b"\x1f\x8b":
        fh.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]  # owns (and closes) its file
    return fh


@dataclass(frozen=True)
class FileRange:
    """Bytes ``start:stop`` of an uncompressed trace file: a chunk of whole events for a worker to read."""

    path: Path
    start: int
    stop: int

    def read(self) -> bytes:
        """The chunk's bytes."""
        with open(self.path, "rb") as fh:
            return os.pread(fh.fileno(), self.stop - self.start, self.start)

    def read_array(self) -> memoryview:
        """The chunk as a JSON array (``[`` + its bytes + ``]``), read into this process's reusable buffer:
        valid until the next call. Allocating a fresh megabyte per chunk costs a worker ~50,000 page faults per
        100 MB (the allocator maps and unmaps each one); one buffer costs none after the first chunk."""
        global _READ_BUFFER
        n = self.stop - self.start
        if len(_READ_BUFFER) < n + 2:
            _READ_BUFFER = bytearray(n + 2 + (n >> 3))  # room for the slightly larger chunks that follow
        view = memoryview(_READ_BUFFER)
        with open(self.path, "rb") as fh:
            got = os.preadv(fh.fileno(), [view[1:n + 1]], self.start)
        if got != n:
            raise OSError(f"{self.path}: read {got} of {n} bytes at offset {self.start} (the file changed?)")
        view[0], view[n + 1] = ord("["), ord("]")
        return view[:n + 2]


_READ_BUFFER = bytearray()


@dataclass
class TraceStream:
    """One trace file read as a stream: ``chunks()`` yields array bodies (``b'{..},{..}'``), each parseable
    as ``orjson.loads(b"[" + chunk + b"]")``, and ``pieces()`` the same as byte ranges where the file allows;
    ``metadata`` holds the top-level keys other than ``traceEvents`` (complete once the iterator is exhausted);
    ``truncated`` tells whether events were salvaged."""

    path: Path
    salvage: bool = False
    chunk_bytes: int = CHUNK_BYTES
    metadata: dict = field(default_factory=dict)
    truncated: bool = False
    lost_bytes: int = 0  # bytes after the last complete event of a salvaged file
    damage: str = ""  # what stopped a salvaged read early (corrupt gzip data), when not a plain cut
    _read_bytes: int = 0  # decompressed bytes read so far
    _events_seen: int = 0  # events in the decompressed bytes so far (``"ph"`` keys: a cheap upper bound)
    #: Check each chunk before handing it on, and join one that does not parse alone to the next: the boundary
    #: pattern (``},{"name":``) also matches between objects inside an event's args, and a cut there splits the event.
    #: The loader reads a file this way only after a chunk failed (it costs a second parse).
    careful: bool = False

    def chunks(self) -> Iterator[bytes]:
        """The ``traceEvents`` array in chunks of whole events (about ``chunk_bytes`` each)."""
        with open_bytes(self.path) as fh:
            yield from self._chunks(fh)

    # -- internals -------------------------------------------------------------------------------------
    def _read(self, fh: BinaryIO, size: int = BLOCK_BYTES) -> tuple[bytes, bool]:
        try:
            block = fh.read(size)
        except EOFError:  # gzip stream cut short
            return b"", True
        except (OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            good = _gzip_prefix(self.path) if isinstance(fh, gzip.GzipFile) else b""
            where = f" after {len(good):,} readable bytes" if isinstance(fh, gzip.GzipFile) else ""
            if self.salvage and isinstance(fh, gzip.GzipFile):
                self.damage = f"corrupt gzip data{where} ({exc})"
                rest = good[self._read_bytes:]
                self._read_bytes += len(rest)
                return rest, True  # keep what came before the damage, as for a cut file
            raise TraceError(f"{self.path}: corrupt compressed data{where} ({exc}): the file is damaged, not just "
                             f"cut; salvage=True (command line: --salvage) keeps the events before the damage, "
                             f"or copy the trace again") from None
        self._read_bytes += len(block)
        if isinstance(fh, gzip.GzipFile):
            self._events_seen += block.count(b'"ph"')
            self._within_gzip_budget()
        return block, not block

    def _within_gzip_budget(self) -> None:
        """Refuse a gzip trace past its budget (see :data:`GZIP_MAX_RATIO`) before the loader builds more."""
        packed = max(1, os.path.getsize(self.path))
        most_bytes = max(GZIP_MIN_BYTES, GZIP_MAX_RATIO * packed)
        most_events = max(GZIP_MIN_EVENTS, int(GZIP_EVENTS_PER_BYTE * packed))
        if self._read_bytes <= most_bytes and self._events_seen <= most_events:
            return
        what = (f"more than {self._read_bytes >> 20} MB ({self._read_bytes // packed}x its size; profiler traces "
                f"shrink 9-22x)" if self._read_bytes > most_bytes else
                f"more than {self._events_seen:,} events ({self._events_seen / packed:.1f} per compressed byte; "
                f"profiler traces hold about 0.03)")
        raise TraceError(f"{self.path}: this {packed:,}-byte gzip file decompresses to {what}: a gzip bomb or not a "
                         f"profiler's trace, refused before its columns grow; if it is genuine, gunzip it and load the "
                         f".json (an uncompressed file is read within its own size)")

    def _open_events(self, fh: BinaryIO, first: int = BLOCK_BYTES) -> tuple[bytes, bool, bool, int]:
        """Read up to the start of the events array: (the bytes read past it, bare array?, end of file?, the
        offset in the file where the events start). ``first`` is the size of the first read (the header of a
        Kineto trace takes a few kilobytes), later reads take ``BLOCK_BYTES``."""
        buf = b""
        while True:
            block, eof = self._read(fh, BLOCK_BYTES if buf else first)
            buf += block
            m = _EVENTS_KEY.search(buf, max(0, len(buf) - len(block) - 4096))  # the new bytes (and a margin)
            if m:
                self.metadata.update(self._parse_header(buf[:m.start()]))
                return buf[m.end():], False, eof, m.end()
            stripped = buf.lstrip()
            if stripped[:1] == b"[":  # a bare JSON array of events is a valid Chrome trace too
                skip = len(buf) - len(stripped) + 1
                return buf[skip:], True, eof, skip
            if len(buf) > MAX_PIECE_BYTES:
                raise TraceError(f"{self.path}: no \"traceEvents\" array in the first {MAX_PIECE_BYTES >> 20} MB; "
                                 f"not a Chrome/Kineto trace (or a damaged one): point the loader at the profiler's "
                                 f"*.pt.trace.json(.gz) files")
            if eof or (stripped[:1] not in (b"{", b"") and len(buf) > 0):
                what = "; the file is empty" if not stripped else looks_like_sentence(buf[:8192], unless="trace")
                raise TraceError(f"{self.path}: not a Chrome/Kineto trace (no \"traceEvents\" array); "
                                 f"point the loader at the profiler's *.pt.trace.json(.gz) files{what}")

    def _chunks(self, fh: BinaryIO) -> Iterator[bytes]:
        buf, bare, eof, _ = self._open_events(fh)
        held = b""  # careful: chunks that did not parse alone (cut inside an event's args), waiting for the rest
        while not eof:
            block, eof = self._read(fh)
            buf += block
            while len(buf) >= self.chunk_bytes:
                cut = _last_boundary(buf)
                if cut is None:
                    if len(buf) > MAX_PIECE_BYTES:
                        self._too_long()
                    break  # one event larger than a chunk: read on
                chunk = buf[:cut + 1]
                buf = buf[cut + 1:]
                buf = buf[buf.index(b"{"):]
                if self.careful:
                    chunk = held + b"," + chunk if held else chunk
                    held = b"" if _parses(chunk) or len(chunk) > MAX_PIECE_BYTES else chunk
                    if held:
                        continue
                yield chunk
        yield from self._finish(held + b"," + buf if held else buf, bare)

    def pieces(self) -> Iterator[bytes | FileRange]:
        """Like :meth:`chunks`, but for an uncompressed file every chunk is a :class:`FileRange` that a worker
        process reads itself, so the events never pass through this process. The cut points come from reading a
        small window at each one (and the end of the file, to find where the events stop)."""
        with open_bytes(self.path) as fh:
            if isinstance(fh, gzip.GzipFile) or self.careful:
                yield from self._chunks(fh)
                return
            _, bare, _, start = self._open_events(fh, first=_HEAD_BYTES)
            size = fh.seek(0, os.SEEK_END)
            while size - start > 2 * self.chunk_bytes:
                cut = _next_boundary(fh, start + self.chunk_bytes, size)
                if cut is None:
                    if size - start > MAX_PIECE_BYTES:
                        self._too_long()
                    break  # no event ends in the rest of the file (a truncated one): the end handles it
                yield FileRange(self.path, start, cut[0])
                start = cut[1]
            fh.seek(start)
            rest = fh.read()
        first, stop = self._last_events(rest, bare)
        if stop > first:  # a byte range too: the last events need not pass through this process either
            yield FileRange(self.path, start + first, start + stop)

    def _too_long(self) -> None:
        raise TraceError(f"{self.path}: more than {MAX_PIECE_BYTES >> 20} MB without the end of an event (real "
                         f"events are a few hundred bytes): the file is damaged or not a trace; re-run the profiled "
                         f"job to get a complete {self.path.name}")

    def _parse_header(self, head: bytes) -> dict:
        text = head.strip().rstrip(b",")
        if not text.startswith(b"{"):
            return {}
        try:
            return orjson.loads(text + b"}") if text != b"{" else {}
        except orjson.JSONDecodeError:
            return {}

    def _finish(self, buf: bytes, bare: bool) -> Iterator[bytes]:
        """The last events and the trailer; detects truncation."""
        start, stop = self._last_events(buf, bare)
        if stop > start:
            yield buf[start:stop]

    def _last_events(self, buf: bytes, bare: bool) -> tuple[int, int]:
        """Where the last events lie in ``buf`` (the rest of the file after the last cut): the span of their array
        body without surrounding blanks; reads the trailer into ``metadata`` and detects truncation."""
        pos = len(buf)
        closed = False  # the file ends as a whole trace does (a "]" then the trailer): whatever fails, it is not cut
        for _ in range(_MAX_END_TRIES):
            pos = buf.rfind(b"]", 0, pos)
            if pos < 0:
                break
            trailer = _parse_trailer(buf[pos + 1:], bare)
            if trailer is None:
                continue
            closed = True
            start, stop = _stripped(buf, pos)
            body = buf[start:stop]
            if body and not _last_event_complete(body):
                continue
            # An array among the keys after the events ("deviceProperties": [{..}, {..}]) ends in "]" too, and its
            # objects look like events: the body must then parse as a whole, else the "]" belongs to that array.
            if (b"[" in buf[pos + 1:] or b"]" in body) and not _parses(body):
                continue
            self.metadata.update(trailer)
            return start, stop
        ends = (f"{self.path}: the file ends as a whole trace does, but its last events do not parse (nested deeper "
                f"than a JSON reader follows, or damaged): not a cut-short trace; is it the right file?")
        bad = None if self.salvage else _invalid_utf8(buf)
        if bad is not None:
            raise TraceError(f"{self.path}: bytes that are not UTF-8 near the end of the events ({bad}); the file "
                             f"is corrupted, not cut short; salvage=True (command line: --salvage) keeps the "
                             f"events before them")
        if closed and not self.careful:
            raise MalformedChunk(ends)  # or the last cut fell inside an event's args: the loader reads again
        if closed and not self.salvage:
            raise TraceError(ends)
        if not self.salvage:
            raise TraceError(f"{self.path}: the trace is truncated (the traceEvents array never closes; the job "
                             f"was probably stopped while writing it); {salvage_hint(self.path)}")
        self.truncated = True
        start, stop = _complete_prefix(buf)
        self.lost_bytes = len(buf) - (stop - start)
        return start, stop


_BLANKS = b" \t\n\r\x0b\x0c"  # what bytes.strip() removes
_NOT_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _stripped(buf: bytes, stop: int) -> tuple[int, int]:
    """The span of ``buf[:stop].strip()`` in ``buf``, found without copying it."""
    first = _NOT_BLANK.search(buf, 0, stop)
    if first is None:
        return 0, 0
    while buf[stop - 1] in _BLANKS:
        stop -= 1
    return first.start(), stop


def _gzip_prefix(path: Path, piece: int = 256) -> bytes:
    """Everything that decompresses in a damaged gzip file before the damage (fed in small pieces, so at most
    one piece's output is lost with it)."""
    out = []
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with open(path, "rb") as fh:
        while data := fh.read(piece):
            try:
                out.append(unzip.decompress(data))
            except zlib.error:
                break
    return b"".join(out)


def _invalid_utf8(buf: bytes) -> str | None:
    """Where ``buf`` stops being UTF-8 ("offset N: b'...'"), or None when it is valid."""
    try:
        buf.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{buf[exc.start:exc.start + 8]!r}, {len(buf) - exc.start:,} bytes before the end"
    return None


def _parse_trailer(rest: bytes, bare: bool) -> dict | None:
    """The keys after the ``traceEvents`` array, or None when ``rest`` is not a valid ending."""
    text = rest.strip()
    if bare:
        return {} if text == b"" else None
    if text == b"}":
        return {}
    if not text.startswith(b","):
        return None
    try:
        value = orjson.loads(b"{" + text[1:].lstrip())
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _parses(body: bytes) -> bool:
    try:
        orjson.loads(b"[" + body + b"]")
        return True
    except orjson.JSONDecodeError:
        return False


def _last_event_complete(body: bytes) -> bool:
    """Whether the last event of an array body parses (a cheap check instead of parsing the whole body)."""
    if not body.endswith(b"}"):
        return False
    # the boundary pattern also matches between objects inside an event's args: walk back over a few matches
    # until the text after one parses as whole events
    cuts = [m.start() for m in _BOUNDARY.finditer(body, max(0, len(body) - (1 << 16)))][-_MAX_END_TRIES:]
    for cut in [*reversed(cuts), None]:
        last = body if cut is None else body[body.index(b"{", cut + 1):]
        try:
            events = orjson.loads(b"[" + last + b"]")
        except orjson.JSONDecodeError:
            continue
        return all(isinstance(e, dict) for e in events)
    return False


def _last_boundary(buf: bytes) -> int | None:
    """Index of the closing brace of the last complete event in ``buf`` (None when there is none)."""
    window = 1 << 16
    start = max(0, len(buf) - window)
    while True:
        last = None
        for last in _BOUNDARY.finditer(buf, start):
            pass
        if last is not None:
            return last.start()
        if start == 0:
            return None
        start = max(0, start - 4 * window)


def _next_boundary(fh: BinaryIO, pos: int, size: int) -> tuple[int, int] | None:
    """The first boundary between two events at or after ``pos``: (end of the event before it, start of the
    event after it), or None when there is none before the end of the file."""
    window = 1 << 16
    while pos < size:
        fh.seek(pos)
        data = fh.read(window + 256)  # the overlap keeps a boundary that straddles two windows whole
        m = _BOUNDARY.search(data)
        if m and m.start() < window:
            return pos + m.start() + 1, pos + data.index(b"{", m.start() + 1)
        pos += window
    return None


def _complete_prefix(buf: bytes) -> tuple[int, int]:
    """The span of the longest run of complete events at the start of a truncated array body, without blanks
    around it ((0, 0) when there is none)."""
    ends = [m.start() for m in _BOUNDARY.finditer(buf)]
    for end in reversed(ends[-_MAX_END_TRIES:]):
        start, stop = _stripped(buf, end + 1)
        try:
            orjson.loads(b"[" + buf[start:stop] + b"]")
            return start, stop
        except orjson.JSONDecodeError:
            continue
    return 0, 0
