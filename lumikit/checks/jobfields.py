"""The fields of a job that a question fixes (partition, GCDs, tasks, time), judged the same way in every module.

A question that says "a one-GCD job on small-g, 10 minutes" fixes those fields: a check that ignored them passed a
job on standard-g (billed for a whole node) or one asking for the node's 8 GCDs. :func:`expect_job_fields` fails on
the first field that differs, naming the kind of mistake ("a partition of whole nodes"), never the value wanted.
"""
from __future__ import annotations

from typing import Any

from ..jobs.spec import parse_time
from .framework import CheckFailed

#: The kind of mistake a partition shows, by the partition wanted and the one given.
_PARTITION_MISTAKES = {
    ("small-g", "standard-g"): "a partition of whole nodes: the job is billed for all 8 GCDs of each node",
    ("standard-g", "small-g"): "a partition of shared nodes, where the question asks for whole ones",
}


def expect_job_fields(exercise: str, job: Any, *, partition: str | None = None, gcds: int | None = None,
                      tasks: int | None = None, nodes: int | None = None, time: str | None = None) -> None:
    """Fail unless ``job`` has each field the question fixes: its partition, GCDs per node (or per task), tasks per
    node, nodes and time limit (``"0:10:00"``; any spelling of the same time passes)."""
    if partition is not None and job.partition != partition:
        raise CheckFailed(exercise, "the job's partition is not the one the question asks for", found=job.partition,
                          mistake=_PARTITION_MISTAKES.get((partition, str(job.partition))),
                          hint="the question names the partition.")
    if gcds is not None:
        given = job.gpus_per_node or job.gpus_per_task
        if given != gcds:
            raise CheckFailed(exercise, "the job asks for another number of GCDs than the question", found=given,
                              mistake="every GCD of the node" if given == 8 and gcds < 8 else None,
                              hint="the question says how many GCDs the job gets.")
    if tasks is not None and (job.ntasks_per_node or 1) != tasks:
        raise CheckFailed(exercise, "the job starts another number of tasks per node than the question asks",
                          found=job.ntasks_per_node, hint="the question says how many processes run.")
    if nodes is not None and (job.nodes or 1) != nodes:
        raise CheckFailed(exercise, "the job asks for another number of nodes than the question", found=job.nodes,
                          hint="the question says how many nodes.")
    if time is not None:
        try:
            same = job.time is not None and parse_time(str(job.time)) == parse_time(time)
        except Exception:  # noqa: BLE001 (a time Slurm cannot read is simply not the one asked for)
            same = False
        if not same:
            raise CheckFailed(exercise, "the job's time limit is not the one the question asks for", found=job.time,
                              mistake="no time limit: the partition's default (hours) is asked for and billed"
                              if job.time is None else None, hint="the question gives the time limit.")
