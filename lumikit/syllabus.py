"""The workbook's map: for each module its objectives, prerequisites, estimated minutes and key points.

Module 00 renders the whole map (:func:`syllabus_markdown`); each module opens with its own line from here
(:func:`glance_markdown`) and closes with its key points. One source, so the map and the modules cannot disagree
(``tests/test_syllabus.py`` compares them). Minutes are estimates for a learner working through the lesson, then the
exercises, on LUMI or a laptop; ``python -m lumikit.checks.instructor.notes`` estimates them again from each module's
content (its instructor notes say both).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The repository folders a module's three files live in, relative to each other.
NOTEBOOKS, EXERCISES, SOLUTIONS = "notebooks", "exercises", "solutions"


@dataclass(frozen=True)
class Module:
    """One module of the workbook."""

    number: str  # "01"
    stem: str  # file name without suffix: "01_node_and_slurm"
    title: str
    minutes: int  # lesson and exercises together
    objectives: tuple[str, ...]
    prerequisites: tuple[str, ...]  # module numbers
    key_points: tuple[str, ...]
    has_exercises: bool = True


MODULES: tuple[Module, ...] = (
    Module("00", "00_start_here", "Start here", 15,
           ("find out where the workbook runs (LUMI, lumi-sim, laptop) and what falls back",
            "set your project and reservation outside the code",
            "plan a route through the modules"),
           (), ("Every cell that runs something says where it ran.",
                "Your account and reservation live in ~/.config/lumikit/config.toml or LUMIKIT_* variables.",
                "Each module is a lesson, then an exercise notebook with checks, then its solution."),
           has_exercises=False),
    Module("01", "01_node_and_slurm", "A LUMI-G node and Slurm", 60,
           ("read a LUMI-G node's layout: 8 GCDs, their cores and NUMA domains",
            "write srun/sbatch commands LUMI accepts, and fix the ones it rejects",
            "derive CPU masks from rocm-smi --showtoponuma and lscpu, and verify them inside a job"),
           ("00",), ("GCD numbers are not core numbers: GCD 0 sits next to cores 49-55 on NUMA 3.",
                     "One task per GCD, 7 cores each; the first core of every group of 8 is reserved.",
                     "A binding is proven by what each task prints (Cpus_allowed_list), with one task per mask.",
                     "One rule per rank: `--gpus-per-node` + device `LOCAL_RANK`, 7 cores and its GCD's mask; not "
                     "`--gpus-per-task`.")),
    Module("02", "02_containers_and_envs", "Containers and Python environments", 55,
           ("run a job inside LUMI's PyTorch container with the right binds",
            "add packages in a venv on top of the container without replacing its PyTorch"),
           ("01",), ("The container brings ROCm's PyTorch; your venv adds only what is missing.",
                     "Binds decide which host folders exist inside the container.",
                     "Pin torch to the container's version, or pip will replace it.")),
    Module("03", "03_first_training_job", "A first training job", 70,
           ("submit a training job and follow it with squeue and sacct",
            "plan --time from measured step times, and checkpoint and resume",
            "fix a broken #SBATCH script and cancel a job with Slurm's own commands"),
           ("01", "02"), ("Plan with the warm step time, not the first step.",
                          "A job at its time limit ends TIMEOUT: checkpoint, then resume.",
                          "sbatch, squeue, sacct and scancel are what lumikit runs underneath.")),
    Module("04", "04_watching_the_gpu", "Watching the GPU", 55,
           ("read rocm-smi: power, clock, busy %, memory per GCD and package",
            "tell a working GCD from a waiting one",
            "look at a running job with salloc and srun --overlap"),
           ("01",), ("Read power before GPU%: a waiting kernel can show 100 % busy.",
                     "On MI250X the package power is reported on the even GCD.",
                     "srun --overlap runs a second step in a job whose first step holds its CPUs.",
                     "A run's GPU record (`gpu/<node>.jsonl`) and `run.report()` keep what Slurm does not: peak "
                     "VRAM and energy.")),
    Module("05", "05_logging_and_profiling", "Logging and profiling", 95,
           ("read a HIP log (AMD_LOG_LEVEL=4) and rocprof's tables",
            "profile a few steps with torch.profiler, with and without lumikit's wrapper",
            "diagnose a failed job from its log"),
           ("03",), ("Profile a few steps of one rank after a warm-up; take step times from unprofiled steps.",
                     "A kernel launch returns at once; a copy to the host waits for the GPU.",
                     "TensorBoard's profiler plugin is deprecated: read traces in Perfetto or with an analysis.")),
    Module("06", "06_reading_traces", "Reading traces", 100,
           ("split GPU time into compute, communication and idle",
            "find a straggler rank and hidden communication in multi-rank traces",
            "say why the GPU waited and what would make the step faster: idle causes, the critical path, a what-if",
            "place kernels on the MI250X roofline from counters or from shapes"),
           ("05",), ("Idle time says the GPU waited; the host side says for what.",
                     "Communication that overlaps computation costs nothing extra.",
                     "One slow rank makes every rank's step slow.",
                     "Only work on the critical path makes the step shorter when it gets faster.")),
    Module("07", "07_several_gpus", "Several GPUs on one node", 100,
           ("run DDP with one task per GCD, and compare it with DataParallel",
            "start DDP with srun or torchrun"),
           ("03", "05"), ("One process per GCD (DDP) beats one process driving several (DataParallel).",
                          "Slurm sets RANK, LOCAL_RANK and WORLD_SIZE; torchrun is optional on LUMI.",
                          "Two GCDs of one small-g job may share an MI250X (200 GB/s) or not (50 GB/s): the bus ids "
                          "tell, rccl-tests measures.")),
    Module("08", "08_several_nodes", "Several nodes", 85,
           ("write a multi-node batch script with binding and RCCL's environment",
            "prove from RCCL's log that the network was used",
            "know which GPU each rank sees (Slurm, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES)"),
           ("07",), ("Masks depend on the local task id; the same list repeats on every node.",
                     "ROCR_VISIBLE_DEVICES filters first, HIP_VISIBLE_DEVICES counts among what is left.",
                     "DeepSpeed's ZeRO partitions optimizer state (stage 1), gradients (2), parameters (3).",
                     "Measure the network alone first: all_reduce_perf's busbw plateau against the link it crossed.",
                     "A collective's true time is its shortest duration over the ranks; the rank that waited least "
                     "arrived last, and the critical path across ranks follows the others' wait into that rank's "
                     "work.",
                     "A hang: the flight recorder names the rank that never joined collective N; py-spy via srun "
                     "--overlap shows why.")),
    Module("09", "09_data_and_io", "Data and I/O", 60,
           ("choose where data lives on LUMI and why one file beats many small ones",
            "size DataLoader workers, and start them with spawn in multi-node jobs"),
           ("03",), ("Lustre dislikes many small files: pack them, or stage to /tmp.",
                     "Enough workers hide loading; more only cost memory.",
                     "spawn starts clean workers; fork copies GPU and RCCL state.")),
    Module("10", "10_jax_on_lumi", "JAX on LUMI", 30,
           ("run JAX from LUMI's JAX container with a pinned venv",
            "launch one JAX process per GCD"),
           ("02",), ("Never let pip change jax or jaxlib.",
                     "JAX lists the GCDs Slurm made visible; check the list before timing.")),
    Module("11", "11_capstone", "Capstone: find a bottleneck, fix it, measure", 60,
           ("find a planted bottleneck with the step metrics, the profiler and the trace analysis",
            "fix it with one change and claim it with before/after numbers and their spread"),
           ("04", "05", "06", "07", "09"),
           ("Symptom, location, explanation, then one change and a new measurement.",
            "A phase says where the time goes; the operators inside it and the run's settings say why.",
            "A fix is a difference beyond the spread, measured with everything else unchanged.")),
    Module("12", "12_making_it_faster", "Making the step faster", 65,
           ("climb the optimisation ladder (fp32, bf16, a fused optimizer, torch.compile) and measure each rung "
            "with its spread",
            "say which rung helped most and why, from the trace diff and the critical path",
            "measure prefill and decode tokens/s with and without a KV cache, across batch sizes"),
           ("05", "06"),
           ("A rung helped only if its gain is beyond the noise of your own repeats.",
            "MFU is measured against the peak of the precision that ran: bf16 against 191.5 TFLOPS on an MI250X "
            "GCD, fp32 against 47.9.",
            "The trace diff says which operators a rung changed; the critical path says whether that was what the "
            "step waited for.",
            "`advise` ranks the causes a trace shows by what fixing each is worth at most; the measurement still "
            "decides.",
            "Decode is bound by memory traffic: a KV cache saves recomputation, a larger batch reads the weights "
            "once for more tokens.")),
)


def module(number: str) -> Module:
    """The module with this number ("01")."""
    for m in MODULES:
        if m.number == number:
            return m
    raise KeyError(f"no module {number!r}; the workbook has {', '.join(m.number for m in MODULES)}")


def total_minutes() -> int:
    return sum(m.minutes for m in MODULES)


def _link(folder: str, stem: str, text: str, here: str) -> str:
    target = f"{stem}.ipynb" if folder == here else f"../{folder}/{stem}.ipynb"
    return f"[{text}]({target})"


def syllabus_markdown(here: str = NOTEBOOKS) -> str:
    """The map as a Markdown table: module, minutes, prerequisites, objectives, and the lesson -> exercise ->
    solution links (relative to a notebook in ``here``, so they open in JupyterLab)."""
    rows = ["| Module | Minutes | After | Objectives | Path |", "|---|---|---|---|---|"]
    for m in MODULES:
        path = _link(NOTEBOOKS, m.stem, "lesson", here)
        if m.has_exercises:
            path += " → " + _link(EXERCISES, m.stem, "exercise", here) + " → " + _link(SOLUTIONS, m.stem,
                                                                                           "solution", here)
        after = ", ".join(m.prerequisites) or "-"
        rows.append(f"| **{m.number}** {m.title} | {m.minutes} | {after} | {'; '.join(m.objectives)} | {path} |")
    return "\n".join(rows) + f"\n\nIn all about {total_minutes() / 60:.0f} hours."


def glance_markdown(number: str) -> str:
    """A module's opening lines: objectives, estimated time and prerequisites."""
    m = module(number)
    after = ", ".join(m.prerequisites) or "none"
    lines = [f"> **Module {m.number} at a glance.** About **{m.minutes} minutes** (lesson and exercises). "
             f"Before it: module(s) {after}.", ">", "> **Objectives.** After it you can:"]
    lines += [f"> - {o}" for o in m.objectives]
    return "\n".join(lines)


def key_points_markdown(number: str) -> str:
    """A module's closing cell: its key points."""
    m = module(number)
    return "\n".join(["## Key points", ""] + [f"- {p}" for p in m.key_points])


def stems(root: Path) -> list[str]:
    """The module stems that have a lesson in ``root/notebooks``."""
    return sorted(p.stem for p in (Path(root) / NOTEBOOKS).glob("[0-9][0-9]_*.py"))
