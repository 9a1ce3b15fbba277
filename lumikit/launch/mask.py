"""Secret values masked where a job's output is written, as CI systems mask them: each value becomes ``***`` before
a byte of it reaches disk, also when the program prints it in pieces (two writes) or many times.

The launch keeps a run's secret values (the ``--env`` values it marks secret) in a private file while the job runs
(:func:`lumikit.launch.runfolder.write_secrets`); the supervisor reads them from there and passes every rank's
stdout and stderr, the GPU recorder's log and its own through a :class:`SecretMask`. ``reference add``'s scan for
secrets stays as a second line of defence.
"""
from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

MASK = b"***"
#: Values shorter than this are not masked (a one- or two-letter value would blank ordinary text); the launch says so.
MIN_SECRET_LEN = 3


class SecretMask:
    """A filter over one byte stream: ``feed`` returns what may be written now (every whole secret replaced), and
    keeps back at most (longest secret - 1) bytes that could be the start of one; ``flush`` returns the rest."""

    def __init__(self, values: Iterable[bytes | str]) -> None:
        raw = {v.encode() if isinstance(v, str) else bytes(v) for v in values}
        self.values = sorted((v for v in raw if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)
        self._pattern = re.compile(b"|".join(re.escape(v) for v in self.values)) if self.values else None
        self._keep = max((len(v) for v in self.values), default=1) - 1
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The masked part of ``self._held + data`` that no later byte can change."""
        if self._pattern is None:
            return data
        text = self._held + data
        cut = len(text) - self._keep  # a secret starting before here lies wholly in ``text``
        out, pos = [], 0
        for match in self._pattern.finditer(text):
            if match.start() >= cut:
                break
            out += [text[pos:match.start()], MASK]
            pos = match.end()
        keep_from = max(pos, cut)
        out.append(text[pos:keep_from])
        self._held = text[keep_from:]
        return b"".join(out)

    def flush(self) -> bytes:
        """The bytes held back, masked (the stream has ended)."""
        held, self._held = self._held, b""
        return self._pattern.sub(MASK, held) if self._pattern else held


def mask_text(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` replaced by ``***`` (for a log line written whole)."""
    mask = SecretMask(values)
    return (mask.feed(text.encode()) + mask.flush()).decode(errors="replace")


def secret_values_of(path: str | os.PathLike[str] | None) -> list[str]:
    """The values of a launch's secrets file (``export NAME='value'`` lines); [] when there is none."""
    if not path:
        return []
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    values = []
    for line in text.splitlines():
        words = shlex.split(line) if line.startswith("export ") else []
        if len(words) == 2 and "=" in words[1]:
            values.append(words[1].split("=", 1)[1])
    return values


def pump(source: BinaryIO, target: BinaryIO, mask: SecretMask) -> None:
    """Copy ``source`` to ``target`` through ``mask`` until end of file, writing as the bytes come."""
    fd = source.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        out = mask.feed(chunk)
        if out:
            target.write(out)
            target.flush()
    target.write(mask.flush())
    target.flush()
    source.close()


def start_pump(source: BinaryIO, path: Path, values: Iterable[str], mode: str = "wb") -> threading.Thread:
    """A daemon thread copying ``source`` into the file ``path`` through a fresh :class:`SecretMask`."""
    target = open(path, mode, buffering=0)  # noqa: SIM115 - closed by the thread when the stream ends

    def run() -> None:
        try:
            pump(source, target, SecretMask(values))
        finally:
            target.close()
    thread = threading.Thread(target=run, name=f"mask {path.name}", daemon=True)
    thread.start()
    return thread


class MaskedOwnOutput:
    """This process's own stdout and stderr (file descriptors 1 and 2, so tracebacks and children's output too)
    passed through a mask into where they went before; ``close`` restores them and writes the rest."""

    def __init__(self, values: Iterable[str]) -> None:
        self._saved = os.dup(1)
        read, write = os.pipe()
        for fd in (1, 2):
            os.dup2(write, fd)
        os.close(write)
        self._thread = threading.Thread(target=pump, args=(os.fdopen(read, "rb"), os.fdopen(
            os.dup(self._saved), "wb", buffering=0), SecretMask(values)), daemon=True)
        self._thread.start()

    def close(self) -> None:
        import sys
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd in (1, 2):
            os.dup2(self._saved, fd)
        self._thread.join(timeout=10)
        os.close(self._saved)


def marked_values(env: Mapping[str, str] | Iterable[tuple[str, str]], names: Iterable[str]) -> list[str]:
    """The values of the ``names`` among ``env``'s pairs."""
    pairs = env.items() if isinstance(env, Mapping) else env
    wanted = set(names)
    return [v for k, v in pairs if k in wanted]
