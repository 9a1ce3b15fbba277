"""Which package each GPU of a record sits in, which GCDs are the job's, and whose power a package reading holds.

An MI250X reports its power once per package: ``amd-smi`` prints it on the first GCD and 0 W (energy 0) on the
second, ``rocm-smi`` prints N/A there (Omnistat's MI250X notes: "odd-numbered cards report 0 W"). On small-g and
dev-g the other GCD of a package may belong to another job, so the package power then includes GCDs outside this
job and is never given as a per-GCD figure. The device numbers a tool prints are mapped to the node's GCDs:

- the tool shows every GCD of the node: its numbers are the GCDs;
- it shows as many devices as Slurm gave the job (``job_gpus`` in the record's header): the i-th device is the
  i-th of the job's GCDs (a cgroup numbers the visible devices 0, 1, ... in order; expected on LUMI);
- otherwise its numbers are taken as GCD numbers, and the card says that this is an assumption.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import LumikitError


#: Package numbers from here on are single GPUs the site's profile does not pair (no package row of their own).
OWN = 1000


@dataclass
class NodeLayout:
    """One node's map: device -> GCD and package; the job's devices; the packages shared with other jobs."""

    gcd: dict[int, int] = field(default_factory=dict)                 # device number -> the node's GCD
    package: dict[int, int] = field(default_factory=dict)             # device number -> package
    members: dict[int, list[int]] = field(default_factory=dict)       # package -> its devices in the record
    in_job: set[int] = field(default_factory=set)                     # devices that are the job's
    shared: dict[int, list[int]] = field(default_factory=dict)        # package -> its GCDs outside the job
    how: str = ""                                                     # how the map was made (one sentence)

    def outside(self, package: int) -> list[int]:
        return self.shared.get(package, [])


def whole_node(manifest: Mapping[str, Any], site: Any) -> bool:
    """Whether the job had its nodes to itself (``--exclusive``, an exclusive partition, or all GCDs per node)."""
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    if spec.get("exclusive"):
        return True
    try:
        if spec.get("partition") and site.partition(spec["partition"]).exclusive:
            return True
    except LumikitError:  # an unknown partition name: not known to be exclusive
        pass
    gpn = spec.get("gpus_per_node")
    return isinstance(gpn, int) and gpn >= site.node.gcd_count


def layout(devices: Sequence[int], site: Any, job_gpus: Sequence[int] = (), job_gpus_from: str = "",
           whole: bool = False) -> NodeLayout:
    """The map of one node's record (``devices``: the device numbers the tool printed)."""
    site_pkg = {g.index: g.package for g in site.node.gcds}
    devs = sorted(set(devices))
    out = NodeLayout()
    if not site_pkg:
        out.how = "the site has no GCD packages: every device is its own package"
        out.gcd = {d: d for d in devs}
        out.package = {d: OWN + d for d in devs}
    else:
        if devs == sorted(site_pkg):
            out.gcd = {d: d for d in devs}
            out.how = "the tool shows every GCD of the node"
        elif job_gpus and len(job_gpus) == len(devs) and set(job_gpus) <= set(site_pkg):
            out.gcd = dict(zip(devs, sorted(job_gpus)))
            out.how = (f"the tool shows the job's {len(devs)} GCD(s), numbered in order: devices "
                       f"{','.join(map(str, devs))} are GCDs {','.join(map(str, sorted(job_gpus)))} "
                       f"({job_gpus_from})")
        else:
            out.gcd = {d: d for d in devs}
            out.how = ("assumed: the tool's device numbers are the node's GCD numbers (the record does not say "
                       "which GCDs Slurm gave the job)")
        # a device the site does not know (another machine's GPUs) is its own package
        out.package = {d: site_pkg.get(g, OWN + d) for d, g in out.gcd.items()}
    for d, p in out.package.items():
        out.members.setdefault(p, []).append(d)
    if whole:
        job_gcds = set(site_pkg) | set(out.gcd.values())
    elif job_gpus:
        job_gcds = set(job_gpus)
    else:  # the tool shows what the job's cgroup lets it see: those are the job's
        job_gcds = set(out.gcd.values())
    out.in_job = {d for d, g in out.gcd.items() if g in job_gcds}
    for p in set(out.package.values()):
        if site_pkg:
            gcds = [g for g, q in site_pkg.items() if q == p]
            others = sorted(g for g in gcds if g not in job_gcds)
            if others and any(out.gcd[d] in job_gcds for d in out.members.get(p, [])):
                out.shared[p] = others
    return out


def package_power(readings: Mapping[int, float | None], members: Sequence[int]) -> float | None:
    """A package's power in one sample: the sum of what its devices print, where at least one prints more than
    0 W (an MI250X's second GCD prints 0 W or N/A: the package's power is on the first); None otherwise."""
    vals = [readings.get(d) for d in members]
    pos = [v for v in vals if v is not None and v > 0]
    return sum(pos) if pos else None


__all__ = ["OWN", "NodeLayout", "layout", "package_power", "whole_node"]
