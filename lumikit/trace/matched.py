"""Collectives matched across ranks, without comparing the clocks of different hosts.

Every rank's trace holds its own half of each collective: a communication kernel whose duration includes the
time the rank waited for the others. Matching the same call on every rank (by process group, and by Kineto's
``Seq`` where the trace has it, else by its order in the group on that rank) gives, per collective:

* the true communication time: the shortest duration over the ranks (the last rank to arrive waited for nobody);
* each rank's wait: its duration minus that;
* the rank that arrived last (the shortest duration) and the arrival skew (longest minus shortest duration).

All of this uses durations only, each measured on one rank's own clock: ranks leave a collective together, so a
duration is the time from a rank's arrival to the common end. The same fact aligns the clocks: the median
difference of the collectives' end times estimates each rank's clock offset (reported, never needed for the
numbers above). Reading a rank is :func:`rank_calls` (one file at a time, its communication events only, a few kB
kept per rank), so many large ranks fit in the memory of one; :func:`match_collectives` reduces the per-rank
lists. Bus bandwidth is computed from the true time (nccl-tests' factors, :mod:`lumikit.trace.comms`).
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Iterable, Mapping

import orjson

from ..errors import TraceError
from .comms import bus_bandwidth, collective_of_kernel, dtype_bytes, is_comm_kernel, normalise_collective
from .loader import find_trace_files
from .reader import TraceStream

if TYPE_CHECKING:
    import pandas as pd

#: How timing across ranks is read (said in every result).
METHOD = ("durations only: each rank's kernel time runs from its arrival to the common end (ranks leave a "
          "collective together), so no timestamps of different hosts are compared; clock offsets are estimated by "
          "aligning collective ends")
#: A collective counts a rank as last only when the skew is at least this (µs) and this share of the true time.
SKEW_MIN_US, SKEW_MIN_SHARE = 10.0, 0.05


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ranks_list(value: object) -> list[int] | None:
    """``"[0, 1, 2]"`` (as Kineto writes it) or a list -> [0, 1, 2]; None when unreadable or empty."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list) and value and all(_int(v) is not None for v in value):
        return [int(v) for v in value]
    return None


def _call(kernel: dict, op: dict | None) -> dict:
    """One collective call of a rank from its kernel (and the record_param_comms op with its External id)."""
    args = kernel.get("args") if isinstance(kernel.get("args"), dict) else {}
    fields = args if "Collective name" in args or op is None else {**(op.get("args") or {}), **args}
    collective = normalise_collective(fields.get("Collective name")) or collective_of_kernel(kernel["name"])
    n_in, n_out = _int(fields.get("In msg nelems")), _int(fields.get("Out msg nelems"))
    elements = max((v for v in (n_in, n_out) if v is not None), default=None)
    dtype = fields.get("dtype") if isinstance(fields.get("dtype"), str) else None
    size = dtype_bytes(dtype)
    seq = _int(fields.get("Seq", fields.get("seq")))
    splits = _ranks_list(fields.get("In split size"))
    return {"group": str(fields.get("Process Group Name") or "default"), "seq": seq, "collective": collective,
            "elements": elements, "in_elements": n_in, "dtype": dtype,
            "bytes": elements * size if elements is not None and size else None,
            "group_size": _int(fields.get("Group size")), "group_ranks": _ranks_list(fields.get("Process Group Ranks")),
            "splits": splits, "device": _int(args.get("device")), "kernel": kernel["name"], "ts": float(kernel["ts"]),
            "dur": float(kernel.get("dur") or 0.0)}


def rank_calls(rank: int, path: Path | str, *, salvage: bool = False) -> dict:
    """The collective calls of one rank's trace file (its communication kernels only), with the host it ran on
    where the file names one: ``{"rank", "file", "host", "calls": [...]}`` (JSON-ready, a few kB)."""
    stream = TraceStream(Path(path), salvage=salvage)
    kernels, ops = [], {}
    for chunk in stream.chunks():
        for ev in _events_with(chunk, _NEEDLES, path):
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            name = ev.get("name")
            if name == "record_param_comms" and isinstance(ev.get("args"), dict):
                ops[ev["args"].get("External id")] = ev
            elif ev.get("cat") == "kernel" and isinstance(name, str) and is_comm_kernel(name) and \
                    isinstance(ev.get("ts"), (int, float)):
                kernels.append(ev)
    calls = []
    for k in sorted(kernels, key=lambda e: e["ts"]):
        args = k.get("args") if isinstance(k.get("args"), dict) else {}
        calls.append(_call(k, ops.get(args.get("External id"))))
    meta = stream.metadata
    host = meta.get("hostname") if isinstance(meta.get("hostname"), str) else None
    info = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    sized_ops = any(isinstance(op.get("args"), dict) and ("In msg nelems" in op["args"] or "Input Dims" in op["args"])
                    for op in ops.values())
    from .synth import GENERATED_KEY

    return {"rank": rank, "file": str(path), "host": host, "world": _int(info.get("world_size")),
            "sized_ops": sized_ops, "generated": GENERATED_KEY in meta, "calls": calls}


def calls_table(info: dict) -> "pd.DataFrame | None":
    """One rank's calls as :func:`lumikit.trace.comms.collective_table` rows, or None when a call carries no size
    but the rank's ``record_param_comms`` ops do (then the launch-correlation join of ``collective_table``, which
    loads the whole rank, may find it)."""
    import pandas as pd

    from .comms import COLUMNS

    rows = []
    for c in info["calls"]:
        if c["bytes"] is None and info.get("sized_ops", True):
            return None
        group = c["group_size"] or (2 if c["collective"] == "send_recv" else info.get("world"))
        algbw, busbw = bus_bandwidth(c["collective"] or "", c["bytes"] or 0, c["dur"] * 1e-6, group or 0)
        rows.append({"rank": info["rank"], "device": c["device"] or 0, "ts": c["ts"], "dur_us": c["dur"],
                     "collective": c["collective"], "kernel": c["kernel"], "dtype": c["dtype"],
                     "elements": c["elements"], "bytes": c["bytes"], "group_size": group, "algbw_gb_s": algbw,
                     "busbw_gb_s": busbw})
    return pd.DataFrame(rows, columns=COLUMNS)


_NEEDLES = (b"ccl", b"record_param_comms")
#: Where an event starts (Kineto and lumikit write ``"ph"`` first): only the events around a needle are decoded.
_EVENT_START = re.compile(rb'\{\s*"ph"\s*:')


def _events_with(chunk: bytes, needles: tuple[bytes, ...], path: Path | str) -> list:
    """The events of a chunk that contain a needle, decoding only those where events start with ``"ph"`` (else
    the whole chunk): a pass costs little more than reading the file."""
    hits = []
    for needle in needles:
        at = chunk.find(needle)
        while at >= 0:
            hits.append(at)
            at = chunk.find(needle, at + 1)
    if not hits:
        return []
    starts = [m.start() for m in _EVENT_START.finditer(chunk)]
    if starts:
        wanted = sorted({bisect_right(starts, h) - 1 for h in hits} - {-1})
        try:
            return [orjson.loads(chunk[starts[i]:starts[i + 1] if i + 1 < len(starts) else len(chunk)]
                                 .rstrip().rstrip(b",")) for i in wanted]
        except orjson.JSONDecodeError:
            pass  # a writer of another shape: decode the chunk
    try:
        return orjson.loads(b"[" + chunk + b"]")
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"{path}: malformed trace events ({exc})") from None


def collect_calls(path: Path | str, *, rank_map: Mapping[int, str | Path] | None = None,
                  salvage: bool = False) -> dict[int, dict]:
    """:func:`rank_calls` of every rank under ``path``, one file in memory at a time."""
    return {rank: rank_calls(rank, file, salvage=salvage)
            for rank, file in find_trace_files(path, rank_map).items()}


# -- the reduction -----------------------------------------------------------------------------------------
def _keyed(per_rank: Mapping[int, dict]) -> tuple[dict[tuple[str, int], dict[int, dict]], str]:
    """Calls by (group, index) and rank: Kineto's ``Seq`` where every call of a group has one, else the call's
    order in its group on that rank."""
    groups: dict[str, list[tuple[int, dict]]] = {}
    for rank, info in per_rank.items():
        for c in info["calls"]:
            groups.setdefault(c["group"], []).append((rank, c))
    out: dict[tuple[str, int], dict[int, dict]] = {}
    hows = set()
    for group, calls in groups.items():
        by_seq = all(c["seq"] is not None for _, c in calls)
        hows.add("sequence number" if by_seq else "order in the group")
        counter: dict[int, int] = {}
        for rank, c in sorted(calls, key=lambda rc: (rc[0], rc[1]["ts"])):
            if by_seq:
                index = c["seq"]
            else:
                index = counter.get(rank, 0)
                counter[rank] = index + 1
            out.setdefault((group, index), {})[rank] = c
    return out, " and ".join(sorted(hows)) or "none"


def node_of_ranks(per_rank: Mapping[int, dict], hosts: Mapping[int, str] | None = None) -> dict[int, str | None]:
    """Each rank's node: ``hosts`` where given (a run's Slurm node list), else the trace's ``hostname``."""
    return {r: (hosts or {}).get(r) or info.get("host") for r, info in per_rank.items()}


def link_of(ranks: Iterable[int], nodes: Mapping[int, str | None], devices: Mapping[int, int | None]) -> str | None:
    """The link a group's traffic crosses: ``slingshot_nic`` (more than one node), ``gcd_in_package`` (two GCDs of
    one MI250X), ``gcd_between_packages`` (one node), None when the nodes are unknown."""
    ranks = list(ranks)
    where = [nodes.get(r) for r in ranks]
    if any(w is None for w in where):
        return None
    if len(set(where)) > 1:
        return "slingshot_nic"
    packages = {devices.get(r) // 2 if devices.get(r) is not None else None for r in ranks}
    return "gcd_in_package" if len(ranks) == 2 and len(packages) == 1 and None not in packages \
        else "gcd_between_packages"


def match_collectives(per_rank: Mapping[int, dict], *, hosts: Mapping[int, str] | None = None,
                      links: Mapping[str, Mapping] | None = None, keep_calls: bool = False) -> dict:
    """Match every collective across ranks (see the module docstring): ``matched`` (one entry per collective),
    ``stragglers`` (sorted by times last), ``mismatches``, ``bandwidth`` (per collective, dtype and size, from the
    true time, against ``links``), ``imbalance`` (all-to-all sizes over ranks), ``clock_offset_us`` and ``method``;
    ``keep_calls`` adds each collective's (start, duration) per rank on that rank's clock under ``calls``."""
    keyed, how = _keyed(per_rank)
    nodes = node_of_ranks(per_rank, hosts)
    matched, mismatches, incomplete = [], [], 0
    for (group, index), calls in sorted(keyed.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        expected = next((c["group_ranks"] for c in calls.values() if c["group_ranks"]), None)
        if expected and set(expected) <= set(per_rank) and set(calls) != set(expected):
            incomplete += 1
            continue
        if len(calls) < 2:
            incomplete += 1
            continue
        for field in ("collective", "elements", "dtype"):
            values = {r: c[field] for r, c in calls.items()}
            if len(set(values.values())) > 1 and not (field == "elements" and _is_v(calls)):
                mismatches.append({"group": group, "index": index, "field": field, "values": values})
        durs = {r: c["dur"] for r, c in calls.items()}
        comm = min(durs.values())
        last = min(durs, key=lambda r: (durs[r], r))
        skew = max(durs.values()) - comm
        others = [d - comm for r, d in durs.items() if r != last]
        first = next(iter(calls.values()))
        entry = {"group": group, "index": index, "collective": first["collective"], "dtype": first["dtype"],
                 "bytes": first["bytes"], "ranks": sorted(calls), "last_rank": last, "skew_us": round(skew, 3),
                 "comm_us": round(comm, 3), "delay_caused_us": round(min(others), 3),
                 "clear": skew >= max(SKEW_MIN_US, SKEW_MIN_SHARE * comm),
                 "wait_us": {r: round(d - comm, 3) for r, d in sorted(durs.items())},
                 "end_us": {r: c["ts"] + c["dur"] for r, c in calls.items()}}
        if keep_calls:
            entry["calls"] = {r: (c["ts"], c["dur"]) for r, c in calls.items()}
        devices = {r: c["device"] for r, c in calls.items()}
        entry["link"] = link_of(calls, nodes, devices)
        _, busbw = bus_bandwidth(entry["collective"] or "", entry["bytes"] or 0, comm * 1e-6,
                                 first["group_size"] or len(calls))
        entry["busbw_gb_s"] = None if busbw != busbw else round(busbw, 3)
        if entry["collective"] == "all_to_all":
            sizes = [c["in_elements"] or 0 for c in calls.values()]
            mean = sum(sizes) / len(sizes)
            entry["imbalance"] = round(max(sizes) / mean, 3) if mean else None
        matched.append(entry)
    offsets = _clock_offsets(matched)
    for e in matched:
        del e["end_us"]
    return {"method": METHOD, "matched_by": how, "ranks": sorted(per_rank), "nodes": nodes,
            "generated": any(info.get("generated") for info in per_rank.values()),
            "matched": matched, "incomplete": incomplete, "mismatches": mismatches,
            "stragglers": straggler_table(matched), "bandwidth": bandwidth_summary(matched, links),
            "imbalance": [{"group": e["group"], "index": e["index"], "imbalance": e["imbalance"]}
                          for e in matched if e.get("imbalance") and e["imbalance"] > 1.0],
            "clock_offset_us": offsets}


def _is_v(calls: Mapping[int, dict]) -> bool:
    """Whether sizes may differ by rank (all-to-all-v, all-gather-v)."""
    return any(c["collective"] in ("all_to_all", "gather", "scatter") for c in calls.values())


def _clock_offsets(matched: list[dict]) -> dict[int, float]:
    """Each rank's clock minus the lowest rank's, from the median difference of collective ends (µs)."""
    diffs: dict[int, list[float]] = {}
    for e in matched:
        ends = e["end_us"]
        ref = min(ends)
        for r, t in ends.items():
            diffs.setdefault(r, []).append(t - ends[ref])
    if not diffs:
        return {}
    base = min(diffs)
    return {r: round(median(v), 3) for r, v in sorted(diffs.items())} if base in diffs else {}


def straggler_table(matched: list[dict]) -> list[dict]:
    """Per rank: how often it arrived last (by a clear margin), of how many collectives, the share, and the mean
    time the others waited for it then (µs): most often last first."""
    rows: dict[int, dict] = {}
    for e in matched:
        for r in e["ranks"]:
            row = rows.setdefault(r, {"rank": r, "times_last": 0, "of": 0, "delay_us": 0.0})
            row["of"] += 1
        if e["clear"]:
            row = rows[e["last_rank"]]
            row["times_last"] += 1
            row["delay_us"] += e["delay_caused_us"]
    out = []
    for row in rows.values():
        n = row.pop("delay_us")
        out.append({**row, "share": round(row["times_last"] / row["of"], 4) if row["of"] else 0.0,
                    "mean_delay_us": round(n / row["times_last"], 3) if row["times_last"] else 0.0})
    return sorted(out, key=lambda r: (-r["times_last"], -r["mean_delay_us"], r["rank"]))


def bandwidth_summary(matched: list[dict], links: Mapping[str, Mapping] | None = None) -> list[dict]:
    """Per collective, dtype, size and link: calls, median true time and the bus bandwidth from it, with the share
    of the link's peak (from the site profile's ``links``)."""
    groups: dict[tuple, list[dict]] = {}
    for e in matched:
        if e["bytes"] and e["busbw_gb_s"] is not None:
            groups.setdefault((e["collective"], e["dtype"], e["bytes"], len(e["ranks"]), e["link"]), []).append(e)
    out = []
    for (collective, dtype, nbytes, n, link), es in groups.items():
        comm = median(x["comm_us"] for x in es)
        busbw = median(x["busbw_gb_s"] for x in es)
        peak = (links or {}).get(link or "", {}).get("gb_s")
        out.append({"collective": collective, "dtype": dtype, "bytes": nbytes, "ranks": n, "calls": len(es),
                    "comm_us": round(comm, 3), "busbw_gb_s": round(busbw, 3), "link": link, "link_gb_s": peak,
                    "of_link": round(busbw / float(peak), 4) if peak else None})
    return sorted(out, key=lambda r: -r["calls"] * r["comm_us"])


def describe_matched(result: dict) -> list[str]:
    """The matched collectives in sentences."""
    m = result["matched"]
    if not m:
        return ["no collective was found on two or more ranks: give a folder with every rank's trace"]
    lines = [f"matched {len(m)} collectives across {len(result['ranks'])} ranks by {result['matched_by']}"
             + (f" ({result['incomplete']} left out: not on every rank of their group)" if result["incomplete"] else "")
             + "."]
    top = result["stragglers"][0] if result["stragglers"] else None
    if top and top["times_last"]:
        lines.append(f"rank {top['rank']} arrived last at {top['times_last']} of its {top['of']} collectives "
                     f"({top['share']:.0%}); each time the others waited {top['mean_delay_us'] / 1000:.2f} ms for it "
                     f"on average (mean delay it caused).")
        for row in result["stragglers"][1:4]:
            if row["times_last"]:
                lines.append(f"rank {row['rank']} was last {row['times_last']} times "
                             f"(mean delay {row['mean_delay_us'] / 1000:.2f} ms).")
    else:
        lines.append("no rank arrived clearly last: the ranks reach their collectives together.")
    for b in result["bandwidth"][:5]:
        where = f" over {b['link'].replace('_', ' ')}" if b["link"] else " (link unknown: no node names)"
        peak = f", {b['of_link']:.0%} of its {b['link_gb_s']} GB/s peak" if b["of_link"] is not None else ""
        lines.append(f"{b['calls']} x {b['collective']} of {b['bytes'] / 1e6:.1f} MB ({b['dtype']}, "
                     f"{b['ranks']} ranks): true time {b['comm_us'] / 1000:.2f} ms (shortest over ranks), bus bandwidth "
                     f"{b['busbw_gb_s']:.1f} GB/s{where}{peak}.")
    for x in result["mismatches"][:5]:
        lines.append(f"mismatch: {x['group']}#{x['index']} has different {x['field']} on different ranks: "
                     f"{x['values']} (a rank is calling another collective: a hang or wrong results follow).")
    for x in result["imbalance"][:3]:
        lines.append(f"all-to-all {x['group']}#{x['index']}: the largest rank sends {x['imbalance']:.2f}x the mean.")
    offsets = {r: o for r, o in result["clock_offset_us"].items() if abs(o) >= 1000}
    if offsets:
        lines.append("clocks (aligned on collective ends): " + ", ".join(
            f"rank {r} {abs(o) / 1000:.1f} ms {'behind' if o < 0 else 'ahead of'} rank {min(result['ranks'])}"
            for r, o in offsets.items()) + ".")
    lines.append(f"timing: {result['method']}.")
    return lines


def hosts_from_run(path: Path | str) -> dict[int, str] | None:
    """Rank -> node from the run folder above ``path`` (its manifest's Slurm node list and tasks per node), or
    None when there is no run folder or it names no nodes."""
    p = Path(path).resolve()
    for folder in (p, *p.parents)[:4]:
        manifest = folder / "manifest.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                return None
            nodes = expand_nodelist(data.get("nodes") or "")
            spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
            per_node = _int(spec.get("ntasks_per_node")) or 1
            if not nodes:
                return None
            return {r: nodes[r // per_node] for r in range(len(nodes) * per_node)}
    return None


def expand_nodelist(text: str) -> list[str]:
    """Slurm's compact node list (``nid[005000-005001,005010],uan01``) as names."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", text or ""):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            out.append(prefix)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            if b and a.isdigit() and b.isdigit():
                out.extend(f"{prefix}{i:0{len(a)}d}" for i in range(int(a), int(b) + 1))
            else:
                out.append(prefix + a)
    return [n for n in out if n]
