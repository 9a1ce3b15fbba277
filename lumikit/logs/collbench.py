"""rccl-tests / nccl-tests output (``all_reduce_perf`` & co.) as values: algorithm and bus bandwidth per size, the
ranks and the devices they ran on, and the measured bus bandwidth set against the link it crossed.

The format is nccl-tests' (RCCL's fork, ROCm/rccl-tests, prints the same): ``#``-comment lines with the
arguments, one ``#  Rank  N [Group G] Pid P on HOST device D [BUS] NAME`` line per rank, a two-line column header
(``size count type redop root time algbw busbw #wrong`` for out-of-place, then the same for in-place), one row per
message size, then ``# Out of bounds values : 0 OK`` and ``# Avg bus bandwidth : X``. The bandwidths are
nccl-tests' own (``doc/PERFORMANCE.md`` of NVIDIA/nccl-tests): ``algbw = size / time`` and ``busbw = algbw x``
the collective's correction factor (all-reduce ``2(n-1)/n``), GB/s of 1e9 bytes. Bus bandwidth is what compares
with a link's peak; :func:`link_for` picks the link of a LUMI-G node the ranks' GCDs share (``[hardware.links]``
of the site profile), from the PCI bus ids the output prints.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import LumikitError, ParseError
from ..files import load_json_bounded, regular_file
from ..site import Site, load_site
from ..text import printable
from .text import read_log_text

#: Largest output read (a full sweep of every size on 1,024 ranks is well under a megabyte).
MAX_BYTES = 64 << 20

_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d{1,9})\s+(?:Group\s+(?P<group>\d{1,9})\s+)?Pid\s+(?P<pid>\d{1,12})\s+on\s+"
                   r"(?P<host>\S{1,200})\s+device\s+(?P<device>\d{1,9})\s+\[(?P<bus>[^\]]{1,40})\]\s*"
                   r"(?P<name>.{0,200}?)\s*$")
_ARGS = re.compile(r"^#\s*nThread\s+(?P<threads>\d{1,9})\s+nGpus\s+(?P<gpus>\d{1,9})")
_STARTING = re.compile(r"Collective test starting:\s*(?P<name>\w{1,60})")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>\d{1,20}(?:\.\d{1,20})?(?:[eE][-+]?\d{1,3})?)"
                  r"\s*(?P<verdict>\w*)")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d{1,18})")
#: The collective names of rccl-tests' -Z csv / -Z json report files (the test's ``name``) -> the program.
_REPORT_NAMES = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf",
                 "alltoall": "alltoall_perf", "broadcast": "broadcast_perf", "reduce": "reduce_perf",
                 "sendrecv": "sendrecv_perf", "gather": "gather_perf", "scatter": "scatter_perf",
                 "hypercube": "hypercube_perf", "alltoallv": "alltoallv_perf"}
#: Bytes per element of the data types rccl-tests and nccl-tests print, to tell collectives apart by size / count.
_WORD = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8, "half": 2,
         "float": 4, "double": 8, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1}
_PROGRAM = re.compile(r"\b(?P<name>(?:all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv|"
                      r"hypercube|gather|scatter|alltoallv)_perf)\b")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
#: nccl-tests' bus bandwidth factor per test program (n = ranks), to check a row's busbw against its algbw.
BUS_FACTOR = {"all_reduce_perf": lambda n: 2 * (n - 1) / n, "reduce_scatter_perf": lambda n: (n - 1) / n,
              "all_gather_perf": lambda n: (n - 1) / n, "alltoall_perf": lambda n: (n - 1) / n,
              "all_gather_perf or alltoall_perf": lambda n: (n - 1) / n,
              "broadcast_perf": lambda n: 1.0, "reduce_perf": lambda n: 1.0, "sendrecv_perf": lambda n: 1.0}


@dataclass(frozen=True)
class RankDevice:
    """One rank of the test and the device it drove (``bus`` as printed, e.g. ``0000:c1:00`` or ``0xc1``)."""

    rank: int
    host: str
    device: int
    bus: str
    name: str
    pid: int


@dataclass(frozen=True)
class SizeRow:
    """One message size: out-of-place and in-place time (µs), algbw and busbw (GB/s); None where printed N/A."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None
    in_time_us: float | None
    in_algbw: float | None
    in_busbw: float | None
    in_wrong: int | None
    root: int | None = None

    @property
    def wrong_values(self) -> int:
        """Values the test's check found wrong at this size, out-of-place and in-place together (0 when unchecked)."""
        return (self.wrong or 0) + (self.in_wrong or 0)


@dataclass(frozen=True)
class CollectiveBenchmark:
    """One rccl-tests / nccl-tests run read from its output."""

    source: str
    test: str | None  # "all_reduce_perf", ... (from the output, else the file name), None when neither says
    ranks: tuple[RankDevice, ...]
    rows: tuple[SizeRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    gpus_per_thread: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    test_from: str | None = None  # where the test's name came from: "output", "file name", "table" (inferred)
    placement: str = "both"  # "both" (out-of-place and in-place columns), "in-place" (run with -O 0)
    time_column: str = "time"  # "cputime" with -C 1: the host's launch time, not the transfer's
    world: int | None = None  # ranks in the test where no "# Rank" lines say (a -Z csv/json report)
    avg_failed: bool = False  # "# Avg bus bandwidth : X FAILED" (below NCCL_TESTS_MIN_BW)

    @property
    def nodes(self) -> int:
        """Distinct hosts the ranks ran on (0 when the output lists no ranks)."""
        return len({r.host for r in self.ranks})

    @property
    def n_ranks(self) -> int:
        """Ranks of the test: the ``# Rank`` lines, else what a report file says (0 when neither)."""
        return len(self.ranks) or (self.world or 0)

    @property
    def peak(self) -> SizeRow | None:
        """The row with the highest bus bandwidth (out-of-place; in-place when the test ran with ``-O 0``): the
        figure to hold against a link."""
        rows = [r for r in self.rows if r.busbw is not None]
        if rows:
            return max(rows, key=lambda r: (r.busbw, r.size_bytes))
        rows = [r for r in self.rows if r.in_busbw is not None]
        return max(rows, key=lambda r: (r.in_busbw, r.size_bytes)) if rows else None

    @property
    def peak_busbw(self) -> float | None:
        """The peak row's bus bandwidth (GB/s), out-of-place where measured, else in-place."""
        row = self.peak
        return None if row is None else row.busbw if row.busbw is not None else row.in_busbw

    @property
    def wrong_rows(self) -> tuple[SizeRow, ...]:
        """Sizes where the test's own check found wrong values (``#wrong`` above 0)."""
        return tuple(r for r in self.rows if r.wrong_values > 0)

    @property
    def failed(self) -> bool:
        """Whether the output says the results were wrong (out-of-bounds values, ``#wrong`` above 0) or the
        average bus bandwidth failed its NCCL_TESTS_MIN_BW bound."""
        return bool(self.out_of_bounds) or bool(self.wrong_rows) or self.avg_failed

    def table(self):
        """The rows as a pandas table, one row per size (what a notebook shows)."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.rows]).set_index("size_bytes") if self.rows else pd.DataFrame()

    def to_dict(self) -> dict[str, Any]:
        peak = self.peak
        return {**asdict(self), "nodes": self.nodes, "n_ranks": self.n_ranks, "peak_busbw": self.peak_busbw,
                "peak_size_bytes": None if peak is None else peak.size_bytes, "failed": self.failed,
                "wrong_sizes": [r.size_bytes for r in self.wrong_rows]}


def _number(token: str) -> float | None:
    if token.upper() == "N/A" or len(token) > 40:
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _size(token: str) -> int | None:
    m = re.fullmatch(r"(\d{1,19})([KMG]?)", token)
    return int(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def _wrong(token: str) -> int | None:
    """``#wrong`` as printed: a count (``%g``, so ``1e+06`` for a million; an asterisk marks one past the
    threshold), or ``N/A`` when the run did not check (-c 0)."""
    try:
        value = _number(token.rstrip("*"))
    except ValueError:
        return None
    return int(value) if value is not None and 0 <= value < 2**63 else None


def _row(tokens: list[str], header: list[str], in_place_only: bool) -> SizeRow | None:
    """A data row laid out as the header says (``redop``/``root`` may be missing; RCCL may append columns); with
    ``-O 0`` the one block of columns is the in-place one."""
    where: dict[str, int] = {}
    for i, name in enumerate(header):
        where.setdefault(name, i)  # the in-place block repeats the out-of-place names: keep the first
    second = [i for i, name in enumerate(header) if name == "time"][1:]
    if second and where.get("time", 0) + 4 <= len(tokens) < second[0] + 4:
        # nccl-tests' trace replay leaves the out-of-place columns blank: the one block is in-place
        header, second, in_place_only = header[:second[0]], [], True
    if len(tokens) < len(header):
        return None
    size = _size(tokens[0])
    if size is None or not re.fullmatch(r"\d{1,19}", tokens[1]):
        return None
    try:
        t, a, b = (_number(tokens[where[k]]) for k in ("time", "algbw", "busbw"))
        wrong = _wrong(tokens[where["#wrong"]]) if "#wrong" in where else None
        if second:
            j = second[0]
            it, ia, ib = (_number(tokens[j + k]) for k in range(3))
            iw = _wrong(tokens[j + 3]) if j + 3 < len(header) else None
        else:
            it = ia = ib = iw = None
        root = int(tokens[where["root"]]) if "root" in where and re.fullmatch(r"-?\d{1,9}", tokens[where["root"]]) \
            else None
    except (ValueError, KeyError, IndexError):
        return None
    if in_place_only:
        t, a, b, wrong, it, ia, ib, iw = None, None, None, None, t, a, b, wrong
    return SizeRow(size_bytes=size, count=int(tokens[1]), dtype=tokens[2][:20],
                   redop=tokens[where["redop"]][:20] if "redop" in where else "", time_us=t, algbw=a, busbw=b,
                   wrong=wrong, in_time_us=it, in_algbw=ia, in_busbw=ib, in_wrong=iw, root=root)


def infer_test(rows: tuple[SizeRow, ...] | list[SizeRow], n_ranks: int) -> str | None:
    """The test program a table comes from, told by its columns as nccl-tests prints them (ROCm's rccl-tests never
    prints the name): the reduction (``none`` for data movement), the root (-1 for collectives without one) and
    bytes per element count (the element count is per rank for all-gather, reduce-scatter and all-to-all).
    All-gather and all-to-all print alike: both are named, and share one bus factor. None when the rows disagree
    or say nothing."""
    found = set()
    for r in rows:
        word = _WORD.get(r.dtype.lower())
        if word is None or r.count <= 0 or r.root is None:
            continue
        ratio = r.size_bytes / (r.count * word)
        reduces = r.redop.lower() not in ("none", "")
        if ratio == 1:
            found.add(("reduce_perf" if r.root >= 0 else "all_reduce_perf") if reduces else
                      ("broadcast_perf" if r.root >= 0 else "sendrecv_perf"))
        elif n_ranks > 1 and ratio == n_ranks and r.root < 0:
            found.add("reduce_scatter_perf" if reduces else "all_gather_perf or alltoall_perf")
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _report_rows(text: str, source: str) -> CollectiveBenchmark | None:
    """rccl-tests' own report file (``-x FILE -Z csv`` or ``-Z json``: one line per size and placement), or None
    when ``text`` is not one."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if not lines:
        return None
    records: list[dict[str, str]] = []
    if lines[0].lower().startswith("collective,"):
        keys = [k.strip().lower() for k in lines[0].split(",")]
        records = [dict(zip(keys, (v.strip() for v in ln.split(",")))) for ln in lines[1:]
                   if len(ln.split(",")) == len(keys)]
        records = [{("wrong" if k == "#wrong" else "name" if k == "collective" else k): v for k, v in r.items()}
                   for r in records]
    elif lines[0].startswith('{"name":'):
        for ln in lines:  # values are written unquoted ({"name":AllReduce, "size":8, ...}): not JSON, read by key
            pairs = re.findall(r'"(\w{1,30})":\s*([^,{}]{0,60})', ln)
            if pairs:
                records.append({k.lower(): v.strip() for k, v in pairs})
    else:
        return None
    by_size: dict[tuple[int, str, str], dict[str, Any]] = {}
    names, worlds = set(), set()
    for rec in records:
        size = _size(rec.get("size", ""))
        place = rec.get("inplace", "")
        if size is None or place not in ("0", "1"):
            continue
        try:
            values = {k: _number(rec.get(k, "N/A")) for k in ("time", "algbw", "busbw")}
        except ValueError:
            continue
        names.add(re.sub(r"[^a-z]", "", rec.get("name", "").lower()))
        world = rec.get("ranks") or rec.get("gpus")
        if world and re.fullmatch(r"\d{1,9}", world):
            worlds.add(int(world))
        row = by_size.setdefault((size, rec.get("type", "")[:20], rec.get("redop", "")[:20]), {})
        prefix = "in_" if place == "1" else ""
        row.update({f"{prefix}time_us": values["time"], f"{prefix}algbw": values["algbw"],
                    f"{prefix}busbw": values["busbw"], f"{prefix}wrong": _wrong(rec.get("wrong", "N/A"))})
    if not by_size:
        return None
    rows = tuple(SizeRow(size_bytes=size, count=0, dtype=dtype, redop=redop,
                         **{k: got.get(k) for k in ("time_us", "algbw", "busbw", "wrong", "in_time_us", "in_algbw",
                                                    "in_busbw", "in_wrong")})
                 for (size, dtype, redop), got in sorted(by_size.items()))
    test = _REPORT_NAMES.get(names.pop()) if len(names) == 1 else None
    placement = "in-place" if all(r.busbw is None and r.time_us is None for r in rows) else "both"
    notes = ["rccl-tests' report file (-Z csv/json): no ranks or devices listed, so no link is known"]
    if len(worlds) > 1:
        notes.append(f"the report mixes runs of {sorted(worlds)} ranks")
    return CollectiveBenchmark(source=source, test=test, ranks=(), rows=rows, avg_busbw=None, out_of_bounds=None,
                               notes=tuple(notes), test_from="output" if test else None, placement=placement,
                               world=max(worlds) if len(worlds) == 1 else None)


def _finite(value: Any) -> float | None:
    """A number of a JSON report (nccl-tests writes ``"nan"`` as a string), or None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and abs(value) < 1e18 else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63 else None


def _json_report(text: str, source: str) -> CollectiveBenchmark | None:
    """NVIDIA nccl-tests' JSON output file (``-J FILE``, nccl-tests 2.17 and later: ``config``, ``devices``,
    ``results`` with ``out_of_place``/``in_place`` objects, ``out_of_bounds``, ``average_bus_bandwidth``), or None
    when ``text`` is not one."""
    head = text.lstrip()[:4096]
    if not head.startswith("{") or '"results"' not in text:
        return None
    data = load_json_bounded(text, source, max_depth=16)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None
    rows, time_keys = [], set()
    for r in data["results"][:100_000]:
        if not isinstance(r, dict) or _count(r.get("size")) is None:
            continue
        values: dict[str, Any] = {}
        for prefix, key in (("", "out_of_place"), ("in_", "in_place")):
            block = r.get(key) if isinstance(r.get(key), dict) else {}
            time_key = "cpu_time" if "cpu_time" in block else "time"
            if block:
                time_keys.add(time_key)
            wrong = _finite(block.get("nwrong"))
            values.update({f"{prefix}time_us": _finite(block.get(time_key)), f"{prefix}algbw": _finite(block.get(
                "alg_bw")), f"{prefix}busbw": _finite(block.get("bus_bw")),
                f"{prefix}wrong": int(wrong) if wrong is not None and wrong >= 0 else None})
        root = str(r.get("root", "")).strip()
        rows.append(SizeRow(size_bytes=r["size"], count=_count(r.get("count")) or 0, dtype=str(r.get("type", ""))[:20],
                            redop=str(r.get("redop", ""))[:20], root=int(root) if re.fullmatch(r"-?\d{1,9}", root)
                            else None, **values))
    if not rows:
        return None
    ranks = []
    for d in data.get("devices") if isinstance(data.get("devices"), list) else ():
        if isinstance(d, dict) and all(_count(d.get(k)) is not None for k in ("rank", "device", "pid")):
            ranks.append(RankDevice(rank=d["rank"], host=str(d.get("hostname", "?"))[:200], device=d["device"],
                                    bus=str(d.get("device_hex", ""))[:40], name=str(d.get("device_info", ""))[:200],
                                    pid=d["pid"]))
    args = data.get("args") if isinstance(data.get("args"), list) else []
    m = _PROGRAM.search(Path(str(args[0])).name) if args and isinstance(args[0], str) else None
    bounds = data.get("out_of_bounds") if isinstance(data.get("out_of_bounds"), dict) else {}
    avg = data.get("average_bus_bandwidth") if isinstance(data.get("average_bus_bandwidth"), dict) else {}
    placement = "in-place" if all(r.busbw is None and r.time_us is None for r in rows) else "both"
    return CollectiveBenchmark(source=source, test=m.group("name") if m else None, ranks=tuple(ranks), rows=tuple(rows),
                               avg_busbw=_finite(avg.get("bandwidth")), out_of_bounds=_count(bounds.get("count")),
                               notes=("nccl-tests' JSON output file",), test_from="output" if m else None,
                               placement=placement, time_column="cputime" if time_keys == {"cpu_time"} else "time",
                               avg_failed=avg.get("okay") in (False, "false"))


def parse_collbench(text: str, source: str = "<text>") -> CollectiveBenchmark:
    """Read one rccl-tests / nccl-tests output (the first test when several were concatenated), in any of its
    modes: out-of-place and in-place columns, in-place only (rccl-tests' ``-O 0``, nccl-tests' trace replay), CPU
    time (``-C 1``), unchecked (``-c 0``: ``N/A`` in ``#wrong``), per-iteration statistics and time stamps (newer
    nccl-tests), rccl-tests' ``-Z csv``/``-Z json`` report file, or nccl-tests' JSON output file."""
    report = _json_report(text, source) or _report_rows(text, source)
    if report is not None:
        if report.test is None and (test := infer_test(report.rows, report.n_ranks)):
            report = replace(report, test=test, test_from="table")
        return report
    ranks: list[RankDevice] = []
    rows: list[SizeRow] = []
    header: list[str] | None = None
    test = avg = bounds = gpus = None
    avg_failed = in_place_only = False
    time_column = "time"
    place_label = ""
    notes: list[str] = []
    for line in text.replace("\r", "\n").split("\n"):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            if (m := _STARTING.search(s)) and test is None:
                test = m.group("name")
            elif m := _RANK.match(s):
                ranks.append(RankDevice(rank=int(m["rank"]), host=m["host"], device=int(m["device"]),
                                        bus=m["bus"].strip(), name=m["name"], pid=int(m["pid"])))
            elif m := _ARGS.match(s):
                if header is not None and rows:
                    notes.append("more than one test in the file: only the first is read")
                    break
                gpus = int(m["gpus"])
            elif m := _AVG.match(s):
                avg = _number(m["v"])
                avg_failed = m["verdict"] == "FAILED"
            elif m := _BOUNDS.match(s):
                bounds = int(m["n"])
            elif "in-place" in s:
                place_label = s
            elif "algbw" in s and "busbw" in s and "time" in s:
                header = ["time" if h == "cputime" else h for h in s.lstrip("#").split()]
                time_column = "cputime" if "cputime" in s.split() else "time"
                in_place_only = header.count("time") == 1 and "in-place" in place_label and \
                    "out-of-place" not in place_label
            continue
        if header is None:
            continue
        row = _row(s.split(), header, in_place_only)
        if row is not None:
            rows.append(row)
    test_from = "output" if test else None
    if test is None and (m := _PROGRAM.search(Path(source).name)):
        test, test_from = m.group("name"), "file name"
    if header is None or not rows:
        raise ParseError("no rccl-tests / nccl-tests table (a '#  size  count  type ... algbw  busbw' header "
                         "followed by rows); give the output of all_reduce_perf or another *_perf test",
                         source=source)
    if test is None and (test := infer_test(rows, len(ranks))):
        test_from = "table"
        notes.append(f"the output does not name its test (ROCm's rccl-tests does not print it): {test}, told by "
                     "the table's reduction, root and bytes per element")
    if text.lstrip().startswith(GENERATED_MARK):
        notes.insert(0, "generated")
    if gpus and gpus > 1:
        notes.append(f"{gpus} GPUs per thread (-g {gpus}): one process drives several devices")
    in_place_only = in_place_only or all(r.time_us is None and r.busbw is None for r in rows)
    if in_place_only:
        notes.append("in-place columns only (rccl-tests -O 0, or nccl-tests replaying a trace): the bandwidths are "
                     "in-place")
    if time_column == "cputime":
        notes.append("time is the host's launch time (-C 1); algbw and busbw are still from the GPU's time, so "
                     "they are not size / time")
    return CollectiveBenchmark(source=source, test=test, ranks=tuple(ranks), rows=tuple(rows), avg_busbw=avg,
                               out_of_bounds=bounds, gpus_per_thread=gpus, notes=tuple(notes), test_from=test_from,
                               placement="in-place" if in_place_only else "both", time_column=time_column,
                               avg_failed=avg_failed)


def read_collbench(path: str | os.PathLike[str]) -> CollectiveBenchmark:
    """Read an rccl-tests / nccl-tests output file (a regular file of at most :data:`MAX_BYTES`)."""
    p = Path(path)
    st = regular_file(p, "the output of an rccl-tests / nccl-tests program (all_reduce_perf ...)")
    if st.st_size > MAX_BYTES:
        raise LumikitError(f"{p}: {st.st_size / 2**20:,.0f} MiB is far more than an rccl-tests output; give the "
                           "output of one test")
    return parse_collbench(read_log_text(p), str(p))


# -- against the node's links ------------------------------------------------------------------------------
def _bus_byte(bus: str) -> int | None:
    """The PCI bus number of a printed id: ``0000:c1:00.0``, ``0000:c1:00``, ``c1:00.0`` or ``0xc1`` -> 0xc1."""
    text = bus.strip().lower()
    if text.startswith("0x"):
        try:
            return int(text, 16)
        except ValueError:
            return None
    parts = text.split(":")
    if len(parts) >= 2:
        try:
            return int(parts[-2] if len(parts) >= 3 else parts[0], 16)
        except ValueError:
            return None
    return None


def gcds_of(bench: CollectiveBenchmark, site: Site | str | None = "lumi") -> dict[int, int | None]:
    """Rank -> the physical GCD (0-7) it drove, from its PCI bus id and the site's ``[hardware] gcd_pci_bus``
    list; None where the id is not a GCD of the site. A job's device numbers restart at 0 (only its own GCDs are
    visible), so the bus id is what names the physical GCD."""
    s = load_site(site)
    table = {_bus_byte(b): i for i, b in enumerate(s.hardware.get("gcd_pci_bus", ()))}
    return {r.rank: table.get(_bus_byte(r.bus)) for r in bench.ranks}


@dataclass(frozen=True)
class LinkVerdict:
    """The link a test's traffic crossed, its peak, and the measured bus bandwidth as a share of it."""

    link: str | None  # a key of the site's [hardware.links], None when the output cannot tell
    peak_gb_s: float | None
    measured_busbw: float | None
    fraction: float | None
    gcds: tuple[int | None, ...]
    packages: tuple[int, ...]
    reason: str
    source: str = ""

    def text(self) -> str:
        if self.link is None or self.peak_gb_s is None:
            return f"link: not known ({self.reason})"
        share = "" if self.fraction is None else f" = {100 * self.fraction:.0f} % of it"
        if self.fraction is not None and self.fraction > 1:
            share += " (above the link's peak: the traffic did not cross this one link only, or the output is wrong)"
        got = "no bus bandwidth" if self.measured_busbw is None else f"peak busbw {self.measured_busbw:g} GB/s"
        return f"link: {self.link} ({self.peak_gb_s:g} GB/s per direction; {self.reason}); {got}{share}"


def link_for(bench: CollectiveBenchmark, site: Site | str | None = "lumi") -> LinkVerdict:
    """Which link of the node the ranks' traffic crossed, from where their GCDs sit: several nodes -> the
    Slingshot NIC; one package (GCD pair) -> the in-package link; different packages -> the link between them."""
    s = load_site(site)
    links = s.links
    measured = bench.peak_busbw
    gcds = gcds_of(bench, s) if bench.ranks else {}
    packages = sorted({s.node.gcd(g).package for g in gcds.values() if g is not None})

    def verdict(name: str | None, reason: str, count: int = 1, share: bool = True) -> LinkVerdict:
        link = links.get(name or "", {})
        peak = float(link["gb_s"]) * count if "gb_s" in link else None
        frac = measured / peak if measured is not None and peak and share else None
        return LinkVerdict(link=name if link else None, peak_gb_s=peak, measured_busbw=measured, fraction=frac,
                           gcds=tuple(gcds.get(r.rank) for r in bench.ranks), packages=tuple(packages),
                           reason=reason, source=str(link.get("source", "")))

    if not bench.ranks:
        return verdict(None, "the output lists no ranks")
    if any(g is None for g in gcds.values()):
        return verdict(None, "the bus ids are not GCDs of this site's profile (another machine?), so which links "
                             "the ranks crossed is unknown")
    if bench.nodes > 1:
        # one NIC per MI250X: the ranks of a node use as many NICs as the packages their GCDs sit on
        per_node = {(r.host, s.node.gcd(gcds[r.rank]).package) for r in bench.ranks if gcds.get(r.rank) is not None}
        nics = max(1, len(per_node) // bench.nodes) if per_node else 1
        return verdict("slingshot_nic", f"{len(bench.ranks)} ranks on {bench.nodes} nodes: between nodes the "
                                        f"traffic crosses the Slingshot NICs, {nics} per node (one per MI250X "
                                        "the ranks use)", nics)
    if len(bench.ranks) < 2:
        return verdict(None, "one rank: no traffic between devices")
    if len(packages) == 1:
        return verdict("gcd_in_package", f"GCDs {sorted(set(gcds.values()))} share one MI250X (package "
                                         f"{packages[0]})")
    if len(set(gcds.values())) > 2:  # rings over several links at once: no one link's peak bounds busbw
        return verdict("gcd_between_packages", f"GCDs {sorted(set(gcds.values()))} sit on {len(packages)} MI250X "
                                               "packages: RCCL runs its rings over several links at once, so busbw "
                                               "is not held against one link's peak", share=False)
    return verdict("gcd_between_packages", f"GCDs {sorted(set(gcds.values()))} sit on {len(packages)} MI250X "
                                           "packages: the ring crosses a link between packages")


def describe(bench: CollectiveBenchmark, site: Site | str | None = "lumi") -> list[str]:
    """A few lines: the test, its ranks and devices, the peak bus bandwidth and the link it is held against, and
    every sign that the results were wrong."""
    peak = bench.peak
    named = {"output": "", "file name": " (named by the file name)", "table": " (told by the table)"}
    test = f"{bench.test}{named.get(bench.test_from or '', '')}" if bench.test else "test not named"
    lines = [f"{printable(bench.source)}: {printable(test)}, {len(bench.ranks)} ranks on {bench.nodes} "
             f"node(s), {len(bench.rows)} sizes"]
    if peak is not None:
        in_place = peak.busbw is None
        alg = peak.in_algbw if in_place else peak.algbw
        alg_text = "no algbw column" if alg is None else f"algbw {alg:g} GB/s"  # a report file may lack it
        lines.append(f"  peak busbw {bench.peak_busbw:g} GB/s ({alg_text}) at {peak.size_bytes:,} bytes"
                     + (" (in-place)" if in_place else ""))
    if bench.avg_busbw is not None:
        failed = " FAILED: below the NCCL_TESTS_MIN_BW bound" if bench.avg_failed else ""
        lines.append(f"  avg busbw over all sizes {bench.avg_busbw:g} GB/s{failed} (small sizes pull it down: read "
                     "the large ones)")
    if bench.out_of_bounds:
        lines.append(f"  {bench.out_of_bounds} values out of bounds: the results were wrong, not only slow")
    for r in bench.wrong_rows[:20]:
        where = ", ".join(f"{n} {label}" for n, label in ((r.wrong, "out-of-place"), (r.in_wrong, "in-place")) if n)
        lines.append(f"  WRONG RESULTS at {r.size_bytes:,} bytes: #wrong {where}")
    if bench.failed:
        lines.append("  the test's own check failed: the collective gave wrong results (or too little bandwidth); "
                     "do not use its numbers, rerun and look for a faulty GCD or link")
    lines.append("  " + link_for(bench, site).text())
    skipped = busbw_check_skipped(bench)
    if skipped:
        lines.append(f"  busbw check: skipped ({skipped})")
    lines += [f"  note: {printable(n)}" for n in bench.notes]
    return lines


def busbw_check_skipped(bench: CollectiveBenchmark) -> str | None:
    """Why :func:`check_busbw` cannot check this output (None when it can)."""
    if bench.test is None:
        return ("the test is not named and the table does not tell it; name the file after the program, e.g. "
                "all_reduce_perf.out")
    if bench.test not in BUS_FACTOR:
        return f"no bus factor known for {bench.test}"
    if bench.n_ranks < 2:
        return "fewer than two ranks listed"
    return None


def check_busbw(bench: CollectiveBenchmark) -> list[str]:
    """Rows whose bus bandwidth disagrees with algbw x the test's factor by more than rounding (a mislabelled or
    edited output); empty for a consistent one, and when :func:`busbw_check_skipped` says why it cannot check."""
    if busbw_check_skipped(bench):
        return []
    n = bench.n_ranks
    factor = BUS_FACTOR[bench.test or ""](n)
    out = []
    for r in bench.rows:
        for alg, bus, label in ((r.algbw, r.busbw, ""), (r.in_algbw, r.in_busbw, " (in-place)")):
            if alg is None or bus is None or alg < 1:
                continue
            expected = alg * factor
            if abs(expected - bus) > max(0.02 * bus, 0.02):
                out.append(f"{r.size_bytes} bytes{label}: busbw {bus:g} but algbw {alg:g} x {factor:.3f} = "
                           f"{expected:.2f}")
    return out


def links_table(site: Site | str | None = "lumi") -> Mapping[str, Mapping[str, Any]]:
    """The node's links and their peaks (the site profile's ``[hardware.links]``)."""
    return load_site(site).links


# -- generated outputs (labelled), for lessons and tests where no real LUMI output exists -------------------------
GENERATED_MARK = "# lumikit: GENERATED output in rccl-tests' format (a model, not a measurement)"


def synthesize(gcds: tuple[int, ...] = (0, 1), *, nodes: int = 1, site: Site | str | None = "lumi",
               efficiency: float = 0.8, latency_us: float = 20.0, min_bytes: int = 8,
               max_bytes: int = 1 << 30) -> str:
    """An ``all_reduce_perf`` output in rccl-tests' format for ``gcds`` on each of ``nodes`` nodes, from a plain
    model (time = latency + bytes moved / (efficiency x the link's peak)); its first line says GENERATED. For
    lessons that need the shape of an output where no real LUMI one is published."""
    s = load_site(site)
    buses = s.hardware.get("gcd_pci_bus", ())
    n = len(gcds) * nodes
    probe = CollectiveBenchmark(
        source="synth", test="all_reduce_perf", rows=(), avg_busbw=None, out_of_bounds=0,
        ranks=tuple(RankDevice(rank=k * len(gcds) + i, host=f"nid{5000 + k:06d}", device=i,
                               bus=buses[g] if g < len(buses) else "?", name="AMD Instinct MI250X", pid=1000 + i)
                    for k in range(nodes) for i, g in enumerate(gcds)))
    peak = link_for(probe, s).peak_gb_s or 25.0
    factor = BUS_FACTOR["all_reduce_perf"](n)
    lines = [GENERATED_MARK, "# Collective test starting: all_reduce_perf",
             f"# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: 2(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    lines += [f"#  Rank {r.rank:2d} Group  0 Pid {r.pid:6d} on {r.host} device {r.device:2d} [{r.bus[:12]}] "
              f"{r.name}" for r in probe.ranks]
    lines += ["#", "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)"]
    size, total = min_bytes, []
    while size <= max_bytes:
        t = latency_us + size * factor / (efficiency * peak * 1e3)  # GB/s = 1e3 bytes per µs
        alg = size / t / 1e3
        bus = alg * factor
        total.append(bus)
        cells = f"{size:12d}  {size // 4:12d}     float     sum      -1  {t:7.1f}  {alg:6.2f}  {bus:6.2f}      0"
        lines.append(cells + f"  {t:7.1f}  {alg:6.2f}  {bus:6.2f}      0")
        size *= 2
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(total) / len(total):.4f}", "#"]
    return "\n".join(lines) + "\n"


def is_generated(text_or_bench: str | CollectiveBenchmark) -> bool:
    """Whether an output carries :data:`GENERATED_MARK` (a lesson labels it so)."""
    if isinstance(text_or_bench, CollectiveBenchmark):
        return "generated" in text_or_bench.notes
    return text_or_bench.lstrip().startswith(GENERATED_MARK)
