"""Rendering a job spec to what LUMI runs: ``srun``/``salloc`` argv lists and a complete ``sbatch`` script.

Every piece of a command is a :class:`Flag`: the argv tokens plus one line saying why they are there
(``--explain``). Per-rank values (``$SLURM_PROCID``) sit inside a single-quoted ``bash -c`` script so that they
expand on the compute node, per rank. ``MASTER_ADDR``/``MASTER_PORT`` are computed outside the container (there are
no Slurm tools inside it): in a batch script before ``srun``; in a printed ``srun`` inside the step itself, since
the shell it is pasted into (a login node) has no job yet to take the first node of.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..config import UserConfig
from ..errors import SpecError
from ..site import Site, load_site
from .billing import billing_rule
from .profiling import MODES, overlay_key
from .spec import JobSpec, mem_without_unit, parse_mem_mb
from .validate import validate

MASTER_EXPORTS: tuple[tuple[str, str], ...] = (
    ("MASTER_ADDR", '$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'),
    ("MASTER_PORT", "$((20000 + SLURM_JOB_ID % 10000))"),
)
#: The same, as one shell line for a step's own shell (``scontrol show hostnames`` only expands the node list).
MASTER_IN_STEP = " && ".join(f"export {k}={v}" for k, v in MASTER_EXPORTS)
MASTER_IN_STEP_WHY = ("MASTER_ADDR (first node) and MASTER_PORT computed in the step, on the compute node, outside "
                      "the container: a login-node shell has no job yet")


@dataclass(frozen=True)
class Flag:
    """Some argv tokens and the reason they are there."""

    tokens: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Command:
    """A rendered command: argv (never passed through a shell by lumikit) plus the exports it needs first."""

    argv: tuple[str, ...]
    flags: tuple[Flag, ...] = ()
    exports: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        """Shell text: ``export`` lines (computed outside the container), then the quoted command."""
        lines = [f"export {k}={v}" for k, v in self.exports]
        lines.append(shlex.join(self.argv))
        return "\n".join(lines)

    def explain(self) -> str:
        """One line per flag: the tokens and why."""
        width = min(48, max((len(shlex.join(f.tokens)) for f in self.flags), default=0))
        rows = [f"{'export ' + k:<{width}}  # computed outside the container, before srun" for k, _ in self.exports]
        for f in self.flags:
            tok = shlex.join(f.tokens)
            if len(tok) > width:
                tok = tok[: width - 3] + "..."
            rows.append(f"{tok:<{width}}  # {f.why}")
        return "\n".join(rows)


def resolve(spec: JobSpec, site: Site, config: UserConfig | None = None) -> JobSpec:
    """Fill what the learner left to defaults: the site's partition; the account and reservation from the user's
    configuration (``config``, read once by the caller: CLI, launch, widget), else the site's course account."""
    changes: dict[str, object] = {}
    if spec.partition is None:
        changes["partition"] = site.default_partition
    if spec.account is None:
        account = (config.account if config else None) or site.slurm.get("account")
        if account:
            changes["account"] = str(account)
    if spec.reservation is None and config and config.reservation:
        changes["reservation"] = config.reservation
    return spec.with_(**changes) if changes else spec


def _prepare(spec: JobSpec, site: Site | str, check: bool) -> tuple[JobSpec, Site]:
    """The site (a profile name is read from lumikit's own files), the site's default partition, and validation
    unless the caller has validated already (``launch`` validates once)."""
    if site is None:
        raise SpecError("site", "no site given to render for", "pass a site: render_srun(job, load_site()) or 'lumi'")
    s = load_site(site)
    if spec.partition is None:
        spec = spec.with_(partition=s.default_partition)
    if check:
        validate(spec, s)
    return spec, s


def _mem_why(value: str, what: str) -> str:
    mb = parse_mem_mb(value, "mem")
    unit = " (no unit: Slurm reads megabytes)" if mem_without_unit(value) else ""
    amount = f"{mb / 1024:g} GB" if mb >= 1024 else f"{mb:g} MB"
    return f"{what}: {amount}{unit}"


def _billed_as(spec: JobSpec, site: Site) -> dict[str, str]:
    """How the bill counts cores and memory, as the tail of their explain lines, so that they agree with the cost
    line (jobs/billing.py): whole nodes bill neither; a shared partition counts them in slices, rounded up."""
    rule = billing_rule(site)
    part = site.partitions.get(spec.partition or site.default_partition)
    if rule is None or part is None or part.kind != "gpu":
        return {}
    if part.exclusive or spec.exclusive:
        whole = "; the whole node is billed, whatever this asks"
        return {"cores": whole, "memory": whole}
    return {"cores": f"; the bill counts cores / {rule.cores_per_gcd}, rounded up, over the job (see cost): up to "
                     f"{rule.cores_per_gcd} per GCD cost no more",
            "memory": f"; the bill counts memory / {rule.memory_per_gcd_gb:g} GB, rounded up, over the job (see cost)"}


def allocation_flags(spec: JobSpec, site: Site) -> list[Flag]:
    """The resource request, shared by srun, salloc and #SBATCH lines."""
    part = site.partition(spec.partition or site.default_partition)
    f: list[Flag] = [Flag((f"--job-name={spec.name}",), "the name squeue and sacct show")]
    f.append(Flag((f"--partition={part.name}",),
                  f"{'exclusive whole nodes' if part.exclusive else 'shared nodes'}, up to {part.max_nodes} nodes "
                  f"and {part.max_time}"))
    f.append(Flag((f"--nodes={spec.nodes}",), "nodes to allocate"))
    if spec.ntasks is not None:
        f.append(Flag((f"--ntasks={spec.ntasks}",), f"{spec.ntasks} tasks (processes) in the whole job"))
    f.append(Flag((f"--ntasks-per-node={spec.ntasks_per_node}",),
                  "one task (process) per GCD" if spec.ntasks_per_node == spec.gpus_per_node and spec.ntasks_per_node > 1
                  else "processes started per node"))
    gcd_note = f"a LUMI-G node has {site.node.gcd_count}; each is one GPU to PyTorch"
    if spec.gpus is not None:
        f.append(Flag((f"--gpus={spec.gpus}",), f"{spec.gpus} GCDs in the whole job ({gcd_note})"))
    elif spec.gpus_per_task is not None:
        f.append(Flag((f"--gpus-per-task={spec.gpus_per_task}",),
                      f"{spec.gpus_per_task} GCD(s) per task, {spec.gpus_per_node} per node; Slurm confines each "
                      "task to its own, so each rank sees one device" + (
                          ": set_device(LOCAL_RANK) fails beyond rank 0 and RCCL loses peer access; prefer "
                          "--gpus-per-node" if spec.ntasks_per_node > 1 else "")))
    elif spec.gpus_per_node is not None:
        f.append(Flag((f"--gpus-per-node={spec.gpus_per_node}",), f"GCDs per node ({gcd_note})"))
    if spec.gres_flags:
        f.append(Flag((f"--gres-flags={spec.gres_flags}",),
                      "each task is bound to its own GCD(s) but may still reach the node's other GCDs, so RCCL keeps "
                      "peer access between them (Slurm 24.05+)" if spec.gres_flags == "allow-task-sharing"
                      else "how Slurm shares the generic resources (GPUs) between tasks"))
    billed = _billed_as(spec, site)
    if spec.cpus_per_task is not None:
        f.append(Flag((f"--cpus-per-task={spec.cpus_per_task}",),
                      f"cores per task; {site.node.cpus_per_gcd} per GCD sit next to it (one core per CCD is "
                      f"reserved){billed.get('cores', '')}"))
    if spec.mem_per_gpu is not None:
        f.append(Flag((f"--mem-per-gpu={spec.mem_per_gpu}",),
                      _mem_why(spec.mem_per_gpu, "host memory per GCD") +
                      f"; {site.node.usable_memory_per_gcd_gb} GB per GCD is what a node has for jobs"
                      f"{billed.get('memory', '')}"))
    if spec.mem is not None:
        f.append(Flag((f"--mem={spec.mem}",), "host memory per node: all of it" if spec.mem.strip() == "0"
                      else _mem_why(spec.mem, "host memory per node")))
    if spec.mem_per_cpu is not None:
        f.append(Flag((f"--mem-per-cpu={spec.mem_per_cpu}",), _mem_why(spec.mem_per_cpu, "host memory per core")))
    if spec.time is not None:
        f.append(Flag((f"--time={spec.time}",), f"wall-clock limit; the job is cancelled after it (max {part.max_time})"))
    if spec.exclusive:
        f.append(Flag(("--exclusive",), "whole nodes, " + (
            f"billed as whole nodes ({site.node.gcd_count} GCDs each) even on {part.name}; needed for CPU masks on a "
            "shared partition" if not part.exclusive else "as the partition gives anyway")))
    if spec.threads_per_core is not None:
        f.append(Flag((f"--threads-per-core={spec.threads_per_core}",), "hardware threads used per core"))
    if spec.account:
        f.append(Flag((f"--account={spec.account}",), "the project billed (from your config, never from code)"))
    if spec.reservation:
        f.append(Flag((f"--reservation={spec.reservation}",), "the course's reserved nodes"))
    return f


def cpu_masks(spec: JobSpec, site: Site) -> list[str]:
    """One CPU mask per task on a node, from the GCDs each task drives (task i -> GCD i when one GCD each)."""
    g, t = spec.gpus_per_node or 0, spec.ntasks_per_node
    per_task = g // t
    masks = []
    for i in range(t):
        gcds = [site.node.gcd(j) for j in range(i * per_task, (i + 1) * per_task)]
        masks.append(f"0x{sum(x.mask for x in gcds):016x}")
    return masks


def step_flags(spec: JobSpec, site: Site) -> list[Flag]:
    """Options that belong to the job step (srun), not to the allocation."""
    f: list[Flag] = []
    if spec.cpu_bind == "auto":
        masks = cpu_masks(spec, site)
        f.append(Flag((f"--cpu-bind=mask_cpu:{','.join(masks)}",),
                      "task i on the cores next to its GCD (derived from the site's GCD -> CCD map)"))
    elif spec.cpu_bind and spec.cpu_bind != "none":
        f.append(Flag((f"--cpu-bind={spec.cpu_bind}",), "CPU binding as given"))
    return f


def effective_binds(spec: JobSpec, site: Site) -> list[str]:
    """Bind paths for the container: the chosen sets, the multi-node set when nodes > 1, then the spec's own."""
    sets = list(spec.bind_sets) if spec.bind_sets is not None else (["user"] if "user" in site.binds else [])
    if spec.nodes > 1 and "multinode" in site.binds and "multinode" not in sets:
        sets.append("multinode")
    out: list[str] = []
    for name in sets:
        out.extend(site.binds.get(name, ()))
    out.extend(spec.binds)
    return list(dict.fromkeys(out))


PLACEHOLDERS = {"{rank}": "${RANK}", "{local_rank}": "${LOCAL_RANK}", "{world_size}": "${WORLD_SIZE}",
                "{master_addr}": "${MASTER_ADDR}", "{master_port}": "${MASTER_PORT}"}


def uses_placeholders(spec: JobSpec) -> bool:
    """Whether the command passes per-rank values as arguments (``--rank {rank}``)."""
    return any(ph in tok for tok in spec.command for ph in PLACEHOLDERS)


def command_text(command: tuple[str, ...]) -> str:
    """The command as shell words: literal tokens quoted, tokens with ``{rank}``-style placeholders double-quoted
    with the placeholder turned into the variable (the only thing that expands)."""
    words = []
    for tok in command:
        if any(ph in tok for ph in PLACEHOLDERS):
            body = "".join("\\" + ch if ch in '"\\$`' else ch for ch in tok)
            for ph, var in PLACEHOLDERS.items():
                body = body.replace(ph, var)
            words.append(f'"{body}"')
        else:
            words.append(shlex.quote(tok))
    return " ".join(words)


#: Environment recipes every multi-node job gets when the site has them (as the course's multi-node runs set them:
#: RCCL on the Slingshot interfaces, MIOpen's caches per node in /tmp).
MULTINODE_RECIPES = ("rccl", "miopen")


#: Recipes a multi-node job does not get unless asked, and why (``--explain`` states it).
LEFT_OUT_RECIPES = {
    "rccl-gdr": "older course editions set it (the AI workshop's part 09 script still does), but with the 2026 "
                "containers multi-node jobs can hang with it: the LUMI AI Guide removed it for that (its PR #97, "
                "lumi-ai-factory/laifs-container-recipes #30), and the May 2025 course Q&A calls it not needed from "
                "ROCm 6.2 on (LUMI-training-materials, docs/ai-20250527/extra_08_MultipleGPUs.md). Ask for it with "
                "--env-recipe rccl-gdr"}


def left_out_lines(spec: JobSpec, site: Site) -> list[str]:
    """For ``--explain`` of a multi-node job: the site's recipes lumikit leaves out (:data:`LEFT_OUT_RECIPES`), the
    variables they set and why."""
    if spec.nodes < 2:
        return []
    chosen = effective_recipes(spec, site)
    out = []
    for name, why in LEFT_OUT_RECIPES.items():
        if name in site.env and name not in chosen:
            values = " ".join(f"{k}={v}" for k, v in site.env[name].items())
            out.append(f"left out: {values}: {why}")
    return out


def effective_recipes(spec: JobSpec, site: Site) -> list[str]:
    """The spec's environment recipes, the container's own for every job (``job_env``: the LAIF images'
    ``FI_MR_CACHE_MONITOR``), plus :data:`MULTINODE_RECIPES` (those the site has) and the container's own
    multi-node recipes (``multinode_env``: the LAIF image's libfabric/CXI settings) when nodes > 1."""
    names = list(spec.env_recipes)
    if spec.container and site.uses_containers:
        names += [n for n in site.container(spec.container).job_env if n in site.env]
    if spec.nodes > 1:
        names += [n for n in MULTINODE_RECIPES if n in site.env]
        if spec.container and site.uses_containers:
            names += [n for n in site.container(spec.container).multinode_env if n in site.env]
    return list(dict.fromkeys(names))


def profiler_overlay(spec: JobSpec, site: Site) -> dict[str, str] | None:
    """The squashfs overlay the spec's profiling mode needs in its container (``overlays`` in the site profile:
    rocprofv3 in the 2026 LAIF image lacks libdw), or None."""
    if not (spec.profile and spec.container and site.uses_containers):
        return None
    found = site.container(spec.container).overlays.get(overlay_key(spec.profile))
    return dict(found) if found else None


#: Sourced by the rank script when a launch backend wrote the job's secret values to a private (0600) file.
SECRETS_SOURCE = '{ [ -z "${LUMIKIT_SECRETS_FILE:-}" ] || . "$LUMIKIT_SECRETS_FILE"; }'


def _env_lines(spec: JobSpec, site: Site) -> list[str]:
    lines = []
    for name in effective_recipes(spec, site):
        for k, v in site.env_recipe(name).items():
            lines.append(f'export {k}="{v}"')  # site data: expands on the compute node
    if spec.profile_steps is not None:
        lines.append(f"export LUMIKIT_MAX_STEPS={spec.profile_steps}")
    secret = spec.secret_names()
    for k, v in spec.env:
        if k not in secret:
            lines.append(f"export {k}={shlex.quote(v)}")  # the learner's values stay literal
    if secret:
        # secret values are never in this text: they come from the launch's private file, or from the environment
        # of whoever submits (srun and sbatch pass it on); a missing one stops the rank with its name
        lines.append(SECRETS_SOURCE)
        lines.extend(f': "${{{k}:?{k} is secret and not set: export it where you submit}}"' for k in secret)
    return lines


def _profile_branch(spec: JobSpec, command: str) -> str:
    mode = MODES[spec.profile]  # type: ignore[index]
    parts = []
    if mode.makes_dir:
        parts.append(f'mkdir -p "{mode.makes_dir}"')
    parts.extend(f'printf {shlex.quote(text)} > "{path}"' for path, text in mode.files)  # the tool's input file
    parts.extend(f'export {k}="{v}"' for k, v in mode.env)
    prefix = " ".join(f'"{t}"' if "$" in t else shlex.quote(t) for t in mode.prefix)
    parts.append(f"exec {prefix + ' ' if prefix else ''}{command}")
    profiled = " && ".join(parts)
    if not spec.profile_ranks:
        return profiled
    ranks = "|".join(str(r) for r in sorted(set(spec.profile_ranks)))
    return f'case "$SLURM_PROCID" in {ranks}) {profiled} ;; *) exec {command} ;; esac'


def rank_script(spec: JobSpec, site: Site, *, master_in_step: bool = False) -> str | None:
    """The bash script each rank runs (inside the container), or None when the command can run as it is.

    ``master_in_step``: compute MASTER_ADDR/MASTER_PORT first (only where no container is in between)."""
    container = site.container(spec.container) if spec.container and site.uses_containers else None
    pieces: list[str] = []
    if master_in_step and container is None and _exports(spec):
        pieces.append(MASTER_IN_STEP)
    if container and container.with_conda:
        pieces.append("$WITH_CONDA")
    if spec.workdir:
        pieces.append(f"cd {shlex.quote(spec.workdir)}")
    pieces.extend(_env_lines(spec, site))
    if spec.distributed or uses_placeholders(spec):
        pieces.append("export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
                      f"LOCAL_WORLD_SIZE={spec.ntasks_per_node}")
    command = command_text(spec.command)
    if spec.profile:
        pieces.append(_profile_branch(spec, command))
    elif pieces:
        pieces.append(f"exec {command}")
    return " && ".join(pieces) if pieces else None


def payload(spec: JobSpec, site: Site, *, master_in_step: bool = False) -> tuple[list[str], list[Flag]]:
    """What srun starts on each task: the container launch (if any) around the rank script or the command.

    ``master_in_step``: the task computes MASTER_ADDR/MASTER_PORT itself, outside the container (a shell around
    the container launch, or the first line of the rank script when there is no container)."""
    script = rank_script(spec, site, master_in_step=master_in_step)
    inner = ["bash", "-c", script] if script else list(spec.command)
    inner_why = ("per-rank script: single-quoted so $SLURM_PROCID expands on the compute node, per rank"
                 if script else "the program itself")
    if master_in_step and _exports(spec) and not (spec.container and site.uses_containers):
        inner_why += "; " + MASTER_IN_STEP_WHY
    if spec.secret_names():
        inner_why += f"; secrets ({', '.join(spec.secret_names())}) come from your environment, never from this text"
    if not (spec.container and site.uses_containers):
        return inner, [Flag(tuple(inner), inner_why)]
    c = site.container(spec.container)
    flags = [Flag(("singularity", c.launch),
                  "run inside the container; its conda env is activated by $WITH_CONDA" if c.with_conda
                  else f"'singularity {c.launch}' activates the container's environment")]
    overlay = profiler_overlay(spec, site)
    if overlay:
        flags.append(Flag(("--overlay", f"{overlay['overlay']}:ro"),
                          f"{spec.profile} needs {overlay.get('lacks', 'a library')}, which this image lacks "
                          f"({overlay.get('source', 'site profile')}): build {overlay['overlay']} first (see the "
                          "warning)"))
    for b in effective_binds(spec, site):
        why = ("multi-node: Slurm/Cray/Slingshot libraries for RCCL" if b in site.binds.get("multinode", ())
               else "make this path visible in the container")
        flags.append(Flag(("-B", b), why))
    flags.append(Flag((c.path,), f"the container image ({c.name})"))
    flags.append(Flag(tuple(inner), inner_why))
    argv = [t for f in flags for t in f.tokens]
    if master_in_step and _exports(spec):
        wrapper = f"{MASTER_IN_STEP} && exec {shlex.join(argv)}"
        return ["bash", "-c", wrapper], [Flag(("bash", "-c", f"{MASTER_IN_STEP} && exec ..."), MASTER_IN_STEP_WHY)] + flags
    return argv, flags


def _exports(spec: JobSpec) -> tuple[tuple[str, str], ...]:
    return MASTER_EXPORTS if spec.distributed or uses_placeholders(spec) else ()


def render_srun(spec: JobSpec, site: Site | str, *, in_allocation: bool = False, check: bool = True) -> Command:
    """``srun`` with the full resource request (or only step options inside an allocation) and the payload.

    Pure: the result depends on ``spec`` and ``site`` only (resolve the user's account with :func:`resolve` first).
    ``check=False`` skips validation for a caller that has validated the spec already. A full request is a command
    to paste anywhere: a multi-task job computes its MASTER_ADDR/MASTER_PORT inside the step. ``in_allocation``
    (the srun line of a batch script) leaves them to exports before srun."""
    spec, s = _prepare(spec, site, check)
    flags = [Flag(("srun",), "start the tasks of a job step")]
    flags += ([] if in_allocation else allocation_flags(spec, s)) + step_flags(spec, s)
    argv, pflags = payload(spec, s, master_in_step=not in_allocation)
    return Command(argv=tuple(t for f in flags for t in f.tokens) + tuple(argv), flags=tuple(flags + pflags),
                   exports=_exports(spec) if in_allocation else ())


def render_salloc(spec: JobSpec, site: Site | str, *, check: bool = True) -> Command:
    """``salloc``: the allocation only; run steps in it with srun (or attach with :func:`attach_argv`)."""
    spec, s = _prepare(spec, site, check)
    flags = [Flag(("salloc",), "allocate nodes and return a shell on the login node")] + allocation_flags(spec, s)
    return Command(argv=tuple(t for f in flags for t in f.tokens), flags=tuple(flags))


def _directive_value(token: str) -> str:
    if "\n" in token or "\r" in token:
        opt = token.split("=", 1)[0]
        raise SpecError(opt.lstrip("-").replace("-", "_"), "a line break cannot go into an #SBATCH line",
                        "use a value without line breaks")
    opt, eq, val = token.partition("=")
    return f"{opt}={shlex.quote(val)}" if eq and shlex.quote(val) != val else token


def submit_note(site: Site) -> str:
    """Where a batch script built for ``site`` can be submitted (from the profile's ``[slurm] submit_from``)."""
    where = site.slurm.get("submit_from")
    if site.scheduler != "slurm":
        return (f"Site {site.name} has no Slurm: this script is to read. To submit, build it for LUMI "
                "(--site lumi) and run sbatch on a LUMI login node.")
    return f"Submit it {where or 'where this site runs Slurm'}: sbatch <this file>"


def render_sbatch(spec: JobSpec, site: Site | str, *, output: str | None = None,
                  step_options: tuple[str, ...] = (), exports: dict[str, str] | None = None,
                  check: bool = True) -> str:
    """A complete batch script: #SBATCH lines, exports computed outside the container, then the srun step.

    ``step_options`` go to the srun line (a backend adds per-rank log files there); ``exports`` are literal values
    exported first (e.g. the run folder). The script's first comment names the site and where to submit it.
    """
    spec, s = _prepare(spec, site, check)
    lines = ["#!/bin/bash", f"# Generated by lumikit for site {s.name}. {submit_note(s)}"]
    for f in allocation_flags(spec, s):
        lines.extend(f"#SBATCH {_directive_value(t)}" for t in f.tokens)
    out = output or spec.output
    if out:
        lines.append(f"#SBATCH {_directive_value('--output=' + out)}")
    lines.append("")
    lines.append("set -eo pipefail")
    for k, v in (exports or {}).items():
        lines.append(f"export {k}={shlex.quote(v)}")
    if spec.cpus_per_task is not None:
        lines.append("export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK  # srun does not inherit --cpus-per-task")
    for k, v in _exports(spec):
        lines.append(f"export {k}={v}")
    if spec.secret_names():
        # the launch's private secrets file goes when the job ends, whatever way it ends
        lines.append('[ -z "${LUMIKIT_SECRETS_FILE:-}" ] || trap \'rm -f "$LUMIKIT_SECRETS_FILE"\' EXIT')
    step = render_srun(spec, s, in_allocation=True, check=False)
    lines.append(shlex.join(step.argv[:1] + tuple(step_options) + step.argv[1:]))
    return "\n".join(lines) + "\n"


def attach_argv(job_id: str | int, command: tuple[str, ...] | list[str] = ("/bin/bash",), *,
                node: str | None = None, pty: bool = True) -> list[str]:
    """Attach to a running job (e.g. to watch rocm-smi): a step that overlaps the job's own, one task on one node
    (``-N1 -n1``: without them a step in a multi-node or multi-task job starts the command once per task)."""
    argv = ["srun", f"--jobid={job_id}", "--overlap", "-N1", "-n1"]
    if node:
        argv.append(f"--nodelist={node}")
    if pty:
        argv.append("--pty")
    return argv + list(command)
