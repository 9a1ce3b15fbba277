"""The generated 4-rank trace orders its all-reduces as DDP does (event record / stream-wait-event), so rank 0's
critical path runs through the collectives that the step really waits on."""
from __future__ import annotations

import pytest

from lumikit.trace.critical_path import critical_path
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import SynthSpec, write_synthetic

SPEC = SynthSpec(ranks=4, steps=4, layers=8, straggler=2)
WAITS_PER_STEP = 4 + 1  # one before each of the 4 buckets' all-reduce (8 layers, 2 per bucket), one before AdamW


@pytest.fixture(scope="module", params=["rocm", "cuda"])
def rank0(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    write_synthetic(folder, SynthSpec(**{**SPEC.__dict__, "vendor": request.param}))
    return request.param, load_trace(folder)[0].columns


def test_every_all_reduce_is_behind_a_record_and_a_wait(rank0):
    vendor, columns = rank0
    names = [columns.labels["name"][c] for c in columns["name"]]
    prefix = "hip" if vendor == "rocm" else "cuda"
    waits = names.count(f"{prefix}StreamWaitEvent")
    assert waits == SPEC.steps * WAITS_PER_STEP
    assert names.count(f"{prefix}EventRecord") == SPEC.steps * 4 * 2  # before and after each all-reduce
    assert sum("ncclDevKernel" in n for n in names) == SPEC.steps * 4


def test_rank0_critical_path_crosses_the_wait_edges_into_the_collectives(rank0):
    """The 3 analysed steps' 15 waits are edges of the path graph (inferred: the calls carry no event), the
    all-reduce kernels are on the path, and making them faster shortens it."""
    _, columns = rank0
    result = critical_path(columns, what_if=["ncclDevKernel=2"])
    waits = {label: n for label, n in result["inferred"].items() if "StreamWaitEvent" in label}
    assert sum(waits.values()) == (SPEC.steps - 1) * WAITS_PER_STEP
    assert result["bound_by"]["gpu_communication_bound"] > 0.3
    assert any(e["category"] == "gpu_communication_bound" for e in result["path_events"])
    assert result["what_if"][0]["speedup_pct"] > 5
