"""The host (CPU) side of a profiler trace: operators with their nesting and self time, and the phases of a step.

A torch.profiler trace holds ``cpu_op`` and ``user_annotation`` events that nest on each thread (``aten::linear``
inside ``ProfilerStep#3``, ``aten::addmm`` inside ``aten::linear``). An operator's **self time** is its duration
minus that of the events directly inside it: where the host really spent the time. A profile taken without a GPU
has only this side, so these are the first numbers such a profile gives.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from .tables import assign_steps, step_number, step_table

#: Event categories of host-side work.
HOST_CATEGORIES = ("cpu_op", "user_annotation")
#: The phases of a training step, in the order a step runs them ("other": host time in none of them).
PHASES = ("data", "forward", "backward", "optimizer", "other")
#: The columns of :func:`host_ops`, in order.
OP_COLUMNS = ["name", "cat", "pid", "tid", "ts", "dur", "end", "depth", "parent", "self_us", "step"]


def phase_of(name: str) -> str:
    """The step phase an event directly under a ``ProfilerStep`` belongs to, from its name.

    >>> phase_of("Optimizer.step#AdamW.step"), phase_of("autograd::engine::evaluate_function: MmBackward0")
    ('optimizer', 'backward')
    """
    if name.startswith("enumerate(DataLoader)"):
        return "data"
    if name.startswith("Optimizer."):
        return "optimizer"
    if name.startswith(("autograd::engine::evaluate_function", "torch::autograd::", "autograd::")):
        return "backward"
    return "forward"


def _nest(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent (row number or -1) and depth of events of one thread, given sorted by start, longest first."""
    parent = np.full(len(ts), -1, dtype=np.int64)
    depth = np.zeros(len(ts), dtype=np.int64)
    stack: list[int] = []
    for i in range(len(ts)):
        while stack and end[stack[-1]] <= ts[i]:
            stack.pop()
        while stack and end[i] > end[stack[-1]]:  # not contained (a mis-nested pair): treat as a sibling
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            depth[i] = depth[stack[-1]] + 1
        stack.append(i)
    return parent, depth


def host_ops(events: pd.DataFrame) -> pd.DataFrame:
    """The host events of one rank's event table with their nesting, self time and step.

    Columns: ``name``, ``cat``, ``pid``, ``tid``, ``ts``, ``dur``, ``end`` (µs), ``depth`` (0 = outermost on its
    thread), ``parent`` (row of the enclosing event, -1 for none), ``self_us`` (``dur`` minus the events directly
    inside) and ``step`` (the ``ProfilerStep`` number the event starts in, -1 outside every step). Rows are in
    thread and start order; ``parent`` refers to this table's row numbers.
    """
    host = events[events["cat"].isin(HOST_CATEGORIES).to_numpy()]
    host = host.sort_values(["pid", "tid", "ts", "dur"], ascending=[True, True, True, False], kind="stable")
    table = pd.DataFrame({
        "name": host["name"].astype(str).to_numpy(), "cat": host["cat"].astype(str).to_numpy(),
        "pid": host["pid"].to_numpy(), "tid": host["tid"].to_numpy(), "ts": host["ts"].to_numpy(dtype=float),
        "dur": host["dur"].to_numpy(dtype=float),
    })
    table["end"] = table["ts"] + table["dur"]
    parent = np.full(len(table), -1, dtype=np.int64)
    depth = np.zeros(len(table), dtype=np.int64)
    for _, rows in table.groupby(["pid", "tid"], sort=False).indices.items():
        p, d = _nest(table["ts"].to_numpy()[rows], table["end"].to_numpy()[rows])
        parent[rows] = np.where(p >= 0, rows[np.maximum(p, 0)], -1)
        depth[rows] = d
    table["depth"] = depth
    table["parent"] = parent
    children = np.zeros(len(table))
    has_parent = parent >= 0
    np.add.at(children, parent[has_parent], table["dur"].to_numpy()[has_parent])
    table["self_us"] = np.maximum(table["dur"].to_numpy() - children, 0.0)
    steps = step_table(events)
    table["step"] = assign_steps(table["ts"].to_numpy(), steps["start"].to_numpy(), steps["end"].to_numpy(),
                                 steps["step"].to_numpy())
    return table[OP_COLUMNS]


def _is_step_marker(names: pd.Series) -> np.ndarray:
    return np.array([step_number(n) is not None for n in names], dtype=bool)


def op_summary(ops: pd.DataFrame, steps: Iterable[int] | None = None,
               categories: Iterable[str] = ("cpu_op",)) -> pd.DataFrame:
    """Per operator name: ``calls``, ``total_us`` (inclusive), ``self_us`` and ``self_share`` (of all self time
    in the table), largest self time first. Only events in ``steps`` (default: inside any profiled step) and of
    ``categories`` (default: operators, not annotations) are counted."""
    wanted = ops[ops["cat"].isin(list(categories)) & ~_is_step_marker(ops["name"])]
    wanted = wanted[wanted["step"] >= 0] if steps is None else wanted[wanted["step"].isin(list(steps))]
    table = (wanted.groupby("name", sort=False).agg(calls=("dur", "size"), total_us=("dur", "sum"),
                                                    self_us=("self_us", "sum")).reset_index())
    total = float(table["self_us"].sum())
    table["self_share"] = table["self_us"] / total if total > 0 else 0.0
    return table.sort_values("self_us", ascending=False, kind="stable").reset_index(drop=True)


def step_phases(ops: pd.DataFrame) -> pd.DataFrame:
    """Per profiled step: its duration and the host time of each phase (µs): data, forward, backward, optimizer,
    other.

    The phase events are those directly inside a ``ProfilerStep`` and the outermost events of threads without
    steps (the autograd thread of a GPU run), named by :func:`phase_of`; ``other`` is the step's time in none of
    them (never below zero: phases on another thread may overlap the main one).
    """
    marker = _is_step_marker(ops["name"])
    parents = ops["parent"].to_numpy()
    under_step = np.zeros(len(ops), dtype=bool)
    has_parent = parents >= 0
    under_step[has_parent] = marker[parents[has_parent]]
    step_threads = set(map(tuple, ops.loc[marker, ["pid", "tid"]].to_numpy().tolist()))
    other_thread = np.array([(p, t) not in step_threads for p, t in zip(ops["pid"], ops["tid"])], dtype=bool)
    chosen = ops[(under_step | ((ops["depth"].to_numpy() == 0) & other_thread)) & ~marker & (ops["step"] >= 0)]
    phase = pd.Series([phase_of(n) for n in chosen["name"]], index=chosen.index, dtype="object")
    sums = chosen.groupby([chosen["step"], phase])["dur"].sum().unstack(fill_value=0.0)
    steps = ops[marker].drop_duplicates("step").set_index("step")["dur"].sort_index()
    table = pd.DataFrame({"dur_us": steps})
    for name in PHASES[:-1]:
        table[f"{name}_us"] = sums[name].reindex(steps.index, fill_value=0.0) if name in sums else 0.0
    table["other_us"] = np.maximum(table["dur_us"] - table[[f"{p}_us" for p in PHASES[:-1]]].sum(axis=1), 0.0)
    table.index.name = "step"
    return table.reset_index()
