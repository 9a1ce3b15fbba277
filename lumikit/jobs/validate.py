"""Checks a job spec against a site, the way LUMI's Slurm would judge it, before anything is submitted.

Each rule yields :class:`~lumikit.errors.SpecError` values naming the field, the limit and the fix;
:func:`problems` lists them all (for widgets), :func:`validate` raises the first.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from ..errors import SiteError, SpecError
from ..site import Site
from .profiling import MODES, overlay_key
from .spec import JobSpec, format_time, mem_without_unit, parse_mem_mb, parse_time

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
Rule = Callable[[JobSpec, Site], Iterator[SpecError]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _partition(spec: JobSpec, site: Site):
    name = spec.partition or site.default_partition
    return site.partitions.get(name)


@rule
def _known_partition(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    name = spec.partition or site.default_partition
    if name not in site.partitions:
        yield SpecError("partition", f"unknown partition {name!r} on {site.name}",
                        f"use one of: {', '.join(site.partitions)}")


def gres_flags_of(site: Site) -> tuple[str, ...]:
    """The ``--gres-flags`` values this site's Slurm accepts (site data ``[slurm] gres_flags``; none by default)."""
    return tuple(str(x) for x in site.slurm.get("gres_flags", ()))


@rule
def _gres_flags(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.gres_flags and spec.gres_flags not in gres_flags_of(site):
        known = gres_flags_of(site)
        version = site.slurm.get("version", "")
        yield SpecError("gres_flags", f"--gres-flags={spec.gres_flags} on {site.name}"
                        + (f" (Slurm {version})" if version else ""),
                        limit=f"this site's Slurm accepts {', '.join(known)}" if known else
                        "this site's Slurm has no such flag (allow-task-sharing came with Slurm 24.05)",
                        fix="leave --gres-flags out, or ask --gpus-per-node and let each rank pick device LOCAL_RANK")


@rule
def _command(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if not spec.command or not spec.command[0].strip():
        yield SpecError("command", "no command to run", "give the program and its arguments, e.g. python train.py")


@rule
def _shape(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    part = _partition(spec, site)
    if spec.nodes < 1:
        yield SpecError("nodes", f"{spec.nodes} nodes", "ask for at least 1 node")
    elif part and spec.nodes > part.max_nodes:
        yield SpecError("nodes", f"{spec.nodes} nodes on {part.name}", limit=f"{part.max_nodes} nodes on {part.name}",
                        fix="ask for fewer nodes, or use standard-g for large jobs")
    if spec.ntasks_per_node < 1:
        yield SpecError("ntasks_per_node", f"{spec.ntasks_per_node} tasks per node", "ask for at least 1 task")
    if spec.threads_per_core not in (None, 1, 2):
        yield SpecError("threads_per_core", f"{spec.threads_per_core}", limit="1 or 2 (SMT)",
                        fix="use 1 (one thread per core) or 2")


@rule
def _gpus(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    part = _partition(spec, site)
    g = spec.gpus_per_node
    if g is None:
        return
    gcds = site.node.gcd_count
    if g < 0:
        yield SpecError("gpus_per_node", f"{g} GPUs", "ask for 0 to 8 GCDs")
    elif g > gcds:
        yield SpecError("gpus_per_node", f"{g} GPUs per node", limit=f"{gcds} GCDs per LUMI-G node",
                        fix=f"ask for at most {gcds} per node and add nodes (--nodes) for more")
    if part and part.kind == "cpu" and g > 0:
        yield SpecError("gpus_per_node", f"{g} GPUs on the CPU partition {part.name}",
                        fix="use a GPU partition: small-g, standard-g or dev-g")


@rule
def _cpus(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    part = _partition(spec, site)
    c = spec.cpus_per_task
    if c is None:
        return
    if c < 1:
        yield SpecError("cpus_per_task", f"{c} CPUs per task", "ask for at least 1")
        return
    if not part or part.kind != "gpu":
        return
    # More cores than the GCDs carry is allowed on LUMI: it is billed as more GCDs (see jobs/billing.py).
    cpus_on_node = c * spec.ntasks_per_node
    usable = site.node.cores - len(site.node.reserved_cores)
    if cpus_on_node > usable:
        yield SpecError("cpus_per_task", f"{cpus_on_node} CPUs on one node", limit=f"{usable} usable cores per node",
                        fix="lower --cpus-per-task or --ntasks-per-node")


@rule
def _memory(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    part = _partition(spec, site)
    kinds = [n for n, v in (("mem", spec.mem), ("mem_per_gpu", spec.mem_per_gpu), ("mem_per_cpu", spec.mem_per_cpu))
             if v is not None]
    if len(kinds) > 1:
        yield SpecError(kinds[1], f"both --{kinds[0].replace('_', '-')} and --{kinds[1].replace('_', '-')} given",
                        fix="use only one kind of memory request (on LUMI-G: --mem-per-gpu=60G)")
        return
    # More memory than the GCDs carry is allowed on LUMI: it is billed as more GCDs (see jobs/billing.py);
    # only a node's usable memory is a limit.
    node_gb = site.node.usable_memory_per_gcd_gb * site.node.gcd_count
    node_text = f"{node_gb} GB usable per node"
    gpus = spec.gpus_per_node or 0
    if spec.mem_per_gpu is not None:
        mb = parse_mem_mb(spec.mem_per_gpu, "mem_per_gpu")
        if part and part.kind == "gpu" and gpus > 0 and mb * gpus > node_gb * 1024:
            yield SpecError("mem_per_gpu", f"{spec.mem_per_gpu} per GPU x {gpus} GCDs", limit=node_text,
                            fix=f"use --mem-per-gpu={site.node.usable_memory_per_gcd_gb}G")
        if gpus == 0:
            yield SpecError("mem_per_gpu", "memory per GPU without GPUs", fix="add --gpus-per-node or use --mem")
    if spec.mem is not None:
        mb = parse_mem_mb(spec.mem, "mem")
        exclusive = spec.exclusive or (part is not None and part.exclusive)
        if mb == 0 and not exclusive:
            yield SpecError("mem", "--mem=0 asks for all of a node's memory on a shared partition",
                            fix="add --exclusive, or ask for --mem-per-gpu=60G")
        elif part and part.kind == "gpu" and mb > node_gb * 1024:
            yield SpecError("mem", f"{spec.mem} on one node", limit=node_text, fix="ask for less memory per node")
    if spec.mem_per_cpu is not None:
        parse_mem_mb(spec.mem_per_cpu, "mem_per_cpu")


@rule
def _time(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.time is None:
        return
    try:
        seconds = parse_time(spec.time)
    except SpecError as exc:
        yield exc
        return
    if seconds <= 0:
        yield SpecError("time", f"{spec.time!r} is no time at all", "ask for at least a minute, e.g. 0:15:00")
    part = _partition(spec, site)
    if part and seconds > parse_time(part.max_time, "max_time"):
        yield SpecError("time", f"{format_time(seconds)} on {part.name}", limit=f"{part.max_time} on {part.name}",
                        fix=f"ask for at most {part.max_time} and checkpoint to continue in a new job")


@rule
def _account(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.reservation and not spec.account:
        yield SpecError("reservation", f"reservation {spec.reservation!r} without an account",
                        fix="add --account=project_<number> (or set LUMIKIT_ACCOUNT / account in "
                            "~/.config/lumikit/config.toml); reservations belong to a project")


@rule
def _binding(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.cpu_bind in (None, "none"):
        return
    part = _partition(spec, site)
    exclusive = spec.exclusive or (part is not None and part.exclusive)
    if spec.cpu_bind != "auto" and not spec.cpu_bind.startswith(("mask_cpu", "map_cpu", "v,", "verbose,")):
        yield SpecError("cpu_bind", f"{spec.cpu_bind!r}", "use auto (masks from the site's topology), none, "
                        "or an explicit mask_cpu:... list")
        return
    if not exclusive:
        yield SpecError("cpu_bind", f"CPU masks on the shared partition {part.name if part else '?'} without "
                        "--exclusive", fix="add --exclusive (the masks assume the whole node), or drop --cpu-bind")
    if spec.cpu_bind == "auto":
        g = spec.gpus_per_node or 0
        t = spec.ntasks_per_node
        if g <= 0:
            yield SpecError("cpu_bind", "auto masks follow the GCDs, but no GPUs were asked for",
                            fix="add --gpus-per-node, or drop --cpu-bind")
        elif t > g or g % t:
            yield SpecError("cpu_bind", f"auto masks need whole GCDs per task ({t} tasks for {g} GCDs)",
                            fix=f"use --ntasks-per-node equal to {g} or a divisor of it")


@rule
def _container(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.container is None:
        return
    try:
        site.container(spec.container)
    except SiteError as exc:
        yield SpecError("container", str(exc), "pick a container of the site or give a .sif path")


@rule
def _binds(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    for b in spec.binds:
        src = b.split(":", 1)[0]
        if not src or "," in b:
            yield SpecError("binds", f"bind {b!r}", "give one path per bind, as SRC or SRC:DEST")
    for name in spec.bind_sets or ():
        if name not in site.binds:
            yield SpecError("bind_sets", f"unknown bind set {name!r}", f"use one of: {', '.join(site.binds) or 'none'}")


@rule
def _env(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    for k, _ in spec.env:
        if not _ENV_NAME.match(k):
            yield SpecError("env", f"{k!r} is not a valid variable name",
                            "use letters, digits and underscores, not starting with a digit")
    for name in spec.env_recipes:
        if name not in site.env:
            yield SpecError("env_recipes", f"unknown environment recipe {name!r}",
                            f"use one of: {', '.join(site.env)}")


@rule
def _profiling(spec: JobSpec, site: Site) -> Iterator[SpecError]:
    if spec.profile is None:
        if spec.profile_ranks:
            yield SpecError("profile_ranks", "ranks to profile but no profiling mode",
                            f"add a mode: {', '.join(MODES)}")
        return
    if spec.profile not in MODES:
        yield SpecError("profile", f"unknown profiling mode {spec.profile!r}", f"use one of: {', '.join(MODES)}")
    for r in spec.profile_ranks:
        if not 0 <= r < spec.total_tasks:
            yield SpecError("profile_ranks", f"rank {r} does not exist in a job of {spec.total_tasks} tasks",
                            f"pick ranks 0..{spec.total_tasks - 1}")
    if spec.profile_steps is not None and spec.profile_steps < 1:
        yield SpecError("profile_steps", f"{spec.profile_steps} steps", "profile at least 1 step (10 is plenty)")


def missing_account(spec: JobSpec, site: Site, config_file: str) -> SpecError | None:
    """On a site that bills a project (``[slurm] account_required``), a spec without one; ``config_file`` is where
    the user's account belongs (named in the fix). Launching refuses it; printing a command only warns."""
    if spec.account or site.scheduler != "slurm" or not site.slurm.get("account_required"):
        return None
    return SpecError("account", f"site {site.name} bills every job to a project, and none is set",
                     f"add --account=project_<number>, or put account = \"project_<number>\" in {config_file} "
                     "(or export LUMIKIT_ACCOUNT)")


def advice(spec: JobSpec, site: Site) -> list[str]:
    """Things that are allowed but probably not meant (a memory value without a unit), one sentence each."""
    out = []
    for name in ("mem", "mem_per_gpu", "mem_per_cpu"):
        value = getattr(spec, name)
        if mem_without_unit(value):
            opt = "--" + name.replace("_", "-")
            out.append(f"{opt}={value} has no unit: Slurm reads it as {value} MB; write {value}G for gigabytes")
    out.extend(literal_variable_advice(spec))
    out.extend(rank_advice(spec, site))
    out.extend(overlay_advice(spec, site))
    if spec.container and site.uses_containers and spec.container in site.containers:
        c = site.container(spec.container)
        if c.note:
            out.append(f"container {c.name}: {c.note}")
    secret = spec.secret_names()
    if secret:
        out.append(f"{', '.join(secret)}: secret, so not printed; export it in the shell where you run the command "
                   "(srun and sbatch pass your environment on to the job)")
    return out


_RANK_VARIABLE = re.compile(r"\$\{?(MASTER_ADDR|MASTER_PORT|LOCAL_RANK|RANK|WORLD_SIZE)\b\}?")


def literal_variable_advice(spec: JobSpec) -> list[str]:
    """A pasted command that names ``$MASTER_ADDR`` (or another per-rank variable) itself: lumikit quotes every word
    of the command, so the program would get the text ``$MASTER_ADDR``; the placeholders become the values."""
    from .render import PLACEHOLDERS  # render imports this module

    placeholder = {var.strip("${}"): ph for ph, var in PLACEHOLDERS.items()}
    found = list(dict.fromkeys(m.group(1) for tok in spec.command for m in _RANK_VARIABLE.finditer(tok)))
    if not found:
        return []
    names = " and ".join(f"${n}" for n in found)
    master = {"MASTER_ADDR", "MASTER_PORT"} & set(found)
    instead = ", ".join((["{master_addr}:{master_port}"] if master else [])
                        + [placeholder[n] for n in found if n not in master])
    many = len(found) > 1
    return [f"{names} in the command {'are' if many else 'is'} passed to the program literally (lumikit quotes each "
            f"word, so no shell expands {'them' if many else 'it'}): write {instead} instead, which lumikit turns "
            "into the values on each rank"]


#: Where the device/core rule per rank comes from (stated by ``--explain`` and :func:`device_rule`).
DEVICE_RULE_SOURCE = ("LUMI user guide, docs/runjobs/scheduled-jobs/distribution-binding.md (GCD -> cores map, "
                      "masks); LUMI AI workshop 08, reference_solution/run_no_torchrun.sh (--ntasks-per-node=8 "
                      "--cpus-per-task=7, LOCAL_RANK=$SLURM_LOCALID); LUMI training 2day-20260422/202-Binding.md "
                      "(per-task GPU binding breaks RCCL peer access)")


def _gpu_job(spec: JobSpec, site: Site) -> bool:
    part = _partition(spec, site)
    return bool(part and part.kind == "gpu" and (spec.gpus_per_node or 0) > 0)


def rank_advice(spec: JobSpec, site: Site) -> list[str]:
    """Warnings for a multi-rank GPU shape that runs but misplaces devices or cores (allowed by Slurm, so advice).

    ``--gpus-per-task`` with several tasks: Slurm confines each task to its own GCD, so every rank sees one device
    (``set_device(LOCAL_RANK)`` fails on local ranks 1..) and RCCL loses peer access between the isolated GCDs.
    Several tasks without ``--cpus-per-task``: each rank gets one core."""
    if not _gpu_job(spec, site) or spec.ntasks_per_node < 2:
        return []
    out = []
    per_gcd = site.node.cpus_per_gcd
    if spec.gpus_per_task is not None and spec.gres_flags == "allow-task-sharing":
        out.append(f"--gpus-per-task={spec.gpus_per_task} with --gres-flags=allow-task-sharing: each rank sees only "
                   "its own GCD, as device 0 (use cuda:0, not LOCAL_RANK), while RCCL keeps peer access to the "
                   "node's other GCDs")
    elif spec.gpus_per_task is not None:
        last = spec.ntasks_per_node - 1
        sharing = "allow-task-sharing" in gres_flags_of(site)
        out.append(f"--gpus-per-task={spec.gpus_per_task} with {spec.ntasks_per_node} tasks per node: Slurm confines "
                   "each task to its own GCD, so every rank sees one device (cuda:0); "
                   f"torch.cuda.set_device(LOCAL_RANK) then fails on local ranks 1-{last}, and RCCL loses peer "
                   "access between the isolated GCDs (\"Failed to find reverse path\"). "
                   + ("Add --gres-flags=allow-task-sharing (this site's Slurm has it) to keep peer access, each rank "
                      f"using cuda:0; or ask --gpus-per-node={spec.gpus_per_node} instead and let each rank pick "
                      "device LOCAL_RANK" if sharing else
                      f"Ask --gpus-per-node={spec.gpus_per_node} instead and let each rank pick device LOCAL_RANK"))
    part = _partition(spec, site)
    whole_node = spec.exclusive or (part is not None and part.exclusive)
    g, t = spec.gpus_per_node or 0, spec.ntasks_per_node
    if whole_node and spec.cpus_per_task is not None and spec.cpu_bind in (None, "none") and t <= g and g % t == 0:
        gcd0 = site.node.gcds[0] if site.node.gcds else None
        where = (f" (GCD 0 sits next to cores {gcd0.cores[0]}-{gcd0.cores[-1]}, NUMA {gcd0.numa})" if gcd0 else "")
        out.append(f"{t} tasks with --cpus-per-task={spec.cpus_per_task} on whole nodes but no CPU binding: Slurm "
                   f"does not place each rank's cores next to its GCD{where}, so data moves across NUMA domains; add "
                   "--cpu-bind=auto (the mask of each rank's GCD's cores, from the site's GCD -> core map; LUMI user "
                   "guide, distribution-binding.md)")
    if spec.cpus_per_task is None:
        gcds_per_task = max(1, (spec.gpus_per_node or 0) // spec.ntasks_per_node)
        out.append(f"{spec.ntasks_per_node} tasks per node without --cpus-per-task: Slurm gives each rank one core "
                   f"(its data loader and Python share it); add --cpus-per-task={per_gcd * gcds_per_task} (the cores "
                   "next to each rank's GCD) and, on whole nodes, --cpu-bind=auto for the mask per rank")
    return out


def overlay_advice(spec: JobSpec, site: Site) -> list[str]:
    """A profiling mode that needs a library its container lacks: the overlay the command mounts, and how to build
    it (site data, ``[containers.NAME.overlays.MODE]``)."""
    if not (spec.profile and spec.container and site.uses_containers) or spec.container not in site.containers:
        return []
    c = site.container(spec.container)
    need = c.overlays.get(overlay_key(spec.profile))
    if not need:
        return []
    build = need.get("build", "").replace("{image}", c.path)
    return [f"{spec.profile} in container {c.name} needs {need.get('lacks', 'a library')}, which the image lacks "
            f"({need.get('source', '')}); without it the profiler fails to start. The command mounts "
            f"--overlay {need['overlay']}:ro: build {need['overlay']} once, in the folder you submit from"
            + (f", with: {build}" if build else "")]


def device_rule(spec: JobSpec, site: Site) -> str | None:
    """The one rule for devices and cores per rank, for ``--explain`` of a multi-rank GPU job (None otherwise)."""
    if not _gpu_job(spec, site) or spec.ntasks_per_node < 2:
        return None
    per_gcd = site.node.cpus_per_gcd
    return (f"rule: one rank per GCD: --gpus-per-node=G with G tasks per node (not --gpus-per-task), each rank uses "
            f"device LOCAL_RANK (torch.cuda.set_device(LOCAL_RANK), LOCAL_RANK=$SLURM_LOCALID), gets {per_gcd} cores "
            f"(--cpus-per-task={per_gcd}) and, on whole nodes, the mask of its GCD's cores (--cpu-bind=auto; check "
            f"with taskset -p $$ per rank); torchrun instead: one task with all cores and "
            f"--numa-binding=exclusive. Source: {DEVICE_RULE_SOURCE}")


def problems(spec: JobSpec, site: Site) -> list[SpecError]:
    """Every rule the spec breaks on this site (empty when it is fine)."""
    out: list[SpecError] = []
    for r in RULES:
        try:
            out.extend(r(spec, site))
        except SpecError as exc:  # a malformed value met while checking another rule
            out.append(exc)
    return out


def validate(spec: JobSpec, site: Site) -> JobSpec:
    """Raise the first problem; return the spec unchanged when it is fine."""
    found = problems(spec, site)
    if found:
        raise found[0]
    return spec
