"""The topology outputs module 01's mask task reads: the real LUMI showtoponuma and lscpu lines from the profile."""
from __future__ import annotations

from lumikit.site import load_site
from lumikit.smi import parse_smi
from lumikit.smi.topology import generated_lscpu_numa, toponuma_output


def test_showtoponuma_gives_every_gcd_the_profiles_numa_domain() -> None:
    out = toponuma_output()
    node = load_site("lumi").node
    numa = {d.index: d.numa_node for d in parse_smi(out.text).devices}
    assert numa == {g.index: g.numa for g in node.gcds}
    assert out.origin == "measured here" or "lumi-userguide" in out.origin


def test_lscpu_numa_lines_cover_each_domain_and_its_smt_siblings() -> None:
    text = generated_lscpu_numa("lumi")
    assert "NUMA node(s):          4" in text
    assert "NUMA node3 CPU(s):     48-63,112-127" in text
