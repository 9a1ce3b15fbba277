"""rocprofv3's other output formats as the same activity parts as a rocpd database: ``--output-format json`` and
``--output-format csv`` (``<pid>_kernel_trace.csv`` with ``<pid>_hip_api_trace.csv`` and
``<pid>_memory_copy_trace.csv`` beside it), so ``rocprof stats``, ``trace idle`` and ``trace critical-path`` read
them as they read a ``.db``.

JSON layout (rocprofiler-sdk ``source/lib/output/generateJSON.cpp`` and
``source/include/rocprofiler-sdk/cxx/serialization.hpp``, ROCm/rocprofiler-sdk at commit 029ff02a): a top-level
``{"rocprofiler-sdk-tool": [ ... ]}`` with one object per process holding ``metadata`` (``pid``), ``agents``
(``id.handle``, ``type`` 1 CPU / 2 GPU, ``logical_node_type_id``), ``kernel_symbols`` (``kernel_id``,
``formatted_kernel_name``), ``strings.buffer_records`` (one ``{"kind", "operations"}`` per buffer kind, indexed by
the kind's number) and ``buffer_records`` with ``kernel_dispatch`` (``dispatch_info.agent_id.handle``,
``kernel_id``, ``queue_id``), ``hip_api``, ``rccl_api`` and ``memory_copy``; every record has ``kind``,
``operation``, ``thread_id``, ``correlation_id.internal`` (shared by a call and the work it enqueued) and
``start_timestamp``/``end_timestamp`` in ns. Neither format keeps the calls' arguments, so sync and event waits
are inferred as they are for Kineto traces (and labelled so).

CSV layout (rocprofiler-sdk documentation, "Using rocprofv3"): ``"Domain","Function","Process_Id","Thread_Id",
"Correlation_Id","Start_Timestamp","End_Timestamp"`` for API traces; the kernel trace's columns are those
:func:`~lumikit.rocprof.traces.read_kernel_trace` reads.
"""
from __future__ import annotations

import os
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np
import orjson

from ..errors import LumikitError, ParseError, TraceError
from ..files import open_regular, read_bytes
from .rocpd_events import GPU_FIELDS, Part
from .rocpd_sql import NAME_CHARS, NO_TIME

if TYPE_CHECKING:
    import pandas as pd

TOOL_KEY = "rocprofiler-sdk-tool"
#: The rocprofiler agent type of a GPU (``rocprofiler_agent_type_t``: 1 CPU, 2 GPU).
GPU_AGENT_TYPE = 2


def is_rocprofv3_json(path: str | os.PathLike[str]) -> bool:
    """Whether a file starts as rocprofv3's JSON output does (``{"rocprofiler-sdk-tool"``)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(256).decode("utf-8", errors="replace")
    except (OSError, LumikitError):
        return False
    return head.lstrip().startswith("{") and f'"{TOOL_KEY}"' in head.replace(" ", "")[:64]


def _processes(path: Path) -> list[dict]:
    try:
        doc = orjson.loads(read_bytes(path, "rocprofv3's JSON output (<pid>_results.json)"))
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"not JSON ({str(exc)[:120]}); was rocprofv3 stopped before it finished writing? Profile "
                         "again and let the program end", source=str(path)) from None
    procs = doc.get(TOOL_KEY) if isinstance(doc, dict) else None
    if isinstance(procs, dict):
        procs = [procs]
    if not isinstance(procs, list) or not all(isinstance(p, dict) for p in procs):
        raise ParseError(f'no "{TOOL_KEY}" list of processes: not rocprofv3\'s JSON output', source=str(path))
    return procs


def _num(value: object, default: int = -1) -> int:
    """An integer field, or a ``{"handle": n}`` / ``{"internal": n}`` object's number; ``default`` otherwise."""
    if isinstance(value, dict):
        value = value.get("handle", value.get("internal", value.get("value")))
    if isinstance(value, bool):
        return default
    if isinstance(value, int) and -(2**63) < value < 2**63:
        return value
    if isinstance(value, float) and np.isfinite(value) and value == int(value) and abs(value) < 2**63:
        return int(value)
    return default


def _time(value: object) -> int:
    return _num(value, NO_TIME) if value is not None else NO_TIME


def _records(proc: dict, kind: str) -> list[dict]:
    recs = proc.get("buffer_records")
    recs = recs.get(kind) if isinstance(recs, dict) else None
    return [r for r in recs if isinstance(r, dict)] if isinstance(recs, list) else []


def _op_names(proc: dict) -> dict[int, tuple[str, list]]:
    """Buffer kind number -> (kind name, operation names), from ``strings.buffer_records``."""
    strings = proc.get("strings")
    table = strings.get("buffer_records") if isinstance(strings, dict) else None
    out: dict[int, tuple[str, list]] = {}
    for i, entry in enumerate(table if isinstance(table, list) else []):
        if isinstance(entry, dict):
            ops = entry.get("operations")
            out[_num(entry.get("value"), i)] = (str(entry.get("kind", ""))[:NAME_CHARS],
                                                ops if isinstance(ops, list) else [])
    return out


def _json_part(path: Path, proc: dict, index: int) -> Part:
    """One process of a rocprofv3 JSON output."""
    meta = proc.get("metadata") if isinstance(proc.get("metadata"), dict) else {}
    pid = _num(meta.get("pid"), index)
    host = str(meta.get("hostname") or meta.get("node") or "")[:NAME_CHARS]
    names: list[str] = []
    codes: dict[str, int] = {}

    def code(name: str) -> int:
        name = name[:NAME_CHARS]
        if name not in codes:
            codes[name] = len(names)
            names.append(name)
        return codes[name]

    ops = _op_names(proc)

    def api_name(r: dict) -> tuple[str, str]:
        kind, table = ops.get(_num(r.get("kind")), ("", []))
        op = _num(r.get("operation"))
        name = table[op] if 0 <= op < len(table) and isinstance(table[op], str) else f"operation {op}"
        return kind, name

    host_rows = []
    for key, cls in (("hip_api", 0), ("rccl_api", 1)):
        for r in _records(proc, key):
            kind, name = api_name(r)
            row_cls = cls if cls == 1 or not kind or kind.startswith("HIP_") else -1
            host_rows.append((_time(r.get("start_timestamp")), _time(r.get("end_timestamp")), _num(r.get("thread_id")),
                              code(name), row_cls, _num(r.get("correlation_id"))))
    agents = proc.get("agents") if isinstance(proc.get("agents"), list) else []
    gpu_index = {}
    for a in agents:
        if isinstance(a, dict):
            gpu_index[_num(a.get("id"))] = _num(a.get("logical_node_type_id"), _num(a.get("node_id")))
    gpu_agents = {_num(a.get("id")) for a in agents if isinstance(a, dict)
                  and (_num(a.get("type")) == GPU_AGENT_TYPE or str(a.get("type")).upper() == "GPU")}
    symbols = proc.get("kernel_symbols")
    symbols = list(symbols.values()) if isinstance(symbols, dict) else symbols if isinstance(symbols, list) else []
    kernel_name = {}
    for s in symbols:
        if isinstance(s, dict):
            kernel_name[_num(s.get("kernel_id"))] = str(s.get("formatted_kernel_name") or s.get("kernel_name")
                                                        or "(unnamed)")
    gpu_rows = []
    for r in _records(proc, "kernel_dispatch"):
        info = r.get("dispatch_info") if isinstance(r.get("dispatch_info"), dict) else {}
        agent = _num(info.get("agent_id"))
        stream = _num(r.get("stream_id"), _num(info.get("queue_id")))
        gpu_rows.append((_time(r.get("start_timestamp")), _time(r.get("end_timestamp")), gpu_index.get(agent, agent),
                         stream, _num(r.get("correlation_id")), -1,
                         code(kernel_name.get(_num(info.get("kernel_id")), "(unnamed)")), 2))
    for r in _records(proc, "memory_copy"):
        _, name = api_name(r)
        dst, src = _num(r.get("dst_agent_id")), _num(r.get("src_agent_id"))
        agent = dst if dst in gpu_agents else src
        gpu_rows.append((_time(r.get("start_timestamp")), _time(r.get("end_timestamp")), gpu_index.get(agent, agent),
                         _num(r.get("stream_id")), _num(r.get("correlation_id")), _num(r.get("bytes")), code(name), 3))
    h = np.array(host_rows, dtype=np.int64).reshape(len(host_rows), 6)
    g = np.array(gpu_rows, dtype=np.int64).reshape(len(gpu_rows), 8)
    host_cols = {"start": h[:, 0], "end": h[:, 1], "proc": np.zeros(len(h), dtype=np.int64), "tid": h[:, 2],
                 "name": h[:, 3], "cls": h[:, 4], "link": h[:, 5], "arg_key": np.full(len(h), -1, dtype=np.int64)}
    gpu_cols = dict(zip(("start", "end", "device", "stream", "link", "bytes", "name", "kind"), g.T))
    gpu_cols["proc"] = np.zeros(len(g), dtype=np.int64)
    return Part(path, "correlation_id.internal", names, {0: (host, pid)},
                {k: np.ascontiguousarray(v) for k, v in host_cols.items()},
                {k: np.ascontiguousarray(gpu_cols[k]) for k in GPU_FIELDS})


def read_json_parts(path: Path, host_calls: bool = False) -> list[Part]:
    """Every process of a rocprofv3 JSON output; with ``host_calls``, one without HIP calls is refused first."""
    procs = _processes(path)
    if host_calls and not any(_records(p, "hip_api") for p in procs):
        raise TraceError(f"{path}: no HIP API calls in this rocprofv3 output, so there is no host side to put on a "
                         "path; profile with `rocprofv3 --hip-trace --kernel-trace --memory-copy-trace`")
    return [_json_part(path, p, i) for i, p in enumerate(procs)]


def json_kernel_table(path: str | os.PathLike[str]) -> "pd.DataFrame":
    """The kernel dispatches of a rocprofv3 JSON output as ``name``/``duration_ns`` rows (for the ranked table)."""
    import pandas as pd

    rows = []
    for part in read_json_parts(Path(path)):
        kern = part.gpu["kind"] == 2
        start, end = part.gpu["start"][kern], part.gpu["end"][kern]
        if ((start < 0) | (end < 0)).any():
            raise ParseError("kernel dispatches without a time in nanoseconds (missing or not an integer): the "
                             "file is damaged: profile again", source=str(path))
        rows.append(pd.DataFrame({"name": [part.names[i] for i in part.gpu["name"][kern]],
                                  "duration_ns": end - start}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame({"name": [], "duration_ns": []})


# --- CSV ----------------------------------------------------------------------------------------------------------

def _sibling(kernel_trace: Path, role: str) -> Path | None:
    prefix = kernel_trace.name[: len(kernel_trace.name) - len("kernel_trace.csv")]
    p = kernel_trace.with_name(f"{prefix}{role}.csv")
    return p if p.is_file() else None


def _ints(frame: "pd.DataFrame", col: str, default: int = -1) -> np.ndarray:
    import pandas as pd

    if col not in frame:
        return np.full(len(frame), default, dtype=np.int64)
    values = frame[col]
    if values.dtype == object:  # "Agent 2" -> 2
        values = values.astype(str).str.extract(r"(-?\d+)\s*$", expand=False)
    nums = pd.to_numeric(values, errors="coerce")
    ok = nums.between(-(2.0**62), 2.0**62)
    return np.where(ok, nums.fillna(0), default).astype(np.int64)


def _read_api_csv(path: Path) -> "pd.DataFrame":
    from .traces import _read_csv, _read_text

    frame, _ = _read_csv(_read_text(path, "rocprofv3 *_hip_api_trace.csv"), str(path), 0)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = {"function", "start_timestamp", "end_timestamp"} - set(frame.columns)
    if missing:
        raise ParseError(f"no {', '.join(sorted(missing))} column: not a rocprofv3 API trace CSV", source=str(path))
    return frame


def read_csv_parts(kernel_trace: Path, host_calls: bool = False) -> list[Part]:
    """The processes of one ``*_kernel_trace.csv`` with the ``*_hip_api_trace.csv`` (and
    ``*_memory_copy_trace.csv``) of the same prefix beside it."""
    import pandas as pd

    from .traces import read_kernel_trace

    api_path = _sibling(kernel_trace, "hip_api_trace")
    if host_calls and api_path is None:
        raise TraceError(f"{kernel_trace}: no {kernel_trace.name.replace('kernel_trace', 'hip_api_trace')} beside "
                         "it, so there is no host side to put on a path; profile with `rocprofv3 --hip-trace "
                         "--kernel-trace --memory-copy-trace --output-format csv`")
    kt = read_kernel_trace(kernel_trace)
    names: list[str] = []
    codes: dict[str, int] = {}

    def code_all(values) -> np.ndarray:
        out = np.empty(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            v = str(v)[:NAME_CHARS]
            if v not in codes:
                codes[v] = len(names)
                names.append(v)
            out[i] = codes[v]
        return out

    api = _read_api_csv(api_path) if api_path is not None else pd.DataFrame(
        columns=["domain", "function", "process_id", "thread_id", "correlation_id", "start_timestamp",
                 "end_timestamp"])
    domain = api["domain"].astype(str) if "domain" in api else pd.Series([""] * len(api))
    cls = np.where(domain.str.startswith("HIP_RUNTIME") | (domain == ""), 0,
                   np.where(domain.str.startswith("RCCL"), 1, -1)).astype(np.int64)
    pids = _ints(api, "process_id", 0)
    file_pid = _ints(pd.DataFrame({"p": [kernel_trace.name.split("_")[0]]}), "p", 0)[0]
    pid = int(pids[0]) if len(pids) else int(file_pid)
    host = {"start": _ints(api, "start_timestamp", NO_TIME), "end": _ints(api, "end_timestamp", NO_TIME),
            "proc": np.zeros(len(api), dtype=np.int64), "tid": _ints(api, "thread_id"),
            "name": code_all(api["function"]), "cls": cls, "link": _ints(api, "correlation_id"),
            "arg_key": np.full(len(api), -1, dtype=np.int64)}
    kt.columns = [str(c) for c in kt.columns]
    gpu = {"start": kt["start_ns"].to_numpy(np.int64), "end": kt["end_ns"].to_numpy(np.int64),
           "device": _ints(kt, "agent_id"), "stream": _ints(kt, "stream_id", -1), "link": _ints(kt, "correlation_id"),
           "bytes": np.full(len(kt), -1, dtype=np.int64), "name": code_all(kt["name"]),
           "kind": np.full(len(kt), 2, dtype=np.int64)}
    copy_path = _sibling(kernel_trace, "memory_copy_trace")
    if copy_path is not None:
        mc = _read_api_csv_copies(copy_path)
        copies = {"start": _ints(mc, "start_timestamp", NO_TIME), "end": _ints(mc, "end_timestamp", NO_TIME),
                  "device": np.where(mc.get("direction", pd.Series([""] * len(mc))).astype(str)
                                     .str.contains("HOST_TO_DEVICE|DEVICE_TO_DEVICE"),
                                     _ints(mc, "destination_agent_id"), _ints(mc, "source_agent_id")),
                  "stream": _ints(mc, "stream_id", -1), "link": _ints(mc, "correlation_id"),
                  "bytes": _ints(mc, "size", -1), "name": code_all(mc.get("direction", mc.get("kind", ""))),
                  "kind": np.full(len(mc), 3, dtype=np.int64)}
        gpu = {k: np.concatenate([gpu[k], copies[k]]) for k in gpu}
    gpu["proc"] = np.zeros(len(gpu["start"]), dtype=np.int64)
    return [Part(kernel_trace, "Correlation_Id", names, {0: ("", pid)}, host, {k: gpu[k] for k in GPU_FIELDS})]


def _read_api_csv_copies(path: Path) -> "pd.DataFrame":
    from .traces import _read_csv, _read_text

    frame, _ = _read_csv(_read_text(path, "rocprofv3 *_memory_copy_trace.csv"), str(path), 0)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    if not {"start_timestamp", "end_timestamp"} <= set(frame.columns):
        raise ParseError("no Start_Timestamp/End_Timestamp columns: not a rocprofv3 memory copy trace CSV",
                         source=str(path))
    return frame
