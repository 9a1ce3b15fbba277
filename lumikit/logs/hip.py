"""HIP runtime logs (``AMD_LOG_LEVEL=3`` or ``4``) -> a table of kernel launches and memory copies.

Each log record starts with ``:<level>:<source file>:<line>: <timestamp> us:`` followed by the process and
thread, in one of three layouts:

* ROCm 5/6: ``... us: 8088 : [tid:0x14b2015e9700] hipLaunchKernel ( ... )``
* ROCm 7:   ``... us: [pid:8088 tid: 0x14b2015e9700] hipLaunchKernel ( ... )``
* ROCm 4/5: ``... us: 120148: [7fb360ad23c0] hipFree ( ... )``

Copies of such logs are often hard-wrapped at the terminal width (records padded with blanks to a multiple
of the width and long records cut mid-word); :func:`unwrap` puts them back together before parsing.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import pandas as pd

from ..kernels import classify_kernel
from .text import bound_lines, read_log_text

# Patterns over log text: repeats bounded (numbers to 18 digits, so they fit in 64 bits), linear in the line.
HEADER = re.compile(r":(?P<level>\d):(?P<file>[^\s:]{1,256})\s{0,40}:\s{0,40}(?P<line>\d{1,18})\s{0,40}:\s{0,40}"
                    r"(?P<ts>\d{1,18}) us:")
_IDS = (
    ("rocm7", re.compile(r"\s{0,40}\[pid:\s{0,40}(?P<pid>\d{1,18})\s{1,40}tid:\s{0,40}(?P<tid>0x[0-9a-fA-F]{1,32})\]")),
    ("rocm6", re.compile(r"\s{0,40}(?P<pid>\d{1,18})\s{0,40}:\s{0,40}\[tid:\s{0,40}(?P<tid>0x[0-9a-fA-F]{1,32})\]")),
    ("rocm5", re.compile(r"\s{0,40}(?P<pid>\d{1,18})\s{0,40}:\s{0,40}\[(?P<tid>[0-9a-fA-F]{1,32})\]")),
)
_CALL = re.compile(r"^\s*(?P<api>hip\w+)\s*\((?P<args>.*)\)\s*$")
_RETURN = re.compile(r"^\s*(?P<api>hip\w+):\s*Returned\s+(?P<status>\w+)")
# The name is the rest of the record: ROCm 7 logs demangled names ("void at::native::kernel<4, ...>(int, ...)").
_SHADER = re.compile(r"ShaderName\s{0,40}:\s{0,40}(?P<name>\S.{0,8191})")
_DISPATCH = re.compile(r"Dispatch Header.{0,500}?grid=\[(?P<grid>[\d, ]{1,100})\],\s{0,40}"
                       r"workgroup=\[(?P<wg>[\d, ]{1,100})\]")
_LAUNCH_API = re.compile(r"^hip\w*Launch\w*$|^hipGraphLaunch$")
_DIRECTIONS = {"hipMemcpyHostToHost": "HtoH", "hipMemcpyHostToDevice": "HtoD", "hipMemcpyDeviceToHost": "DtoH",
               "hipMemcpyDeviceToDevice": "DtoD", "hipMemcpyDefault": "default",
               "hipMemcpyDeviceToDeviceNoCU": "DtoD"}
_DIRECTION_BY_NUMBER = {0: "HtoH", 1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "default"}
_MEMSET_WIDTH = {"D8": 1, "D16": 2, "D32": 4}

#: The columns of the launch table, in order.
COLUMNS = ["log_line", "ts_us", "pid", "tid", "api", "kind", "name", "kernel_class", "grid", "workgroup",
           "bytes", "direction", "stream", "status", "api_us"]


@dataclass(frozen=True)
class HipRecord:
    """One record of a HIP log: level, where it was logged, when (µs), by whom, and the message."""

    log_line: int
    level: int
    file: str
    ts_us: int
    pid: int | None
    tid: str | None
    layout: str | None
    message: str


def _wrap_width(lines: list[str]) -> int | None:
    """The terminal width a log was hard-wrapped at, or None when it was not wrapped."""
    cut = [len(lines[i]) for i in range(len(lines) - 1)
           if len(lines[i]) >= 80 and lines[i + 1].strip() and not HEADER.match(lines[i + 1])
           and HEADER.search(lines[i]) and not lines[i][-1].isspace()]
    if not cut:
        return None
    width = math.gcd(*cut)
    if width < 80 or (len(cut) == 1 and width < 160):
        return None
    return width


def unwrap(text: str) -> list[tuple[int, str]]:
    """Logical lines of a HIP log with their first physical line number, hard-wrapped pieces joined again."""
    lines = bound_lines(text.replace("\r\n", "\n")).split("\n")
    width = _wrap_width(lines)
    out: list[tuple[int, str]] = []
    for no, line in enumerate(lines, start=1):
        if (width and out and not HEADER.match(line) and line.strip()
                and len(lines[no - 2]) % width == 0 and HEADER.search(out[-1][1])):
            out[-1] = (out[-1][0], out[-1][1] + line)
        else:
            out.append((no, line))
    return out


def hip_records(text: str) -> list[HipRecord]:
    """Every HIP log record in ``text``; several records on one line (wrapped copies) are split apart."""
    records = []
    for line_no, line in unwrap(text):
        starts = list(HEADER.finditer(line))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
            rest = line[m.end():end]
            pid = tid = layout = None
            for name, ids in _IDS:
                idm = ids.match(rest)
                if idm:
                    pid, tid, layout = int(idm.group("pid")), idm.group("tid").lower(), name
                    if not tid.startswith("0x"):
                        tid = "0x" + tid
                    rest = rest[idm.end():]
                    break
            records.append(HipRecord(line_no, int(m.group("level")), m.group("file"), int(m.group("ts")),
                                     pid, tid, layout, rest.strip()))
    return records


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments (commas inside ``{}``/``()``/``[]`` stay); at most 8 KiB are read."""
    out, depth, cur = [], 0, []
    for ch in args[:8192]:
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur and "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_MAX_COUNT = 2**48  # bytes or sizes beyond 256 TiB are damage, not a copy (and sums of them stay exact)


def _int(text: str) -> int | None:
    """An integer argument (decimal or 0x...) below :data:`_MAX_COUNT`, else None."""
    try:
        value = int(text[:40], 0)
    except (TypeError, ValueError):
        return None
    return value if -_MAX_COUNT < value < _MAX_COUNT else None


def _stream(args: list[str]) -> str | None:
    for a in args:
        m = re.match(r"(?:stream|char array)\s*:\s*(\S+)", a)
        if m:
            return m.group(1)
    return None


def _copy_row(api: str, args: list[str]) -> dict[str, object]:
    """Bytes, direction and stream of a hipMemcpy*/hipMemset* call from its logged arguments."""
    kind = "memset" if api.startswith("hipMemset") else "copy"
    nbytes = direction = None
    if kind == "memset":
        nbytes = _int(args[2]) if len(args) > 2 else None
        width = next((w for k, w in _MEMSET_WIDTH.items() if k in api), 1)
        nbytes = nbytes * width if nbytes is not None else None
    else:
        for a in args:
            if a in _DIRECTIONS:
                direction = _DIRECTIONS[a]
        m = re.search(r"(HtoD|DtoH|DtoD|HtoH|HtoA|AtoH|DtoA|AtoD)", api)
        if direction is None and m:
            direction = m.group(1)
        if "2D" in api or "3D" in api:
            sizes = [_int(a) for a in args]
            if "2D" in api and len(sizes) >= 6 and sizes[4] is not None and sizes[5] is not None:
                nbytes = sizes[4] * sizes[5]
        elif len(args) > 2:
            nbytes = _int(args[2])
        if direction is None and len(args) > 3 and _int(args[3]) in _DIRECTION_BY_NUMBER:
            direction = _DIRECTION_BY_NUMBER[_int(args[3])]
    return {"kind": kind, "bytes": nbytes, "direction": direction, "stream": _stream(args),
            "kernel_class": "memory"}


def _triple(text: str) -> str:
    return ",".join(p.strip() for p in text.split(","))


def parse_hip_log(text: str, source: str = "<text>") -> pd.DataFrame:
    """The kernel launches and memory copies of a HIP log given as text (see :func:`read_hip_log`)."""
    records = hip_records(text)
    rows: list[dict[str, object]] = []
    open_kernel: dict[object, int] = {}     # thread -> row of its latest launch still missing its kernel name
    open_call: dict[tuple[object, str], int] = {}  # (thread, api) -> row awaiting "Returned"
    errors = []
    for rec in records:
        thread = (rec.pid, rec.tid)
        if rec.level == 1:
            errors.append({"log_line": rec.log_line, "message": rec.message})
        call = _CALL.match(rec.message)
        if call and (_LAUNCH_API.match(call.group("api")) or call.group("api").startswith(("hipMemcpy", "hipMemset"))):
            api, args = call.group("api"), _split_args(call.group("args"))
            if api.endswith("HostFunc"):
                continue
            row: dict[str, object] = {"log_line": rec.log_line, "ts_us": rec.ts_us, "pid": rec.pid,
                                      "tid": rec.tid, "api": api, "name": None, "grid": None, "workgroup": None,
                                      "bytes": None, "direction": None, "stream": None, "status": None,
                                      "api_us": None}
            if _LAUNCH_API.match(api):
                row.update(kind="kernel", kernel_class=None, stream=_stream(args))
                braces = [a for a in args if a.startswith("{")]
                if len(braces) >= 2:  # hipLaunchKernel ( f, {grid blocks}, {block}, ... ) until the dispatch says
                    row["workgroup"] = _triple(braces[1].strip("{}"))
                open_kernel[thread] = len(rows)
            else:
                row.update(_copy_row(api, args))
            open_call[(thread, api)] = len(rows)
            rows.append(row)
            continue
        m = _SHADER.search(rec.message)
        if m and thread in open_kernel:
            rows[open_kernel[thread]]["name"] = m.group("name").rstrip()
            continue
        m = _DISPATCH.search(rec.message)
        if m and thread in open_kernel:
            target = rows[open_kernel[thread]]
            target["grid"], target["workgroup"] = _triple(m.group("grid")), _triple(m.group("wg"))
            continue
        m = _RETURN.match(rec.message)
        if m and (thread, m.group("api")) in open_call:
            target = rows[open_call.pop((thread, m.group("api")))]
            target["status"] = m.group("status")
            target["api_us"] = rec.ts_us - int(target["ts_us"])
            if target["kind"] == "kernel":
                open_kernel.pop(thread, None)
    table = pd.DataFrame(rows, columns=COLUMNS)
    kernels = table["kind"] == "kernel"
    table.loc[kernels, "kernel_class"] = [classify_kernel(n if isinstance(n, str) else "")
                                          for n in table.loc[kernels, "name"]]
    for col in ("bytes", "api_us", "pid"):
        table[col] = table[col].astype("Int64")
    layouts = sorted({r.layout for r in records if r.layout})
    table.attrs.update(source=source, records=len(records), layout="+".join(layouts) or None, errors=errors)
    return table


def read_hip_log(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read an ``AMD_LOG_LEVEL=3/4`` log: one row per kernel launch, copy or memset, in log order.

    Columns: ``log_line`` (physical line where the call was logged), ``ts_us``, ``pid``, ``tid``, ``api``,
    ``kind`` (kernel / copy / memset), ``name`` (the kernel's symbol from the following ``ShaderName`` record;
    missing below level 3), ``kernel_class``, ``grid`` and ``workgroup`` (work-items per dimension from the
    dispatch header, "x,y,z"), ``bytes``, ``direction`` (HtoD, DtoH, DtoD, ...), ``stream``, ``status`` (from
    the matching "Returned" record) and ``api_us`` (time from call to return). ``table.attrs`` holds
    ``records`` (all log records), ``layout`` (rocm5 / rocm6 / rocm7) and ``errors`` (level-1 records).
    """
    return parse_hip_log(read_log_text(path), source=str(path))


def hip_summary(table: pd.DataFrame, top: int = 10) -> dict[str, object]:
    """Counts a reader wants first: launches, copies and bytes by direction, the most launched kernels."""
    kernels = table[table["kind"] == "kernel"]
    copies = table[table["kind"].isin(["copy", "memset"])]
    names = kernels["name"].fillna("(name not logged)")
    by_direction = copies.groupby(copies["direction"].fillna("?"))["bytes"].agg(["count", "sum"])
    failed = table[table["status"].notna() & (table["status"] != "hipSuccess")]
    return {
        "source": table.attrs.get("source"),
        "layout": table.attrs.get("layout"),
        "records": table.attrs.get("records"),
        "launches": int(len(kernels)),
        "copies": int((table["kind"] == "copy").sum()),
        "memsets": int((table["kind"] == "memset").sum()),
        "bytes_by_direction": {d: {"calls": int(r["count"]), "bytes": int(r["sum"])}
                               for d, r in by_direction.iterrows()},
        "kernel_classes": {c: int(n) for c, n in kernels["kernel_class"].value_counts().items()},
        "top_kernels": [{"name": n, "launches": int(c)} for n, c in names.value_counts().head(top).items()],
        "failed_calls": [{"log_line": int(r["log_line"]), "api": r["api"], "status": r["status"]}
                         for _, r in failed.iterrows()],
        "errors": list(table.attrs.get("errors") or []),
    }
