"""Checks for module 01 (a LUMI-G node and Slurm): the 2-node full-node job and its masks, the cores next to a
GCD, and the mistake LUMI rejects.

Every expected value is derived from the LUMI site profile (``lumikit/sites/lumi.toml``) or from the job the
learner was given, so the checks follow the profile when an instructor edits it.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import SpecError
from ..jobs import JobSpec, problems, render_srun
from ..site import Site, load_site
from .datasets import pick
from .concepts import Choice, Option, choice_check
from .framework import (
    CheckFailed,
    Passed,
    check,
    expect_answer,
    expect_equal,
    expect_in,
    expect_type,
    passed,
    wrong,
)


def _lumi() -> Site:
    return load_site("lumi")


def _mask_list(command_argv: Sequence[str]) -> list[str] | None:
    """The masks of a rendered ``--cpu-bind=mask_cpu:a,b,...`` token, or None when there is none."""
    for token in command_argv:
        if token.startswith("--cpu-bind=mask_cpu:"):
            return token.split(":", 1)[1].split(",")
    return None


def _mask_int(mask: object) -> int | None:
    """A CPU mask as a number, whether written ``0x00fe...``, ``00fe...`` (as Slurm and taskset print them) or as an
    int; None when it is no mask at all."""
    if isinstance(mask, bool):
        return None
    if isinstance(mask, int):
        return mask
    try:
        return int(str(mask).strip(), 16)
    except ValueError:
        return None


def gcd_to_study() -> int:
    """Exercise 01.2's GCD ``k``: one of the node's GCDs, chosen for this learner."""
    return pick("01.2", range(_lumi().node.gcd_count))


@check("01.1",
       wrong("masks in core order, as if GCD i sat next to cores 8i+1 to 8i+7",
             masks=lambda a: sorted(_lumi().node.masks(), key=lambda m: int(m, 16)), mentions="GCD order"),
       wrong("one task per node instead of one per GCD", job=lambda a: a.job.with_(ntasks_per_node=1)),
       wrong("no --cpus-per-task: one core per task", job=lambda a: a.job.with_(cpus_per_task=None), mentions="cores"),
       wrong("no CPU binding", job=lambda a: a.job.with_(cpu_bind=None), mentions="cpu_bind"),
       wrong("on small-g without a whole node: Slurm gives no masks",
             job=lambda a: a.job.with_(partition="small-g", exclusive=False)))
def check_full_node_job(job: JobSpec | None, masks: Sequence[str] | None) -> Passed:
    """Exercise 01.1: a 2-node job with one task per GCD, bound with CPU masks, and its masks in GCD order."""
    node = _lumi().node
    n = node.gcd_count
    what_job = "the 2-node full-node job"
    expect_type("01.1", job, JobSpec, what=what_job,
                hint="a job spec describes the whole request: its nodes, the GCDs and tasks on each, and how each "
                     "task is bound to cores.")
    expect_equal("01.1", job.nodes, 2, field=True, what="the number of nodes",
                 hint="the job spans as many nodes as the question asks for.")
    expect_equal("01.1", job.gpus_per_node, n, field=True, what="GCDs per node",
                 hint="a full LUMI-G node: ask for all of its GCDs (the site profile counts them).")
    expect_equal("01.1", job.ntasks_per_node, n, field=True, what="tasks per node",
                 hint="one task (process) per GCD.")
    if job.cpus_per_task != node.cpus_per_gcd:
        raise CheckFailed("01.1", "the cores given to each task are not the usable cores next to one GCD",
                          found=job.cpus_per_task,
                          mistake="one core per task (none given means 1)" if not job.cpus_per_task or
                          job.cpus_per_task == 1 else "more cores than sit next to one GCD" if
                          job.cpus_per_task > node.cpus_per_gcd else "fewer cores than sit next to one GCD",
                          hint="each task should get every usable core next to its own GCD.")
    if job.cpu_bind != "auto":
        raise CheckFailed("01.1", "the CPU binding (`cpu_bind`) is not right", expected="auto", found=job.cpu_bind,
                          hint="let lumikit derive the masks from the site's GCD -> core map rather than write them.")
    try:
        command = render_srun(job, _lumi())
    except SpecError as err:
        raise CheckFailed("01.1", f"LUMI would reject the job ({err})",
                          hint="read the message: it names the field and the fix.") from None
    expected = node.masks()
    expect_equal("01.1", _mask_list(command.argv), expected, what="the masks in the rendered srun command",
                 hint="Slurm gives masks only when the job holds whole nodes: is the node the job's alone?")
    expect_type("01.1", masks, (list, tuple), what="the list of masks, in GCD order",
                hint="the rendered srun command carries one mask per GCD: a list of them, as it prints them.")
    given = [_mask_int(m) for m in masks]
    if sorted(given, key=str) == sorted((int(m, 16) for m in expected), key=str) and given != [int(m, 16) for m in
                                                                                               expected]:
        raise CheckFailed("01.1", "the masks in GCD order are not right: the masks are, their order is not",
                          found=list(masks),
                          hint="the i-th mask belongs to GCD i, and GCD numbers do not follow the core numbers.")
    expect_equal("01.1", given, [int(m, 16) for m in expected], what="the masks in GCD order",
                 hint="one mask per GCD, each exactly as the rendered command prints it.")
    return passed("01.1", f"{job.total_tasks} tasks; task i on a node runs next to GCD i, starting with "
                          f"{expected[0]} (cores {node.gcd(0).cores[0]}-{node.gcd(0).cores[-1]})")


def _studied():
    """The learner's GCD of exercise 01.2, as the site profile describes it."""
    return _lumi().node.gcd(gcd_to_study())


@check("01.2",
       wrong("cores 8k to 8k+7, as if the GCDs followed the core numbering",
             cores=lambda a: list(range(8 * gcd_to_study(), 8 * gcd_to_study() + 8))),
       wrong("the group's reserved first core included",
             cores=lambda a: [_studied().cores[0] - 1, *_studied().cores]),
       wrong("the NUMA domain of the next pair of GCDs", numa=lambda a: (_studied().numa + 1) % 4),
       wrong("the GCD's mask instead of its core list", cores=lambda a: _studied().mask_hex))
def check_gcd_neighbours(cores: Sequence[int] | None, numa: int | None) -> Passed:
    """Exercise 01.2: the cores and the NUMA domain next to this learner's GCD ``k`` (:func:`gcd_to_study`)."""
    k = gcd_to_study()
    gcd = _lumi().node.gcd(k)
    expect_answer("01.2", cores, f"the cores next to GCD {k}",
                  hint="GCD numbers do not follow the core numbering: the node map says which cores sit next to "
                       "each GCD.")
    try:
        if isinstance(cores, (str, bytes)):
            raise TypeError("a string is not a list of cores")
        found = sorted(int(c) for c in cores)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise CheckFailed("01.2", f"the cores next to GCD {k} should be a list of core numbers",
                          expected=list(gcd.cores), found=cores,
                          hint="a list of whole numbers, one per core.") from None
    expect_equal("01.2", found, sorted(gcd.cores), what=f"the cores next to GCD {k}",
                 hint="GCD numbers are not core groups: look the GCD up in the table above, not core k*8.")
    expect_type("01.2", numa, int, what=f"the NUMA domain of GCD {k}", hint="a whole number, 0 to 3.")
    expect_equal("01.2", numa, gcd.numa, what=f"the NUMA domain of GCD {k}",
                 hint="a NUMA domain holds a pair of GCDs; the site profile says which.")
    return passed("01.2", f"GCD {k} sits on NUMA {gcd.numa}, cores {gcd.cores[0]}-{gcd.cores[-1]}")


@check("01.3",
       wrong("gives each GCD's task 1 core", fixed=lambda a: a.rejected.with_(cpus_per_task=1), mentions="idle"),
       wrong("drops --cpus-per-task (Slurm then gives each task 1 core)",
             fixed=lambda a: a.rejected.with_(cpus_per_task=None)),
       wrong("shrinks the job to 7 GCDs", fixed=lambda a: a.rejected.with_(gpus_per_node=7, ntasks_per_node=7)),
       wrong("blames the partition", bad_field="partition"),
       wrong("keeps the rejected job", fixed=lambda a: a.rejected))
def check_rejected_job(bad_field: str | None, fixed: JobSpec | None, rejected: JobSpec) -> Passed:
    """Exercise 01.3: name the field LUMI rejects in ``rejected``, then fix it without shrinking the job: every GCD's
    task gets the cores next to its GCD, no fewer."""
    site = _lumi()
    found = problems(rejected, site)
    expected_fields = [p.field for p in found]
    expect_in("01.3", bad_field, expected_fields or ["(none)"], what="the field at fault",
              hint="LUMI checks every field of a job against the node; the rule it breaks names one field, "
                   "spelled as the job spells it.")
    expect_type("01.3", fixed, JobSpec, what="the fixed job",
                hint="the fixed job is the rejected one with the faulty field changed, and nothing else.")
    left = problems(fixed, site)
    if left:
        raise CheckFailed("01.3", f"the fixed job is still rejected: {left[0]}", hint="the message says the fix.")
    for name in ("nodes", "gpus_per_node", "ntasks_per_node"):
        expect_equal("01.3", getattr(fixed, name), getattr(rejected, name),
                     what=f"`{name}` of the fixed job", hint="fix the mistake; keep the job's shape.")
    node = site.node
    per_task = node.cpus_per_gcd * (fixed.gpus_per_node or 0) // max(1, fixed.ntasks_per_node or 1)
    if fixed.cpus_per_task != per_task:
        raise CheckFailed("01.3", "the cores per task of the fixed job are not right", expected=per_task,
                          found=fixed.cpus_per_task,
                          hint="LUMI accepts fewer cores too (none given means 1), but then each GCD's task leaves "
                               "cores idle: give each task every usable core next to its GCD.")
    return passed("01.3", f"{bad_field}: {found[0].problem}")


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_SEVEN_CORES = Choice("01.q1", "Why does each GCD's task get 7 cores on LUMI-G, not 8?", {
    "a": Option("Slurm keeps one core of every task for itself.", False,
                "Slurm reserves no core per task: the missing core is the same one in every group of 8, whatever "
                "the number of tasks."),
    "b": Option("The first core of every group of 8 is reserved for the system, so 56 of the 64 cores are usable.",
                True, "LUMI-G runs in low-noise mode: cores 0, 8, 16, ... are kept for the operating system, which "
                      "is why your GCD's cores in 01.2 start one after a multiple of 8."),
    "c": Option("The eighth core of each group drives the GCD.", False,
                "no core drives a GCD; look at 01.2: the core missing from your GCD's group is its first, not its "
                "eighth."),
    "d": Option("Hyper-threading halves the cores.", False,
                "hardware threads are a second set of numbers (64-127) on top of the 64 cores; they do not remove "
                "a core from each group."),
})
check_why_seven_cores = choice_check(WHY_SEVEN_CORES)

WHY_BIND = Choice("01.q2", "Why bind each task to the cores next to its own GCD, not to any 7 free cores?", {
    "a": Option("Slurm refuses a GPU job without CPU binding.", False,
                "Slurm accepts it (the rejected job of 01.3 was refused for its core count, not for its binding); "
                "binding is about speed."),
    "b": Option("Copies between host and GCD, and the task's memory, then stay in the GCD's NUMA domain.", True,
                "a task on far cores crosses the Infinity Fabric between NUMA domains for every host-device copy "
                "and every page it touches, which slows data loading and transfers."),
    "c": Option("A GCD can only be reached from the cores of its own NUMA domain.", False,
                "every core can reach every GCD; from another NUMA domain it is only slower."),
})
check_why_bind = choice_check(WHY_BIND)


# --- One rule for devices and cores per rank (01.4) ----------------------------------------------------------------

def rank_to_check() -> int:
    """Exercise 01.4's local rank ``r``: one of a full node's ranks, chosen for this learner."""
    return pick("01.4", range(_lumi().node.gcd_count))


def _taskset(mask: object) -> int | None:
    """A mask as a learner may write it (``fe000000000000``, ``0x00fe000000000000``, or taskset's whole line)."""
    if not isinstance(mask, str):
        return None
    text = mask.strip().lower().rsplit(":", 1)[-1].strip()
    try:
        return int(text, 16)
    except ValueError:
        return None


@check("01.4",
       wrong("one GPU per task (--gpus-per-task=1): each rank sees one device",
             rule_job=lambda a: a.rule_job.with_(gpus_per_task=1), mentions="gpus_per_task"),
       wrong("no --cpus-per-task: each rank gets one core", rule_job=lambda a: a.rule_job.with_(cpus_per_task=None)),
       wrong("no CPU binding", rule_job=lambda a: a.rule_job.with_(cpu_bind=None)),
       wrong("two nodes where one is asked", rule_job=lambda a: a.rule_job.with_(nodes=2), mentions="one-node"),
       wrong("the mask of the next local rank's GCD",
             rank_mask=lambda a: f"{_lumi().node.gcd((rank_to_check() + 1) % _lumi().node.gcd_count).mask:x}"),
       wrong("cores 0-6, as if rank r sat on the first cores", rank_mask=lambda a: "7f"))
def check_rank_rule(rule_job: JobSpec | None, rank_mask: str | None) -> Passed:
    """Exercise 01.4: a full-node job that follows the one rule for devices and cores per rank, and the mask that
    ``taskset -p $$`` prints in local rank ``r`` (:func:`rank_to_check`)."""
    from ..jobs.ranks import rank_places, taskset_mask

    site = _lumi()
    node = site.node
    r = rank_to_check()
    expect_type("01.4", rule_job, JobSpec, what="the job (`rule_job`)",
                hint="a job spec of one full node: one rank per GCD, each rank given and bound to the cores next "
                     "to its GCD.")
    if rule_job.gpus_per_task is not None:
        raise CheckFailed("01.4", "the job asks GPUs per task (`gpus_per_task`)",
                          hint="with one GPU per task each rank sees one device, so set_device(LOCAL_RANK) fails "
                               "from local rank 1 on.")
    if (rule_job.nodes or 1) != 1:
        raise CheckFailed("01.4", "the job is not the one-node job asked for", found=rule_job.nodes,
                          hint="the rule is the same on every node; the question asks for one.")
    if rule_job.gpus_per_node != node.gcd_count or rule_job.ntasks_per_node != node.gcd_count:
        raise CheckFailed("01.4", "the job is not one rank per GCD of a full node",
                          hint="as many tasks per node as GCDs per node, all of the node's GCDs.")
    left = problems(rule_job, site)
    if left:
        raise CheckFailed("01.4", f"LUMI would reject the job: {left[0]}", hint="the message says the fix.")
    if rule_job.cpus_per_task != node.cpus_per_gcd:
        raise CheckFailed("01.4", "the cores given to each rank are not the cores next to one GCD",
                          hint="without it each rank gets 1 core; more than the GCD's usable cores are billed as "
                               "more GCDs.")
    if rule_job.cpu_bind != "auto":
        raise CheckFailed("01.4", "the ranks are not bound to the cores next to their GCD",
                          hint="as in 01.1: each rank's mask should come from the site's GCD -> core map, not be "
                               "left to Slurm.")
    unhappy = [p for p in rank_places(rule_job, site) if p.problem]
    if unhappy:
        raise CheckFailed("01.4", f"local rank {unhappy[0].local_rank}: {unhappy[0].problem}",
                          hint="look at every rank of the job: the devices it sees, the one it uses, its cores.")
    found = expect_answer("01.4", rank_mask, f"the mask taskset prints in local rank {r}",
                          hint="local rank r uses one GCD; its mask covers the cores next to that GCD, one bit "
                               "per core.")
    value = _taskset(found)
    if value is None:
        raise CheckFailed("01.4", "the mask should be hex digits, as taskset prints them (e.g. 'fe00')",
                          found=found, hint="a mask sets bit n for core n; taskset prints it in hex digits.")
    if value != node.gcd(r).mask:
        raise CheckFailed("01.4", f"that is not the mask of local rank {r}", found=found,
                          hint="rank r uses device LOCAL_RANK = r, GCD r on a full node: its mask covers the cores "
                               "next to that GCD, which are not cores 8r to 8r+7.")
    return passed("01.4", f"local rank {r}: device {r} = GCD {r}, {node.cpus_per_gcd} cores "
                          f"{node.gcd(r).cores[0]}-{node.gcd(r).cores[-1]}; taskset -p prints "
                          f"{taskset_mask(node.gcd(r).mask)}")
