"""A roofline for MI250X (gfx90a) from ``rocprofv3 --pmc`` counters: per kernel dispatch and per kernel name, the
FLOPs of each precision, the bytes moved to and from HBM, the arithmetic intensity (FLOPs per HBM byte), the
achieved FLOP/s and bandwidth, and which roof bounds it.

The formulas are rocprof-compute's for MI200 (ROCm/rocprofiler-compute ``src/utils/roofline_calc.py``, ``calc_ai``;
the counters are its gfx90a set, ``profile_configs/gfx90a/roofline/pmc_roof_perf.txt``):

- FLOPs = 64 x (ADD + MUL + 2 x FMA + TRANS) of ``SQ_INSTS_VALU_*_F16/_F32/_F64`` (one instruction works on a
  64-lane wavefront; an FMA is two FLOPs) + 512 x ``SQ_INSTS_VALU_MFMA_MOPS_{F16,BF16,F32,F64}``;
- HBM bytes = 32 x RDREQ_32B + 64 x (RDREQ - RDREQ_32B) + 64 x WRREQ_64B + 32 x (WRREQ - WRREQ_64B) of the
  ``TCC_EA_*_sum`` counters (the L2's requests to memory, 32 or 64 bytes each);
- L2 bytes = 64 x the L1-to-L2 read, write and atomic requests; L1 bytes = 64 x ``TCP_TOTAL_CACHE_ACCESSES_sum``;
  LDS bytes = (``SQ_LDS_IDX_ACTIVE`` - ``SQ_LDS_BANK_CONFLICT``) x 4 x 32 banks per CU.

The counters do not fit in one pass (gfx90a counts at most 8 SQ, 4 TCP and 4 TCC counters at once), so a roofline
run is several passes (:data:`~lumikit.jobs.profiling.ROOFLINE_PASSES`, the ``roofline`` profiling mode); this
module reads a folder of ``pass_N/`` outputs and joins the passes by dispatch. The peaks are the site profile's
(``[hardware]`` of ``sites/lumi.toml``); measured ceilings, each with its source, are in :data:`MEASURED`.
Without counters, :mod:`.shape_roofline` gives the same table from a torch trace's operator shapes.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..errors import LumikitError
from ..files import regular_file
from ..jobs.profiling import ROOFLINE_PASSES

VALU_PRECISIONS = ("F16", "F32", "F64")
MFMA_PRECISIONS = ("F16", "BF16", "F32", "F64")
VALU_OPS = ("ADD", "MUL", "FMA", "TRANS")
HBM_COUNTERS = ("TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum")
L2_COUNTERS = ("TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum", "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
               "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum")
#: Every counter the roofline reads.
ROOFLINE_COUNTERS = tuple(c for p in ROOFLINE_PASSES for c in p)
#: LDS banks per compute unit on MI200 (rocprof-compute's ``lds_banks_per_cu`` in its MI200 sysinfo).
LDS_BANKS_PER_CU = 32
#: The FLOP kinds, the site-profile peak each is held against (``gcd_peak_tflops`` key) and its label.
KINDS = {"mfma_f16": ("fp16", "FP16 matrix"), "mfma_bf16": ("bf16", "BF16 matrix"),
         "mfma_f32": ("fp32_matrix", "FP32 matrix"), "mfma_f64": ("fp64_matrix", "FP64 matrix"),
         "valu_f16": ("fp32", "FP16 vector (held against the FP32 vector peak)"),
         "valu_f32": ("fp32", "FP32 vector"), "valu_f64": ("fp64", "FP64 vector")}


@dataclass(frozen=True)
class Roof:
    """One line of the roofline: a compute roof (FLOP/s) or a bandwidth roof (bytes/s), with where it comes from."""

    name: str
    kind: str        # "compute" or "bandwidth"
    value: float     # FLOP/s or bytes/s, per GCD
    measured: bool   # False: a published peak; True: a measured ceiling
    source: str

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "kind": self.kind, "value": self.value, "measured": self.measured,
                "source": self.source}


_OMNIPERF = ("rocprof-compute's own MI200 test data (ROCm/rocprofiler-compute, formerly omniperf, "
             "tests/workloads/dispatch_0/MI200/roofline.csv, device 0: an MI200 GCD with 104 CUs, ROCm 6.0.2; an "
             "MI250X GCD has 110)")
#: Measured ceilings per GCD, each with its source (an MI250X GCD peaks at 1.6 TB/s and 191.5 TFLOPS BF16).
MEASURED = (
    Roof("HBM, measured", "bandwidth", 1388.7638e9, True, _OMNIPERF),
    Roof("HBM, achievable (LUMI course)", "bandwidth", 1.3e12, True,
         "an AMD instructor at a LUMI course: 'theoretical 1.6 TB/s but achievable 1.3 TB/s per GCD' "
         "(LUMI-training-materials, 4day-20230530, extra_2_06)"),
    Roof("L2, measured", "bandwidth", 5016.8418e9, True, _OMNIPERF),
    Roof("L1, measured", "bandwidth", 9224.1777e9, True, _OMNIPERF),
    Roof("LDS, measured", "bandwidth", 17710.416e9, True, _OMNIPERF),
    Roof("BF16 matrix, measured", "compute", 170438.3e9, True, _OMNIPERF),
    Roof("FP16 matrix, measured", "compute", 164898.08e9, True, _OMNIPERF),
    Roof("FP32 matrix, measured", "compute", 41427.383e9, True, _OMNIPERF),
    Roof("FP64 matrix, measured", "compute", 41485.637e9, True, _OMNIPERF),
    Roof("FP32 vector, measured", "compute", 20937.773e9, True, _OMNIPERF),
    Roof("FP64 vector, measured", "compute", 20269.176e9, True, _OMNIPERF),
)


def peaks(site: object = None) -> tuple[Roof, ...]:
    """The published peaks of one GCD from the site profile (``[hardware]``: ``gcd_peak_tflops`` and
    ``gcd_hbm_tb_per_s``, with the profile's ``source``; default: ``lumi``, whose GCDs the counters' formulas are
    for); a site without them is refused."""
    from ..site import load_site

    s = load_site(site if site is not None else "lumi")
    hw = s.hardware
    tflops, hbm = hw.get("gcd_peak_tflops"), hw.get("gcd_hbm_tb_per_s")
    if not isinstance(tflops, dict) or not isinstance(hbm, (int, float)):
        raise LumikitError(f"site {s.name!r} has no [hardware] gcd_peak_tflops and gcd_hbm_tb_per_s; the roofline "
                           "needs the GPU's peaks: add them to the site profile (see sites/lumi.toml)")
    source = f"site profile {s.name}: {hw.get('source', 'no source given')}"
    names = {"bf16": "BF16 matrix", "fp16": "FP16 matrix", "fp32_matrix": "FP32 matrix",
             "fp64_matrix": "FP64 matrix", "fp32": "FP32 vector", "fp64": "FP64 vector"}
    out = [Roof("HBM, peak", "bandwidth", float(hbm) * 1e12, False, source)]
    out += [Roof(f"{label}, peak", "compute", float(tflops[key]) * 1e12, False, source)
            for key, label in names.items() if isinstance(tflops.get(key), (int, float))]
    return tuple(out)


def _peak(roofs: Iterable[Roof], kind: str) -> float | None:
    key = {"mfma_f16": "FP16 matrix", "mfma_bf16": "BF16 matrix", "mfma_f32": "FP32 matrix",
           "mfma_f64": "FP64 matrix", "valu_f16": "FP32 vector", "valu_f32": "FP32 vector",
           "valu_f64": "FP64 vector", "hbm": "HBM"}[kind]
    return next((r.value for r in roofs if r.name == f"{key}, peak"), None)


# -- reading the passes --------------------------------------------------------------------------------------
_PASS_DIR = re.compile(r"^(?:pass|pmc)_?(\d+)$")
MAX_FILES = 4096


def counter_files(path: str | os.PathLike[str]) -> list[Path]:
    """The counter files PATH is or holds: ``*_counter_collection.csv`` and rocpd ``*.db`` files (in ``pass_N/``
    folders or not), at most :data:`MAX_FILES`."""
    p = Path(path)
    if not p.is_dir():
        regular_file(p, "a rocprofv3 *_counter_collection.csv, a rocpd .db, or the folder of a roofline run")
        return [p]
    found = []
    for f in sorted(p.rglob("*")):
        if f.name.endswith("counter_collection.csv") or f.suffix == ".db":
            if f.is_file() and not f.is_symlink():
                found.append(f)
                if len(found) > MAX_FILES:
                    raise LumikitError(f"{p}: more than {MAX_FILES} counter files; give one run's folder")
    if not found:
        raise LumikitError(f"{p}: no *_counter_collection.csv or .db files in this folder; give the folder of a "
                           "`lumikit` run profiled with --profile roofline, or one counter file")
    return found


def _pass_of(f: Path, root: Path) -> str:
    parts = f.relative_to(root).parts[:-1] if f != root else ()
    return next((part for part in reversed(parts) if _PASS_DIR.match(part)), "")


def read_passes(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The long counter table of every pass under PATH, with ``pass`` and ``process`` columns: within each pass
    the files are taken in name order, so the i-th file of every pass is the same process (rank)."""
    from .counters import read_counters

    root = Path(path)
    files = counter_files(root)
    by_pass: dict[str, list[Path]] = {}
    for f in files:
        by_pass.setdefault(_pass_of(f, root) if root.is_dir() else "", []).append(f)
    counts = {k: len(v) for k, v in by_pass.items()}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{k or '(top)'}: {n}" for k, n in sorted(counts.items()))
        raise LumikitError(f"{root}: the passes hold different numbers of counter files ({shown}); every pass "
                           "should have one file per process: give one run's folder, or one pass's file")
    frames, notes = [], []
    for name, group in sorted(by_pass.items()):
        for i, f in enumerate(group):
            t = read_counters(f)
            notes += t.attrs.get("notes", [])
            frames.append(t.assign(**{"pass": name, "process": i}))
    table = pd.concat(frames, ignore_index=True)
    table.attrs.update(source=str(root), notes=notes, passes=len(by_pass), files=len(files))
    return table


# -- the numbers ---------------------------------------------------------------------------------------------
def _wide(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (process, dispatch, kernel): each counter summed within a pass, then averaged over the passes
    that counted it; ``duration_ns`` the median over the passes."""
    keys = ["process", "dispatch_id", "kernel"]
    t = long.dropna(subset=["dispatch_id"])
    per_pass = t.groupby([*keys, "pass", "counter"], sort=False)["value"].sum().reset_index()
    wide = per_pass.pivot_table(index=keys, columns="counter", values="value", aggfunc="mean", sort=False)
    wide.columns.name = None
    times = t.drop_duplicates([*keys, "pass"]).assign(duration_ns=lambda d: d["duration_ns"].astype("float64"))
    wide["duration_ns"] = times.groupby(keys, sort=False)["duration_ns"].median()
    return wide


def _terms(wide: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """FLOPs per kind and bytes per memory level of each row of ``wide``; and the parts that lacked counters."""
    out = pd.DataFrame(index=wide.index)
    missing = []

    def have(names: Iterable[str]) -> bool:
        return all(n in wide for n in names)

    for p in VALU_PRECISIONS:
        names = [f"SQ_INSTS_VALU_{op}_{p}" for op in VALU_OPS]
        if have(names):
            add, mul, fma, trans = (wide[n] for n in names)
            out[f"valu_{p.lower()}"] = 64 * (add + mul + 2 * fma + trans)
        else:
            missing.append(f"{p} vector FLOPs ({', '.join(n for n in names if n not in wide)})")
    for p in MFMA_PRECISIONS:
        name = f"SQ_INSTS_VALU_MFMA_MOPS_{p}"
        if name in wide:
            out[f"mfma_{p.lower()}"] = 512 * wide[name]
        else:
            missing.append(f"{p} matrix FLOPs ({name})")
    kinds = [k for k in KINDS if k in out]
    out["flops"] = out[kinds].sum(axis=1, min_count=len(kinds)) if kinds else np.nan
    if have(HBM_COUNTERS):
        rd32, rd, wr64, wr = (wide[n] for n in HBM_COUNTERS)
        out["hbm_bytes"] = 32 * rd32 + 64 * (rd - rd32) + 64 * wr64 + 32 * (wr - wr64)
    else:
        out["hbm_bytes"] = np.nan
        missing.append(f"HBM bytes ({', '.join(n for n in HBM_COUNTERS if n not in wide)})")
    out["l2_bytes"] = 64 * sum(wide[n] for n in L2_COUNTERS) if have(L2_COUNTERS) else np.nan
    out["l1_bytes"] = 64 * wide["TCP_TOTAL_CACHE_ACCESSES_sum"] if "TCP_TOTAL_CACHE_ACCESSES_sum" in wide else np.nan
    lds = ("SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT")
    out["lds_bytes"] = (wide[lds[0]] - wide[lds[1]]) * 4 * LDS_BANKS_PER_CU if have(lds) else np.nan
    out["duration_ns"] = wide["duration_ns"]
    return out, missing


def _rates(t: pd.DataFrame, roofs: tuple[Roof, ...]) -> pd.DataFrame:
    """Intensity, achieved rates and the bounding roof of each row (FLOPs, bytes and ``duration_ns`` given)."""
    t = t.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        t["arithmetic_intensity"] = np.where(t["hbm_bytes"] > 0, t["flops"] / t["hbm_bytes"], np.nan)
        seconds = t["duration_ns"].astype("float64") / 1e9
        t["flops_per_s"] = np.where(seconds > 0, t["flops"] / seconds, np.nan)
        t["hbm_bytes_per_s"] = np.where(seconds > 0, t["hbm_bytes"] / seconds, np.nan)
    kinds = [k for k in KINDS if k in t]
    hbm = _peak(roofs, "hbm")
    dominant, roof, attainable, bound = [], [], [], []
    for _, r in t.iterrows():
        values = {k: r[k] for k in kinds if pd.notna(r[k])}
        kind = max(values, key=values.get) if values and max(values.values()) > 0 else None
        peak = _peak(roofs, kind) if kind else None
        flops, nbytes = r["flops"], r["hbm_bytes"]
        dominant.append(kind)
        roof.append(KINDS[kind][1] if kind else None)
        if pd.isna(flops) or pd.isna(nbytes) or (flops <= 0 and nbytes <= 0) or hbm is None:
            attainable.append(np.nan)
            bound.append(None)
        elif flops <= 0 or peak is None:
            attainable.append(np.nan)
            bound.append("memory")  # no FLOPs counted: the kernel only moves data
        elif nbytes <= 0:
            attainable.append(peak)
            bound.append("compute")
        else:
            ai = flops / nbytes
            attainable.append(min(peak, ai * hbm))
            bound.append("memory" if ai * hbm < peak else "compute")
    t["dominant"], t["roof"], t["bound"] = dominant, roof, bound
    t["attainable_flops_per_s"] = attainable
    with np.errstate(divide="ignore", invalid="ignore"):
        t["pct_of_roof"] = np.where(t["attainable_flops_per_s"] > 0,
                                    100 * t["flops_per_s"] / t["attainable_flops_per_s"], np.nan)
    if hbm:  # a kernel that only moves data (no FLOPs) is held to the bandwidth roof
        moves = ~(t["flops"] > 0) & (t["hbm_bytes"] > 0) & t["hbm_bytes_per_s"].notna()
        t.loc[moves, "pct_of_roof"] = 100 * t.loc[moves, "hbm_bytes_per_s"] / hbm
        t.loc[moves, "roof"] = "HBM bandwidth"
    return t


@dataclass
class Roofline:
    """The roofline of one run: ``dispatches`` (one row per dispatch) and ``kernels`` (per kernel name, largest
    time first), the ``roofs`` (peaks and measured ceilings) and ``notes`` (what was missing or left out)."""

    dispatches: pd.DataFrame
    kernels: pd.DataFrame
    roofs: tuple[Roof, ...]
    notes: list[str]
    source: str
    passes: int = 1
    device: str = "MI250X GCD"  # whose roofs these are (the counters' formulas are for that GPU)

    def table(self) -> pd.DataFrame:
        """The per-kernel points a learner plots or exports (``.to_csv``): x = ``arithmetic_intensity``,
        y = ``flops_per_s``."""
        return self.kernels.copy()


#: Columns of :attr:`Roofline.kernels` and :attr:`Roofline.dispatches` (the latter with ``process`` and
#: ``dispatch_id`` in front and without ``dispatches``).
COLUMNS = ["kernel", "dispatches", "duration_ns", "flops", *KINDS, "hbm_bytes", "l2_bytes", "l1_bytes", "lds_bytes",
           "arithmetic_intensity", "flops_per_s", "hbm_bytes_per_s", "dominant", "roof", "bound",
           "attainable_flops_per_s", "pct_of_roof"]


def total(values: pd.Series) -> float:
    """The sum of a kernel's values over its dispatches, unknown (NaN) if any one is unknown: a rate from a
    partial time (or partial FLOPs) would be too high."""
    return float(values.sum()) if values.notna().all() else np.nan


def roofline(long: pd.DataFrame, site: object = None) -> Roofline:
    """The roofline of a long counter table (:func:`read_passes`, or one file's
    :func:`~lumikit.rocprof.counters.read_counters`)."""
    long = long.copy()
    notes = list(long.attrs.get("notes", []))
    source = str(long.attrs.get("source", "<counters>"))
    for col, default in (("process", 0), ("pass", "")):
        if col not in long:
            long[col] = default
    lost = int(long["dispatch_id"].isna().sum())
    if lost:
        notes.append(f"{lost} counter rows without a dispatch id are left out")
    wide = _wide(long)
    if wide.empty:
        raise LumikitError(f"{source}: no counter rows with a dispatch id; give a rocprofv3 --pmc output")
    terms, missing = _terms(wide)
    if missing:
        notes.append("not collected, so not counted: " + "; ".join(missing) + ". Profile with --profile roofline "
                     "(lumikit rocprof plan-roofline prints the passes)")
    if wide.index.get_level_values("kernel").isna().any():
        notes.append("some dispatches have no kernel name")
    roofs = peaks(site) + MEASURED
    per = _rates(terms, roofs).reset_index()
    per.insert(3, "dispatches", 1)
    untimed = int(per["duration_ns"].isna().sum())
    if untimed == len(per):
        notes.append("no start and end timestamps: FLOP/s and bandwidth are unknown (null); intensity and bound "
                     "need none")
    elif untimed:
        notes.append(f"{untimed} dispatches without timestamps: their kernels' time, FLOP/s and bandwidth are "
                     "unknown (null)")
    sums = ["duration_ns", "flops", *[k for k in KINDS if k in per], "hbm_bytes", "l2_bytes", "l1_bytes", "lds_bytes"]
    agg = per.groupby("kernel", sort=False, dropna=False).agg(
        dispatches=("dispatches", "sum"), **{c: (c, total) for c in sums})
    kernels = _rates(agg, roofs).reset_index()
    kernels = kernels.sort_values("duration_ns", ascending=False, kind="stable", na_position="last")
    for t in (per, kernels):
        for col in COLUMNS:
            if col not in t:
                t[col] = np.nan
    dispatches = per[["process", "dispatch_id", *[c for c in COLUMNS if c != "dispatches"]]]
    return Roofline(dispatches.reset_index(drop=True), kernels[COLUMNS].reset_index(drop=True), roofs, notes, source,
                    int(long.attrs.get("passes", 1)))


def read_roofline(path: str | os.PathLike[str], site: object = None) -> Roofline:
    """The roofline of a counter file, a rocpd database, or the folder of a multi-pass run."""
    return roofline(read_passes(path), site)


def _number(v: object) -> object:
    if v is None or isinstance(v, str):
        return v
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if not math.isfinite(f) else (int(f) if float(f).is_integer() and abs(f) < 2**53 else f)


def _row(r: pd.Series) -> dict[str, object]:
    kinds = {k: _number(r[k]) for k in KINDS if pd.notna(r[k])}
    out = {c: _number(r[c]) for c in r.index if c not in KINDS}
    out["flops_by_kind"] = kinds
    return out


def roofline_report(rl: Roofline, top: int = 0, per_dispatch: bool = False) -> dict[str, object]:
    """The JSON-ready roofline (what ``lumikit rocprof roofline --json`` prints)."""
    kernels = rl.kernels if top <= 0 else rl.kernels.head(top)
    out: dict[str, object] = {
        "source": rl.source, "passes": rl.passes, "device": rl.device, "notes": rl.notes,
        "formulas": "rocprof-compute src/utils/roofline_calc.py (MI200): FLOPs = 64*(ADD+MUL+2*FMA+TRANS) per "
                    "precision + 512*MFMA_MOPS; HBM bytes = 32*RDREQ_32B + 64*(RDREQ-RDREQ_32B) + 64*WRREQ_64B + "
                    "32*(WRREQ-WRREQ_64B)",
        "roofs": [r.as_dict() for r in rl.roofs],
        "kernels": [_row(r) for _, r in kernels.iterrows()],
    }
    if per_dispatch:
        out["dispatches"] = [_row(r) for _, r in rl.dispatches.iterrows()]
    return out
