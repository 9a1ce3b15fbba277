"""Memory over time: the peak, live bytes by category, and the largest allocations alive at the peak.

Two sources give the same view:

* a Kineto trace recorded with ``profile_memory=True`` (works on CPU too): every allocation and free is a
  ``[memory]`` instant event with ``Bytes`` (negative for a free), ``Addr``, ``Total Allocated`` and ``Device Id``
  (-1 for host memory). An allocation's op is the outermost CPU op of its thread at that moment,
  its category the innermost ``record_function`` span around it (forward, backward, optimizer ...), else the
  step phase of its op (autograd functions are backward, ``Optimizer.*`` optimizer, other ops forward);
* a ``torch.cuda.memory._dump_snapshot`` pickle (``_record_memory_history`` on a GPU; PyTorch documents the format
  in ``torch.cuda.memory._snapshot``; read as plain values only, :func:`read_snapshot`): ``device_traces`` hold
  the allocator's ``alloc`` / ``free_completed`` / ``oom`` actions with stack frames, ``segments`` the blocks
  still allocated at the end. The category comes from the frames (autograd -> backward, torch.optim ->
  optimizer, a ``forward`` frame -> forward).

Allocations made before recording started are not in either history; they show as the category ``earlier`` so
that the total matches what the allocator reported.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ParseError, TraceError
from ..files import read_bytes, regular_file
from ..safe_pickle import load_plain

EARLIER = "earlier"
OTHER = "other"
_STEP_PREFIX = "ProfilerStep#"
_SNAPSHOT_FREES = ("free_completed", "free_requested")


@dataclass
class MemoryView:
    """Allocation events of one or more devices: ``events`` has ts (µs, or the event's position when the source has
    no clock), device, addr, bytes (+ allocated, - freed), category and op (or the allocating frame)."""

    source: str
    kind: str  # "kineto" or "snapshot"
    events: pd.DataFrame
    baseline: dict[int, int] = field(default_factory=dict)  # bytes live before the history starts, per device
    ooms: list[dict] = field(default_factory=list)  # snapshot "oom" actions: device, ts, requested, device_free
    time_unit: str = "µs"

    def devices(self) -> list[int]:
        """Devices with allocation events (-1 is host memory in a Kineto trace)."""
        return sorted(int(d) for d in self.events["device"].unique())

    def _device(self, device: int | None) -> int:
        devices = self.devices()
        if not devices:
            raise TraceError(f"{self.source}: no memory events; record with profile_memory=True (torch.profiler) "
                             f"or torch.cuda.memory._record_memory_history()")
        if device is None:
            return max(devices, key=lambda d: self.timeline(d)["allocated"].max())
        if device not in devices:
            raise TraceError(f"{self.source}: no memory events on device {device} (devices: {devices})")
        return device

    def timeline(self, device: int | None = None) -> pd.DataFrame:
        """Live bytes after every event of a device: ts, allocated, and one column per category."""
        device = self._device(device)
        ev = self.events[self.events["device"] == device]
        cats = [EARLIER] + sorted(set(ev["category"]) - {EARLIER})
        out = {"ts": ev["ts"].to_numpy(), "allocated": self.baseline.get(device, 0) + np.cumsum(ev["bytes"].to_numpy())}
        for c in cats:
            mine = np.where(ev["category"].to_numpy() == c, ev["bytes"].to_numpy(), 0)
            out[c] = np.cumsum(mine) + (self.baseline.get(device, 0) if c == EARLIER else 0)
        return pd.DataFrame(out)

    def peak(self, device: int | None = None) -> dict:
        """The highest live total of a device: bytes, when, and the live bytes per category at that moment."""
        device = self._device(device)
        tl = self.timeline(device)
        i = int(np.argmax(tl["allocated"].to_numpy()))
        row = tl.iloc[i]
        return {"device": device, "bytes": int(row["allocated"]), "ts": float(row["ts"]), "index": i,
                "since_start": float(row["ts"] - tl["ts"].iloc[0]),
                "by_category": {c: int(row[c]) for c in tl.columns[2:] if int(row[c]) != 0}}

    def live_at_peak(self, device: int | None = None, top: int = 10) -> pd.DataFrame:
        """The largest allocations alive at the peak: addr, bytes, category, op, and when they were made."""
        device = self._device(device)
        at = self.peak(device)["index"]
        ev = self.events[self.events["device"] == device].iloc[:at + 1]
        live: dict[int, tuple] = {}
        for addr, nbytes, ts, cat, op in zip(ev["addr"].to_numpy().tolist(), ev["bytes"].to_numpy().tolist(),
                                            ev["ts"].to_numpy().tolist(), ev["category"].tolist(), ev["op"].tolist()):
            if nbytes > 0:
                live[addr] = (addr, nbytes, cat, op, ts)
            else:
                live.pop(addr, None)
        table = pd.DataFrame(list(live.values()), columns=["addr", "bytes", "category", "op", "ts"])
        return table.sort_values("bytes", ascending=False, kind="stable").head(top).reset_index(drop=True)

    def report(self, device: int | None = None, top: int = 10) -> dict:
        """JSON-ready: the peak, its categories and its largest live allocations (and any OOM the snapshot saw)."""
        device = self._device(device)
        peak = self.peak(device)
        live = self.live_at_peak(device, top)
        return {"source": self.source, "kind": self.kind, "device": device, "peak_bytes": peak["bytes"],
                "peak_at": peak["ts"], "peak_since_start": peak["since_start"], "time_unit": self.time_unit,
                "by_category": peak["by_category"],
                "largest_live": [{"bytes": int(r.bytes), "category": r.category, "op": r.op}
                                 for r in live.itertuples()],
                "ooms": [o for o in self.ooms if o["device"] == device]}

    def describe(self, device: int | None = None, top: int = 5) -> str:
        """A few lines for a notebook or the command line: the peak, what it is made of, the largest blocks."""
        r = self.report(device, top)
        where = "host memory" if r["device"] < 0 else f"device {r['device']}"
        when = (f"{r['peak_since_start'] / 1e3:.1f} ms into the recording" if r["time_unit"] == "µs"
                else f"event {r['peak_since_start']:.0f} of the history")
        lines = [f"{Path(self.source).name}: peak {_size(r['peak_bytes'])} on {where}, {when}"]
        lines.append("  by category: " + ", ".join(f"{c} {_size(b)}" for c, b in
                                                    sorted(r["by_category"].items(), key=lambda kv: -kv[1])))
        for a in r["largest_live"]:
            lines.append(f"  {_size(a['bytes']):>10}  {a['category']:<12} {a['op']}")
        for o in r["ooms"]:
            lines.append(f"  out of memory: asked for {_size(o['requested'])} with {_size(o['device_free'])} free "
                         f"on the device")
        return "\n".join(lines)


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


# -- Kineto traces -----------------------------------------------------------------------------------------
def _innermost(starts: np.ndarray, ends: np.ndarray, labels: list[str], ts: np.ndarray, default: str) -> list[str]:
    """For each time, the label of the shortest span holding it (spans may nest), else ``default``."""
    out = [default] * len(ts)
    best = np.full(len(ts), np.inf)
    for s, e, label in zip(starts.tolist(), ends.tolist(), labels):
        lo, hi = np.searchsorted(ts, s, side="left"), np.searchsorted(ts, e, side="left")
        if hi <= lo:
            continue
        shorter = best[lo:hi] > e - s
        for i in np.flatnonzero(shorter) + lo:
            out[i] = label
        best[lo:hi] = np.where(shorter, e - s, best[lo:hi])
    return out


def _category(span: str, op: str) -> str:
    """An allocation's category: the ``record_function`` span around it (torch's own DataLoader and optimizer
    spans as data / optimizer), else the step phase of its op (:func:`~lumikit.trace.host_ops.phase_of`)."""
    from .host_ops import phase_of

    if span:
        return phase_of(span) if span.startswith(("enumerate(DataLoader)", "Optimizer.")) else span
    return phase_of(op) if op != "-" else OTHER


def _outermost_ops(events: pd.DataFrame, ts: np.ndarray, tids: np.ndarray) -> list[str]:
    """For each (time, thread), the top-level CPU op of that thread running then, else ``-``."""
    out = np.full(len(ts), "-", dtype=object)
    ops = events[events["cat"] == "cpu_op"]
    for tid, g in ops.groupby("tid"):
        sel = np.flatnonzero(tids == tid)
        if not len(sel):
            continue
        s, e = g["ts"].to_numpy(), (g["ts"] + g["dur"]).to_numpy()
        order = np.argsort(s, kind="stable")
        s, e, names = s[order], e[order], g["name"].astype(str).to_numpy()[order]
        reach = np.maximum.accumulate(np.append(-np.inf, e[:-1]))
        top = s >= reach  # not inside an earlier op
        s, e, names = s[top], e[top], names[top]
        i = np.searchsorted(s, ts[sel], side="right") - 1
        ok = (i >= 0) & (ts[sel] < e[np.maximum(i, 0)])
        out[sel[ok]] = names[i[ok]]
    return out.tolist()


def memory_from_kineto(path: Path | str) -> MemoryView:
    """The memory view of a Kineto trace recorded with ``profile_memory=True``."""
    from .loader import load_trace
    from .scan import scan_events

    path = Path(path)
    raw = list(scan_events(path, (b"[memory]",), lambda ev: ev.get("name") == "[memory]"
                           and isinstance(ev.get("args"), dict)))
    if not raw:
        raise TraceError(f"{path}: no [memory] events; profile with torch.profiler.profile(profile_memory=True)")
    raw.sort(key=lambda ev: ev.get("ts", 0))
    args = [ev["args"] for ev in raw]
    ts = np.array([float(ev.get("ts", 0)) for ev in raw])
    device = np.array([int(a.get("Device Id", -1)) for a in args])
    nbytes = np.array([int(a.get("Bytes", 0)) for a in args], dtype=np.int64)
    addr = np.array([int(a.get("Addr", 0)) for a in args], dtype=np.int64)
    tids = np.array([ev.get("tid", -1) for ev in raw])
    table = load_trace(path, workers=1)
    events = next(iter(table.ranks.values())).events
    ann = events[(events["cat"] == "user_annotation") & ~events["name"].astype(str).str.startswith(_STEP_PREFIX)]
    labels = [str(n) for n in ann["name"]]
    spans = _innermost(ann["ts"].to_numpy(), (ann["ts"] + ann["dur"]).to_numpy(), labels, ts, "")
    ops = _outermost_ops(events, ts, tids)
    category = [_category(span, op) for span, op in zip(spans, ops)]
    category, ops = _follow_frees(addr, nbytes, device, category, ops)
    baseline = {}
    for d in np.unique(device).tolist():
        first = int(np.flatnonzero(device == d)[0])
        baseline[d] = int(args[first].get("Total Allocated", nbytes[first])) - int(nbytes[first])
    frame = pd.DataFrame({"ts": ts, "device": device, "addr": addr, "bytes": nbytes, "category": category, "op": ops})
    return MemoryView(str(path), "kineto", frame, baseline)


def _follow_frees(addr: np.ndarray, nbytes: np.ndarray, device: np.ndarray, category: list[str],
                  ops: list[str]) -> tuple[list[str], list[str]]:
    """A free belongs to the category and op of the allocation it frees (``earlier`` when that came before the
    recording), so per-category live bytes go back down."""
    live: dict[tuple[int, int], tuple[str, str]] = {}
    category, ops = list(category), list(ops)
    for i, (a, b, d) in enumerate(zip(addr.tolist(), nbytes.tolist(), device.tolist())):
        if b > 0:
            live[(d, a)] = (category[i], ops[i])
        elif b < 0:
            category[i], ops[i] = live.pop((d, a), (EARLIER, ops[i]))
    return category, ops


# -- torch.cuda.memory snapshots ---------------------------------------------------------------------------
def _frame_category(frames: list) -> tuple[str, str]:
    """(category, where) from an allocation's stack frames (innermost first)."""
    names = [(str(f.get("filename", "")), str(f.get("name", "")), f.get("line", 0)) for f in frames
             if isinstance(f, dict)]
    files = " ".join(fn for fn, _, _ in names)
    if "torch/autograd" in files or any(n == "backward" for _, n, _ in names):
        category = "backward"
    elif "torch/optim" in files:
        category = "optimizer"
    elif any(n == "forward" for _, n, _ in names):
        category = "forward"
    else:
        category = OTHER
    user = next(((fn, n, ln) for fn, n, ln in names if "/torch/" not in fn and fn and not fn.startswith("??")), None)
    where = f"{Path(user[0]).name}:{user[2]} {user[1]}" if user else (f"{names[0][1]}" if names else "-")
    return category, where


def read_snapshot(path: Path | str) -> dict:
    """The plain dict a ``torch.cuda.memory._dump_snapshot`` pickle holds, read with
    :func:`lumikit.safe_pickle.load_plain`: no class or function the file names is loaded, sizes are bounded."""
    path = Path(path)
    what = "a torch.cuda.memory snapshot (.pickle)"
    try:
        snap = load_plain(read_bytes(path, what), str(path), what="a torch.cuda.memory snapshot")
    except ParseError as exc:
        raise TraceError(f"{exc}; write a snapshot with torch.cuda.memory._dump_snapshot(PATH)") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the memory snapshot ({exc}); write it with "
                         f"torch.cuda.memory._dump_snapshot(PATH)") from None
    if not isinstance(snap, dict) or "device_traces" not in snap:
        raise TraceError(f"{path}: not a torch.cuda.memory snapshot (no device_traces); record with "
                         f"torch.cuda.memory._record_memory_history() before _dump_snapshot")
    return snap


def memory_from_snapshot(path: Path | str) -> MemoryView:
    """The memory view of a ``torch.cuda.memory._dump_snapshot`` pickle (allocation history per device)."""
    path = Path(path)
    snap = read_snapshot(path)
    try:
        return _snapshot_view(path, snap)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceError(f"{path}: not a torch.cuda.memory snapshot ({type(exc).__name__}: {str(exc)[:80]} in its "
                         f"allocation history); write it with torch.cuda.memory._dump_snapshot(PATH)") from None


def _snapshot_view(path: Path, snap: dict) -> MemoryView:
    """The memory view of a snapshot's plain dict (see :func:`memory_from_snapshot`)."""
    traces = snap.get("device_traces") or []
    frees = next((a for a in _SNAPSHOT_FREES if any(e.get("action") == a for t in traces for e in t)),
                 _SNAPSHOT_FREES[0])
    rows, ooms, clocked = [], [], all("time_us" in e for t in traces for e in t)
    for device, entries in enumerate(traces):
        live: dict[int, tuple[str, str]] = {}
        for i, e in enumerate(entries):
            action, ts = e.get("action"), float(e["time_us"]) if clocked else float(i)
            if action == "alloc":
                cat, where = _frame_category(e.get("frames") or [])
                live[e["addr"]] = (cat, where)
                rows.append((ts, device, e["addr"], int(e["size"]), cat, where))
            elif action == frees:
                cat, where = live.pop(e.get("addr"), (EARLIER, "-"))
                rows.append((ts, device, e.get("addr", 0), -int(e["size"]), cat, where))
            elif action == "oom":
                ooms.append({"device": device, "ts": ts, "requested": int(e.get("size", 0)),
                             "device_free": int(e.get("device_free", 0))})
    frame = pd.DataFrame(rows, columns=["ts", "device", "addr", "bytes", "category", "op"])
    # what is still allocated at the end (segments) minus what the history adds up to = live before it began
    final: dict[int, int] = {}
    for seg in snap.get("segments") or []:
        d = int(seg.get("device", 0))
        final[d] = final.get(d, 0) + sum(int(b.get("size", 0)) for b in seg.get("blocks") or []
                                         if b.get("state") == "active_allocated")
    baseline = {}
    for d in set(final) | set(frame["device"].unique().tolist()):
        baseline[int(d)] = max(0, final.get(d, 0) - int(frame.loc[frame["device"] == d, "bytes"].sum()))
    return MemoryView(str(path), "snapshot", frame, baseline, ooms, "µs" if clocked else "events")


def load_memory(path: Path | str) -> MemoryView:
    """A memory view of a Kineto trace (``.json``/``.json.gz``) or a memory snapshot (``.pickle``/``.pkl``)."""
    path = Path(path)
    if not path.is_file():
        if os.path.lexists(path):  # a FIFO or a device: say which, never open it
            regular_file(path, "a trace recorded with profile_memory=True or a torch.cuda.memory snapshot")
        raise TraceError(f"{path}: no such file; give a trace recorded with profile_memory=True or a "
                         f"torch.cuda.memory snapshot (.pickle)")
    if path.suffix in (".pickle", ".pkl"):
        return memory_from_snapshot(path)
    return memory_from_kineto(path)
