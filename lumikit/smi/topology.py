"""The two outputs a learner reads to derive CPU masks: ``rocm-smi --showtoponuma`` (GCD -> NUMA domain) and
``lscpu`` (NUMA domain -> cores), with where each came from.

On a LUMI-G compute node both commands run for real. Elsewhere the topology is the real LUMI output that ships
with the workbook (:mod:`lumikit.reference`: the LUMI user guide's ``--showtoponuma``, with its source), and the
NUMA lines of ``lscpu`` are generated from the site profile in the same layout, labelled "generated".
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from .. import reference
from ..site import Site, load_site

#: The real ``rocm-smi --showtoponuma`` of a LUMI-G node in :mod:`lumikit.reference`.
REAL_TOPONUMA = "rocm-smi-showtoponuma"


@dataclass(frozen=True)
class TopologyText:
    """One command's output and where it comes from ("measured here", a real output's source line, "generated")."""

    command: str
    text: str
    origin: str


def generated_lscpu_numa(site: Site | str | None = "lumi") -> str:
    """``lscpu``'s NUMA lines, generated from the site profile (each domain: its cores, then their SMT siblings)."""
    node = load_site(site).node
    domains = sorted({g.numa for g in node.gcds})
    per_domain = node.cores // len(domains)
    lines = ["NUMA:", f"  NUMA node(s):          {len(domains)}"]
    for numa in domains:
        first = numa * per_domain
        ranges = [f"{first}-{first + per_domain - 1}"]
        if node.threads_per_core > 1:
            ranges.append(f"{node.cores + first}-{node.cores + first + per_domain - 1}")
        lines.append(f"  NUMA node{numa} CPU(s):     {','.join(ranges)}")
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or (argv[0] == "rocm-smi" and "Numa" not in proc.stdout):
        return None
    return proc.stdout


def toponuma_output() -> TopologyText:
    """``rocm-smi --showtoponuma``: measured on this node, else the real LUMI output shipped with the workbook."""
    text = _run(["rocm-smi", "--showtoponuma"])
    if text:
        return TopologyText("rocm-smi --showtoponuma", text, "measured here")
    real = reference.load(REAL_TOPONUMA)
    return TopologyText("rocm-smi --showtoponuma", real.text, real.source_line)


def lscpu_numa_output(on_lumi: bool) -> TopologyText:
    """``lscpu``'s NUMA lines: measured when this is a LUMI-G node (``on_lumi``), else generated for LUMI-G."""
    if on_lumi:
        text = _run(["lscpu"])
        if text:
            numa = [line for line in text.splitlines() if "NUMA" in line]
            return TopologyText("lscpu | grep NUMA", "\n".join(numa) + "\n", "measured here")
    return TopologyText("lscpu | grep NUMA", generated_lscpu_numa(), "generated from the LUMI site profile")
