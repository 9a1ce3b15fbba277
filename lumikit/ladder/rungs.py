"""The rungs of the optimisation ladder: each adds one knob of the course workloads to the rungs below it."""
from __future__ import annotations

from ..errors import SpecError

#: Rung name -> the workload options it adds (cumulative: a rung keeps every option of the rungs before it).
RUNGS: dict[str, tuple[str, ...]] = {
    "fp32": (),
    "bf16": ("--precision", "bf16"),
    "fp16": ("--precision", "fp16"),
    "channels-last": ("--channels-last",),
    "fused": ("--fused-optimizer",),
    "compile": ("--compile",),
    "tunableop": ("--tunableop",),
}
DEFAULT_RUNGS = ("fp32", "bf16", "channels-last", "fused", "compile", "tunableop")
#: The site profile's peak for each precision a rung runs in (fp32 GEMMs use the matrix cores on an MI250X).
PEAK_FOR_PRECISION = {"fp32": "fp32_matrix", "bf16": "bf16", "fp16": "fp16"}


def parse_rungs(text: str | None) -> tuple[str, ...]:
    """``"fp32,bf16,compile"`` -> the rung names, checked (each once, at least one)."""
    names = tuple(part.strip() for part in (text or ",".join(DEFAULT_RUNGS)).split(",") if part.strip())
    unknown = [n for n in names if n not in RUNGS]
    if unknown or not names:
        raise SpecError("--rungs", f"unknown rung(s) {', '.join(unknown) or '(none given)'}",
                        f"use a comma-separated list of: {', '.join(RUNGS)}")
    if len(set(names)) != len(names):
        raise SpecError("--rungs", f"{text!r} names a rung twice", "name each rung once")
    return names


def cumulative_options(rungs: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(rung, workload options) per rung, each rung with the options of every rung before it (a later precision
    replaces an earlier one)."""
    out: list[tuple[str, list[str]]] = []
    options: list[str] = []
    for name in rungs:
        added = list(RUNGS[name])
        if added[:1] == ["--precision"] and "--precision" in options:
            at = options.index("--precision")
            del options[at:at + 2]
        options = options + added
        out.append((name, list(options)))
    return out
