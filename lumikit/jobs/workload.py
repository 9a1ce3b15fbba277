"""Jobs that run the course's own training workloads (``lumikit.workloads``) the same way on every site."""
from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..site import Site, load_site
from .python import module_argv
from .spec import JobSpec, spec

#: The runnable modules of :mod:`lumikit.workloads`.
WORKLOADS = ("lm", "resnet", "ddp_check", "capstone")


def gcd_resources(gcds: int, tasks: int = 1, site: Site | str | None = None) -> dict[str, Any]:
    """The job fields for ``gcds`` GCDs per node shared by ``tasks`` tasks, from the site profile: its default
    partition, the cores next to those GCDs (7 per GCD on LUMI) split over the tasks, and the usable memory per GCD."""
    s = load_site(site)
    node = s.node
    return {"partition": s.default_partition, "gpus_per_node": gcds,
            "cpus_per_task": node.cpus_per_gcd * gcds // tasks, "mem_per_gpu": f"{node.usable_memory_per_gcd_gb}G"}


def workload_spec(workload: str, *args: str, gcds: int | None = None, container: str | None = "pytorch",
                  env: dict[str, str] | None = None, **fields: Any) -> JobSpec:
    """``python -m lumikit.workloads.<workload> ARGS`` as a job spec.

    The Python is the job's Python (:mod:`lumikit.jobs.python`): on LUMI the workbook's venv on top of the course
    container, which is why the job runs in ``container`` too (the local backend runs it without one); off LUMI
    the project's ``.venv``. One
    CPU thread per rank (``OMP_NUM_THREADS=1``, as the course's DDP scripts set it) unless ``env`` says otherwise.
    ``gcds`` asks for that many GCDs per node with :func:`gcd_resources`; fields given explicitly win.
    """
    if workload not in WORKLOADS:
        raise SpecError("command", f"{workload!r} is not one of the course workloads",
                        f"use one of: {', '.join(WORKLOADS)} (or build the command with `spec([...])`)")
    if gcds is not None:
        fields = {**gcd_resources(gcds, fields.get("ntasks_per_node") or 1), **fields}
    return spec(module_argv(f"lumikit.workloads.{workload}", *args), name=fields.pop("name", workload),
                container=container, env={"OMP_NUM_THREADS": "1", **(env or {})}, **fields)
