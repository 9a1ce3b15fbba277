"""Jobs that run the course's own training workloads (``lumikit.workloads``) the same way on every site."""
from __future__ import annotations

import sys
from typing import Any

from ..errors import SpecError
from .spec import JobSpec, spec

#: The runnable modules of :mod:`lumikit.workloads`.
WORKLOADS = ("lm", "resnet", "ddp_check")


def workload_spec(workload: str, *args: str, container: str | None = "pytorch",
                  env: dict[str, str] | None = None, **fields: Any) -> JobSpec:
    """``python -m lumikit.workloads.<workload> ARGS`` as a job spec.

    The Python is this kernel's own: on LUMI the workbook's venv on top of the course container, which is why the
    job runs in ``container`` too (the local backend runs it without one); off LUMI the project's ``.venv``. One
    CPU thread per rank (``OMP_NUM_THREADS=1``, as the course's DDP scripts set it) unless ``env`` says otherwise.
    """
    if workload not in WORKLOADS:
        raise SpecError("command", f"{workload!r} is not one of the course workloads",
                        f"use one of: {', '.join(WORKLOADS)} (or build the command with `spec([...])`)")
    return spec([sys.executable, "-m", f"lumikit.workloads.{workload}", *args], name=fields.pop("name", workload),
                container=container, env={"OMP_NUM_THREADS": "1", **(env or {})}, **fields)
