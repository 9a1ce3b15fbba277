"""PyTorch's flight recorder dumps: which rank never joined which collective of which process group, and which ranks
met at the same collective with different calls (a desync).

With ``TORCH_FR_BUFFER_SIZE`` (older name ``TORCH_NCCL_TRACE_BUFFER_SIZE``) set, every process group of a rank
keeps its last collectives in a ring buffer and writes it out on a timeout (``TORCH_FR_DUMP_TEMP_FILE`` /
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` + the rank, default ``/tmp/nccl_trace_rank_<rank>``), or when the program
calls ``torch._C._distributed_c10d._dump_fr_trace()``. A dump is a pickled dict (or the same as JSON from
``_dump_fr_trace_json``): ``version``, ``pg_config`` (process group -> name, desc, ranks), ``pg_status`` and
``entries``, one per collective with ``process_group`` (name, desc), ``collective_seq_id``, ``profiling_name``
(``nccl:all_reduce``, ``gloo:broadcast``), ``state`` (scheduled / started / completed; gloo only schedules) and
``input_sizes``/``output_sizes``. The rank is not inside: as torch's own ``fr_trace`` tool does, it is the number
the file name ends with (``.json`` and ``.pkl`` endings allowed).

A hang reads as: every rank reached collective N-1 of a group, and some ranks have no entry for collective N (they
never called it). A desync reads as: two ranks recorded collective N of the same group, but as different
collectives or with different tensor sizes (torch's analyser calls these "collective type" and "size"
mismatches). Pickles are read with :func:`lumikit.safe_pickle.load_plain`, which builds only plain values under
memory caps, so a dump can neither run code nor exhaust memory; every field is checked for type and range here.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import LumikitError, ParseError
from ..files import load_json_bounded, open_regular, read_bytes, regular_file
from ..text import printable

_RANK = re.compile(r"(?<!\d)(\d{1,9})(?:\.json|\.pkl)?$")
#: A ring buffer of a few thousand entries on 1,024 ranks' process groups is megabytes; more is not a dump.
MAX_BYTES = 256 << 20
_MAX_SEQ = 2**63 - 1  # torch keeps sequence numbers in an int64
_MAX_NAME = 200
_WHAT = "a flight recorder dump (default /tmp/nccl_trace_rank_<rank>, or TORCH_FR_DUMP_TEMP_FILE<rank>)"
_MARKS = (b"pg_config", b"comm_lib_version", b"collective_seq_id")


def _load_pickle(data: bytes, source: str) -> Any:
    """The plain value of a pickled dump (refusing anything that names a class or exceeds the caps)."""
    from ..safe_pickle import load_plain

    try:
        return load_plain(data, source, what="a flight recorder dump")
    except AttributeError as exc:  # the C unpickler on opcodes in the wrong order (APPEND onto a dict)
        raise ParseError(f"not a readable pickle ({str(exc)[:120]}): not a flight recorder dump",
                         source=source) from None


@dataclass
class FlightRecord:
    """One rank's dump: its rank (from the file name), the process groups and their collectives in order.

    ``entries`` are the dump's entries with their fields checked: ``collective_seq_id`` (int), ``profiling_name``
    (str), ``process_group`` (name, desc), ``is_p2p`` (bool), ``state`` (str), ``input_sizes``/``output_sizes``
    (tuples of shapes, None when not recorded); ``members`` maps a process group's name to its ranks where
    ``pg_config`` says."""

    path: Path
    rank: int | None
    version: str
    pg_config: dict
    entries: list[dict] = field(default_factory=list)
    pg_status: dict = field(default_factory=dict)
    members: dict[str, tuple[int, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def last_seq(self) -> dict[str, int]:
        """The last collective sequence number this rank recorded, per process group description."""
        out: dict[str, int] = {}
        for e in self.entries:
            if e["is_p2p"]:
                continue
            group = _group(e)
            out[group] = max(out.get(group, 0), e["collective_seq_id"])
        return out


def _group(entry: dict) -> str:
    name, desc = entry["process_group"]
    return f"{desc or name} (id {name})"


def _text(value: Any, where: str, source: str, default: str = "") -> str:
    """A string field: strings as they are (cut to a sane length), small numbers as text, anything else refused."""
    if value is None:
        return default
    if isinstance(value, str):
        return value[:_MAX_NAME]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e18:
        return str(value)
    raise ParseError(f"{where} is a {type(value).__name__}, not text: not a flight recorder dump", source=source)


def _shapes(value: Any) -> tuple[tuple[int, ...], ...] | None:
    """``[[4], [2, 3]]`` -> ((4,), (2, 3)); None for anything that is not a list of shapes of plain integers."""
    if not isinstance(value, (list, tuple)) or len(value) > 10_000:
        return None
    out = []
    for shape in value:
        if not isinstance(shape, (list, tuple)) or len(shape) > 64 or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= _MAX_SEQ for d in shape):
            return None
        out.append(tuple(shape))
    return tuple(out)


def _entry(raw: Any, i: int, source: str) -> dict:
    """One entry with its fields checked for type and range (a ParseError naming the entry otherwise)."""
    if not isinstance(raw, dict):
        raise ParseError(f"entry {i} is a {type(raw).__name__}, not a record of a collective", source=source)
    seq = raw.get("collective_seq_id", 0)
    if seq is None:
        seq = 0
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= _MAX_SEQ:
        shown = printable(repr(seq)[:40]) if not isinstance(seq, int) or seq.bit_length() < 200 else "a huge integer"
        raise ParseError(f"entry {i}: collective_seq_id is {shown}, not a sequence number (0 to 2^63-1)",
                         source=source)
    pg = raw.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) >= 1:
        pg = (list(pg) + [""])[:2]
        group = (_text(pg[0], f"entry {i}'s process group name", source, "?"),
                 _text(pg[1], f"entry {i}'s process group description", source))
    else:
        group = ("?", "?")
    return {"collective_seq_id": seq, "profiling_name": _text(raw.get("profiling_name"), f"entry {i}'s name", source,
                                                               "?"),
            "process_group": group, "is_p2p": raw.get("is_p2p") is True,
            "state": _text(raw.get("state"), f"entry {i}'s state", source),
            "input_sizes": _shapes(raw.get("input_sizes")), "output_sizes": _shapes(raw.get("output_sizes"))}


def _members(pg_config: Any) -> dict[str, tuple[int, ...]]:
    """Process group name -> its ranks, where ``pg_config`` lists them (``"[0, 1]"`` as torch writes it, or a list)."""
    out: dict[str, tuple[int, ...]] = {}
    if not isinstance(pg_config, dict):
        return out
    for key, conf in list(pg_config.items())[:100_000]:
        if not isinstance(conf, dict):
            continue
        ranks = conf.get("ranks")
        if isinstance(ranks, str) and len(ranks) < 10_000_000:
            found = re.findall(r"\d{1,9}", ranks)
            ranks = [int(r) for r in found] if re.fullmatch(r"\s*\[[\d,\s]*\]\s*", ranks) else None
        if isinstance(ranks, (list, tuple)) and ranks and all(
                isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 2**31 for r in ranks):
            name = conf.get("name", key)
            if isinstance(name, str):
                out[name] = tuple(sorted(set(ranks)))
    return out


def is_flight_recorder_dump(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like a flight recorder dump: a pickle or JSON object naming ``entries`` and
    ``pg_config`` (or ``collective_seq_id``) anywhere in it. A 1,024-rank dump lists its process groups first, so
    ``entries`` can be far from the start: a file whose first 4 KiB name one of those keys is searched whole (its
    first :data:`MAX_BYTES`); other pickles (a model's) are passed by after 4 KiB. Anything but a regular file is
    no dump (a FIFO is never opened)."""
    try:
        with open_regular(path, _WHAT) as fh:
            head = fh.read(4096)
            if not (head[:1] == b"\x80" or head.lstrip()[:1] == b"{") or not any(
                    mark in head for mark in (b"entries", *_MARKS)):  # a dump names one of them early on
                return False
            size = os.fstat(fh.fileno()).st_size
            data = head + fh.read(MAX_BYTES - len(head)) if size <= MAX_BYTES else head  # too big: reading says so
    except (OSError, LumikitError):
        return False
    return b"entries" in data and any(mark in data for mark in _MARKS)


def parse_flight_recorder(data: bytes, source: str, rank: int | None = None) -> FlightRecord:
    """A dump given as bytes (pickle or JSON), its fields checked; a :class:`ParseError` naming ``source`` for
    anything that is not a dump."""
    if len(data) > MAX_BYTES:
        raise ParseError(f"{len(data):,} bytes: larger than any flight recorder dump", source=source)
    if data[:1] == b"\x80":
        dump = _load_pickle(data, source)
    elif data.lstrip()[:1] == b"{":
        dump = load_json_bounded(data, source)
    else:
        raise ParseError("neither a pickle nor a JSON object: not a flight recorder dump (torch writes one with "
                         "_dump_fr_trace or _dump_fr_trace_json)", source=source)
    if not isinstance(dump, dict) or not isinstance(dump.get("entries"), list):
        raise ParseError("no 'entries' list: not a flight recorder dump", source=source)
    if len(dump["entries"]) > 10_000_000:
        raise ParseError(f"{len(dump['entries']):,} entries: more than any ring buffer holds", source=source)
    entries = [_entry(e, i, source) for i, e in enumerate(dump["entries"])]
    pg_config = dump.get("pg_config") if isinstance(dump.get("pg_config"), dict) else {}
    pg_status = dump.get("pg_status") if isinstance(dump.get("pg_status"), dict) else {}
    return FlightRecord(path=Path(source), rank=rank, version=_text(dump.get("version"), "version", source, "?"),
                        pg_config=pg_config, entries=entries, pg_status=pg_status, members=_members(pg_config))


def rank_of(path: str | os.PathLike[str]) -> int | None:
    """The rank a dump's file name ends with (``nccl_trace_rank_3``, ``fr_3.pkl``, ``rank_3.json``), or None."""
    m = _RANK.search(Path(path).name)
    return int(m.group(1)) if m else None


def read_flight_recorder(path: str | os.PathLike[str]) -> FlightRecord:
    """Read one dump (pickle or JSON; a regular file of at most :data:`MAX_BYTES`); the rank is the number its file
    name ends with (None without one)."""
    p = Path(path)
    size = regular_file(p, _WHAT).st_size
    if size > MAX_BYTES:
        raise ParseError(f"{size / 2**20:,.0f} MB: larger than any flight recorder dump (a ring buffer of thousands of "
                         f"entries is a few MB; at most {MAX_BYTES >> 20} MB are read); give the dump files torch "
                         "wrote", source=str(p))
    return parse_flight_recorder(read_bytes(p, _WHAT, limit=MAX_BYTES), str(p), rank_of(p))


def rank_list(ranks: Iterable[int]) -> str:
    """Ranks as short ranges: (0, 1, 2, 3, 7, 9, 10) -> "0-3, 7, 9-10" (a 1,024-rank job stays one line)."""
    rs = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    if len(parts) > 12:
        parts = parts[:12] + [f"... ({len(rs)} ranks)"]
    return ", ".join(parts)


def _ranks_word(ranks: Iterable[int]) -> str:
    rs = sorted(set(ranks))
    return f"rank{'s' if len(rs) != 1 else ''} {rank_list(rs)}"


@dataclass(frozen=True)
class Hang:
    """A collective some ranks entered and others never did."""

    group: str
    seq: int
    collective: str
    waiting: tuple[int, ...]   # ranks that recorded collective ``seq``
    missing: tuple[int, ...]   # ranks whose last recorded collective of the group is before ``seq``
    last_seen: dict           # missing rank -> its last collective sequence number

    def describe(self) -> str:
        """One sentence: who never joined what."""
        if len(self.missing) <= 4:
            who = ", ".join(f"rank {r} (last: collective {self.last_seen[r]})" for r in self.missing)
        else:
            lasts = sorted(set(self.last_seen.values()))
            who = f"{_ranks_word(self.missing)} (last: collective {rank_list(lasts)})"
        return (f"{who} never joined collective {self.seq} ({printable(self.collective)}) of process group "
                f"{printable(self.group)}; {_ranks_word(self.waiting)} waited in it")


@dataclass(frozen=True)
class Desync:
    """Ranks that recorded the same collective of a process group as different calls: ``calls`` maps each call
    (its name, and its input and output sizes) to the ranks that made it."""

    group: str
    seq: int
    calls: tuple[tuple[str, tuple[int, ...]], ...]  # (call, ranks), most ranks first
    kind: str  # "collective" (different collectives) or "size" (the same collective, different tensor sizes)

    def describe(self) -> str:
        """One sentence: which ranks called what at the same collective."""
        calls = "; ".join(f"{_ranks_word(ranks)} called {printable(call)}" for call, ranks in self.calls)
        what = "different collectives" if self.kind == "collective" else "the same collective with different sizes"
        return (f"collective {self.seq} of process group {printable(self.group)} is {what}: {calls}")


def _members_of(group_key: str, records: list[FlightRecord], recorded: set[int]) -> set[int]:
    """The ranks of a process group, read from the dumps: as a ``pg_config`` lists them (among the ranks given);
    where none lists them (gloo's recorder, or torch's ``"[]"`` for the world group), the ranks whose dumps know the
    group (its ``pg_config`` or ``pg_status`` entry, or an entry of it). A rank outside a sub-group never records it,
    so it is never blamed for the sub-group's missing collective."""
    name = group_key.rsplit(" (id ", 1)[-1][:-1]
    given = {r.rank for r in records}
    for r in records:
        if name in r.members:
            members = set(r.members[name]) & given
            if members:
                return members | recorded
    knows = {r.rank for r in records if name in r.pg_config or name in r.pg_status}
    return knows | recorded


def find_hangs(records: Iterable[FlightRecord]) -> list[Hang]:
    """Per process group, the first collective that some ranks recorded and others did not."""
    records = [r for r in records if r.rank is not None]
    lasts = {r.rank: r.last_seq() for r in records}
    groups = sorted({g for last in lasts.values() for g in last})
    hangs = []
    for group in groups:
        recorded = {rank for rank, last in lasts.items() if group in last}
        last = {rank: lasts[rank].get(group, 0) for rank in _members_of(group, records, recorded)}
        top = max(last.values())
        behind = sorted(r for r, s in last.items() if s < top)
        if not behind:
            continue
        seq = min(last[r] for r in behind) + 1
        waiting = sorted(r for r, s in last.items() if s >= seq)
        name = next((e["profiling_name"] for r in records for e in r.entries
                     if not e["is_p2p"] and e["collective_seq_id"] == seq and _group(e) == group), "?")
        hangs.append(Hang(group, seq, name, tuple(waiting), tuple(behind), {r: last[r] for r in behind}))
    return hangs


def _call(entry: dict) -> str:
    sizes = "" if entry["input_sizes"] is None else f" in {_sizes(entry['input_sizes'])}"
    out = "" if entry["output_sizes"] is None else f" out {_sizes(entry['output_sizes'])}"
    return f"{entry['profiling_name']}{sizes}{out}"


def _sizes(shapes: tuple[tuple[int, ...], ...]) -> str:
    text = "[" + ", ".join("[" + ", ".join(map(str, s)) + "]" for s in shapes[:8]) + (", ..." if len(shapes) > 8
                                                                                     else "") + "]"
    return text[:200]


def find_desyncs(records: Iterable[FlightRecord], limit: int = 20) -> list[Desync]:
    """Collectives (process group, sequence number) that two or more ranks recorded as different calls: another
    collective, or the same one with other tensor sizes. Point-to-point entries are left out; at most ``limit``,
    the earliest of each group first."""
    calls: dict[tuple[str, int], dict[str, list[int]]] = {}
    names: dict[tuple[str, int], set[str]] = {}
    for r in records:
        if r.rank is None:
            continue
        for e in r.entries:
            if e["is_p2p"] or e["collective_seq_id"] <= 0:
                continue
            key = (_group(e), e["collective_seq_id"])
            ranks = calls.setdefault(key, {}).setdefault(_call(e), [])
            if r.rank not in ranks:
                ranks.append(r.rank)
            names.setdefault(key, set()).add(e["profiling_name"])
    out = []
    for (group, seq), by_call in sorted(calls.items()):
        if len(by_call) < 2:
            continue
        ordered = sorted(by_call.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
        kind = "collective" if len(names[(group, seq)]) > 1 else "size"
        out.append(Desync(group, seq, tuple((call, tuple(sorted(ranks))) for call, ranks in ordered), kind))
    firsts: dict[str, Desync] = {}
    for d in out:  # the first desync of a group explains the rest: show it first
        firsts.setdefault(d.group, d)
    rest = [d for d in out if firsts[d.group] is not d]
    return (list(firsts.values()) + rest)[:limit]
