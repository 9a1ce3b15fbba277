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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import LumikitError, ParseError
from ..site import Site, load_site
from .text import read_log_text

#: Largest output read (a full sweep of every size on 1,024 ranks is well under a megabyte).
MAX_BYTES = 64 << 20

_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+"
                   r"(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]{1,40})\]\s*(?P<name>.{0,200}?)\s*$")
_ARGS = re.compile(r"^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)")
_STARTING = re.compile(r"Collective test starting:\s*(?P<name>\w+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>[\d.]+)")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)")
_PROGRAM = re.compile(r"\b(?P<name>(?:all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv|"
                      r"hypercube|gather|scatter|alltoallv)_perf)\b")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
#: nccl-tests' bus bandwidth factor per test program (n = ranks), to check a row's busbw against its algbw.
BUS_FACTOR = {"all_reduce_perf": lambda n: 2 * (n - 1) / n, "reduce_scatter_perf": lambda n: (n - 1) / n,
              "all_gather_perf": lambda n: (n - 1) / n, "alltoall_perf": lambda n: (n - 1) / n,
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

    @property
    def nodes(self) -> int:
        """Distinct hosts the ranks ran on (0 when the output lists no ranks)."""
        return len({r.host for r in self.ranks})

    @property
    def peak(self) -> SizeRow | None:
        """The row with the highest out-of-place bus bandwidth: the figure to hold against a link."""
        rows = [r for r in self.rows if r.busbw is not None]
        return max(rows, key=lambda r: (r.busbw, r.size_bytes)) if rows else None

    def table(self):
        """The rows as a pandas table, one row per size (what a notebook shows)."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.rows]).set_index("size_bytes") if self.rows else pd.DataFrame()

    def to_dict(self) -> dict[str, Any]:
        peak = self.peak
        return {**asdict(self), "nodes": self.nodes, "peak_busbw": None if peak is None else peak.busbw,
                "peak_size_bytes": None if peak is None else peak.size_bytes}


def _number(token: str) -> float | None:
    if token.upper() == "N/A":
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _size(token: str) -> int | None:
    m = re.fullmatch(r"(\d+)([KMG]?)", token)
    return int(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def _wrong(token: str) -> int | None:
    return int(token) if token.isdigit() else None


def _row(tokens: list[str], header: list[str]) -> SizeRow | None:
    """A data row laid out as the header says (``redop``/``root`` may be missing; RCCL may append columns)."""
    if len(tokens) < len(header):
        return None
    size = _size(tokens[0])
    if size is None or not tokens[1].isdigit():
        return None
    where: dict[str, int] = {}
    for i, name in enumerate(header):
        where.setdefault(name, i)  # the in-place block repeats the out-of-place names: keep the first
    second = [i for i, name in enumerate(header) if name == "time"][1:]
    try:
        t, a, b = (_number(tokens[where[k]]) for k in ("time", "algbw", "busbw"))
        wrong = _wrong(tokens[where["#wrong"]]) if "#wrong" in where else None
        if second:
            j = second[0]
            it, ia, ib = (_number(tokens[j + k]) for k in range(3))
            iw = _wrong(tokens[j + 3]) if j + 3 < len(header) else None
        else:
            it = ia = ib = iw = None
    except (ValueError, KeyError, IndexError):
        return None
    return SizeRow(size_bytes=size, count=int(tokens[1]), dtype=tokens[2],
                   redop=tokens[where["redop"]] if "redop" in where else "", time_us=t, algbw=a, busbw=b,
                   wrong=wrong, in_time_us=it, in_algbw=ia, in_busbw=ib, in_wrong=iw)


def parse_collbench(text: str, source: str = "<text>") -> CollectiveBenchmark:
    """Read one rccl-tests / nccl-tests output (the first test when several were concatenated)."""
    ranks: list[RankDevice] = []
    rows: list[SizeRow] = []
    header: list[str] | None = None
    test = avg = bounds = gpus = None
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
                avg = float(m["v"])
            elif m := _BOUNDS.match(s):
                bounds = int(m["n"])
            elif "algbw" in s and "busbw" in s and "time" in s:
                header = s.lstrip("#").split()
            continue
        if header is None:
            continue
        tokens = s.split()
        row = _row(tokens, header)
        if row is not None:
            rows.append(row)
    if test is None and (m := _PROGRAM.search(Path(source).name)):
        test = m.group("name")
    if header is None or not rows:
        raise ParseError("no rccl-tests / nccl-tests table (a '#  size  count  type ... algbw  busbw' header "
                         "followed by rows); give the output of all_reduce_perf or another *_perf test",
                         source=source)
    if text.lstrip().startswith(GENERATED_MARK):
        notes.insert(0, "generated")
    if gpus and gpus > 1:
        notes.append(f"{gpus} GPUs per thread (-g {gpus}): one process drives several devices")
    return CollectiveBenchmark(source=source, test=test, ranks=tuple(ranks), rows=tuple(rows), avg_busbw=avg,
                               out_of_bounds=bounds, gpus_per_thread=gpus, notes=tuple(notes))


def read_collbench(path: str | os.PathLike[str]) -> CollectiveBenchmark:
    """Read an rccl-tests / nccl-tests output file (a regular file of at most :data:`MAX_BYTES`)."""
    p = Path(path)
    if p.is_file() and p.stat().st_size > MAX_BYTES:
        raise LumikitError(f"{p}: {p.stat().st_size / 2**20:.0f} MiB is far more than an rccl-tests output; give the "
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
        got = "no bus bandwidth" if self.measured_busbw is None else f"peak busbw {self.measured_busbw:g} GB/s"
        return f"link: {self.link} ({self.peak_gb_s:g} GB/s per direction; {self.reason}); {got}{share}"


def link_for(bench: CollectiveBenchmark, site: Site | str | None = "lumi") -> LinkVerdict:
    """Which link of the node the ranks' traffic crossed, from where their GCDs sit: several nodes -> the
    Slingshot NIC; one package (GCD pair) -> the in-package link; different packages -> the link between them."""
    s = load_site(site)
    links = s.links
    peak_row = bench.peak
    measured = None if peak_row is None else peak_row.busbw
    gcds = gcds_of(bench, s) if bench.ranks else {}
    packages = sorted({s.node.gcd(g).package for g in gcds.values() if g is not None})

    def verdict(name: str | None, reason: str, count: int = 1) -> LinkVerdict:
        link = links.get(name or "", {})
        peak = float(link["gb_s"]) * count if "gb_s" in link else None
        frac = measured / peak if measured is not None and peak else None
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
    more = ("; with more than two GCDs RCCL runs rings over several such links, so busbw may pass one link's "
            "peak" if len(set(gcds.values())) > 2 else "")
    return verdict("gcd_between_packages", f"GCDs {sorted(set(gcds.values()))} sit on {len(packages)} MI250X "
                                           f"packages: the ring crosses a link between packages{more}")


def describe(bench: CollectiveBenchmark, site: Site | str | None = "lumi") -> list[str]:
    """A few lines: the test, its ranks and devices, the peak bus bandwidth and the link it is held against."""
    peak = bench.peak
    lines = [f"{bench.source}: {bench.test or 'test not named'}, {len(bench.ranks)} ranks on {bench.nodes} "
             f"node(s), {len(bench.rows)} sizes"]
    if peak is not None:
        lines.append(f"  peak busbw {peak.busbw:g} GB/s (algbw {peak.algbw:g} GB/s) at {peak.size_bytes:,} bytes")
    if bench.avg_busbw is not None:
        lines.append(f"  avg busbw over all sizes {bench.avg_busbw:g} GB/s (small sizes pull it down: read the "
                     "large ones)")
    if bench.out_of_bounds:
        lines.append(f"  {bench.out_of_bounds} values out of bounds: the results were wrong, not only slow")
    lines.append("  " + link_for(bench, site).text())
    lines += [f"  note: {n}" for n in bench.notes]
    return lines


def check_busbw(bench: CollectiveBenchmark) -> list[str]:
    """Rows whose bus bandwidth disagrees with algbw x the test's factor by more than rounding (a mislabelled or
    edited output); empty for a consistent one."""
    factor = BUS_FACTOR.get(bench.test or "")
    n = len(bench.ranks)
    if factor is None or n < 2:
        return []
    out = []
    for r in bench.rows:
        if r.algbw is None or r.busbw is None or r.algbw < 1:
            continue
        expected = r.algbw * factor(n)
        if abs(expected - r.busbw) > max(0.02 * r.busbw, 0.02):
            out.append(f"{r.size_bytes} bytes: busbw {r.busbw:g} but algbw {r.algbw:g} x {factor(n):.3f} = "
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
