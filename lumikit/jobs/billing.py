"""What a GPU job costs on LUMI, from its shape: the billing rule of the site profile, an estimate and the actual.

LUMI bills a job on small-g and dev-g for the largest of its GCDs, its cores / 8 and its host memory / 64 GB, each
rounded up to a whole slice (the "GCD-equivalents"), at 0.5 GPU-hours per GCD-equivalent per hour: 9 cores on one GCD
are billed as 2 GCDs. The user guide's formula (docs/runjobs/lumi_env/billing.md, "GPU billing") takes the job's
allocated cores, memory and GCDs, so a multi-node job's totals are rounded, not each node's: 2 nodes with 9 cores and
1 GCD each are ceil(18 / 8) = 3 GCD-equivalents, where rounding per node would give 4; :func:`estimate` follows the
formula and states the per-node figure beside it when the two differ. An exclusive partition (standard-g), or
``--exclusive``, bills the whole node. A shape that asks for more cores or memory than its GCDs carry is accepted by
Slurm and only costs more, so :func:`estimate` says so in its warnings instead of refusing it. The numbers and their
source live in the site profile's ``[billing]`` table.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import SiteError
from ..site import Site, load_site
from .spec import JobSpec, parse_mem_mb, parse_time


@dataclass(frozen=True)
class BillingRule:
    """The billing rule of a site (``[billing]`` in its profile)."""

    gpu_hours_per_gcd_hour: float
    cores_per_gcd: int
    memory_per_gcd_gb: float
    unit: str = "GPU-hours"
    source: str = ""


@dataclass(frozen=True)
class Billing:
    """The bill of one job shape: GCD-equivalents per node, what drives them, GPU-hours per hour and in all."""

    partition: str
    nodes: int
    gcds: int
    cores: int
    memory_gb: float | None
    exclusive: bool
    gcd_equivalents: float  # per node (the job's, divided by its nodes, on a shared partition)
    reason: str  # "GCDs", "cores", "memory" or "whole node"
    gpu_hours_per_hour: float
    hours: float | None
    gpu_hours: float | None
    warnings: tuple[str, ...]
    source: str
    exclusive_partition: bool = True  # with reason "whole node": the partition's rule, not --exclusive
    per_node_gpu_hours_per_hour: float | None = None  # rounding each node instead, where that differs

    def text(self) -> str:
        """One line with the arithmetic, e.g. ``4 GPU-hours (4 GCD-equivalents x 0.5 x 2 h, set by memory)``."""
        job_equivalents = self.gcd_equivalents * self.nodes
        rate = self.gpu_hours_per_hour / job_equivalents if job_equivalents else 0.0
        if self.reason == "whole node":
            nodes = f" x {self.nodes} nodes" if self.nodes > 1 else ""
            eq = f"{_num(self.gcd_equivalents)} GCD-equivalents{nodes} x {_num(rate)}"
            why = "the whole node: " + ("exclusive partition" if self.exclusive_partition else "--exclusive")
        else:
            nodes = f" in the job's {self.nodes} nodes together" if self.nodes > 1 else ""
            eq = f"{_num(job_equivalents)} GCD-equivalents{nodes} x {_num(rate)}"
            why = f"set by {self.reason}"
        if self.gpu_hours is None:
            return f"{_num(self.gpu_hours_per_hour)} GPU-hours per hour ({eq}, {why}); no --time given"
        return f"{_num(self.gpu_hours)} GPU-hours ({eq} x {_num(self.hours)} h, {why})"

    def rounding_note(self) -> str | None:
        """Where rounding each node would bill differently from rounding the job's totals: both figures, which one
        LUMI's formula gives, and its source."""
        if self.per_node_gpu_hours_per_hour is None:
            return None
        hours = "" if self.hours is None else f", {_num(self.per_node_gpu_hours_per_hour * self.hours)} GPU-hours"
        return (f"rounding: LUMI's formula rounds the job's totals (cores, memory and GCDs of all {self.nodes} nodes "
                f"together): {_num(self.gpu_hours_per_hour)} GPU-hours per hour; rounded per node it would be "
                f"{_num(self.per_node_gpu_hours_per_hour)} per hour{hours}. Source: {self.source}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rule_text(rule: BillingRule, node_gcds: int = 8) -> str:
    """The rule as one sentence with its source, for ``--explain`` (the learner can check the arithmetic)."""
    rate = _num(rule.gpu_hours_per_gcd_hour)
    return (f"rule: on shared GPU partitions (small-g, dev-g) {rule.unit} per hour = max(ceil(cores / "
            f"{rule.cores_per_gcd}), ceil(memory / {_num(rule.memory_per_gcd_gb)} GB), GCDs) x {rate}, with the "
            f"job's cores, memory and GCDs (all nodes together); an exclusive partition (standard-g) or --exclusive "
            f"bills the whole node, "
            f"{_num(node_gcds * rule.gpu_hours_per_gcd_hour)} {rule.unit} per node-hour. Source: {rule.source}")


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:.3f}".rstrip("0").rstrip(".")


def billing_rule(site: Site) -> BillingRule | None:
    """The site's billing rule, or None when its profile has no ``[billing]`` table."""
    raw = dict(site.billing)
    if not raw:
        return None
    try:
        return BillingRule(gpu_hours_per_gcd_hour=float(raw["gpu_hours_per_gcd_hour"]),
                           cores_per_gcd=int(raw["cores_per_gcd"]), memory_per_gcd_gb=float(raw["memory_per_gcd_gb"]),
                           unit=str(raw.get("unit", "GPU-hours")), source=str(raw.get("source", "")))
    except (KeyError, TypeError, ValueError) as exc:
        raise SiteError(f"{site.source}: malformed [billing] table ({exc}); compare it with lumikit/sites/lumi.toml") \
            from None


def _memory_mb(spec: JobSpec, gcds: int, cores: int) -> float | None:
    """Host memory per node the job asks for, in MB (Slurm's units: 1G = 1024M), or None when it leaves it to the
    default."""
    if spec.mem is not None:
        mb = parse_mem_mb(spec.mem, "mem")
        return None if mb == 0 else mb
    if spec.mem_per_gpu is not None:
        return parse_mem_mb(spec.mem_per_gpu, "mem_per_gpu") * gcds
    if spec.mem_per_cpu is not None:
        return parse_mem_mb(spec.mem_per_cpu, "mem_per_cpu") * cores
    return None


def _slices(amount: float, per_slice: float) -> int:
    """Whole slices that ``amount`` starts: LUMI rounds cores / 8 and memory / 64 GB up (9 cores are 2 slices)."""
    return math.ceil(amount / per_slice - 1e-9) if amount > 0 else 0


def estimate(spec: JobSpec, site: Site | str | None = None, *, hours: float | None = None) -> Billing | None:
    """The bill of a job on a GPU partition (None on CPU partitions or a site without a billing rule).

    ``hours`` defaults to the job's ``--time``; give the elapsed hours of a finished job for the actual cost.
    """
    s = load_site(site)
    rule = billing_rule(s)
    part = s.partitions.get(spec.partition or s.default_partition)
    if rule is None or part is None or part.kind != "gpu":
        return None
    gcds = spec.gpus_per_node or 0
    cores = (spec.cpus_per_task or 1) * spec.ntasks_per_node
    memory_mb = _memory_mb(spec, gcds, cores)
    memory = None if memory_mb is None else memory_mb / 1024  # GB as Slurm counts them (--mem=64G is 64)
    exclusive = part.exclusive or spec.exclusive
    node_gcds = s.node.gcd_count
    nodes = max(spec.nodes, 1)
    # The formula's inputs are the job's allocation: every node's GCDs, cores and memory together.
    all_gcds, all_cores, all_memory = gcds * nodes, cores * nodes, (memory or 0.0) * nodes
    by = {"GCDs": float(all_gcds), "cores": float(_slices(all_cores, rule.cores_per_gcd)),
          "memory": float(_slices(all_memory, rule.memory_per_gcd_gb))}
    reason = max(by, key=lambda k: (by[k], k == "GCDs"))  # ties go to the GCDs
    job_equivalents = by[reason]
    per_node = max(float(gcds), float(_slices(cores, rule.cores_per_gcd)),
                   float(_slices(memory or 0.0, rule.memory_per_gcd_gb))) * nodes
    gcd_word = f"GCD{'s' if all_gcds != 1 else ''}"
    warnings: list[str] = []
    if exclusive:
        if gcds < node_gcds:
            warnings.append(f"{part.name if part.exclusive else '--exclusive'} bills the whole node "
                            f"({node_gcds} GCDs) but the job uses {gcds} per node: use all {node_gcds}, or "
                            + ("small-g for fewer" if part.exclusive else "drop --exclusive for fewer"))
        job_equivalents, reason = float(node_gcds * nodes), "whole node"
    elif reason == "cores" and job_equivalents > all_gcds:
        fair = max(all_gcds, 1) * rule.cores_per_gcd
        warnings.append(f"{all_cores} cores for {all_gcds} {gcd_word} are billed as "
                        f"{_num(job_equivalents)} GCDs (cores / {rule.cores_per_gcd}, rounded up); ask for at most "
                        f"{fair} cores to pay for the GCDs only")
    elif reason == "memory" and job_equivalents > all_gcds:
        fair = max(all_gcds, 1) * rule.memory_per_gcd_gb
        warnings.append(f"{_num(all_memory)} GB of host memory for {all_gcds} {gcd_word} is billed as "
                        f"{_num(job_equivalents)} GCDs (memory / {_num(rule.memory_per_gcd_gb)} GB, rounded up); ask "
                        f"for at most {_num(fair)} GB to pay for the GCDs only")
    if not exclusive and by["cores"] > max(all_gcds, 1) and reason != "cores":
        warnings.append(f"{all_cores} cores for {all_gcds} {gcd_word} would alone be billed as "
                        f"{_num(by['cores'])} GCDs (cores / {rule.cores_per_gcd}, rounded up)")
    if hours is None and spec.time is not None:
        hours = parse_time(spec.time) / 3600
    per_hour = job_equivalents * rule.gpu_hours_per_gcd_hour
    differs = not exclusive and per_node != job_equivalents
    return Billing(partition=part.name, nodes=spec.nodes, gcds=gcds, cores=cores, memory_gb=memory,
                   exclusive=exclusive, gcd_equivalents=job_equivalents / nodes, reason=reason,
                   gpu_hours_per_hour=per_hour, hours=hours, gpu_hours=None if hours is None else per_hour * hours,
                   warnings=tuple(warnings), source=rule.source, exclusive_partition=part.exclusive,
                   per_node_gpu_hours_per_hour=per_node * rule.gpu_hours_per_gcd_hour if differs else None)


def billing_lines(spec: JobSpec, site: Site | str | None = None) -> list[str]:
    """The cost and its warnings as lines for ``--explain`` (empty where the site has no GPU billing rule)."""
    s = load_site(site)
    bill = estimate(spec, s)
    rule = billing_rule(s)
    if bill is None or rule is None:
        return []
    lines = [f"cost: {bill.text()}", rule_text(rule, s.node.gcd_count)]
    note = bill.rounding_note()
    lines += [note] if note else []
    lines += [f"warning: {w}" for w in bill.warnings]
    return lines
