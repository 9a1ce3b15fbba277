"""Where each rank of a job lands: the devices it sees, the one it uses (``LOCAL_RANK``), its GCD, its cores and
the mask ``taskset -p`` should print, so a job shape can be read rank by rank before it runs.

The rule (stated by ``--explain``, see :func:`lumikit.jobs.validate.device_rule`): ``--gpus-per-node=G`` with G tasks
per node, every rank sees all G devices and takes device ``LOCAL_RANK``; 7 cores per rank, bound with the mask of
its GCD's cores on whole nodes. ``--gpus-per-task=1`` with several tasks confines each task to one device, so
``torch.cuda.set_device(LOCAL_RANK)`` fails from local rank 1 on. Physical GCDs are known only on whole nodes: on a
shared node Slurm picks which GCDs a job gets, and the job numbers them from 0.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..site import Site, load_site
from .render import cpu_masks
from .spec import JobSpec


@dataclass(frozen=True)
class RankPlace:
    """One rank on the first node of a job."""

    local_rank: int
    sees: int  # devices torch.cuda.device_count() returns in this rank
    device: int | None  # the device LOCAL_RANK picks (None: it does not exist for this rank)
    gcd: int | None  # the physical GCD (None where Slurm picks it: shared nodes)
    cores: int  # --cpus-per-task (1 when not given)
    mask: str | None  # what `taskset -p $$` prints after "current affinity mask: " (None: not bound)
    problem: str  # "" when the rank follows the rule


def taskset_mask(mask: int) -> str:
    """A mask as ``taskset -p`` prints it: hex digits without ``0x`` and leading zeros (``fe000000000000``)."""
    return f"{mask:x}"


def rank_places(spec: JobSpec, site: Site | str | None = "lumi") -> list[RankPlace]:
    """Every rank of the first node of ``spec``: devices seen and used, GCD, cores and the mask taskset prints."""
    s = load_site(site)
    tasks = spec.ntasks_per_node
    gpus = spec.gpus_per_node or 0
    part = s.partitions.get(spec.partition or s.default_partition)
    whole = spec.exclusive or bool(part and part.exclusive) or gpus == s.node.gcd_count
    per_task = spec.gpus_per_task if spec.gpus_per_task is not None else None
    masks = cpu_masks(spec, s) if spec.cpu_bind == "auto" and gpus and tasks and gpus % tasks == 0 else None
    out = []
    for r in range(tasks):
        sees = per_task if per_task is not None else gpus
        device = r if (tasks > 1 and r < sees) else (0 if tasks == 1 and sees else None)
        # with --gpus-per-task the task's own GCD is the r-th of the job's; with --gpus-per-node device r is
        gcd_index = r * (per_task or 1) if tasks > 1 else 0
        gcd = gcd_index if whole and gcd_index < s.node.gcd_count and gpus else None
        mask = taskset_mask(int(masks[r], 16)) if masks else None
        problem = ""
        if gpus and device is None:
            problem = (f"sees {sees} device(s): set_device(LOCAL_RANK={r}) fails; ask --gpus-per-node, not "
                       "--gpus-per-task")
        elif per_task is not None and tasks > 1:
            problem = "confined to its own GCD: RCCL loses peer access to the other ranks' GCDs"
        elif tasks > 1 and spec.cpus_per_task is None:
            problem = "1 core: add --cpus-per-task"
        elif tasks > 1 and mask is None and whole:
            problem = "not bound: add --cpu-bind=auto for the mask of its GCD's cores"
        out.append(RankPlace(local_rank=r, sees=sees, device=device, gcd=gcd, cores=spec.cpus_per_task or 1,
                             mask=mask, problem=problem))
    return out


def rank_table(spec: JobSpec, site: Site | str | None = "lumi"):
    """:func:`rank_places` as a pandas table indexed by local rank (what a notebook shows)."""
    import pandas as pd

    table = pd.DataFrame([asdict(p) for p in rank_places(spec, site)])
    return table.astype({"device": "Int64", "gcd": "Int64"}).set_index("local_rank")
