"""``ladder.json`` read back (safely) and shown as the ladder's table: samples/s with spread, speed-up, MFU, memory."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LumikitError
from ..files import load_json_bounded, read_bytes
from ..measure import Comparison, compare, measured
from ..text import printable

LADDER_FILE = "ladder.json"
GiB = 2 ** 30


def read_ladder(path: str | Path) -> dict[str, Any]:
    """A ladder.json (or a run folder holding one), checked to have its rungs."""
    p = Path(path)
    if p.is_dir():
        p = p / LADDER_FILE
    # bounded: a 100,000-bracket file is one line, never a RecursionError
    data = load_json_bounded(read_bytes(p, "the ladder.json (or run folder) of a `lumikit ladder` job that "
                                           "completed", limit=16 << 20), printable(str(p)), max_depth=32)
    rungs = data.get("rungs") if isinstance(data, dict) else None
    if not isinstance(rungs, list) or not rungs or not all(isinstance(r, dict) and "samples_per_s" in r
                                                          for r in rungs):
        raise LumikitError(f"{printable(str(p))}: no rungs with samples/s in it; give a ladder.json that "
                           "`lumikit ladder` wrote")
    for i, rung in enumerate(rungs):
        wrong = _rung_damage(rung)
        if wrong:
            raise LumikitError(f"{printable(str(p))}: rung {i + 1} {wrong}; give a ladder.json that `lumikit ladder` "
                               "wrote (or rerun the ladder)")
    return data


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _rung_damage(rung: dict[str, Any]) -> str:
    """What is wrong with one rung of a ladder.json ("" when it has what the table prints)."""
    s = rung.get("samples_per_s")
    if not isinstance(rung.get("rung"), str):
        return "has no name ('rung')"
    if not isinstance(s, dict) or not all(_number(s.get(k)) for k in ("median", "min", "max")):
        return "has no samples/s median, min and max"
    if not isinstance(s.get("values", []), list) or not all(_number(v) for v in s.get("values", [])):
        return "has samples/s values that are not numbers"
    if rung.get("mfu") is not None and not (_number(rung["mfu"]) and _number(rung.get("peak_tflops"))
                                            and isinstance(rung.get("peak_name"), str)):
        return "has an MFU without a peak"
    if not _number(rung.get("speedup", 1.0)) or not isinstance(rung.get("notes", []), list):
        return "has a speed-up or notes of the wrong kind"
    if any(rung.get(k) is not None and not _number(rung[k]) for k in ("peak_memory_bytes", "process_max_rss_bytes")):
        return "has a memory peak that is not a number"
    if any(rung.get(k) is not None and not isinstance(rung[k], str) for k in ("trace", "trace_dir")) \
            or not all(isinstance(n, str) for n in rung.get("notes", [])):
        return "has a trace or notes that are not text"
    return ""


def shipped_ladder(name: str) -> tuple[dict[str, Any], str]:
    """A ladder shipped as reference data (``lumikit.reference``, kind ``ladder``) and its source line; its table's
    "measured on" names the machine and date it was recorded on, not "this GPU" as it said where it ran."""
    from .. import reference

    ref = reference.load(name)
    return {**ref.parsed(), "measured_on": f"{ref.machine}, {ref.date}"}, ref.source_line


def _memory(row: dict[str, Any], on_gpu: bool) -> str:
    if on_gpu and row.get("peak_memory_bytes") is not None:
        return f"{row['peak_memory_bytes'] / GiB:.2f} GiB"
    rss = row.get("process_max_rss_bytes")
    return f"{rss / GiB:.2f} GiB RSS*" if rss else "n/a"


def _against(c: Comparison) -> str:
    """This rung against the one above: within noise, or faster/slower beyond it."""
    if c.within_noise:
        return "within noise"
    return f"{'faster' if c.ratio > 1 else 'slower'}, beyond noise"


def ladder_table(data: dict[str, Any]) -> str:
    """The table a learner reads, with what each number was measured on."""
    on_gpu = data.get("device_type") == "cuda"
    rows = data["rungs"]
    head = (f"Optimisation ladder: {data.get('model')} {data.get('size')}, batch {data.get('batch_size')}, "
            f"measured on {printable(data.get('measured_on', '?'))}; {data.get('repeats')} timed repeats of "
            f"{data.get('steps_per_repeat')} steps per rung after {data.get('warmup_steps')} warm-up steps.\n"
            "Rungs are cumulative: each adds its knob to the rungs above it.")
    lines = [head, "", f"{'rung':<14} {'samples/s median (min-max)':<30} {'speed-up':>8}  {'vs rung above':<26} "
                       f"{'MFU (of peak)':<32} peak memory"]
    previous = None
    for row in rows:
        s = row["samples_per_s"]
        m = measured(row["rung"], s.get("values") or [s["median"]])
        verdict = "-" if previous is None else _against(compare(m, previous))
        mfu = (f"{100 * row['mfu']:.3g} % ({row['peak_tflops']:.1f} TF {row['peak_name']})"
               if row.get("mfu") is not None else "n/a")
        rate = f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"
        lines.append(f"{printable(row['rung']):<14} {rate:<30} {row.get('speedup', 1.0):>7.2f}x  {verdict:<26} "
                     f"{mfu:<32} {_memory(row, on_gpu)}")
        previous = m
    lines.append("")
    lines.append(f"MFU: the model's FLOPs per step (lumikit.model_estimate) per second, against one device's peak "
                 f"(a GCD on LUMI) for the rung's precision from site {data.get('site')}'s profile"
                 + ("" if on_gpu else "; measured on this CPU, so against a GCD's peak it is tiny") + ".")
    if not on_gpu:
        lines.append("* on a CPU: the process's largest resident memory so far (torch counts peak memory on GPUs "
                     "only), so it never falls from one rung to the next.")
    if len(rows) > 1 and all(row.get("trace_dir") for row in rows[:2]):
        lines.append(f"what a rung changed: lumikit trace diff RUN/{printable(rows[0]['trace_dir'])} "
                     f"RUN/{printable(rows[1]['trace_dir'])} "
                     "(RUN: the run folder; any two rungs)")
    for row in rows:
        for note in row.get("notes", []):
            lines.append(f"{printable(row['rung'])}: {printable(note)}")
        if row.get("trace"):
            lines.append(f"{printable(row['rung'])}: trace {printable(row['trace'])}")
    return "\n".join(lines)
