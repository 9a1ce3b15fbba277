"""The two outputs a learner reads to derive CPU masks: ``rocm-smi --showtoponuma`` (GCD -> NUMA domain) and
``lscpu`` (NUMA domain -> cores), with where each came from.

On a LUMI-G compute node both commands run for real. Elsewhere the topology is the recorded LUMI output from the
shared fixtures (the LUMI user guide's ``--showtoponuma``) when that folder is beside the checkout, and otherwise
text generated from the site profile in the same layout, labelled "generated".
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..site import Site, load_site

#: The recorded ``rocm-smi --showtoponuma`` of a LUMI-G node (provenance: ../shared/fixtures/SOURCES.md).
RECORDED_TOPONUMA = "smi/rocm_smi_showtoponuma_lumi_userguide.txt"


@dataclass(frozen=True)
class TopologyText:
    """One command's output and a few words on its origin ("measured here", "recorded on LUMI", "generated")."""

    command: str
    text: str
    origin: str


def generated_toponuma(site: Site | str | None = "lumi") -> str:
    """``rocm-smi --showtoponuma``'s layout, generated from the site profile's GCD -> NUMA map."""
    node = load_site(site).node
    lines = ["", "=" * 22 + " Numa Nodes " + "=" * 22]
    for gcd in node.gcds:
        lines += [f"GPU[{gcd.index}]\t\t: (Topology) Numa Node: {gcd.numa}",
                  f"GPU[{gcd.index}]\t\t: (Topology) Numa Affinity: {gcd.numa}"]
    lines.append("=" * 17 + " End of ROCm SMI Log " + "=" * 18)
    return "\n".join(lines) + "\n"


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


def _shared_fixture(relative: str) -> Path | None:
    root = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", Path(__file__).resolve().parents[3] / "shared" / "fixtures"))
    path = root / relative
    return path if path.is_file() else None


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
    """``rocm-smi --showtoponuma``: measured on this node, else recorded on LUMI, else generated."""
    text = _run(["rocm-smi", "--showtoponuma"])
    if text:
        return TopologyText("rocm-smi --showtoponuma", text, "measured here")
    recorded = _shared_fixture(RECORDED_TOPONUMA)
    if recorded:
        return TopologyText("rocm-smi --showtoponuma", recorded.read_text(),
                            "recorded on a LUMI-G node (LUMI user guide, distribution-binding page)")
    return TopologyText("rocm-smi --showtoponuma", generated_toponuma(),
                        "generated from the LUMI site profile (no GPU and no recording here)")


def lscpu_numa_output(on_lumi: bool) -> TopologyText:
    """``lscpu``'s NUMA lines: measured when this is a LUMI-G node (``on_lumi``), else generated for LUMI-G."""
    if on_lumi:
        text = _run(["lscpu"])
        if text:
            numa = [line for line in text.splitlines() if "NUMA" in line]
            return TopologyText("lscpu | grep NUMA", "\n".join(numa) + "\n", "measured here")
    return TopologyText("lscpu | grep NUMA", generated_lscpu_numa(), "generated from the LUMI site profile")
