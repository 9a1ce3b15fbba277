"""The compact critical-path graph (int32 node and edge indices, intermediates let go early) gives the ``--json`` of
the version before it byte for byte, on generated rocpd databases of the three benchmark shapes (dense, training,
dispatches without HIP calls). The digests were taken at commit 85b5b8e, before the change; the same check at
about 25 MB is done by hand (benchmarks/results/rocpd_critical_path.md)."""
from __future__ import annotations

import contextlib
import hashlib
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from lumikit.cli import main
from lumikit.testing.rocpd_calls import STEP, write_calls_db
from lumikit.trace.critical_path import StepGraph, build_graph, choose_window, index_dtype

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

#: sha256 of each command's ``--json`` text at commit 85b5b8e (the version before the compact graph).
BEFORE = {
    ("dense", "critical-path"): "fe646e676af371c37a603f78ec97d805bdcdc6278bf98289eb95526054cf06d7",
    ("dense", "critical-path --no-untraced-host"): "a19be53948007da955ec1711e1a32c2d590fbfe6db90efd7db5ce4b0a278912c",
    ("dense", "idle"): "de8b05a4272b4521c6905f19ac528e2003f3aff8736f8fbbf808c3d928cacdc5",
    ("training", "critical-path"): "563ba0c6ab2cbcf163c678c4c4dfb5681347501f2d32f28a8ba1388f2e07519b",
    ("training", "critical-path --no-untraced-host"):
        "4e3a0c11834473c6b1298d90ca876fe283078d4b04826eea6ff35a3604848c8b",
    ("training", "idle"): "5988ac1838285e2987ad46eb619c4b516a706bd8e4a69e71b4079410a53a8507",
    ("dispatches", "critical-path"): "2118ace24010342d58dace39bee0990400c4b89cf6b21697d4d130394c00979a",
    ("dispatches", "idle"): "c4d58eaaea8ab3df86efcd0b23391cc87c61ce8f4c42d10b55077d33bf9afee1",
}


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    """The three generated shapes at small size (60 dense steps, 6 training steps, 3000 dispatches)."""
    sys.path.insert(0, str(BENCH))
    try:
        from bench_rocpd import build
        from bench_rocpd_critical_path import training_step
    finally:
        sys.path.remove(str(BENCH))
    t = tmp_path_factory.mktemp("compact")
    step = training_step()
    return {"dense": write_calls_db(t / "d_results.db", steps=60, calls=STEP, step_us=1500.0),
            "training": write_calls_db(t / "t_results.db", steps=6, calls=step,
                                       step_us=max(c.work[3] for c in step if c.work) + 50),
            "dispatches": build(t / "k_results.db", 3000)}


@pytest.mark.parametrize("shape,command", sorted(BEFORE))
def test_json_is_the_previous_versions_byte_for_byte(databases, shape, command):
    words = command.split()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["trace", words[0], str(databases[shape]), "--json", *words[1:]]) == 0
    assert hashlib.sha256(out.getvalue().encode()).hexdigest() == BEFORE[(shape, command)]


def test_the_graph_uses_int32_indices_and_the_int64_graph_gives_the_same_path(databases):
    from lumikit.rocprof.rocpd_events import rocpd_trace

    ev = rocpd_trace(databases["training"], host_calls=True)[0].columns
    graph = build_graph(ev, choose_window(ev))
    assert graph.src.dtype == graph.dst.dtype == graph.event.dtype == np.int32
    assert graph.weight.dtype == graph.node_ts.dtype == np.float64
    wide = StepGraph(rows=graph.rows, node_ts=graph.node_ts, src=graph.src.astype(np.int64),
                     dst=graph.dst.astype(np.int64), weight=graph.weight, category=graph.category,
                     event=graph.event.astype(np.int64), scalable=graph.scalable, parent=graph.parent)
    assert graph.longest_path() == wide.longest_path()
    assert graph.order is not None and graph.order.dtype == np.int32


def test_indices_widen_past_int32():
    assert index_dtype(2**31 - 2) is np.int32
    assert index_dtype(2**31 - 1) is np.int64 and index_dtype(2**40) is np.int64
