"""Checks for the terminal tasks (modules 01, 03, 04, 08): the learner types Slurm's own commands, and the check
reads the outcome (the script file, the job's ``sacct`` record, the masks a job printed), never an API call.

Where no Slurm cluster is reachable (a laptop), a task's command is graded as text and the check says, in its
passed line, which part it could not check here. Reference values come from the site profile (``lumi``) or from
Slurm's accounting, never from the learner's namespace.
"""
from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import LaunchError
from ..launch.terminal import Cluster, ShellResult, find_cluster, sacct_rows
from ..site import load_site
from .framework import (CheckFailed, Passed, check, expect_answer, expect_equal, expect_type, not_checked, passed,
                        wrong)

_PROJECT = re.compile(r"^project_\d{9}$")


class NoSlurmHere(CheckFailed):
    """A job id was given where no Slurm cluster answers: the learner is told to check it where it ran, and an
    instructor's regrade counts the record as not checked here, never as failed."""


class NoRecordHere(NoSlurmHere):
    """This cluster's accounting has no record of the job: a wrong id for the learner; for an instructor's regrade
    possibly another cluster, or accounting that hides other users' jobs, so the record stays not checked."""


# --- reading what the commands printed -----------------------------------------------------------------------------

def cpus_of_mask(mask: str) -> frozenset[int]:
    """The CPU numbers set in a hex mask (``0xfe`` -> {1..7}); Slurm and taskset print them with or without 0x."""
    value = int(str(mask).strip().lower().removeprefix("0x"), 16)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def cpus_of_list(text: str) -> frozenset[int]:
    """The CPU numbers of a list such as ``/proc/self/status``'s ``Cpus_allowed_list: 1-3,8``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.update(range(int(low), int(high) + 1))
        elif part.strip():
            cpus.add(int(part))
    return frozenset(cpus)


def sbatch_directives(text: str) -> list[tuple[str, str | None]]:
    """The ``#SBATCH`` options of a batch script, in order: ``("--account", "project_465000000")``.

    Like sbatch, it reads directives only before the first command line, and ignores what follows a ``#`` comment.
    """
    options: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        if not stripped.startswith("#SBATCH"):
            break
        tokens = shlex.split(stripped[len("#SBATCH"):], comments=True)
        i = 0
        while i < len(tokens):
            name, sep, value = tokens[i].partition("=")
            if not sep and name.startswith("-") and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value, sep, i = tokens[i + 1], "=", i + 1  # `-A project_x` or `--account project_x`
            options.append((name, value if sep else None))
            i += 1
    return options


def _option(options: Sequence[tuple[str, str | None]], *names: str) -> str | None:
    """The last value given to any of ``names`` (Slurm lets a later option win)."""
    found = None
    for name, value in options:
        if name in names:
            found = value
    return found


def _tokens_option(tokens: Sequence[str], *names: str) -> str | None:
    """The value of an option in a command's tokens, in either ``--name=value`` or ``--name value`` form."""
    found = None
    for i, token in enumerate(tokens):
        for name in names:
            if token == name and i + 1 < len(tokens):
                found = tokens[i + 1]
            elif token.startswith(name + "=") and name.startswith("--"):
                found = token.split("=", 1)[1]
            elif not name.startswith("--") and token.startswith(name) and len(token) > len(name):
                found = token[len(name):]
    return found


def _output_text(run: ShellResult | str | None, exercise: str, what: str) -> tuple[str | None, str | None]:
    """(text, why it was not run) from a learner's ShellResult or pasted text."""
    expect_answer(exercise, run, what, hint="store what `sh(...)` returned (or the text the command printed).")
    if isinstance(run, ShellResult):
        return (None, run.skipped) if run.skipped else (run.stdout, None)
    if isinstance(run, str):
        return run, None
    raise CheckFailed(exercise, f"{what} should be the result of `sh(...)` or the printed text",
                      found=run, hint="store `sh(\"...\")`'s result as it is.")


def _cluster(exercise: str) -> Cluster | None:
    cluster, _ = find_cluster()
    return cluster


def _job_rows(exercise: str, job_id: str, cluster: Cluster, settle_s: float = 15) -> list[dict[str, str]]:
    """The job's sacct rows; waits up to ``settle_s`` for the accounting database to fill in the submit line."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            rows = sacct_rows(job_id, cluster)
        except LaunchError as err:
            raise NoRecordHere(exercise, f"Slurm has no record of job {job_id!r} ({err})",
                               hint="give the job id that sbatch/salloc printed.") from None
        if (rows and rows[0]["SubmitLine"]) or time.monotonic() > deadline - (0 if rows else settle_s * 2 / 3):
            break
        time.sleep(1)
    if not rows:
        raise NoRecordHere(exercise, f"`sacct -j {job_id}` lists no job (yet)",
                          hint="give the job id that sbatch/salloc printed, on this cluster; a job appears in "
                               "sacct once it is in Slurm's accounting.")
    return rows


def _job_id(exercise: str, value: ShellResult | str | int | None, what: str) -> tuple[str | None, str | None]:
    """(job id, why not run): from ``sbatch --parsable``'s result, salloc's message, or the id itself."""
    expect_answer(exercise, value, what, hint="store the job id (or `sh(...)`'s result of the submission).")
    if isinstance(value, ShellResult):
        if value.skipped:
            return None, value.skipped
        text = value.stdout + "\n" + value.stderr
    else:
        text = str(value)
    match = re.search(r"(?:allocation|job)\s+(\d+)", text) or re.match(r"\s*(\d+)(?:;\S+)?\s*$", text)
    if not match:
        raise CheckFailed(exercise, f"{what}: no job id in it", found=text.strip()[:200],
                          hint="did Slurm accept the job? Its message says why not.")
    return match.group(1), None


# --- known-wrong answers, derived from the check's own data or from the learner's right answer -------------------------

def _lumi_masks(cores_of: Callable[[Any], Sequence[int]]) -> list[str]:
    """One mask per GCD of the LUMI profile, from a rule giving each GCD's cores (the rule is the mistake)."""
    return [f"0x{sum(1 << c for c in cores_of(g)):016x}" for g in load_site("lumi").node.gcds]


def _numa_wide(gcd: Any) -> list[int]:
    return [c for g in load_site("lumi").node.gcds if g.numa == gcd.numa for c in g.cores]


def _without_task_count(command: str) -> str:
    """The seed's binding test: the same srun line without its task count."""
    return re.sub(r"\s(?:--ntasks(?:-per-node)?[= ]\d+|-n\s*\d+)", "", command)


def _script_variant(path: Any, old: str, new: str, name: str) -> Path:
    """A copy of the learner's script beside it with one text change (a known mistake put back)."""
    source = Path(path)
    target = source.with_name(name)
    target.write_text(re.sub(old, new, source.read_text(), flags=re.M))
    return target


# --- 01: masks from the topology, then verified inside a job --------------------------------------------------------

@check("01.T1",
       wrong("GCD i next to cores 8i+1..8i+7 (the GCD numbering taken for the core numbering)",
             masks=lambda a: _lumi_masks(lambda g: range(8 * g.index + 1, 8 * g.index + 8))),
       wrong("the reserved first core of each group included", masks=lambda a: _lumi_masks(
           lambda g: [g.cores[0] - 1, *g.cores]), mentions="reserved"),
       wrong("the whole NUMA domain for each GCD", masks=lambda a: _lumi_masks(_numa_wide), mentions="NUMA"))
def check_topology_masks(masks: Sequence[str] | None) -> Passed:
    """Exercise 01.T1: the 8 CPU masks, in GCD order, derived from ``rocm-smi --showtoponuma`` and ``lscpu``."""
    node = load_site("lumi").node
    expect_type("01.T1", masks, (list, tuple), what="the list of 8 masks in GCD order",
                hint="one hex string per GCD, GCD 0 first.")
    if len(masks) != node.gcd_count:
        raise CheckFailed("01.T1", "one mask per GCD is needed", expected=node.gcd_count, found=len(masks))
    for index, mask in enumerate(masks):
        try:
            got = cpus_of_mask(mask)
        except (TypeError, ValueError):
            raise CheckFailed("01.T1", f"the mask of GCD {index} is not a hex number", found=mask,
                              hint="write it like 0x00fe000000000000.") from None
        gcd = node.gcd(index)
        if got == set(gcd.cores) | {gcd.cores[0] - 1}:
            raise CheckFailed("01.T1", f"the mask of GCD {index} includes core {gcd.cores[0] - 1}", found=mask,
                              hint="the first core of each group of 8 is reserved for the system on LUMI-G.")
        numa_cores = {c for g in node.gcds if g.numa == gcd.numa for c in g.cores}
        if got == numa_cores:
            raise CheckFailed("01.T1", f"the mask of GCD {index} covers its whole NUMA domain", found=mask,
                              hint="two GCDs share a NUMA domain; each takes one of its two groups of 8 cores, "
                                   "the lower group for the lower GCD.")
        expect_equal("01.T1", sorted(got), list(gcd.cores), what=f"the cores in the mask of GCD {index}",
                     hint=f"rocm-smi puts GCD {index} on NUMA {gcd.numa}; lscpu lists that domain's cores.")
    return passed("01.T1", f"GCD 0 -> {node.gcd(0).mask_hex} (cores {node.gcd(0).cores[0]}-"
                           f"{node.gcd(0).cores[-1]}, NUMA {node.gcd(0).numa}), the seed's masks")


@check("01.T2",
       wrong("the seed's test: no task count, so one task prints one mask",
             bind_command=lambda a: _without_task_count(a.bind_command), mentions="task"),
       wrong("an output with one line", bind_run="0 Cpus_allowed_list: 0\n", mentions="fewer than two"),
       wrong("no binding asked", bind_command=lambda a: re.sub(r"--cpu-bind=\S+\s*", "", a.bind_command)))
def check_bind_test(bind_command: str | None, bind_run: ShellResult | str | None) -> Passed:
    """Exercise 01.T2: an srun binding test that starts one task per mask and prints each task's CPUs."""
    expect_type("01.T2", bind_command, str, what="the srun command line", hint="a string starting with `srun`.")
    tokens = shlex.split(bind_command)
    if not tokens or tokens[0] != "srun":
        raise CheckFailed("01.T2", "the command should start with srun", found=bind_command)
    bind = _tokens_option(tokens, "--cpu-bind")
    if not bind or "mask_cpu" not in bind:
        raise CheckFailed("01.T2", "the command has no `--cpu-bind=mask_cpu:...`", found=bind_command,
                          hint="give one mask per task, separated by commas.")
    masks = re.split(r"[:=]", bind.split("mask_cpu", 1)[1], maxsplit=1)[-1].split(",")
    tasks = _tokens_option(tokens, "--ntasks", "-n")
    per_node = _tokens_option(tokens, "--ntasks-per-node")
    nodes = _tokens_option(tokens, "--nodes", "-N") or "1"
    started = int(tasks) if tasks else int(per_node) * int(nodes) if per_node else int(nodes)
    if started < len(masks):
        raise CheckFailed("01.T2", f"the command starts {started} task(s) for {len(masks)} masks, so only "
                                   f"{started} mask(s) can be printed",
                          hint="this was the seed's mistake: srun starts one task unless the line asks for more, "
                               "and each task prints only its own mask.")
    text, skipped = _output_text(bind_run, "01.T2", "the output of the binding test")
    if isinstance(bind_run, ShellResult) and not bind_run.binding_applied:
        skipped = ("this cluster accepts CPU masks without applying them: lumi-sim's LUMI-shaped nodes claim CPUs "
                   "this machine lacks; `LUMIKIT_SLURM_PROFILE=real make slurm-up` applies them")
    if skipped:
        return not_checked("01.T2", f"the command starts {started} tasks for {len(masks)} masks; its output was not "
                                    f"checked here ({skipped}). Run the cell again where Slurm answers")
    lines = re.findall(r"^\s*(\d+)\b.*?Cpus_allowed_list:\s*([\d,\-]+)", text, flags=re.M)
    if len(lines) < 2:
        raise CheckFailed("01.T2", "the output holds fewer than two `RANK ... Cpus_allowed_list: ...` lines",
                          found=text.strip()[:200], hint="print $SLURM_PROCID and the Cpus_allowed_list line of "
                                                         "/proc/self/status in every task.")
    ranks = sorted(int(rank) for rank, _ in lines)
    expect_equal("01.T2", ranks, list(range(started)), what="the ranks that printed a line",
                 hint="every task prints one line; sort them by rank.")
    for rank, allowed in lines:
        want = cpus_of_mask(masks[int(rank) % len(masks)])
        got = cpus_of_list(allowed)
        if got != want:
            raise CheckFailed("01.T2", f"task {rank} may run on CPUs {sorted(got)}, not on the CPUs of its mask "
                                       f"{masks[int(rank) % len(masks)]}",
                              hint="was the binding applied? Slurm warns when a mask names CPUs the job lacks.")
    return passed("01.T2", f"{started} tasks, each bound to its own mask, as /proc/self/status shows")


# --- 03: the broken batch script, fixed and submitted ---------------------------------------------------------------

@check("03.T1",
       wrong("the doubled --account put back", script_path=lambda a: _script_variant(
           a.script_path, r"--account=", "--account=--account=", "wrong-account.sh"), mentions="--account"),
       wrong("one task for all the GPUs", script_path=lambda a: _script_variant(
           a.script_path, r"--(?:n)?tasks-per-node=\d+", "--ntasks-per-node=1", "wrong-tasks.sh"),
             mentions="one task per GPU"),
       wrong("a file that does not exist", script_path=lambda a: Path(a.script_path).with_name("missing.sh")))
def check_fixed_script(script_path: str | Path | None, submit: ShellResult | str | int | None) -> Passed:
    """Exercise 03.T1: the seed's script with its two mistakes fixed, submitted and completed."""
    expect_answer("03.T1", script_path, "the path of your fixed script")
    path = Path(script_path)
    if not path.is_file():
        raise CheckFailed("03.T1", f"there is no file {path}", hint="write the fixed script to a file first.")
    options = sbatch_directives(path.read_text())
    for name, value in options:
        if value and value.startswith("-"):
            raise CheckFailed("03.T1", f"`{name}={value}` gives an option as the value of {name}",
                              hint="the seed doubled `--account=`; keep one.")
    account = _option(options, "--account", "-A")
    if not account or not _PROJECT.match(account):
        raise CheckFailed("03.T1", "the script needs `#SBATCH --account=project_<9 digits>`", found=account)
    gpus = _option(options, "--gpus-per-node")
    tasks = _option(options, "--ntasks-per-node", "--tasks-per-node")
    if not gpus or not tasks or int(tasks) != int(gpus.split(":")[-1]):
        raise CheckFailed("03.T1", "one task per GPU is needed", expected=f"--ntasks-per-node={gpus}",
                          found=f"--ntasks-per-node={tasks}", hint="with one task, one process prints for all GPUs "
                                                                  "(the seed's second mistake).")
    job_id, skipped = _job_id("03.T1", submit, "the submission")
    if skipped:
        return not_checked("03.T1", f"the script is right (account {account}, {tasks} tasks for {gpus} GPUs); it "
                                    f"was not submitted here ({skipped}). Submit it where Slurm answers")
    cluster = _cluster("03.T1")
    if cluster is None:
        raise NoSlurmHere("03.T1", "no Slurm cluster answers here, so the job cannot be looked up",
                          hint="run the check where you submitted the job.")
    rows = _job_rows("03.T1", job_id, cluster)
    job = rows[0]
    if path.name not in job["SubmitLine"]:
        raise CheckFailed("03.T1", f"job {job_id} was not submitted from {path.name}", found=job["SubmitLine"],
                          hint=f"submit it with `sbatch {path.name}`.")
    expect_equal("03.T1", job["State"].split()[0], "COMPLETED", what=f"the state of job {job_id}",
                 hint=f"read its output file and `sacct -j {job_id}`; wait until it ends.")
    steps = [r for r in rows if re.match(rf"^{job_id}\.\d+$", r["JobID"])]
    if not steps or int(steps[-1]["NTasks"] or 0) != int(tasks) * int(_option(options, "--nodes", "-N") or 1):
        raise CheckFailed("03.T1", f"job {job_id}'s srun step did not start one task per GPU",
                          found=[(r["JobID"], r["NTasks"]) for r in steps])
    return passed("03.T1", f"job {job_id} {job['State']} on account {job['Account']}, its step ran "
                           f"{steps[-1]['NTasks']} tasks")


@check("03.T2",
       wrong("a job id that Slurm never gave", job_id="99999999"),
       wrong("text without a job id", job_id="sbatch: error: Batch job submission failed", mentions="no job id"))
def check_cancelled_job(job_id: ShellResult | str | int | None, squeue_seen: ShellResult | str | None) -> Passed:
    """Exercise 03.T2: a job seen in squeue, then stopped with scancel (its sacct record says CANCELLED)."""
    found_id, skipped = _job_id("03.T2", job_id, "the job you cancelled")
    text, squeue_skipped = _output_text(squeue_seen, "03.T2", "what squeue printed before scancel")
    if skipped and squeue_skipped:
        return not_checked("03.T2", f"not checked against Slurm here ({skipped})")
    if skipped or squeue_skipped:
        raise CheckFailed("03.T2", "one of the two answers was not run on a Slurm cluster",
                          hint="submit, look with squeue and cancel on the same cluster, in this order.")
    if not re.search(rf"^\s*{found_id}\s", text, flags=re.M):
        raise CheckFailed("03.T2", f"job {found_id} is not in what squeue printed", found=text.strip()[:200],
                          hint="store the squeue output taken while the job was queued or running.")
    cluster = _cluster("03.T2")
    if cluster is None:
        raise NoSlurmHere("03.T2", "no Slurm cluster answers here, so the job cannot be looked up")
    job = _job_rows("03.T2", found_id, cluster)[0]
    state = job["State"].split()[0]
    expect_equal("03.T2", state, "CANCELLED", what=f"the state sacct records for job {found_id}",
                 hint=f"stop it with `scancel {found_id}` before it ends by itself.")
    return passed("03.T2", f"job {found_id}: {job['State']} after {job['Start']}")


# --- 04: salloc, then srun --overlap into the allocation ------------------------------------------------------------

def _when(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:  # "Unknown", "None"
        return None


@check("04.T1",
       wrong("a job id that Slurm never gave", allocation="99999999"),
       wrong("salloc still waiting, no allocation yet", allocation="salloc: Pending job allocation",
             mentions="no job id"))
def check_overlap_steps(allocation: ShellResult | str | int | None) -> Passed:
    """Exercise 04.T1: an allocation (salloc) with a long step and an ``srun --overlap`` step that ran during it."""
    job_id, skipped = _job_id("04.T1", allocation, "the allocation's job id")
    if skipped:
        return not_checked("04.T1", f"not checked against Slurm here ({skipped})")
    cluster = _cluster("04.T1")
    if cluster is None:
        raise NoSlurmHere("04.T1", "no Slurm cluster answers here, so the job cannot be looked up")
    rows = _job_rows("04.T1", job_id, cluster)
    if not rows[0]["SubmitLine"].startswith("salloc"):
        raise CheckFailed("04.T1", f"job {job_id} was not made by salloc", found=rows[0]["SubmitLine"],
                          hint="allocate with salloc, then run steps into it with srun --jobid.")
    steps = [r for r in rows if re.match(rf"^{job_id}\.\d+$", r["JobID"])]
    overlapping = [r for r in steps if "--overlap" in r["SubmitLine"]]
    if not overlapping:
        raise CheckFailed("04.T1", f"no step of job {job_id} was started with --overlap",
                          found=[r["SubmitLine"] for r in steps],
                          hint="without --overlap the second srun waits until the first step ends.")
    for watch in overlapping:
        start = _when(watch["Start"])
        for work in steps:
            if work is watch or "--overlap" in work["SubmitLine"]:
                continue
            begin, end = _when(work["Start"]), _when(work["End"]) or datetime.now()  # "Unknown": still running
            if start and begin and end and begin <= start <= end:
                state = rows[0]["State"].split()[0]
                if state not in ("CANCELLED", "COMPLETED"):
                    raise CheckFailed("04.T1", f"allocation {job_id} is still {state}",
                                      hint=f"release it with `scancel {job_id}` when you are done.")
                return passed("04.T1", f"step {watch['JobID']} ran inside step {work['JobID']} "
                                       f"({work['JobName']}), then the allocation ended {state}")
    raise CheckFailed("04.T1", "the --overlap step did not run while another step of the job was running",
                      found=[(r["JobID"], r["Start"], r["End"]) for r in steps],
                      hint="start the long step in the background (`&`), then srun --overlap while it runs.")


# --- 08: which GPU each rank sees ----------------------------------------------------------------------------------

@check("08.T1",
       wrong("every rank sees both GPUs of its node (--gpus-per-node without one per task)",
             visibility_run="0 nid005001 ROCR_VISIBLE_DEVICES=0,1\n1 nid005001 ROCR_VISIBLE_DEVICES=0,1\n"
                            "2 nid005002 ROCR_VISIBLE_DEVICES=0,1\n3 nid005002 ROCR_VISIBLE_DEVICES=0,1\n",
             mentions="sees 2 GPUs"),
       wrong("all ranks on one node", visibility_run="0 nid005001 ROCR_VISIBLE_DEVICES=0\n"
                                                     "1 nid005001 ROCR_VISIBLE_DEVICES=1\n", mentions="too few"),
       wrong("one task per node (2x1), renumbered", mentions="one task per node",
             visibility_run="0 nid005001 ROCR_VISIBLE_DEVICES=0\n1 nid005002 ROCR_VISIBLE_DEVICES=0\n"),
       wrong("two one-task runs pasted together: rank 0 twice, on two nodes", mentions="once",
             visibility_run="0 nid005001 ROCR_VISIBLE_DEVICES=0\n0 nid005002 ROCR_VISIBLE_DEVICES=0\n"))
def check_gpu_visibility(visibility_run: ShellResult | str | None, nodes: int | None = 2,
                         tasks_per_node: int | None = None) -> Passed:
    """Exercise 08.T1: a 2-node job in which Slurm gives each task one GPU (``ROCR_VISIBLE_DEVICES``), with
    ``tasks_per_node`` tasks on every node (when given)."""
    text, skipped = _output_text(visibility_run, "08.T1", "the output of the visibility job")
    if skipped:
        return not_checked("08.T1", f"not run here ({skipped})")
    lines = re.findall(r"^\s*(\d+)\s+(\S+)\s+ROCR_VISIBLE_DEVICES=(\S*)", text, flags=re.M)
    if not lines:
        raise CheckFailed("08.T1", "no `RANK NODE ROCR_VISIBLE_DEVICES=...` lines in the output",
                          found=text.strip()[:200], hint="each task prints $SLURM_PROCID $SLURMD_NODENAME "
                                                         "ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES.")
    hosts = {host for _, host, _ in lines}
    ranks = sorted(int(rank) for rank, _, _ in lines)
    if ranks != list(range(len(ranks))):
        raise CheckFailed("08.T1", "the ranks are not 0, 1, 2, ... each once: this is not the output of one job",
                          found=ranks, hint="run one job whose every task prints its own line.")
    if len(hosts) < (nodes or 2):
        raise CheckFailed("08.T1", "the tasks ran on too few nodes", expected=nodes, found=sorted(hosts),
                          hint="ask for --nodes=2.")
    seen: dict[str, set[str]] = {}
    for rank, host, devices in lines:
        listed = [d for d in devices.split(",") if d]
        if len(listed) != 1:
            raise CheckFailed("08.T1", f"rank {rank} sees {len(listed)} GPUs ({devices or 'none'})",
                              hint="ask Slurm for one GPU per task (--gpus-per-task=1), so it sets "
                                   "ROCR_VISIBLE_DEVICES to one device.")
        if listed[0] in seen.setdefault(host, set()):
            raise CheckFailed("08.T1", f"two ranks on {host} see the same GPU {listed[0]}")
        seen[host].add(listed[0])
    per_host = {host: sum(1 for _, h, _ in lines if h == host) for host in hosts}
    if tasks_per_node and any(n != tasks_per_node for n in per_host.values()):
        raise CheckFailed("08.T1", "the nodes do not each run the tasks per node the question asks for",
                          found=dict(sorted(per_host.items())),
                          mistake="one task per node: a run of fewer tasks, or two runs pasted together"
                          if set(per_host.values()) == {1} else None,
                          hint="one job, with its tasks per node and one GPU per task.")
    return passed("08.T1", f"{len(lines)} ranks on {len(hosts)} nodes, one GPU each")
