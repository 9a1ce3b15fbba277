"""What the instructor rebuilds for a regrade, exercise by exercise, and what only the learner's record holds.

A check's inputs besides the answers (its evidence) are of four kinds:

- **rebuilt**: data lumikit generates from the learner's seed (a trace, a counter file, step times, a log). The
  regrade builds it again as that learner and ignores the recorded copy, so a pass on it is ``verified``;
- **the exercise's own**: an input the exercise fixes (the check's default, or a value in :data:`FIXED`); the
  value in the learner's record must be that one, else the input is the learner's own;
- **the learner's own** (any other input: their measured step times, their venv, their run's tables): the check is
  run on the recorded values, which shows they are consistent, not that they are real: the cell says ``own data``;
- **pasted terminal output** (:data:`PASTED_OUTPUT`): nothing in it ties it to a job in Slurm's accounting, so the
  cell says ``not checked``. Tasks whose evidence is a job id (:data:`JOB_ARGUMENTS`) are looked up in ``sacct``,
  and the job must be the learner's.
"""
from __future__ import annotations

import inspect
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def _exercise_analyzer() -> Any:
    """Module 06's trace analyzer on this learner's generated traces (written to a private temporary folder)."""
    from ...trace import TraceAnalyzer
    from ...trace.synth import write_synthetic
    from .. import m06

    folder = Path(tempfile.mkdtemp(prefix="lumikit-rebuilt-06-"))
    write_synthetic(folder / "traces", m06.exercise_trace_spec())
    return TraceAnalyzer.from_path(folder / "traces")


def _m05(name: str) -> Callable[[], Any]:
    def build() -> Any:
        from .. import m05

        return getattr(m05, name)()
    return build


def _counter_csv() -> str:
    from .. import m06

    return m06.counter_exercise_csv()


def _roofline_points() -> Any:
    from .. import m06

    return m06.roofline_exercise_points()


def _rccl_log() -> str:
    from ...logs.samples import rccl_debug_log

    return rccl_debug_log(plugin=True, gdr=True)


#: Exercise -> argument -> how the instructor builds it, as the learner (their seed is set while it runs).
REBUILT: dict[str, dict[str, Callable[[], Any]]] = {
    "05.P1": {"run": _m05("precision_run")},
    "05.W2": {"steps": _m05("warmup_steps")},
    "06.1": {"breakdown": lambda: _exercise_analyzer().get_kernel_breakdown()},
    "06.2": {"stragglers": lambda: _exercise_analyzer().get_stragglers()},
    "06.C1": {"csv_text": _counter_csv},
    "06.R1": {"points": _roofline_points},
    "08.2": {"log_text": _rccl_log},
}
class Built:
    """A value the exercise fixes that is built when a regrade needs it (as the learner, inside the grading's seed
    context): a job spec, a snapshot, the straggler of the learner's own generated trace."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self.build = build


def _rejected_job() -> Any:
    from ...jobs import spec

    return spec(["python", "train.py"], partition="small-g", ntasks_per_node=8, gpus_per_node=8, cpus_per_task=8,
                mem_per_gpu="60G", time="1:00:00")


def _waiting_snapshot() -> Any:
    from ...smi import DeviceReading, Snapshot

    return Snapshot(devices=(
        DeviceReading(index=0, package=0, power_w=115.0, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
        DeviceReading(index=1, package=0, power_w=None, sclk_mhz=1650, gpu_busy_pct=100.0, vram_pct=38.0),
    ), format="rocm-smi")


#: The MIOpen log module 08's setup cell writes (exercise 08.3 passes its text).
MIOPEN_LOG = ("epoch 0 step 12\nMIOpen Error: /src/MIOpen/src/sqlite_db.cpp:220: Internal error while accessing "
              "SQLite database: locking protocol\n")

#: Inputs the exercise fixes without a default in the check's signature (the notebook passes them; a
#: :class:`Built` one is built as the learner). ``tests/checks/test_fixed_inputs.py`` holds them against solutions/.
FIXED: dict[str, dict[str, Any]] = {
    "01.3": {"rejected": Built(_rejected_job)},
    "04.4": {"snapshot": Built(_waiting_snapshot)},
    "05.W1": {"project": "project_465000000"},
    "06.1": {"rank": 0},
    "06.5": {"rank": Built(lambda: int(_exercise_analyzer().get_straggler())), "step": 11},
    "08.3": {"log_text": MIOPEN_LOG},
}
#: Inputs the check itself compares with the instructor's own data (they are answers in all but name).
JUDGED: dict[str, tuple[str, ...]] = {
    "08.5": ("node_busbw",),
    "04.q3": ("predicted",), "07.q3": ("predicted",), "09.q3": ("predicted",),
    "12.q2": ("predicted",), "12.q4": ("predicted",),
}
#: Terminal output a learner stores or pastes: never tied to a job in Slurm's accounting, so not checked.
PASTED_OUTPUT: dict[str, tuple[str, ...]] = {
    "01.T2": ("bind_run",),
    "03.T2": ("squeue_seen",),
    "08.T1": ("visibility_run",),
    "10.S1": ("jax_output",),
}
#: Tasks whose evidence is a job id: the job must be in ``sacct`` and belong to the learner.
JOB_ARGUMENTS: dict[str, str] = {"03.T1": "submit", "03.T2": "job_id", "04.T1": "allocation"}


def own_inputs(func: Callable[..., Any], exercise: str, answer_names: tuple[str, ...],
               kept: Mapping[str, Any], decoded: Mapping[str, Any]) -> list[str]:
    """The check's inputs in the record that are the learner's own: neither answers, rebuilt, judged by the check
    or looked up in ``sacct`` (a job id), nor the exercise's own value (its default, or :data:`FIXED`)."""
    parameters = inspect.signature(func).parameters
    own = []
    for name in kept:
        if name not in parameters or name in answer_names or name in REBUILT.get(exercise, {}) \
                or name in JUDGED.get(exercise, ()) or name in PASTED_OUTPUT.get(exercise, ()) \
                or name == JOB_ARGUMENTS.get(exercise):
            continue
        fixed = FIXED.get(exercise, {})
        default = parameters[name].default
        expected = fixed[name] if name in fixed else default
        if isinstance(expected, Built):
            expected = expected.build()
        if expected is inspect.Parameter.empty or not _same(decoded.get(name), expected):
            own.append(name)
    return own


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def rebuild(exercise: str) -> dict[str, Any]:
    """The rebuilt inputs of ``exercise`` (call it as the learner: inside the grading's seed context)."""
    return {name: build() for name, build in REBUILT.get(exercise, {}).items()}


def pasted(exercise: str, decoded: Mapping[str, Any]) -> list[str]:
    """The pasted-output inputs of ``exercise`` that hold something (an empty string means "did not run here")."""
    out = []
    for name in PASTED_OUTPUT.get(exercise, ()):
        value = decoded.get(name)
        text = getattr(value, "stdout", value)
        skipped = getattr(value, "skipped", None)
        if value is not None and not skipped and str(text or "").strip():
            out.append(name)
    return out
