"""``lumikit srun|sbatch|salloc|attach``: print the commands LUMI needs for a job described with Slurm's options."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..config import config_path, load_config
from ..errors import SpecError
from ..site import Site, load_site
from .billing import billing_lines
from .profiling import MODES
from .render import (Command, allocation_flags, attach_argv, left_out_lines, render_salloc, render_sbatch, render_srun,
                     resolve)
from .spec import JobSpec, is_secret
from .validate import advice, device_rule, missing_account, validate
from .vllm import DEFAULT_MODEL as DEFAULT_VLLM_MODEL


def add_job_options(p: argparse.ArgumentParser, *, with_command: bool = True) -> None:
    """The job options, under Slurm's own long names plus lumikit's (shared with ``lumikit run``)."""
    g = p.add_argument_group("job (Slurm's names)")
    g.add_argument("-p", "--partition")
    g.add_argument("-N", "--nodes", type=int, default=1)
    g.add_argument("-n", "--ntasks", type=int, help="tasks in the whole job (Slurm's meaning; even over the nodes)")
    g.add_argument("--ntasks-per-node", type=int, help="tasks on each node (default 1)")
    g.add_argument("--gpus-per-node", type=int, help="GPUs (GCDs) on each node")
    g.add_argument("-G", "--gpus", type=int, help="GPUs (GCDs) in the whole job (Slurm's meaning; one node only)")
    g.add_argument("--gpus-per-task", type=int, help="GPUs (GCDs) for each task")
    g.add_argument("--gres-flags", metavar="FLAG",
                   help="Slurm's --gres-flags, e.g. allow-task-sharing (Slurm 24.05+: with --gpus-per-task each task "
                        "keeps access to the node's other GCDs, so RCCL's peer access works)")
    g.add_argument("-c", "--cpus-per-task", type=int)
    g.add_argument("--mem-per-gpu", help="host memory per GPU, e.g. 60G (a plain number is MB, as in Slurm)")
    g.add_argument("--mem", help="host memory per node, e.g. 120G (a plain number is MB, as in Slurm)")
    g.add_argument("--mem-per-cpu", help="host memory per core, e.g. 2G (a plain number is MB, as in Slurm)")
    g.add_argument("-t", "--time")
    g.add_argument("-A", "--account")
    g.add_argument("--reservation")
    g.add_argument("--exclusive", action="store_true")
    g.add_argument("-J", "--job-name", default="lumikit")
    g.add_argument("--threads-per-core", type=int)
    g.add_argument("-o", "--output", help="stdout file of a batch job (Slurm patterns like %%j allowed)")
    g.add_argument("--chdir", help="working directory of the tasks")
    g.add_argument("--cpu-bind", help="'auto' derives mask_cpu from the site's GCD map; or none, or mask_cpu:...")
    w = p.add_argument_group("lumikit")
    w.add_argument("--site", help="site profile name or path (default: detected; see `lumikit site`)")
    w.add_argument("--container", help="container name from the site profile, or a .sif path")
    w.add_argument("--bind", action="append", default=[], metavar="SRC[:DEST]", help="extra bind (repeatable)")
    w.add_argument("--bind-set", action="append", metavar="NAME",
                   help="bind set of the site (default: user; multinode is added for --nodes > 1)")
    w.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="environment variable (repeatable); values of *TOKEN*, *KEY*, *SECRET*, *PASSWORD*... names "
                        "are kept secret (a command line is visible to ps: prefer --secret NAME)")
    w.add_argument("--secret", action="append", default=[], metavar="NAME",
                   help="treat NAME as secret: its value is never written or printed; without --env NAME=..., the "
                        "job gets it from your environment (repeatable)")
    w.add_argument("--env-recipe", action="append", default=[], metavar="NAME",
                   help="environment recipe of the site, e.g. caches, rccl, miopen (repeatable)")
    w.add_argument("--profile", choices=sorted(MODES), help="profiling mode for the profiled ranks")
    w.add_argument("--profile-rank", action="append", type=int, default=[], metavar="N",
                   help="rank to profile (repeatable; default: every rank)")
    w.add_argument("--profile-steps", type=int, metavar="N", help="stop after N steps when profiling")
    if with_command:
        p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command each task runs")


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    """Build the job spec from parsed options."""
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    env: list[tuple[str, str]] = []
    for item in args.env:
        if "=" not in item:
            raise SpecError("env", f"{item!r} has no '='", "write --env NAME=value")
        k, v = item.split("=", 1)
        env.append((k, v))
    return JobSpec(
        command=tuple(cmd), name=args.job_name, partition=args.partition, nodes=args.nodes, ntasks=args.ntasks,
        ntasks_per_node=args.ntasks_per_node, gpus_per_node=args.gpus_per_node, gpus=args.gpus,
        gpus_per_task=args.gpus_per_task, cpus_per_task=args.cpus_per_task, secrets=tuple(args.secret),
        mem_per_gpu=args.mem_per_gpu, mem=args.mem, mem_per_cpu=args.mem_per_cpu, time=args.time,
        exclusive=args.exclusive, account=args.account, reservation=args.reservation, container=args.container,
        binds=tuple(args.bind), bind_sets=tuple(args.bind_set) if args.bind_set else None, env=tuple(env),
        env_recipes=tuple(args.env_recipe), workdir=args.chdir, cpu_bind=args.cpu_bind,
        threads_per_core=args.threads_per_core, output=args.output, profile=args.profile,
        profile_ranks=tuple(args.profile_rank), profile_steps=args.profile_steps, gres_flags=args.gres_flags)


def inside_job_note(argv0: str) -> str | None:
    """One line when this shell is itself inside a Slurm job: a pasted srun becomes a step of that job."""
    from ..launch.slurm import enclosing_job

    job = enclosing_job()
    if argv0 != "srun" or not job:
        return None
    return (f"note: this shell is inside Slurm job {job}: pasted here, this srun becomes a step of that job (limited "
            "to its nodes and resources), not a new job; paste it in a login-node shell for a job of its own")


def warn(message: str) -> None:
    """One line on stderr, the way the CLI reports errors."""
    print(f"lumikit: warning: {message}", file=sys.stderr)


def command_line_secrets(args: argparse.Namespace) -> list[str]:
    """A warning for secret values typed as ``--env NAME=value``: lumikit's own argv is visible to ps."""
    names = [item.split("=", 1)[0] for item in args.env if "=" in item]
    secret = [n for n in names if is_secret(n, args.secret)]
    if not secret:
        return []
    return [f"{', '.join(secret)}: the value is on lumikit's own command line, which ps shows while it runs; "
            f"export it in your shell and pass --secret {secret[0]} instead of --env {secret[0]}=..."]


def edge_spec(args: argparse.Namespace, *, launching: bool) -> tuple[JobSpec, Site]:
    """The spec from the options, resolved against the site and the user's config (read here, once), validated.

    A missing account on a site that bills one is an error when the job is launched or written as a batch script,
    a warning when a command is only printed."""
    site = load_site(args.site)
    job = resolve(spec_from_args(args), site, load_config())
    validate(job, site)
    lack = missing_account(job, site, str(config_path()))
    if lack and launching:
        raise lack
    for line in command_line_secrets(args) + advice(job, site) + ([str(lack)] if lack else []):
        warn(line)
    return job, site


def _cost(job: JobSpec, site: Site, args: argparse.Namespace) -> None:
    """The job's cost with ``--explain``; its billing warnings on stderr otherwise (never with ``--json``)."""
    lines = billing_lines(job, site)
    if getattr(args, "explain", False):
        rule = device_rule(job, site)
        print()
        print("\n".join(lines + ([rule] if rule else []) + left_out_lines(job, site)))
    elif not getattr(args, "json", False):
        for line in lines:
            if line.startswith("warning:"):
                print(line, file=sys.stderr)


def _print_command(cmd: Any, job: JobSpec, site: Site, args: argparse.Namespace) -> int:
    note = inside_job_note(cmd.argv[0])
    if args.json:
        print(json.dumps(list(cmd.argv)))
    elif args.explain:
        print(cmd.text())
        print()
        print(cmd.explain())
    else:
        print(cmd.text())
    _cost(job, site, args)
    if note:  # after the cost lines: the last word of --explain; on stderr otherwise, so the text stays pasteable
        print(note, file=sys.stdout if args.explain else sys.stderr)
    return 0


def _srun(args: argparse.Namespace) -> int:
    job, site = edge_spec(args, launching=False)
    return _print_command(render_srun(job, site, check=False), job, site, args)


def _salloc(args: argparse.Namespace) -> int:
    if not [c for c in args.cmd if c != "--"]:
        args.cmd = ["bash"]  # salloc needs no command; the allocation is what is printed
    job, site = edge_spec(args, launching=False)
    rc = _print_command(render_salloc(job, site, check=False), job, site, args)
    if args.explain and job.cpus_per_task is not None:
        print(SALLOC_SRUN_NOTE)
    return rc


#: What ``salloc --explain`` adds for the sruns typed in the allocation afterwards.
SALLOC_SRUN_NOTE = ("note: the sruns you type in this allocation: Slurm 22.05 to 23.02 do not pass --cpus-per-task "
                    "on to them (each task gets one core; 23.11 reads SLURM_CPUS_PER_TASK again); export "
                    "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK in the salloc shell first, or give each srun its own "
                    "-c: either works on every version")


def _sbatch(args: argparse.Namespace) -> int:
    job, site = edge_spec(args, launching=True)
    _print_script(job, site, args)
    _cost(job, site, args)
    return 0


def _print_script(job: JobSpec, site: Site, args: argparse.Namespace) -> None:
    """The batch script, written to ``--write`` (never over a file without ``--force``) or printed, then with
    ``--explain`` why each #SBATCH line is there."""
    script = render_sbatch(job, site, check=False)
    if args.write:
        from ..files import write_new
        write_new(args.write, script, force=args.force)
        print(args.write)
    else:
        print(script, end="")
    if args.explain:
        print()
        print(Command(argv=(), flags=tuple(allocation_flags(job, site))).explain())


def attach_options(tokens: list[str], node: str | None = None, pty: bool = True) -> tuple[str | None, bool, list[str]]:
    """Split what follows the job id: ``--node X`` / ``--node=X`` / ``--no-pty`` up to ``--`` or the first word,
    then the command. argparse's REMAINDER takes every token after the job id as the command, options included."""
    rest = list(tokens)
    while rest and rest[0] != "--":
        first = rest[0]
        if first == "--no-pty":
            pty = False
            del rest[0]
        elif first == "--node" and len(rest) > 1:
            node = rest[1]
            del rest[:2]
        elif first.startswith("--node="):
            node = first.split("=", 1)[1]
            del rest[0]
        elif first.startswith("-"):
            raise SpecError("attach", f"unknown option {first!r} before the command",
                            "use --node NODE and --no-pty, then -- and the command")
        else:
            break
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return node, pty, rest


def _attach(args: argparse.Namespace) -> int:
    import shlex
    node, pty, cmd = attach_options(list(args.cmd), args.node, not args.no_pty)
    print(shlex.join(attach_argv(args.jobid, cmd or ["/bin/bash"], node=node, pty=pty)))
    return 0


def _site(args: argparse.Namespace) -> int:
    s = load_site(args.site)
    print(f"{s.name}: {s.description}")
    print(f"  backend {s.backend}, scheduler {s.scheduler}, containers {s.container_runtime}; from {s.source}")
    for p in s.partitions.values():
        print(f"  {p.name:<11} {p.kind}  {'exclusive' if p.exclusive else 'shared   '}  max {p.max_nodes} nodes, {p.max_time}")
    return 0


def _vllm(args: argparse.Namespace) -> int:
    """LUMI's vLLM recipe: the server's batch script, or (--client JOBID) the client's command; printed, never run."""
    import shlex

    from . import vllm

    site = load_site(args.site)
    if args.client is not None:
        argv = vllm.client_argv(args.client, args.model, args.prompt)
        print(json.dumps(argv) if args.json else shlex.join(argv))
        if args.explain:
            print()
            print("\n".join(vllm.client_explain(args.client)))
        return 0
    job = resolve(vllm.server_spec(args.model, site=site, account=args.account, time=args.time,
                                   partition=args.partition), site, load_config())
    validate(job, site)
    lack = missing_account(job, site, str(config_path()))
    for line in advice(job, site) + ([str(lack)] if lack else []):
        warn(line)
    _print_script(job, site, args)
    if args.explain:
        print("\n".join(vllm.server_explain(args.model, site)))
        _cost(job, site, args)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    for name, fn, helptext in (("srun", _srun, "print the srun command for a job"),
                               ("salloc", _salloc, "print the salloc command that allocates the job's resources")):
        p = sub.add_parser(name, help=helptext, description=helptext + ". Invalid jobs exit with status 2.")
        add_job_options(p)
        out = p.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="print the argv as a JSON list")
        out.add_argument("--explain", action="store_true", help="add one line per flag saying why it is there")
        p.set_defaults(func=fn)
    p = sub.add_parser("sbatch", help="print (or write) the batch script for a job")
    add_job_options(p)
    p.add_argument("--write", metavar="FILE", help="write the script to FILE (refuses to overwrite)")
    p.add_argument("--force", action="store_true", help="overwrite FILE")
    p.add_argument("--explain", action="store_true", help="add one line per #SBATCH option saying why, and the cost")
    p.set_defaults(func=_sbatch)
    p = sub.add_parser("attach", help="print the command that attaches to a running job (srun --overlap)")
    p.add_argument("jobid")
    p.add_argument("--node", help="which node of the job (multi-node jobs)")
    p.add_argument("--no-pty", action="store_true")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    p.set_defaults(func=_attach)
    p = sub.add_parser("vllm", help="print LUMI's vLLM recipe: the server's batch script (2 GCDs, a Unix socket), "
                                    "or with --client JOBID the client's command (printed, never run here)",
                       description="LUMI AI Guide chapter 10: vLLM in the LAIF container serving a model on 2 GCDs "
                                   "over a Unix domain socket (--uds), caches on /scratch; the client reaches it "
                                   "with srun --overlap --jobid JOBID --pty. LUMI's answers are expected, not seen.")
    p.add_argument("--site", help="site profile (default: detected; the recipe is LUMI's)")
    p.add_argument("--model", default=DEFAULT_VLLM_MODEL, help=f"Hugging Face model name (default {DEFAULT_VLLM_MODEL})")
    p.add_argument("-A", "--account", help="project to bill (default: your lumikit config)")
    p.add_argument("-t", "--time", default="2:00:00", help="the server job's time limit (default 2:00:00)")
    p.add_argument("-p", "--partition", help="default: the site's GPU partition")
    p.add_argument("--write", metavar="FILE", help="write the server's script to FILE (refuses to overwrite)")
    p.add_argument("--force", action="store_true", help="overwrite FILE")
    p.add_argument("--client", metavar="JOBID", help="print the client's command for the server job JOBID instead")
    p.add_argument("--prompt", default="LUMI is a supercomputer that", help="the client's prompt")
    p.add_argument("--json", action="store_true", help="with --client: the argv as a JSON list")
    p.add_argument("--explain", action="store_true", help="add why each part is there, and the cost")
    p.set_defaults(func=_vllm)
    p = sub.add_parser("site", help="show a site profile (default: the detected one)")
    p.add_argument("--site")
    p.set_defaults(func=_site)
