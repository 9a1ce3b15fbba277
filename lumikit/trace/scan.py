"""Pick a few raw events, with all their ``args``, out of a trace file without building the rest.

The loader keeps a fixed set of columns for every complete event; the memory and collective views need fields it
drops (``Bytes``/``Addr`` of ``[memory]`` instants, ``Collective name``/``In msg nelems`` of communication
events). A chunk is decoded only when it contains one of the given byte strings, so a pass over a large trace
costs little more than reading it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import orjson

from ..errors import TraceError
from .reader import TraceStream, salvage_hint


def scan_events(path: Path | str, needles: tuple[bytes, ...], keep: Callable[[dict], bool], *,
                salvage: bool = False) -> Iterator[dict]:
    """The events of ``path`` for which ``keep(event)`` holds, looking only in chunks that contain a needle."""
    stream = TraceStream(Path(path), salvage=salvage)
    for chunk in stream.chunks():
        if not any(n in chunk for n in needles):
            continue
        try:
            events = orjson.loads(b"[" + chunk + b"]")
        except orjson.JSONDecodeError as exc:
            raise TraceError(f"{path}: malformed trace events ({exc}); {salvage_hint(path)}") from None
        for ev in events:
            if isinstance(ev, dict) and keep(ev):
                yield ev
