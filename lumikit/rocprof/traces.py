"""Per-dispatch rocprof outputs: rocprofv3 ``*_kernel_trace.csv`` and rocprof v1 ``results.json``.

Both list every kernel (and, for v1, every copy and HIP call) with its start and duration; the readers turn
them into plain tables, and :func:`~lumikit.rocprof.stats.stats_from_durations` turns those into the ranked
kernel statistics, the same as a ``--stats`` file.
"""
from __future__ import annotations

import io
import os
import re

import numpy as np
import orjson
import pandas as pd

from ..errors import LumikitError, ParseError
from ..files import open_regular, read_text
from ..kernels import classify_kernel
from ..sniff import looks_like_sentence

_COPY_OP = re.compile(r"^(?:Copy|Fill)[A-Za-z]*$|^MEMORY_COPY", re.IGNORECASE)
_GPU_LABEL = re.compile(r"^GPU\s*(\d+)$")
#: Start of the JSON that rocprof v1 writes (its first event is an empty object).
ROCPROF_JSON_PREFIX = '{ "traceEvents":[{}'


def _read_text(path: str | os.PathLike[str], what: str) -> str:
    return read_text(path, f"a {what} or a run folder")


def _snake(name: str) -> str:
    return name.strip().lower()


_INT64_MAX = 2**63 - 1


def _as_int(cell: object) -> int | None:
    """A timestamp cell as an integer, or None unless it is a whole number from 0 to 2**63 - 1."""
    if isinstance(cell, (int, np.integer)) and not isinstance(cell, bool):
        value = int(cell)
        return value if 0 <= value <= _INT64_MAX else None
    text = str(cell).strip()
    try:
        value = int(text[:40])
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        if not np.isfinite(number) or number != int(number):
            return None
        value = int(number)
    return value if 0 <= value <= _INT64_MAX else None


def _read_csv(text: str, source: str, line_offset: int) -> tuple[pd.DataFrame, str]:
    """pandas' reading of a CSV; a file cut inside a quoted name loses its last line (returned as a note)."""
    try:
        return pd.read_csv(io.StringIO(text), dtype={"Kernel_Name": str}), ""
    except (pd.errors.ParserError, ValueError) as exc:
        first = str(exc)
    cut = text.rstrip("\n").rfind("\n")
    if cut > 0:
        try:
            kept = pd.read_csv(io.StringIO(text[:cut + 1]), dtype={"Kernel_Name": str})
            lost = text[cut + 1:].strip("\n")
            return kept, f"the last line ({len(lost)} characters) is cut short, probably inside a quoted kernel name"
        except (pd.errors.ParserError, ValueError):
            pass
    m = re.search(r"row (\d+)|line (\d+)", first)
    line_no = line_offset + int(m.group(1) or m.group(2)) if m else None
    raise ParseError(f"not a CSV that pandas can read ({first.splitlines()[0][:160]}); re-run rocprofv3 with "
                     "--output-format csv and let the program finish", source=source, line_no=line_no) from None


def parse_kernel_trace(text: str, source: str = "<text>") -> pd.DataFrame:
    """The kernel dispatches of a rocprofv3 ``kernel_trace.csv`` given as text (see :func:`read_kernel_trace`).

    A file cut at the end (a killed job) keeps every complete row before the cut; ``table.attrs["notes"]`` says
    what was dropped. A damaged row anywhere else is a :class:`ParseError` naming its line.
    """
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if '"Kernel_Name"' in ln or "Kernel_Name," in ln), None)
    if header_at is None:
        raise ParseError('no "Kernel_Name" column found; give a rocprofv3 *_kernel_trace.csv '
                         "(rocprofv3 --kernel-trace --output-format csv)" + looks_like_sentence(text, unless="kernel"),
                         source=source)
    notes = []
    if not text.endswith(("\n", "\r")) and len(lines) > header_at + 2:  # rocprofv3 ends every row with one
        notes.append(f"the file does not end with a line break: its last line (line {len(lines)}, "
                     f"{len(lines[-1])} characters) is cut short and was dropped")
        lines = lines[:-1]
    raw, note = _read_csv("\n".join(lines[header_at:]) + "\n", source, header_at + 1)
    notes += [note] if note else []
    raw.columns = [_snake(str(c)) for c in raw.columns]
    needed = ["kernel_name", "start_timestamp", "end_timestamp"]
    missing = [c for c in needed if c not in raw.columns]
    if missing:
        raise ParseError(f"kernel trace lacks the columns {missing}", source=source, line_no=header_at + 1,
                         line=lines[header_at])
    table = raw.rename(columns={"kernel_name": "name", "start_timestamp": "start_ns", "end_timestamp": "end_ns"})
    table = table.loc[:, ~table.columns.duplicated()]
    for col in ("start_ns", "end_ns"):
        if table[col].dtype == np.int64 and (table[col] >= 0).all():
            continue
        values = [_as_int(c) for c in table[col]]
        bad = [i for i, v in enumerate(values) if v is None]
        if bad == [len(values) - 1]:  # the last row was cut before its end time was written
            notes.append(f"the last row (line {header_at + 2 + bad[0]}) has no whole {col.replace('_ns', '')} "
                         f"time (cut short); kept the {len(values) - 1} rows before it")
            table = table.iloc[:-1].copy()
            values = values[:-1]
        elif bad:
            i = bad[0]
            raise ParseError(f"{len(bad)} row(s) with a {col.replace('_ns', '')} time that is not a whole number of "
                             f"nanoseconds within 64 bits (first: {str(table[col].iloc[i])[:40]!r})", source=source,
                             line_no=header_at + 2 + i)
        table[col] = np.array(values, dtype=np.int64)
    if "agent_id" in table:  # "Agent 2" in newer rocprofv3, a plain number in older ones
        table["agent_id"] = pd.to_numeric(table["agent_id"].astype(str).str.extract(r"(\d{1,18})")[0],
                                          errors="coerce").astype("Int64")
    table["duration_ns"] = table["end_ns"] - table["start_ns"]
    names = table["name"].fillna("").astype(str)
    table["name"] = names
    table["kernel_class"] = [classify_kernel(n) for n in names]
    first = ["name", "kernel_class", "start_ns", "end_ns", "duration_ns"]
    table = table[first + [c for c in table.columns if c not in first]]
    table = table.sort_values("start_ns", kind="stable").reset_index(drop=True)
    table.attrs.update(source=source, kind="kernel_trace", generation="v3", notes=notes)
    return table


def read_kernel_trace(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a rocprofv3 ``*_kernel_trace.csv``: one row per kernel dispatch, in start order.

    Columns: ``name``, ``kernel_class``, ``start_ns``, ``end_ns``, ``duration_ns`` and then rocprofv3's own
    columns in lower case (``agent_id`` as a number, ``queue_id``, ``stream_id``, ``correlation_id``,
    ``grid_size_x`` ... as far as the file has them).
    """
    return parse_kernel_trace(_read_text(path, "rocprofv3 *_kernel_trace.csv"), source=str(path))


def _event_kind(label: str, name: str) -> str:
    if _GPU_LABEL.match(label):
        return "copy" if _COPY_OP.match(name) else "kernel"
    if label.startswith("GPU Barriers"):
        return "barrier"
    if label == "COPY":
        return "copy"
    if label.startswith("CPU "):
        return "api"
    if label == "Markers and Ranges":
        return "marker"
    return "other"


def _cut_json(text: str) -> tuple[dict, str] | None:
    """A results.json cut short, closed after its last complete event line: (the document, a note), or None."""
    end = len(text)
    for _ in range(64):
        end = text.rfind("\n", 0, end)
        if end < 0:
            return None
        head = text[:end].rstrip().rstrip(",")
        try:
            doc = orjson.loads(head + "]}")
        except orjson.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            return doc, (f"the file is cut short: {len(text) - end:,} characters after the last complete event "
                         f"line were dropped")
    return None


def _event_number(value: object) -> float | None:
    """``ts``/``dur`` of a results.json event (rocprof writes them as strings): a finite number, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if np.isfinite(number) and abs(number) < 2**53 else None


def parse_rocprof_json(text: str, source: str = "<text>") -> pd.DataFrame:
    """The events of a rocprof v1 ``results.json`` given as text (see :func:`read_rocprof_json`).

    A file cut at the end keeps its complete events (``table.attrs["notes"]`` says what was dropped).
    """
    notes: list[str] = []
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        # rocprof v1 closes the file with "}" only when it could not write its metadata: try the missing "]".
        stripped = text.rstrip()
        try:
            doc = orjson.loads(stripped[:-1].rstrip().rstrip(",") + "]}") if stripped.endswith("}") else None
        except orjson.JSONDecodeError:
            doc = None
        if doc is None:
            cut = _cut_json(text)
            if cut is None:
                raise ParseError(f"not valid JSON ({exc}); was the profiled program stopped before rocprof finished "
                                 "writing? Re-run with fewer steps so it exits normally"
                                 + looks_like_sentence(text, unless="results.json"), source=source) from None
            doc, note = cut
            notes.append(note)
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise ParseError('no "traceEvents" list; give the results.json that rocprof --hip-trace wrote'
                         + looks_like_sentence(text, unless="results.json"), source=source)
    labels: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
            args = ev.get("args")
            labels[str(ev.get("pid"))] = str(args.get("name", "")) if isinstance(args, dict) else ""
    rows = []
    for number, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        pid = str(ev.get("pid"))
        label = labels.get(pid, "")
        name = str(ev.get("name", ""))
        ts, dur = _event_number(ev.get("ts")), _event_number(ev.get("dur"))
        if ts is None or dur is None:
            raise ParseError(f"event {number} ({name[:80]!r}) has a ts/dur that is not a number below 2**53 µs "
                             f"(ts={str(ev.get('ts'))[:30]!r}, dur={str(ev.get('dur'))[:30]!r}); is the file damaged?",
                             source=source)
        rows.append((name, _event_kind(label, name), label, pid, str(ev.get("tid", "")), ts, dur))
    table = pd.DataFrame(rows, columns=["name", "kind", "process", "pid", "tid", "ts_us", "dur_us"])
    table["duration_ns"] = (table["dur_us"] * 1000.0).round().astype("int64") if len(table) else np.int64(0)
    table["kernel_class"] = [
        "memory" if kind == "copy" else classify_kernel(name) if kind == "kernel" else None
        for name, kind in zip(table["name"], table["kind"])
    ]
    table = table.sort_values("ts_us", kind="stable").reset_index(drop=True)
    table.attrs.update(source=source, kind="json_trace", generation="v1", notes=notes)
    return table


def read_rocprof_json(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read the Chrome-trace JSON of rocprof v1 (``results.json`` from ``rocprof --hip-trace``).

    One row per complete event: ``name``, ``kind`` (kernel / copy / api / marker / barrier / other, from the
    process label "GPU0", "COPY", "CPU HIP API", ...), ``process``, ``pid``, ``tid``, ``ts_us``, ``dur_us``,
    ``duration_ns`` and ``kernel_class`` for GPU activity. rocprof writes every number as a string; these
    are numbers here. The durations in this file are whole microseconds; prefer ``results.stats.csv`` for
    kernel totals when both exist.
    """
    return parse_rocprof_json(_read_text(path, "rocprof results.json"), source=str(path))


def is_rocprof_json(path: str | os.PathLike[str]) -> bool:
    """Whether a file starts like rocprof v1's JSON (and not, say, a PyTorch profiler trace)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(64).decode("utf-8", errors="replace")
    except (OSError, LumikitError):
        return False
    return head.replace(" ", "").startswith(ROCPROF_JSON_PREFIX.replace(" ", ""))
