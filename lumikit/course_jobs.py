"""Every module's real jobs, in one list: the notebooks launch these specs, and ``lumikit rehearse`` submits them.

Each :class:`CourseJob` says which module launches it, the spec (partition, nodes, GCDs, cores, memory, command)
and what the module's text promises about it on LUMI (:class:`Promise`: GCDs visible to PyTorch, the cores each
rank may run on, RCCL's transport, power while computing). A notebook calls the builder (``lm_job``,
``resnet_job``, ...) or :func:`course_job`; the rehearsal calls :func:`course_jobs`: both get the same spec, so
the two cannot drift apart (``tests/test_course_jobs.py`` compares them with the notebooks' launch cells).

Sizes follow the site: on LUMI the course's real sizes (``"full"``), elsewhere (a laptop, lumi-sim's CPU-only
nodes) tiny ones that finish in seconds (``"small"``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import SpecError
from .jobs.python import python_argv
from .jobs.spec import JobSpec, spec
from .jobs.workload import workload_spec
from .site import Site, load_site

#: Sites whose nodes have the GPUs the course is written for: jobs there get the course's real sizes.
FULL_SCALE_SITES = ("lumi",)
#: The ResNet sizes of module 07: the CSC summer school's ResNet-152 on CIFAR-100, or a tiny one on 128 images.
RESNET_SIZES: dict[str, dict[str, Any]] = {
    "full": dict(model="resnet152", batch=128, samples=None, epochs=2),
    "small": dict(model="tiny", batch=8, samples=128, epochs=2),
}
#: Module 01's two-rank job: each rank prints what Slurm (or the local backend) told it.
RANKS_PROGRAM = ("import os, socket; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], 'on', "
                 "socket.gethostname())")
#: Module 02's probe: which Python and which torch a job inside the container gets.
CONTAINER_PROBE = ('import os, sys, importlib.util as u; s = u.find_spec("torch"); '
                   'print("python", sys.version.split()[0], "at", sys.executable); '
                   'print("container:", os.environ.get("SINGULARITY_CONTAINER", "(none)")); '
                   'print("torch from:", s.origin if s else "(not installed)")')


def scale_for(site: Site | str | None = None) -> str:
    """``"full"`` on a site with the course's GPUs (LUMI), else ``"small"`` (tiny workloads, seconds each)."""
    return "full" if load_site(site).name in FULL_SCALE_SITES else "small"


# ------------------------------------------------------------------------------------------------ the builders

def ranks_job() -> JobSpec:
    """Module 01: two tasks on one node, each printing its RANK, WORLD_SIZE and host.

    It runs with the job's Python (:mod:`lumikit.jobs.python`) inside the course container, like every later
    module's job: on LUMI that Python is the workbook's venv, which is built inside the image and works only there
    (the node's own python3 is another one). Where the site has no containers (a laptop, lumi-sim) it runs as it is."""
    return spec(python_argv("-c", RANKS_PROGRAM), ntasks_per_node=2, time="0:05:00", container="pytorch")


def container_probe_job() -> JobSpec:
    """Module 02: one GCD inside the PyTorch container, printing which Python and torch it runs."""
    return spec(["python", "-c", CONTAINER_PROBE], partition="small-g", gpus_per_node=1, time="0:05:00",
                container="pytorch")


def lm_job(name: str, *options: str) -> JobSpec:
    """Module 03: the course's language model as a one-GCD job: small-g, 7 cores, 60 GB, 15 minutes, one CPU
    thread."""
    return workload_spec("lm", "--model-size", "tiny", *options, name=name, gcds=1, time="0:15:00")


def first_lm_job(checkpoint: str | os.PathLike[str]) -> JobSpec:
    """Module 03's first job: 12 steps, a checkpoint every 6 steps and at the end."""
    return lm_job("lm-first", "--steps", "12", "--checkpoint", str(checkpoint), "--checkpoint-every", "6")


def watched_lm_job(scale: str = "small") -> JobSpec:
    """Module 04: the language model on one GCD for long enough that its GPU record holds samples to read (on LUMI
    the medium model for 300 steps; elsewhere the tiny one for 40)."""
    size, steps = ("medium", "300") if scale == "full" else ("tiny", "40")
    return workload_spec("lm", "--model-size", size, "--steps", steps, "--no-progress", name="lm-watched", gcds=1,
                         time="0:15:00")


def profiled_lm_job(schedule: str = "6,1,4,1") -> JobSpec:
    """Module 05: the language model with torch.profiler on (``schedule``: wait, warmup, active, repeat) and
    memory recording."""
    return workload_spec("lm", "--model-size", "tiny", "--no-progress", name="lm-profiled", gcds=1,
                         time="0:10:00", profile="torch", profile_steps=11,
                         env={"LUMIKIT_PROFILE_SCHEDULE": schedule, "LUMIKIT_PROFILE_MEMORY": "1"})


def resnet_job(mode: str, *, tasks: int = 1, gpus: int = 1, scale: str = "small", batch: int | None = None,
               model: str | None = None, epochs: int | None = None) -> JobSpec:
    """Module 07: the course ResNet in ``mode`` (single, dp or ddp) with ``tasks`` Slurm tasks on ``gpus`` GCDs,
    at the site's ``scale`` (:func:`scale_for`)."""
    size = RESNET_SIZES[scale]
    args = ["--mode", mode, "--model-size", model or size["model"], "--batch-size", str(batch or size["batch"]),
            "--epochs", str(epochs or size["epochs"]), "--no-progress"]
    if size["samples"] is not None:
        args += ["--samples", str(size["samples"])]
    return workload_spec("resnet", *args, name=f"resnet-{mode}", gcds=gpus, ntasks_per_node=tasks, time="0:30:00")


#: ``torchrun`` as module 07 starts it: the job's own Python, one node, one process per GCD (two).
TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc-per-node=2")


def torchrun_job(scale: str = "small") -> JobSpec:
    """Module 07: one Slurm task with two GCDs and their 14 cores; ``torchrun`` starts the two DDP processes of
    the ResNet workload (its command without its Python, behind ``python -m torch.distributed.run``)."""
    one_task = resnet_job("ddp", tasks=1, gpus=2, epochs=1, scale=scale)
    return one_task.with_(name="resnet-torchrun", command=(*python_argv(*TORCHRUN), *one_task.command[1:]))


def two_node_gpu_job(scale: str = "small") -> JobSpec:
    """Module 08: the course ResNet with DDP over two nodes, one task and one GCD on each, so every all-reduce
    crosses the network: on LUMI RCCL over Slingshot (aws-ofi-rccl with libfabric's CXI provider); where torch sees
    no GPU (lumi-sim) gloo on the CPU."""
    one_gcd = resnet_job("ddp", tasks=1, gpus=1, epochs=1, scale=scale)
    return one_gcd.with_(name="resnet-2nodes", nodes=2)


#: Module 12's ladder as its notebook launches it (on every site): three rungs of the tiny language model, one warm-up
#: step, three timed repeats of three steps and a four-step trace per rung (three analysed: medians over steps).
LADDER_RUNGS = ("fp32", "bf16", "fused")
LADDER_OPTIONS = ("--rungs", ",".join(LADDER_RUNGS), "--steps", "3", "--repeats", "3", "--warmup", "1",
                  "--profile-steps", "4")


def making_it_faster_ladder_job(site: Site | str | None = None) -> JobSpec:
    """Module 12: the optimisation ladder (``lumikit ladder``) as one job on one GCD of the site (default: the
    detected one), with the lesson's options (:data:`LADDER_OPTIONS`)."""
    from .ladder.cli import ladder_job

    s = load_site(site)
    return ladder_job(*LADDER_OPTIONS, "--site", s.source or s.name)


def two_node_ddp_job() -> JobSpec:
    """Module 08: a few DDP steps over two nodes, one task each; every rank prints its host and the final loss."""
    return workload_spec("ddp_check", "--steps", "3", name="ddp-2nodes", nodes=2, ntasks_per_node=1, time="0:05:00")


# ------------------------------------------------------------------------------------------------ the list

#: What module 07's DDP ranks do with their GCDs (``--gpus-per-node``: every rank sees all of the node's GCDs of the
#: job and picks ``torch.cuda.set_device(LOCAL_RANK)``), as the rehearsal states its measurement.
DEVICE_LOCAL_RANK = "sees {gcds} GCDs, uses device LOCAL_RANK"
#: RCCL's transport between nodes on LUMI, as the rehearsal states it: the OFI plugin with libfabric's CXI provider.
RCCL_OVER_SLINGSHOT = "ofi/cxi"

@dataclass(frozen=True)
class Promise:
    """One thing a module's text says about its job on LUMI, and how a rehearsal measures it.

    ``key`` names the measurement (see :mod:`lumikit.rehearse`): ``gpus_visible`` (``torch.cuda.device_count()``
    in each rank), ``device_local_rank`` (each rank sees the job's GCDs of its node and uses device
    ``LOCAL_RANK``, a GCD no other rank of its node uses), ``cores_per_rank`` (``os.sched_getaffinity``),
    ``disjoint_cores`` (no two ranks of a node share a core), ``ranks`` and ``nodes`` (how many ranks ran, on how
    many hosts), ``rccl_used`` (RCCL's ``NCCL_DEBUG=INFO`` lines are in the logs; the transport they name goes into
    the note), ``rccl_transport`` (the transport and provider those lines name: ``ofi/cxi`` on LUMI's Slingshot,
    ``socket/-`` for the TCP fallback), ``ladder_rungs`` (the rungs of the job's ``ladder.json`` that have
    samples/s and its spread, comma-separated in order), ``busy_power_w`` (the report card's mean power while the GCDs compute;
    promised only for a job that owns its whole node, see :func:`power_promises`)."""

    key: str
    expected: Any
    says: str  # the module's words


@dataclass(frozen=True)
class CourseJob:
    """A job a module launches: where it is launched, its spec, and what the module's text promises about it."""

    module: str
    key: str
    notebook: str
    spec: JobSpec
    promises: tuple[Promise, ...] = ()
    variable: str = ""  # the notebook variable that holds the spec (for the drift test)
    gpu_only: bool = False  # launched only where there are GPUs

    @property
    def title(self) -> str:
        return f"{self.module} {self.key}"


def owns_whole_node(spec: JobSpec, site: Site | str | None = None) -> bool:
    """Whether the job has its nodes to itself (``--exclusive``, or an exclusive partition such as standard-g):
    only then is a GPU's power the job's own. On a shared node (small-g, dev-g) the other GCD of an MI250X package
    may be another user's, and the package's power includes it."""
    s = load_site(site)
    return bool(spec.exclusive) or (bool(spec.partition) and spec.partition in s.partitions
                                     and s.partition(spec.partition).exclusive)


def power_promises(spec: JobSpec, site: Site | str | None = None) -> tuple[Promise, ...]:
    """The power promise for a job that owns its whole node (:func:`owns_whole_node`), else none: a power figure
    on a shared node cannot be attributed to the job."""
    if not owns_whole_node(spec, site):
        return ()
    return (Promise("busy_power_w", 300, "one GCD doing useful work draws around 300 W"),)


def _one_gcd_promises(spec: JobSpec, site: Site) -> tuple[Promise, ...]:
    return (Promise("gpus_visible", 1, "one GCD of a shared small-g node (PyTorch sees one GPU)"),
            Promise("cores_per_rank", 7, "with its 7 cores"), *power_promises(spec, site))


def course_jobs(modules: list[str] | tuple[str, ...] | None = None, *, site: Site | str | None = None,
                scratch: str | os.PathLike[str] | None = None) -> list[CourseJob]:
    """Every module's real jobs (or those of ``modules``: ``["03", "07"]``), at the site's scale. ``scratch`` is a
    folder for files a job keeps beyond its run (module 03's checkpoint); a temporary name under ``runs/`` if
    not given."""
    scale = scale_for(site)
    scratch_dir = Path(scratch) if scratch is not None else Path("runs").resolve() / "course-scratch"
    s = load_site(site)
    first, watched, profiled = first_lm_job(scratch_dir / "03-lm.pt"), watched_lm_job(scale), profiled_lm_job()
    single, ddp = resnet_job("single", scale=scale), resnet_job("ddp", tasks=2, gpus=2, scale=scale)
    ladder = making_it_faster_ladder_job(s)
    jobs = [
        CourseJob("01", "ranks", "01_node_and_slurm", ranks_job(), variable="job", promises=(
            Promise("ranks", 2, "both ranks ran; each knew its RANK and the WORLD_SIZE"),
            Promise("nodes", 1, "two tasks on one node"))),
        CourseJob("02", "container-probe", "02_containers_and_envs", container_probe_job(), variable="probe",
                  promises=(Promise("gpus_visible", 1, "one GCD inside the PyTorch container"),)),
        CourseJob("03", "lm-first", "03_first_training_job", first, promises=_one_gcd_promises(first, s)),
        CourseJob("04", "watched", "04_watching_the_gpu", watched, promises=_one_gcd_promises(watched, s)),
        CourseJob("05", "lm-profiled", "05_logging_and_profiling", profiled, variable="train",
                  promises=_one_gcd_promises(profiled, s)),
        CourseJob("07", "single", "07_several_gpus", single, promises=_one_gcd_promises(single, s)),
        CourseJob("07", "ddp", "07_several_gpus", ddp, promises=(
            Promise("ranks", 2, "two Slurm tasks, one per GCD"),
            Promise("device_local_rank", DEVICE_LOCAL_RANK.format(gcds=2),
                    "each process sees both GCDs and uses device LOCAL_RANK"),
            Promise("cores_per_rank", 7, "7 cores per GCD"),
            Promise("disjoint_cores", True, "srun binds each rank's cores"),
            Promise("rccl_used", True, "only the gradients travel, summed by an all-reduce (RCCL on LUMI)"),
            *power_promises(ddp, s))),
        CourseJob("07", "dp", "07_several_gpus", resnet_job("dp", gpus=2, epochs=1, scale=scale), promises=(
            Promise("ranks", 1, "one task with two GCDs"),
            Promise("gpus_visible", 2, "nn.DataParallel splits each batch over both GCDs"),
            Promise("cores_per_rank", 14, "14 cores (7 per GCD)"))),
        CourseJob("07", "torchrun", "07_several_gpus", torchrun_job(scale), promises=(
            Promise("ranks", 1, "one task (torchrun starts the two processes)"),
            Promise("gpus_visible", 2, "one task with 2 GCDs"),
            Promise("cores_per_rank", 14, "one task with 14 cores (7 per GCD)"))),
        CourseJob("08", "ddp-2nodes", "08_several_nodes", two_node_ddp_job(), variable="ddp", promises=(
            Promise("ranks", 2, "one rank per node"),
            Promise("nodes", 2, "each rank says where it runs: two nodes"))),
        CourseJob("08", "gpu-2nodes", "08_several_nodes", two_node_gpu_job(scale), promises=(
            Promise("ranks", 2, "one rank per node, one GCD each"),
            Promise("nodes", 2, "two nodes"),
            Promise("gpus_visible", 1, "each rank's PyTorch sees its one GCD"),
            Promise("rccl_transport", RCCL_OVER_SLINGSHOT,
                    "RCCL talks between the nodes over Slingshot: aws-ofi-rccl with the CXI provider, not the "
                    "socket fallback"))),
        CourseJob("12", "ladder", "12_making_it_faster", ladder, promises=(
            Promise("ladder_rungs", ",".join(LADDER_RUNGS),
                    "ladder.json has every rung asked for, each with its samples/s and their spread"),
            *_one_gcd_promises(ladder, s))),
    ]
    if modules is None:
        return jobs
    wanted = {m.strip().zfill(2) for m in modules if m.strip()}
    unknown = wanted - {j.module for j in jobs}
    if unknown:
        raise SpecError("modules", f"no course job in module(s) {', '.join(sorted(unknown))}",
                        f"use some of: {', '.join(sorted({j.module for j in jobs}))}")
    return [j for j in jobs if j.module in wanted]


def course_job(module: str, key: str, *, site: Site | str | None = None,
               scratch: str | os.PathLike[str] | None = None) -> JobSpec:
    """The spec of one module's job by its key (``course_job("03", "lm-first")``)."""
    for job in course_jobs([module], site=site, scratch=scratch):
        if job.key == key:
            return job.spec
    keys = ", ".join(j.key for j in course_jobs([module], site=site))
    raise SpecError("key", f"module {module} launches no job {key!r}", f"use one of: {keys}")


BUILDERS: dict[str, Callable[..., JobSpec]] = {
    "ranks_job": ranks_job, "container_probe_job": container_probe_job, "lm_job": lm_job,
    "first_lm_job": first_lm_job, "making_it_faster_ladder_job": making_it_faster_ladder_job,
    "profiled_lm_job": profiled_lm_job, "resnet_job": resnet_job,
    "torchrun_job": torchrun_job, "two_node_ddp_job": two_node_ddp_job, "two_node_gpu_job": two_node_gpu_job,
    "watched_lm_job": watched_lm_job}

__all__ = ["BUILDERS", "CONTAINER_PROBE", "CourseJob", "DEVICE_LOCAL_RANK", "FULL_SCALE_SITES", "LADDER_OPTIONS",
           "LADDER_RUNGS", "Promise", "RANKS_PROGRAM", "RCCL_OVER_SLINGSHOT", "RESNET_SIZES", "TORCHRUN",
           "container_probe_job", "course_job", "course_jobs", "first_lm_job", "lm_job",
           "making_it_faster_ladder_job", "owns_whole_node",
           "power_promises", "profiled_lm_job", "ranks_job", "resnet_job", "scale_for", "torchrun_job",
           "two_node_ddp_job", "two_node_gpu_job", "watched_lm_job"]
