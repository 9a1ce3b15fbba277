"""A roofline without counters: FLOPs and bytes from the tensor shapes a torch profiler trace records
(``record_shapes=True``: each operator's ``Input Dims``, ``Input type`` and ``Concrete Inputs``).

Counted per operator call, for GEMMs (``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``: 2·M·N·K per matrix product),
convolutions (``aten::convolution``: 2·N·C_out·(output pixels)·C_in/groups·(kernel pixels)), attention
(``aten::scaled_dot_product_attention`` and its flash / efficient / math forms: 2·B·H·L·S·(E + E_v), the full
score matrix even when causal) and elementwise operators (one FLOP per output element). Only the outermost
counted operator of a nest is counted (``aten::linear`` → ``aten::addmm`` once, ``relu`` → ``clamp_min`` once).

**Cache assumption** (as TraceLens's shape-based roofline makes it): every input tensor is read from HBM once
and every output written once; any reuse inside the operator hits in cache (attention never writes its score
matrix). Real traffic is at least this, so the intensity here is an upper bound: the point may sit further right
than the counters would put it.

Time: the GPU kernels launched inside the operator (its thread's launch calls in its time span, linked to their
kernels by ``correlation``; else by ``External id``); in a trace without GPU kernels, the operator's own CPU time,
and the note says so.
"""
from __future__ import annotations

import math
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParseError
from ..files import gunzip_bounded, load_json_bounded, read_bytes
from .roofline import COLUMNS, KINDS, MEASURED, Roof, Roofline, _rates, peaks, total

#: Bytes per element of the dtypes torch names in ``Input type``, and the FLOP kind of each (None: not floating).
DTYPES = {"float": (4, "f32"), "double": (8, "f64"), "c10::Half": (2, "f16"), "c10::BFloat16": (2, "bf16"),
          "Half": (2, "f16"), "BFloat16": (2, "bf16"), "long int": (8, None), "int": (4, None),
          "short int": (2, None), "signed char": (1, None), "unsigned char": (1, None), "bool": (1, None)}
GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
CONVOLUTIONS = {"aten::convolution"}
ATTENTION = {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
             "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_attention_math",
             "aten::_flash_attention_forward", "aten::_efficient_attention_forward"}
ELEMENTWISE = {f"aten::{n}{s}" for n in ("add", "sub", "mul", "div", "relu", "gelu", "silu", "sigmoid", "tanh",
                                         "exp", "neg", "sqrt", "rsqrt", "pow", "clamp", "clamp_min", "where",
                                         "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
                                         "tanh_backward", "dropout", "native_dropout")
               for s in ("", "_")}
CACHE_ASSUMPTION = ("FLOPs and bytes from shapes: every input read from HBM once and every output written once "
                    "(all reuse inside an operator hits in cache, as TraceLens assumes), so the intensity is an "
                    "upper bound")


def _dims(value: Any) -> list[list[int]] | None:
    """``Input Dims`` as lists of non-negative ints, or None when damaged."""
    if not isinstance(value, list):
        return None
    out = []
    for d in value:
        if not isinstance(d, list) or len(d) > 8 or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**40 for x in d):
            return None
        out.append(d)
    return out


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 0


def _ints(text: Any) -> list[int] | None:
    """``"[1, 1]"`` (a ``Concrete Inputs`` list) as ints, or None."""
    if not isinstance(text, str):
        return None
    found = re.findall(r"-?\d+", text)
    return [int(x) for x in found] if found and len(found) <= 8 else None


def _conv_flops(dims: list[list[int]], concrete: list[Any]) -> tuple[int, int] | None:
    """FLOPs and the output's element count of ``aten::convolution(input, weight, bias, stride, padding,
    dilation, transposed, output_padding, groups)``; None for a transposed one or missing shapes."""
    if len(dims) < 2 or len(dims[0]) < 3 or len(dims[1]) != len(dims[0]):
        return None
    x, w = dims[0], dims[1]
    spatial = len(x) - 2
    args = [_ints(c) for c in concrete] + [None] * 9
    stride, padding, dilation = (args[i] or [v] for i, v in ((3, 1), (4, 0), (5, 1)))
    if len(concrete) > 6 and str(concrete[6]).strip().lower() == "true":
        return None  # transposed: another formula
    out_pixels = 1
    for i in range(spatial):
        s, p, d = (v[i] if i < len(v) else v[0] for v in (stride, padding, dilation))
        size = (x[2 + i] + 2 * p - d * (w[2 + i] - 1) - 1) // max(s, 1) + 1
        if size <= 0:
            return None
        out_pixels *= size
    n, c_out = x[0], w[0]
    kernel = _numel(w[2:]) or 1
    return 2 * n * c_out * out_pixels * w[1] * kernel, n * c_out * out_pixels  # w[1] = C_in / groups


def op_cost(name: str, dims: list[list[int]], types: list[Any], concrete: list[Any]) -> tuple[str, int, int] | None:
    """(FLOP kind, FLOPs, bytes) of one operator call from its shapes, or None when it is not counted."""
    first = next((t for t in types if isinstance(t, str) and t in DTYPES and DTYPES[t][1]), None)
    if first is None:
        return None
    size, precision = DTYPES[first]
    tensors = [_numel(d) for d in dims]
    if name in GEMMS:
        mats = [d for d in dims if len(d) in (2, 3)]
        a, b = (mats[-2], mats[-1]) if len(mats) >= 2 else (None, None)
        if a is None or len(a) != len(b) or a[-1] != b[-2]:
            return None
        batch = a[0] if len(a) == 3 else 1
        m, k, n = a[-2], a[-1], b[-1]
        out = batch * m * n
        return f"mfma_{precision}", 2 * batch * m * n * k, (sum(tensors) + out) * size
    if name in CONVOLUTIONS:
        got = _conv_flops(dims, concrete)
        if got is None:
            return None
        flops, out = got
        return f"mfma_{precision}", flops, (sum(tensors[:3]) + out) * size
    if name in ATTENTION:
        if len(dims) < 3 or any(len(d) != 4 for d in dims[:3]):
            return None
        (b, h, seq_q, e), (_, _, seq_k, _), (_, _, _, e_v) = dims[:3]
        out = b * h * seq_q * e_v
        return f"mfma_{precision}", 2 * b * h * seq_q * seq_k * (e + e_v), (sum(tensors[:3]) + out) * size
    if name in ELEMENTWISE:
        shapes = [d for d in dims if d]
        if not shapes:
            return None
        try:
            out_shape = list(np.broadcast_shapes(*map(tuple, shapes)))
        except ValueError:
            return None
        out = _numel(out_shape)
        valu = "f32" if precision in ("f16", "bf16") else precision  # held against the vector peak
        return f"valu_{valu}", out, (sum(_numel(d) for d in shapes) + out) * size
    return None


def _events(path: Path) -> tuple[list[dict], dict]:
    data = read_bytes(path, "a torch profiler trace (.json or .json.gz) recorded with record_shapes=True")
    if path.name.endswith(".gz"):
        try:
            data = gunzip_bounded(data, str(path))
        except (OSError, EOFError, zlib.error) as exc:
            raise ParseError(f"damaged gzip ({exc})", source=str(path)) from None
    doc = load_json_bounded(data, str(path))
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise ParseError("no traceEvents: give a torch profiler trace (torch.profiler with record_shapes=True)",
                         source=str(path))
    return [e for e in events if isinstance(e, dict)], doc


def _ext(value: Any) -> int | str | None:
    """An ``External id`` that can key a lookup (a number or a string), else None."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _launched_by(counted: list[tuple[str, dict]], launches: list[tuple[str, float, Any]],
                 durations: dict[Any, float]) -> dict[int, float]:
    """GPU µs per counted operator (keyed by ``id`` of its row): the kernels whose launch call (a runtime event
    with the kernel's ``correlation``) ran on the operator's thread inside its time span."""
    import bisect

    per_tid: dict[str, tuple[list[float], list[Any]]] = {}
    for tid, ts, corr in sorted(launches, key=lambda x: (x[0], x[1])):
        times, corrs = per_tid.setdefault(tid, ([], []))
        times.append(ts)
        corrs.append(corr)
    out: dict[int, float] = {}
    for tid, row in counted:
        times, corrs = per_tid.get(tid, ([], []))
        lo, hi = bisect.bisect_left(times, row["start"]), bisect.bisect_left(times, row["end"])
        found = [durations[c] for c in corrs[lo:hi] if c in durations]
        if found:
            out[id(row)] = sum(found)
    return out


def device_roofs(doc: dict, device: int | None, site: object = None) -> tuple[tuple[Roof, ...], str, str]:
    """The roofs to hold a trace's kernels to, the note that says whose, and the GPU in a few words: the site
    profile's when ``site`` is given; else the shipped profile of the device the trace names (``deviceProperties``);
    none, said plainly, for a device without one; the MI250X GCD of the site profile ``lumi`` for a trace that names
    no device."""
    from ..gpu_roofs import device_profile, profiles

    if site is not None:
        roofs = peaks(site)
        return (roofs + MEASURED, f"roofs: the site profile's peaks ({roofs[0].source}) and MI200 measured ceilings",
                f"site profile {getattr(site, 'name', site)}")
    profile, described = device_profile(doc.get("deviceProperties"), device)
    if described is None:
        return peaks(None) + MEASURED, ("roofs: the trace names no GPU (no deviceProperties), so they are an MI250X "
                                        "GCD's (site profile lumi) and MI200 measured ceilings"), "MI250X GCD"
    if profile is None:
        return ((), f"no roofs for this trace's GPU, {described}: lumikit ships the peaks of "
                f"{', '.join(p.label for p in profiles().values())}; FLOPs, bytes and rates are given, no % of roof "
                "(pass site=... to hold it to a site profile's peaks)", described.split(" (")[0] + ", no roofs")
    names = {"bf16": "BF16 matrix", "fp16": "FP16 matrix", "fp32_matrix": "FP32 matrix",
             "fp64_matrix": "FP64 matrix", "fp32": "FP32 vector", "fp64": "FP64 vector"}
    roofs = (Roof("HBM, peak", "bandwidth", profile.hbm_tb_per_s * 1e12, False, profile.source),
             *(Roof(f"{label}, peak", "compute", profile.peak_tflops[key] * 1e12, False, profile.source)
               for key, label in names.items() if key in profile.peak_tflops))
    measured = MEASURED if profile.key == "mi250x-gcd" else ()  # MI200 measurements hold for that GPU only
    return (roofs + measured, f"roofs: the published peaks of the {profile.label} (the trace's GPU: {described})",
            profile.label)


def shape_roofline(path: str | os.PathLike[str], site: object = None) -> Roofline:
    """The roofline of the counted operators of a torch profiler trace, one row per (operator, shapes, dtype), held
    to the roofs of the GPU the trace names (see :func:`device_roofs`; ``site`` overrides)."""
    p = Path(path)
    events, doc = _events(p)
    ops, kernels, by_correlation, launches = [], {}, {}, []
    device: int | None = None
    for e in events:
        cat = e.get("cat")
        if cat == "cpu_op" and e.get("ph") == "X":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ts, dur = _num(e.get("ts")), _num(e.get("dur"))
            if ts is not None and dur is not None and dur >= 0:
                ops.append((str(e.get("tid")), ts, dur, str(e.get("name")), args))
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ext, corr, dur = _ext(args.get("External id")), _ext(args.get("correlation")), _num(e.get("dur"))
            if device is None and isinstance(args.get("device"), int):
                device = args["device"]
            if dur is not None and dur >= 0:
                if ext is not None:
                    kernels[ext] = kernels.get(ext, 0.0) + dur
                if corr is not None:
                    by_correlation[corr] = by_correlation.get(corr, 0.0) + dur
        elif cat in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X":  # ROCm traces use the same names
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ts, corr = _num(e.get("ts")), _ext(args.get("correlation"))
            if ts is not None and corr is not None:
                launches.append((str(e.get("tid")), ts, corr))
    if not any("Input Dims" in a for *_, a in ops):
        raise ParseError("no operator shapes in this trace: record it with torch.profiler.profile(..., "
                         "record_shapes=True), or profile with rocprofv3 counters (--profile roofline)",
                         source=str(p))
    ops.sort(key=lambda o: (o[0], o[1], -o[2]))
    rows: list[dict] = []
    skipped, open_until = 0, {}
    counted: list[tuple[str, dict]] = []  # (tid, row) of each counted operator, in order
    for tid, ts, dur, name, args in ops:
        if ts < open_until.get(tid, -math.inf):
            if counted and counted[-1][0] == tid and _ext(args.get("External id")) is not None:
                counted[-1][1]["ext"].add(_ext(args.get("External id")))  # its kernels are the outer op's
            continue
        if name not in GEMMS | CONVOLUTIONS | ATTENTION | ELEMENTWISE or "Input Dims" not in args:
            continue
        dims = _dims(args.get("Input Dims"))
        types = [t if isinstance(t, str) else "" for t in args.get("Input type")] \
            if isinstance(args.get("Input type"), list) else []  # a damaged entry (an object) names no dtype
        concrete = args.get("Concrete Inputs") if isinstance(args.get("Concrete Inputs"), list) else []
        cost = op_cost(name, dims, types, concrete) if dims is not None else None
        if cost is None:
            skipped += 1
            continue
        kind, flops, nbytes = cost
        first = next((t for t in types if t in DTYPES and DTYPES[t][1]), "?")
        row = {"kernel": f"{name} {dims[:3]} {first}", "kind": kind, "flops": flops, "hbm_bytes": nbytes,
               "cpu_us": dur, "ext": {_ext(args.get("External id"))}, "start": ts, "end": ts + dur}
        rows.append(row)
        open_until[tid] = ts + dur
        counted.append((tid, row))
    notes = [CACHE_ASSUMPTION]
    if skipped:
        notes.append(f"{skipped} operator calls of a counted kind had shapes this reader cannot cost (transposed "
                     "convolutions, damaged or missing shapes): left out")
    if not rows:
        raise ParseError("no GEMM, convolution, attention or elementwise operators with shapes in this trace",
                         source=str(p))
    gpu = bool(kernels or by_correlation)
    launched = _launched_by(counted, launches, by_correlation)
    if not gpu:
        notes.append("no GPU kernels in this trace: times are the operators' CPU time, so FLOP/s and bandwidth "
                     "are the CPU's, not a GPU's")
    def duration_ns(r: dict) -> float:
        """The GPU time of the operator's kernels (NaN: none found), or its CPU time in a CPU-only trace."""
        if not gpu:
            return 1e3 * r["cpu_us"]
        if id(r) in launched:  # the kernels of the launch calls inside the operator (by correlation)
            return 1e3 * launched[id(r)]
        found = [kernels[x] for x in r["ext"] if x is not None and x in kernels]  # else by External id
        return 1e3 * sum(found) if found else math.nan

    table = pd.DataFrame([{"kernel": r["kernel"], "kind": r["kind"], "flops": float(r["flops"]),
                           "hbm_bytes": float(r["hbm_bytes"]), "duration_ns": duration_ns(r)} for r in rows])
    unmatched = int(table["duration_ns"].isna().sum()) if gpu else 0
    if unmatched:
        notes.append(f"{unmatched} of {len(table)} operator calls have no GPU kernel in this trace (launched "
                     "outside the traced window, or run on the CPU): their time, FLOP/s and bandwidth are unknown")
    for kind in KINDS:
        table[kind] = table["flops"].where(table["kind"] == kind, 0.0)
    for col in ("l2_bytes", "l1_bytes", "lds_bytes"):
        table[col] = np.nan
    per = table.drop(columns="kind").assign(dispatches=1)
    sums = ["duration_ns", "flops", "hbm_bytes", *KINDS, "l2_bytes", "l1_bytes", "lds_bytes"]
    agg = per.groupby("kernel", sort=False).agg(dispatches=("dispatches", "sum"),
                                                 **{c: (c, total) for c in sums})
    roofs, whose, gpu_name = device_roofs(doc, device, site)
    notes.append(whose)
    calls = _rates(per, roofs).assign(process=0, dispatch_id=range(1, len(per) + 1))
    kernels_table = _rates(agg, roofs).reset_index()
    over = int((kernels_table["pct_of_roof"] > 100).sum())
    if over:
        notes.append(f"{over} operators above 100 % of their roof: these roofs are not this GPU's, or a time "
                     "belongs to other work (kernels matched to the wrong operator)")
    kernels_table = kernels_table.sort_values("duration_ns", ascending=False, kind="stable")[COLUMNS]
    return Roofline(calls[["process", "dispatch_id", *[c for c in COLUMNS if c != "dispatches"]]],
                    kernels_table.reset_index(drop=True), roofs, notes, str(p), passes=0, device=gpu_name)
