"""Checks for the course seeds' topics the modules did not cover: the raw ``torch.profiler`` API, reading a HIP log
by hand, TensorBoard in Open OnDemand, the ``spawn`` start method for data loaders, DeepSpeed's ZeRO stages and JAX
on LUMI.

Reference data comes from this module (e.g. :func:`hip_exercise_log` writes the log the exercise reads), never
from the learner's namespace. Multiple-choice questions fail with the feedback of the option chosen.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..jobs import JobSpec, render_srun
from ..logs import parse_hip_log
from ..site import load_site
from .jobfields import expect_job_fields
from .concepts import letter as parse_letter
from .framework import (CheckFailed, Passed, check, expect_answer, expect_equal, expect_in, expect_type, passed,
                        switched_on, wrong)


def expect_choice(exercise: str, found: Any, options: Mapping[str, tuple[bool, str]], *, what: str) -> str:
    """Fail unless ``found`` is the right option's letter (``"b"``, ``"B"``, ``"(b)"``, ``"b)"``: the course's one
    parser, :func:`lumikit.checks.concepts.letter`); a wrong option fails with its own explanation."""
    letter = parse_letter(exercise, found, options, what)
    right, why = options[letter]
    if not right:
        raise CheckFailed(exercise, f"({letter}) is not right: {why}")
    return letter


# --- 05.S1: the raw torch.profiler API -----------------------------------------------------------------------------

#: The schedule the exercise asks for: skip 1 step, warm up 1, record 2, once.
RAW_SCHEDULE = {"wait": 1, "warmup": 1, "active": 2}
#: The steps 05.S1's loop runs, and 09.S1's batch size: both fixed by their questions.
RAW_STEPS = 6
SPAWN_BATCH = 8


def _trace_without_warmup(path: Any) -> Path:
    """A copy of the learner's trace with its steps numbered as a schedule without warm-up records them."""
    source = Path(path)
    text = re.sub(r"ProfilerStep#(\d+)", lambda m: f"ProfilerStep#{int(m.group(1)) - 1}", source.read_text())
    target = source.with_name("trace-no-warmup.json")
    target.write_text(text)
    return target


@check("05.S1",
       wrong("no warm-up step: steps 1 and 2 recorded", raw_trace=lambda a: _trace_without_warmup(a.raw_trace),
             mentions="steps the trace recorded"),
       wrong("fewer steps than the schedule needs", steps_run=3, mentions="too few"),
       wrong("one step more than the question's loop", steps_run=lambda a: a.steps_run + 1, mentions="steps run"),
       wrong("a trace that was never written", raw_trace=lambda a: Path(a.raw_trace).with_name("none.json")))
def check_raw_profiler(raw_trace: str | Path | None, steps_run: int | None) -> Passed:
    """Exercise 05.S1: a chrome trace written by ``torch.profiler.profile`` with ``schedule(wait=1, warmup=1,
    active=2)`` around ``steps_run`` training steps, each ending in ``prof.step()``."""
    expect_answer("05.S1", raw_trace, "the path of the trace your profiler wrote")
    expect_type("05.S1", steps_run, int, what="how many steps the loop ran")
    path = Path(raw_trace)
    if not path.is_file():
        raise CheckFailed("05.S1", f"there is no trace file {path}",
                          hint="`on_trace_ready=lambda p: p.export_chrome_trace(path)` writes it when the "
                               "active steps end.")
    try:
        events = json.loads(path.read_text())["traceEvents"]
    except (ValueError, KeyError, TypeError):
        raise CheckFailed("05.S1", f"{path} is not a chrome trace (no traceEvents)",
                          hint="use `prof.export_chrome_trace(path)`.") from None
    steps_seen = sorted({int(e["name"].split("#", 1)[1]) for e in events
                       if str(e.get("name", "")).startswith("ProfilerStep#")})
    first = RAW_SCHEDULE["wait"] + RAW_SCHEDULE["warmup"]
    expected = list(range(first, first + RAW_SCHEDULE["active"]))
    if steps_run < first + RAW_SCHEDULE["active"]:
        raise CheckFailed("05.S1", f"{steps_run} steps are too few for the schedule",
                          expected=f"at least {first + RAW_SCHEDULE['active']}", found=steps_run)
    if steps_run != RAW_STEPS:
        raise CheckFailed("05.S1", "the number of steps run is not the one the question asks for", found=steps_run,
                          mistake="the recorded steps counted, not the steps the loop ran"
                          if steps_run == RAW_SCHEDULE["active"] else None,
                          hint="every step the loop ran counts, recorded or not.")
    if not steps_seen:
        raise CheckFailed("05.S1", "the trace holds no ProfilerStep#N ranges", hint="call `prof.step()` at the "
                                                                                   "end of every step.")
    expect_equal("05.S1", steps_seen, expected, what="the steps the trace recorded",
                 hint="wait=1 skips step 0, warmup=1 runs step 1 with the profiler on but discards it, "
                      "active=2 records steps 2 and 3.")
    ops = sum(1 for e in events if str(e.get("name", "")).startswith("aten::"))
    return passed("05.S1", f"steps {expected} recorded ({ops} aten:: operator events); steps before them were "
                           f"skipped or warm-up")


# --- 05.S2: reading a HIP log by hand -------------------------------------------------------------------------------

def hip_exercise_log() -> str:
    """A short ``AMD_LOG_LEVEL=4`` log in the ROCm 6 layout, generated for the exercise (no GPU needed)."""
    tid, pid, t = "[tid:0x7f3a1c5ff700]", 51873, 2210432118
    rows: list[tuple[int, str, str]] = []

    def rec(level: int, where: str, dt: int, message: str) -> None:
        nonlocal t
        t += dt
        rows.append((level, where, f"{t} us: {pid} : {tid} {message}"))

    rec(3, "hip_memory.cpp           :1552", 0, " hipMemcpyAsync ( 0x7f36d2a00000, 0x7f3a0b2c4040, 1048576, "
                                              "hipMemcpyHostToDevice, stream:0x5594c1a3e2d0 )")
    rec(3, "hip_memory.cpp           :1553", 41, "hipMemcpyAsync: Returned hipSuccess :")
    kernels = ["Cijk_Alik_Bljk_SB_MT64x64x16_MI32x32x2x1_SN_1LDSB0_GRVW4_TT2_32_WG32_8_1",
               "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
               "Cijk_Alik_Bljk_SB_MT64x64x16_MI32x32x2x1_SN_1LDSB0_GRVW4_TT2_32_WG32_8_1"]
    for name in kernels:
        rec(3, "hip_module.cpp           :662 ", 9, " hipLaunchKernel ( 0x7f3a7c1e3c10, {64,1,1}, {256,1,1}, "
                                                   "0x7f3a1c5fd1b0, 0, stream:0x5594c1a3e2d0 )")
        rec(3, "rocvirtual.cpp           :2853", 5, f"ShaderName : {name}")
        rec(3, "hip_module.cpp           :663 ", 4, "hipLaunchKernel: Returned hipSuccess :")
    rec(3, "hip_memory.cpp           :1552", 12, " hipMemcpyWithStream ( 0x7ffd5e3b1a4c, 0x7f36d2c00000, 4, "
                                               "hipMemcpyDeviceToHost, stream:0x5594c1a3e2d0 )")
    rec(3, "hip_memory.cpp           :1553", 874, "hipMemcpyWithStream: Returned hipSuccess :")
    return "".join(f":{level}:{where}: {text}\n" for level, where, text in rows)


@check("05.S2",
       wrong("every line naming hipLaunchKernel counted (calls and returns)", launches=6, mentions="launches"),
       wrong("the launch taken for the slow call", slowest_call="hipLaunchKernel", mentions="returns at once"),
       wrong("the first copy", slowest_call="hipMemcpyAsync"))
def check_hip_log_reading(launches: int | None, slowest_call: str | None) -> Passed:
    """Exercise 05.S2: the number of kernel launches in :func:`hip_exercise_log`, and the HIP call that took longest
    from its record to its ``Returned`` record."""
    table = parse_hip_log(hip_exercise_log(), source="exercise log")
    kernels = int((table["kind"] == "kernel").sum())
    slowest = str(table.loc[table["api_us"].astype(float).idxmax(), "api"])
    expect_type("05.S2", launches, int, what="the number of kernel launches")
    expect_equal("05.S2", launches, kernels, what="the number of kernel launches",
                 hint="count the `hipLaunchKernel (` records, not the ShaderName or Returned lines.")
    expect_type("05.S2", slowest_call, str, what="the slowest HIP call's name")
    if slowest_call.strip() == "hipLaunchKernel":
        raise CheckFailed("05.S2", "a launch returns at once: the kernel runs later on the GPU",
                          hint="subtract each call's timestamp from its `Returned` record's.")
    expect_equal("05.S2", slowest_call.strip(), slowest, what="the slowest HIP call",
                 hint="the timestamps are in microseconds; compare call and return per record.")
    return passed("05.S2", f"{kernels} launches; {slowest} waits for the GPU to finish what was queued before it")


# --- 05.S3: TensorBoard in Open OnDemand ----------------------------------------------------------------------------

TENSORBOARD_OPTIONS = {
    "a": (False, "the PyTorch Profiler tab comes from the torch-tb-profiler plugin, which is deprecated; it may not "
                 "load these traces at all. PyTorch points to Holistic Trace Analysis instead."),
    "b": (True, "TensorBoard shows the scalars written with SummaryWriter; the traces open in Perfetto or in an "
                "analysis (lumikit.trace, HTA)."),
    "c": (False, "the TensorBoard app is an interactive session, a Slurm job: it runs until you cancel it in My "
                 "Interactive Sessions or its time runs out, whether the tab is open or not."),
    "d": (False, "the app reads a log directory in your project's storage, given in its form; nothing is uploaded."),
}


@check("05.S3",
       wrong("the deprecated profiler tab", answer="a", mentions="deprecated"),
       wrong("closing the tab ends the session", answer="c", mentions="interactive session"),
       wrong("an upload", answer="d"))
def check_tensorboard_choice(answer: str | None) -> Passed:
    """Exercise 05.S3: what TensorBoard in LUMI's web interface does and does not do (multiple choice)."""
    expect_choice("05.S3", answer, TENSORBOARD_OPTIONS, what="your choice")
    return passed("05.S3", TENSORBOARD_OPTIONS["b"][1])


# --- 09.S1: the spawn start method -------------------------------------------------------------------------------

SPAWN_OPTIONS = {
    "a": (True, "fork copies the parent process, its threads' locks and its GPU and RCCL state, into each worker; "
                "spawn starts each worker as a fresh interpreter that only imports what it needs."),
    "b": (False, "spawn is slower to start (each worker imports torch again); it is chosen for safety, not speed."),
    "c": (False, "fork works on Linux, and is its default; the trouble is what it copies."),
}


def _loader_like(loader: Any, method: str | None, batch_size: int | None = None) -> Any:
    """The learner's loader rebuilt with another start method (None: no worker processes) or batch size."""
    from torch.utils.data import DataLoader

    batch = batch_size or loader.batch_size
    if method is None:
        return DataLoader(loader.dataset, batch_size=batch)
    return DataLoader(loader.dataset, batch_size=batch, num_workers=max(1, loader.num_workers),
                      multiprocessing_context=method)


@check("09.S1",
       wrong("spawn chosen for speed", why_spawn="b", mentions="slower"),
       wrong("the default fork", spawn_loader=lambda a: _loader_like(a.spawn_loader, "fork"), mentions="start method"),
       wrong("batches of one sample (the default)",
             spawn_loader=lambda a: _loader_like(a.spawn_loader, "spawn", batch_size=1), mentions="batch"),
       wrong("no workers at all", spawn_loader=lambda a: _loader_like(a.spawn_loader, None), mentions="no worker"))
def check_spawn_loader(spawn_loader: Any, first_batch: Any, why_spawn: str | None) -> Passed:
    """Exercise 09.S1: a DataLoader whose workers start with ``spawn``, one batch read through it, and why."""
    from torch.utils.data import DataLoader

    expect_type("09.S1", spawn_loader, DataLoader, what="the data loader")
    if spawn_loader.batch_size != SPAWN_BATCH:
        raise CheckFailed("09.S1", "the loader's batch size is not the one the question asks for",
                          found=spawn_loader.batch_size, mistake="the default batch of one sample"
                          if spawn_loader.batch_size == 1 else None, hint="the question gives the batch size.")
    if spawn_loader.num_workers < 1:
        raise CheckFailed("09.S1", "the loader has no worker processes to start",
                          found=spawn_loader.num_workers, hint="a start method only matters for worker processes.")
    context = spawn_loader.multiprocessing_context
    method = context.get_start_method() if context is not None else None
    expect_equal("09.S1", method, "spawn", what="the workers' start method",
                 hint="the loader's workers start as fresh interpreters, not copies of this process.")
    expect_answer("09.S1", first_batch, "one batch read through the loader")
    expect_choice("09.S1", why_spawn, SPAWN_OPTIONS, what="why spawn")
    return passed("09.S1", f"{spawn_loader.num_workers} workers started with spawn")


# --- 08.S1: GPU visibility, ROCR then HIP ---------------------------------------------------------------------------

@check("08.S1",
       wrong("HIP's index read as the node's GCD", physical_gcd=1, mentions="ROCR left"),
       wrong("the first GCD ROCR leaves", physical_gcd=4),
       wrong("both ROCR devices counted", device_count=2, mentions="how many devices"))
def check_visible_gcd(physical_gcd: int | None, device_count: int | None) -> Passed:
    """Exercise 08.S1: with ROCR_VISIBLE_DEVICES=4,5 and HIP_VISIBLE_DEVICES=1, which GCD is ``cuda:0``?"""
    rocr, hip = [4, 5], [1]
    expect_type("08.S1", device_count, int, what="torch.cuda.device_count()")
    expect_equal("08.S1", device_count, len(hip), what="how many devices PyTorch sees",
                 hint="count what the second filter keeps, not what the first one leaves.")
    expect_type("08.S1", physical_gcd, int, what="the GCD behind cuda:0")
    if physical_gcd == hip[0]:
        raise CheckFailed("08.S1", "HIP_VISIBLE_DEVICES counts among the devices ROCR left, not the node's GCDs",
                          found=physical_gcd, hint="HIP's index points into the first filter's list, renumbered from 0.")
    expect_equal("08.S1", physical_gcd, rocr[hip[0]], what="the GCD behind cuda:0",
                 hint="apply ROCR_VISIBLE_DEVICES first, renumber from 0, then HIP_VISIBLE_DEVICES.")
    return passed("08.S1", f"cuda:0 is GCD {rocr[hip[0]]}: ROCR first, then HIP on ROCR's numbering")


# --- 08.S2: DeepSpeed, read -----------------------------------------------------------------------------------------

ZERO_OPTIONS = {
    "a": (True, "stage 1 partitions the optimizer states (for Adam, two moments per parameter) across the ranks; "
                "every rank still holds all parameters and gradients."),
    "b": (False, "that is stage 2: gradients and optimizer states."),
    "c": (False, "that is stage 3: parameters too, gathered layer by layer when needed."),
    "d": (False, "plain DDP partitions nothing: every rank holds everything. ZeRO is DeepSpeed's addition."),
}


@check("08.S2",
       wrong("stage 2", answer="b", mentions="stage 2"), wrong("stage 3", answer="c", mentions="stage 3"),
       wrong("plain data parallelism", answer="d"))
def check_zero_stage(answer: str | None) -> Passed:
    """Exercise 08.S2: what ZeRO stage 1 (``ds_fp16_z1_config.json``) partitions across ranks (multiple choice)."""
    expect_choice("08.S2", answer, ZERO_OPTIONS, what="your choice")
    return passed("08.S2", ZERO_OPTIONS["a"][1])


# --- 10.S1: a JAX job ----------------------------------------------------------------------------------------------

@check("10.S1",
       wrong("every GCD of a node expected", devices_expected=8),
       wrong("on standard-g: a whole node billed for 2 GCDs", jax_job=lambda a: a.jax_job.with_(partition="standard-g"),
             mentions="whole nodes"),
       wrong("the PyTorch container", jax_job=lambda a: a.jax_job.with_(container="pytorch"), mentions="container"),
       wrong("an error taken for a device list", jax_output="ModuleNotFoundError: No module named 'jax'",
             mentions="no JAX device"),
       wrong("a run that fell back to the CPU", jax_output="[CpuDevice(id=0)]", mentions="CPU devices only"),
       wrong("without PYTHONNOUSERSITE=1: ~/.local shadows the container's JAX",
             jax_job=lambda a: a.jax_job.with_(env={k: v for k, v in a.jax_job.env_dict().items()
                                                    if k != "PYTHONNOUSERSITE"}), mentions="~/.local"))
def check_jax_job(jax_job: JobSpec | None, devices_expected: int | None, jax_output: str | None) -> Passed:
    """Exercise 10.S1: a one-task JAX job on 2 GCDs in the JAX container, how many devices JAX lists, and (where
    it ran) the device list it printed."""
    site = load_site("lumi")
    expect_type("10.S1", jax_job, JobSpec, what="the JAX job",
                hint="a job spec that runs in the JAX container.")
    expect_equal("10.S1", jax_job.container, "jax", field=True, what="the container",
                 hint="the JAX image, not PyTorch's.")
    expect_job_fields("10.S1", jax_job, partition="small-g", nodes=1, time="0:05:00")
    expect_equal("10.S1", jax_job.gpus_per_node, 2, field=True, what="GCDs per node",
                 hint="the question says how many GCDs the job asks for per node.")
    tasks = jax_job.ntasks_per_node or 1
    expect_equal("10.S1", tasks, 1, what="tasks per node",
                 hint="how many JAX processes does the question start on the node?")
    if not switched_on(jax_job.env_dict().get("PYTHONNOUSERSITE"), "python"):
        raise CheckFailed("10.S1", "the job lets Python read packages from your ~/.local into the container",
                          found=jax_job.env_dict().get("PYTHONNOUSERSITE"),
                          hint="a jax or jaxlib once installed with `pip install --user` would shadow the container's "
                               "ROCm build; Python has an environment switch that leaves the user site out.")
    command = render_srun(jax_job, site).text()
    if "singularity" not in command:
        raise CheckFailed("10.S1", "the rendered command does not run in the container", found=command[:160])
    expect_type("10.S1", devices_expected, int, what="how many devices JAX lists")
    expect_equal("10.S1", devices_expected, 2, what="how many devices JAX lists in that job",
                 hint="Slurm makes the GCDs the job asks for visible to its one task, and JAX lists every visible "
                      "GCD.")
    expect_type("10.S1", jax_output, str, what="what the job printed (\"\" where it did not run)")
    if jax_output.strip():
        listed = re.findall(r"(?:rocm|cuda|gpu)\w*\(id=\d+\)|RocmDevice\(id=\d+\)|CudaDevice\(id=\d+\)|"
                            r"CpuDevice\(id=\d+\)|TFRT_CPU_\d+", jax_output)
        if not listed:
            raise CheckFailed("10.S1", "the output lists no JAX device", found=jax_output[:160])
        gpus = [d for d in listed if not d.startswith(("Cpu", "TFRT_CPU"))]
        if not gpus:
            raise CheckFailed("10.S1", "the output lists CPU devices only: JAX fell back to the CPU, so the job "
                                       "never used a GCD", found=jax_output[:160],
                              hint="look at the container and the GCDs the job asked for.")
        if len(gpus) != devices_expected:
            raise CheckFailed("10.S1", "the output lists another number of GCDs than you expected",
                              found=jax_output[:160])
        where = f"it printed {len(listed)} device(s): {', '.join(listed[:3])}"
    else:
        where = "it was not run here (no JAX in this kernel, no Slurm): the command is what LUMI runs"
    return passed("10.S1", f"{command.split(' singularity', 1)[0][:60]}...; {where}")
