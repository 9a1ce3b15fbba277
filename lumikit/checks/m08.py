"""Checks for module 08 (several nodes): CPU masks across nodes, GPU-direct RDMA and its proof in the RCCL log,
MIOpen's cache fix, and profiling one rank of a 2-node job.

Expected values come from the site profile (GCD -> cores, environment recipes) and from the logs the solution
notebook writes, never from numbers pasted here.
"""
from __future__ import annotations


from ..jobs import JobSpec, PROFILE_MODES, render_sbatch
from ..logs import diagnose_text, parse_rccl
from ..site import load_site
from .datasets import pick
from .concepts import Choice, Option, choice_check
from .framework import CheckFailed, Passed, check, expect_equal, expect_in, expect_type, passed, plain, wrong


#: The profiled run's length a check accepts (``profile_steps``): past the cold first steps, and a trace that stays
#: small.
PROFILE_STEPS = (5, 200)


def _mask_value(exercise: str, answer: object, what: str) -> int:
    """A CPU mask given as ``"0x00fe..."`` or as an int, as an int."""
    expect_type(exercise, answer, (str, int), what=what,
                hint="give the mask as Slurm writes it, a string like '0x00fe000000000000'.")
    if isinstance(answer, bool):
        raise CheckFailed(exercise, f"{what} should be a hexadecimal string", found=answer)
    if isinstance(answer, int):
        return answer
    try:
        return int(answer.strip(), 16)
    except ValueError:
        raise CheckFailed(exercise, f"{what} is not a hexadecimal number", found=answer,
                          hint="a mask looks like '0x00fe000000000000' (bit n set = core n allowed).") from None


def task_to_study(tasks_per_node: int = 8) -> int:
    """Exercise 08.1's task: one on the second node of a 2-node job (not its first), chosen for this learner, and
    never one where a wrong method gives the right GCD (task 15: ``15 // 2`` is ``15 % 8``)."""
    tasks = [t for t in range(tasks_per_node + 1, 2 * tasks_per_node) if t // 2 != t % tasks_per_node]
    return pick("08.1", tasks or range(tasks_per_node + 1, 2 * tasks_per_node))


def _gcd_of(task: int, tasks_per_node: int):
    node = load_site("lumi").node
    return node.gcd(task % tasks_per_node * (node.gcd_count // tasks_per_node))


@check("08.1",
       wrong("the first mask of the list (task 0's)", answer=lambda a: _gcd_of(0, a.tasks_per_node).mask_hex),
       wrong("the GCD of task // 2, as if two tasks shared a GCD",
             answer=lambda a: load_site("lumi").node.gcd(task_to_study(a.tasks_per_node) // 2).mask_hex),
       wrong("the bit of core `task`, as if the task number were a core",
             answer=lambda a: hex(1 << task_to_study(a.tasks_per_node)), mentions="place on its own node"),
       wrong("a core range instead of a mask", answer=lambda a: "{}-{}".format(
           _gcd_of(task_to_study(a.tasks_per_node), a.tasks_per_node).cores[0],
           _gcd_of(task_to_study(a.tasks_per_node), a.tasks_per_node).cores[-1]), mentions="hexadecimal"))
def check_task_mask(answer: str | int | None, tasks_per_node: int = 8) -> Passed:
    """Exercise 08.1: the CPU mask of this learner's task (:func:`task_to_study`, a SLURM_PROCID on the second node)
    in a job with ``tasks_per_node`` tasks per node."""
    task = task_to_study(tasks_per_node)
    node = load_site("lumi").node
    what = f"the CPU mask of task {task}"
    local = task % tasks_per_node
    gcd = node.gcd(local * (node.gcd_count // tasks_per_node))
    value = _mask_value("08.1", answer, what)
    if value != gcd.mask:
        raise CheckFailed("08.1", f"{what} is not right", expected=gcd.mask_hex, found=answer,
                          hint="a mask depends on the task's place on its own node, and every node repeats the "
                               "same list.")
    return passed("08.1", f"task {task} is local task {local} -> GCD {gcd.index}, cores "
                          f"{gcd.cores[0]}-{gcd.cores[-1]}: {gcd.mask_hex}")


def gdr_recipes() -> list[str]:
    """The site's environment recipes that set RCCL's GPU-direct RDMA level (``NCCL_NET_GDR_LEVEL``)."""
    site = load_site("lumi")
    return [name for name, values in site.env.items() if "NCCL_NET_GDR_LEVEL" in values]


def _echo_line(log_text: str) -> int:
    return next(no for no, line in enumerate(log_text.splitlines(), start=1) if "NCCL_NET_GDR_LEVEL" in line)


@check("08.2",
       wrong("the line echoing NCCL_NET_GDR_LEVEL: it says what was asked, not what RCCL did",
             line_no=lambda a: _echo_line(a.log_text), mentions="transport line"),
       wrong("the proof counted from 0", line_no=lambda a: parse_rccl(a.log_text).gdr_lines[0].line_no - 1),
       wrong("the recipe that turns on RCCL's debug output", recipe="rccl-debug"))
def check_gdr(recipe: str | None, line_no: int | None, log_text: str) -> Passed:
    """Exercise 08.2: the recipe that asks for GPU-direct RDMA, and the first log line proving RCCL used it."""
    site = load_site("lumi")
    expect_in("08.2", recipe, sorted(site.env), what="the environment recipe",
              hint="one of the site's environment recipes, by name.")
    expect_in("08.2", recipe, gdr_recipes(), what="the recipe that asks RCCL for GPU-direct RDMA",
              hint="a recipe names the variables it sets: which one asks for GPU-direct RDMA?")
    lines = log_text.splitlines()
    proof = [hit.line_no for hit in parse_rccl(log_text).gdr_lines]
    if not proof:
        raise CheckFailed("08.2", "the log given to the check has no channel line ending in /GDRDMA",
                          hint="pass the text of the log written by the setup cell (the GDR one).")
    expect_type("08.2", line_no, int, what="the line number (1-based) of the proof",
                hint="a whole number, counting lines from 1 as editors and grep -n do.")
    if not 1 <= line_no <= len(lines):
        raise CheckFailed("08.2", "the line number is outside the log", expected=proof[0], found=line_no)
    expect_equal("08.2", line_no, proof[0], what="the first line that proves GPU-direct RDMA",
                 hint="what RCCL did is in a channel's transport line; a line echoing a variable only says what "
                      "was asked for.",
                 off_by_one="a neighbouring line, or a line number counted from 0 (editors and grep -n count from 1)")
    return passed("08.2", f"recipe {recipe!r}; line {line_no}: {lines[line_no - 1].split('NCCL INFO ')[-1]}")


@check("08.3",
       wrong("the variable instead of the recipe's name", recipe="MIOPEN_USER_DB_PATH"),
       wrong("the recipe that turns on MIOpen's logging, which only shows the error", recipe="miopen-log"),
       wrong("the cache recipe", recipe="caches"))
def check_miopen_fix(recipe: str | None, log_text: str) -> Passed:
    """Exercise 08.3: the environment recipe that fixes the problem the log doctor finds in ``log_text``."""
    site = load_site("lumi")
    found = [d.signature for d in diagnose_text(log_text)]
    if "miopen-sqlite-lock" not in found:
        raise CheckFailed("08.3", "the log given to the check shows no MIOpen SQLite locking error",
                          hint="pass the text of the log written by the setup cell.")
    fixes = [name for name, values in site.env.items() if "MIOPEN_USER_DB_PATH" in values]
    recipe = expect_in("08.3", recipe, sorted(site.env), what="the environment recipe",
                       hint="the recipes are `load_site('lumi').env`.")
    expect_in("08.3", recipe, fixes, what="the recipe that moves MIOpen's database off Lustre",
              hint="the doctor's fix names the variable to set; which recipe sets it?")
    values = site.env_recipe(recipe)
    return passed("08.3", f"recipe {recipe!r}: MIOPEN_USER_DB_PATH={values['MIOPEN_USER_DB_PATH']}")


@check("08.4",
       wrong("no profile_steps: rocprof traces the whole run", job=lambda a: a.job.with_(profile_steps=None),
             mentions="whole run"),
       wrong("a rank on the first node", job=lambda a: a.job.with_(profile_ranks=(3,)), mentions="second node"),
       wrong("every rank profiled", job=lambda a: a.job.with_(profile_ranks=())),
       wrong("torch.profiler instead of rocprof", job=lambda a: a.job.with_(profile="torch")),
       wrong("profile_steps=1: only the cold first step", job=lambda a: a.job.with_(profile_steps=1),
             mentions="cold"),
       wrong("profile_steps=1000: a huge trace", job=lambda a: a.job.with_(profile_steps=1000), mentions="trace"))
def check_profile_one_rank(job: JobSpec | None, nodes: int = 2, tasks_per_node: int = 8) -> Passed:
    """Exercise 08.4: a job spec of ``nodes`` x ``tasks_per_node`` ranks that profiles exactly one rank, on the
    second node, with rocprof."""
    what = "the job spec"
    expect_type("08.4", job, JobSpec, what=what, hint="build it with `two_nodes.with_(...)`.")
    expect_equal("08.4", (job.nodes, job.ntasks_per_node), (nodes, tasks_per_node),
                 what="(nodes, tasks per node)", hint="keep the shape of `two_nodes`.")
    expect_in("08.4", job.profile, sorted(PROFILE_MODES), field=True, what="the profiling mode",
              hint="one of the profiling modes the workload knows.")
    expect_equal("08.4", job.profile, "rocprof", field=True, what="the profiling mode",
                 hint="the seed profiles with rocprof.")
    ranks = sorted(set(job.profile_ranks))
    if len(ranks) != 1:
        raise CheckFailed("08.4", "exactly one rank should be profiled", expected=1, found=len(ranks),
                          hint="no rank named profiles every rank.")
    rank = ranks[0]
    second = range(tasks_per_node, 2 * tasks_per_node)
    if rank not in second:
        raise CheckFailed("08.4", f"rank {rank} is not on the second node", expected=f"a rank in {second.start}-"
                          f"{second.stop - 1}", found=rank, hint="ranks 0-7 are on the first node.")
    if job.profile_steps is None:
        raise CheckFailed("08.4", "the job does not stop after a few steps, so rocprof traces the whole run",
                          hint="a few dozen steps are enough and keep the trace small.")
    if not PROFILE_STEPS[0] <= job.profile_steps <= PROFILE_STEPS[1]:
        few = job.profile_steps < PROFILE_STEPS[0]
        raise CheckFailed("08.4", f"{job.profile_steps} steps is no sensible length for a profiled run",
                          found=job.profile_steps,
                          mistake=("a run that stops in its first, cold steps: rocprof then records start-up (kernel "
                                   "compilation, the first allocations), not training" if few else
                                   "a run of that many steps under rocprof: a trace of gigabytes and a long job, "
                                   "for nothing a few dozen steps do not show"),
                          hint="long enough to pass the first, cold steps; short enough to keep the trace small.")
    script = render_sbatch(job, "lumi")
    if f'case "$SLURM_PROCID" in {rank})' not in script:
        raise CheckFailed("08.4", "the rendered script does not branch on the rank",
                          hint="the spec must name the one rank that runs under the profiler.")
    return passed("08.4", f"rank {rank} (node 1, local rank {rank - tasks_per_node}) runs under rocprof, the other "
                          f"{nodes * tasks_per_node - 1} ranks run plainly")


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_NOT_PROOF = Choice("08.q1", "Why is the log line `NCCL_NET_GDR_LEVEL set by environment to PHB` no proof that "
                                "RCCL used GPU-direct RDMA?", {
    "a": Option("It only echoes what was asked for; RCCL can still choose another path.", True,
                "what RCCL did is in the channels' transport lines: `... via NET/.../GDRDMA` (08.2)."),
    "b": Option("The variable's name is misspelt.", False, "the name is right; the line is simply the request."),
    "c": Option("RCCL ignores every NCCL_ variable on AMD GPUs.", False,
                "RCCL reads the NCCL_ names (the log echoes them); it may still fall back when GDR is not possible."),
})
check_why_not_proof = choice_check(WHY_NOT_PROOF)

WHY_MIOPEN_LOCK = Choice("08.q2", "Why does MIOpen's database fail with a SQLite `locking protocol` error when it "
                                  "sits on Lustre?", {
    "a": Option("SQLite needs file locks that the parallel file system does not give it reliably when many ranks "
                "on many nodes open the same database.", True,
                "a node-local folder (`/tmp`, the `miopen` recipe) gives each node its own database, with no "
                "locking across nodes."),
    "b": Option("The home quota is full.", False,
                "a full quota says `Disk quota exceeded` (the doctor's `disk-quota` signature), not a locking error."),
    "c": Option("MIOpen needs root rights to write its database.", False,
                "it writes to a user folder; the error is about locks, not permissions."),
})
check_why_miopen_lock = choice_check(WHY_MIOPEN_LOCK)


# --- A communication baseline: all_reduce_perf in a node and across two (08.5) -------------------------------------

def baseline_outputs() -> dict[str, str]:
    """Exercise 08.5's all_reduce_perf outputs with two ranks: the two GCDs of one MI250X in one node, and one GCD on
    each of two nodes. GENERATED in rccl-tests' format from a model (no real LUMI output is shipped), with an
    efficiency chosen for this learner; labelled on their first line."""
    from ..logs.collbench import synthesize

    eff = pick("08.5", (0.6, 0.7, 0.8, 0.9))
    return {"one_node": synthesize((0, 1), nodes=1, efficiency=eff, max_bytes=1 << 28),
            "two_nodes": synthesize((0,), nodes=2, efficiency=eff, max_bytes=1 << 28)}


def _baseline(name: str):
    from ..logs.collbench import link_for, parse_collbench

    bench = parse_collbench(baseline_outputs()[name], f"08.5 {name}")
    return bench, link_for(bench, "lumi")


def _number(exercise: str, value: object, what: str, hint: str) -> float:
    if value is None:
        raise CheckFailed(exercise, what, unanswered=True, hint=hint)
    if isinstance(value, bool):
        raise CheckFailed(exercise, f"{what} should be a number", found=value, hint=hint)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise CheckFailed(exercise, f"{what} should be a number", found=value, hint=hint) from None


@check("08.5",
       wrong("the average bus bandwidth of the two-node run, not its peak",
             cross_busbw=lambda a: _baseline("two_nodes")[0].avg_busbw),
       wrong("the bus bandwidth of the smallest message, where latency rules",
             cross_busbw=lambda a: _baseline("two_nodes")[0].rows[0].busbw),
       wrong("the link inside a package as the two-node bottleneck", bottleneck=lambda a: "gcd_in_package"),
       wrong("the in-node peak for the two-node run", cross_busbw=lambda a: _baseline("one_node")[0].peak.busbw))
def check_comm_baseline(node_busbw: float | None, cross_busbw: float | None, bottleneck: str | None) -> Passed:
    """Exercise 08.5: the peak bus bandwidth of all_reduce_perf in one node and across two (:func:`baseline_outputs`),
    and the link that limits the two-node run (a key of the site's ``[hardware.links]``)."""
    one, _ = _baseline("one_node")
    two, verdict = _baseline("two_nodes")
    hint = "the bus bandwidth of the largest messages, not the average, nor the algorithm bandwidth"
    got = _number("08.5", node_busbw, "the peak bus bandwidth in one node (`node_busbw`)", hint)
    if abs(got - one.peak.busbw) > 0.01 * one.peak.busbw:
        raise CheckFailed("08.5", "the in-node peak bus bandwidth is off", found=got, hint=hint)
    got = _number("08.5", cross_busbw, "the peak bus bandwidth across two nodes (`cross_busbw`)", hint)
    if abs(got - two.peak.busbw) > 0.01 * two.peak.busbw:
        raise CheckFailed("08.5", "the two-node peak bus bandwidth is off", found=got,
                          hint=hint + "; small messages measure latency, the largest ones the link")
    links = load_site("lumi").links
    bottleneck = plain(bottleneck)
    if bottleneck not in links:
        raise CheckFailed("08.5", "`bottleneck` should name a link of the site profile", found=bottleneck,
                          hint=f"one of: {', '.join(links)}")
    if bottleneck != verdict.link:
        raise CheckFailed("08.5", f"{bottleneck} is not what limits the two-node run",
                          hint="compare the two-node peak with each link's bandwidth in the site profile: which "
                               "link does the traffic cross between nodes that it never crosses inside one?")
    return passed("08.5", f"in one MI250X {one.peak.busbw:g} GB/s, across two nodes {two.peak.busbw:g} GB/s, limited "
                          f"by {verdict.link} ({verdict.peak_gb_s:g} GB/s; generated outputs: run all_reduce_perf on "
                          "LUMI for yours)")


# --- Hangs: the flight recorder, and which rank never joined collective N (08.6) ----------------------------------

#: What makes PyTorch's NCCL/RCCL process group keep a flight recorder and write it when a collective times out
#: (PyTorch docs, "PYTORCH ProcessGroupNCCL Environment Variables"; tutorial "Debugging hangs with the flight
#: recorder"). Dumps go to TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank> (default /tmp/nccl_trace_rank_<rank>).
RECORDER_ENV = {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}


def hang_records() -> list[dict[str, object]]:
    """Exercise 08.6's flight-recorder summary, one row per rank of a hung 16-rank job: the last collective each rank
    entered (``collective_seq_id``, ``profiling_name``, ``state``, field names of PyTorch's dumps). GENERATED for
    this learner (a simplified table, not a real dump): one rank never entered the collective the others wait in."""
    from .datasets import rng_for

    rng = rng_for("08.6")
    ranks = 16
    late = rng.randrange(ranks)
    stuck = rng.randrange(40, 400)
    rows = []
    for r in range(ranks):
        if r == late:
            rows.append({"rank": r, "collective_seq_id": stuck - 1, "profiling_name": "nccl:all_reduce",
                         "state": "completed"})
        else:
            rows.append({"rank": r, "collective_seq_id": stuck, "profiling_name": "nccl:all_reduce",
                         "state": "started"})
    return rows


def _hang_truth() -> tuple[int, int]:
    rows = hang_records()
    low = min(rows, key=lambda row: int(row["collective_seq_id"]))  # type: ignore[arg-type]
    high = max(int(row["collective_seq_id"]) for row in rows)  # type: ignore[arg-type]
    return int(low["rank"]), high  # type: ignore[arg-type]


@check("08.6",
       wrong("a rank that is waiting inside the collective, not the one missing from it",
             missing_rank=lambda a: (_hang_truth()[0] + 1) % 16),
       wrong("the last collective the missing rank completed, not the one it never joined",
             stuck_seq=lambda a: _hang_truth()[1] - 1),
       wrong("no dump when the collective times out",
             recorder_env=lambda a: {k: v for k, v in a.recorder_env.items() if k != "TORCH_NCCL_DUMP_ON_TIMEOUT"}),
       wrong("a trace buffer of size 0 (the recorder off)",
             recorder_env=lambda a: {**a.recorder_env, "TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}))
def check_hang(recorder_env: dict | None, missing_rank: int | None, stuck_seq: int | None) -> Passed:
    """Exercise 08.6: the environment that records and dumps the flight recorder, the rank that never joined the
    collective the others wait in, and that collective's sequence number (:func:`hang_records`)."""
    if recorder_env is None:
        raise CheckFailed("08.6", "the flight recorder's environment (`recorder_env`)", unanswered=True,
                          hint="a dict of the two variables the lesson names.")
    if not isinstance(recorder_env, dict):
        raise CheckFailed("08.6", "`recorder_env` should be a dict of variable names to values", found=recorder_env)
    size = str(recorder_env.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0")).strip()
    if not size.isdigit() or int(size) <= 0:
        raise CheckFailed("08.6", "the recorder keeps no entries",
                          hint="the buffer's size is the number of collectives each rank remembers: 0 (or none) "
                               "is off.")
    if str(recorder_env.get("TORCH_NCCL_DUMP_ON_TIMEOUT", "")).strip().lower() not in ("1", "true"):
        raise CheckFailed("08.6", "nothing writes the recorder out when the collective times out",
                          hint="the watchdog dumps each rank's buffer on a timeout only when asked to.")
    rank, seq = _hang_truth()
    if missing_rank is None or stuck_seq is None:
        raise CheckFailed("08.6", "the missing rank and the collective it never joined", unanswered=True,
                          hint="compare the ranks' last collective_seq_id in the table.")
    missing_rank, stuck_seq = plain(missing_rank), plain(stuck_seq)  # np.int64 from idxmin is a whole number too
    if not isinstance(missing_rank, int) or isinstance(missing_rank, bool) or missing_rank != rank:
        raise CheckFailed("08.6", f"rank {missing_rank} is not the one that never joined", found=missing_rank,
                          hint="the other ranks all entered the same collective ('started'); one stopped before it.")
    if not isinstance(stuck_seq, int) or isinstance(stuck_seq, bool) or stuck_seq != seq:
        raise CheckFailed("08.6", "that is not the collective the others wait in", found=stuck_seq,
                          hint="the sequence number the waiting ranks show, one after the missing rank's last.")
    return passed("08.6", f"rank {rank} never entered collective {seq}; next, see where it is: py-spy dump of its "
                          "process through srun --overlap on its node (generated table: a real dump has more fields)")
