"""Generated ``rocprofv3 --pmc`` outputs with known counter values: the ``*_counter_collection.csv`` layout and the
rocpd database's ``rocpd_info_pmc`` / ``rocpd_pmc_event`` tables, so tests (and the fuzzer) can check the counter
readers and the roofline on inputs whose answer is known by construction. Everything here is generated, not
recorded; the one documented output is :data:`DOCUMENTED_CSV`.
"""
from __future__ import annotations

import csv
import io
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from . import rocprof_outputs as gen

#: Real output printed in ROCprofiler-SDK's documentation (ROCm/rocm-systems @ 1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992,
#: projects/rocprofiler-sdk/source/docs/how-to/using-rocprofv3.rst lines 1839-1843, indent removed):
#: ``rocprofv3 -i input.yml --output-format csv`` with ``pmc: [SQ_WAVES]``, file ``pass_1/312_counter_collection.csv``.
DOCUMENTED_CSV = '''\
"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"
1,1,4,1,225049,225049,1048576,10,"void addition_kernel<float>(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095766765717,317095766775957
2,2,4,1,225049,225049,1048576,13,"subtract_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095767013157,317095767022957
3,3,4,1,225049,225049,1048576,11,"multiply_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095767176998,317095767186678
4,4,4,1,225049,225049,1048576,12,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,4,16,"SQ_WAVES",16384.000000,317095767380718,317095767390878
'''

#: The columns rocprofv3 writes in a counter CSV (the documented order above).
CSV_HEADER = ("Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size",
              "Kernel_Id", "Kernel_Name", "Workgroup_Size", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
              "Accum_VGPR_Count", "SGPR_Count", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp")


@dataclass(frozen=True)
class CounterDispatch:
    """One kernel dispatch and the counter values collected for it."""

    dispatch_id: int
    kernel: str
    start_ns: int
    end_ns: int
    counters: Mapping[str, float] = field(default_factory=dict)


def counter_csv(dispatches: Iterable[CounterDispatch], *, pid: int = 77, agent: str = "Agent 1") -> str:
    """The ``<pid>_counter_collection.csv`` text of ``dispatches``: one row per (dispatch, counter)."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    w.writerow(CSV_HEADER)
    kernel_ids: dict[str, int] = {}
    for d in dispatches:
        kid = kernel_ids.setdefault(d.kernel, len(kernel_ids) + 1)
        for name, value in sorted(d.counters.items()):
            w.writerow([d.dispatch_id, d.dispatch_id, agent, 1, pid, pid, 1 << 20, kid, d.kernel, 256, 0, 0, 64, 0,
                        32, name, float(value), d.start_ns, d.end_ns])
    return out.getvalue()


def write_counter_db(path: str | os.PathLike[str], dispatches: Iterable[CounterDispatch], *, pid: int = 77) -> Path:
    """A one-process rocpd database (schema 3, as :mod:`.rocprof_outputs` writes it) holding ``dispatches`` and
    their counters in ``rocpd_info_pmc`` / ``rocpd_pmc_event`` (joined to the dispatch through ``event_id``)."""
    dispatches = list(dispatches)
    run = gen.Run(tuple(gen.Dispatch("nid005001", pid, 0, d.kernel, d.start_ns, d.end_ns) for d in dispatches))
    path = gen.write_rocpd(path, run)
    con = sqlite3.connect(path)
    try:
        (sfx,) = [n[len("rocpd_kernel_dispatch"):] for (n,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch%'")]
        con.execute(f'CREATE TABLE "rocpd_info_pmc{sfx}" (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, '
                    'pid INTEGER, agent_id INTEGER, name TEXT NOT NULL, symbol TEXT NOT NULL)')
        con.execute(f'CREATE TABLE "rocpd_pmc_event{sfx}" (id INTEGER PRIMARY KEY, guid TEXT, event_id INTEGER, '
                    'pmc_id INTEGER NOT NULL, value REAL)')
        names = sorted({n for d in dispatches for n in d.counters})
        ids = {n: i for i, n in enumerate(names, start=1)}
        con.executemany(f'INSERT INTO "rocpd_info_pmc{sfx}" (id, nid, pid, name, symbol) VALUES (?, 1, 1, ?, ?)',
                        [(i, n, n) for n, i in ids.items()])
        events = dict(con.execute(f'SELECT dispatch_id, event_id FROM "rocpd_kernel_dispatch{sfx}"').fetchall())
        con.executemany(f'INSERT INTO "rocpd_pmc_event{sfx}" (event_id, pmc_id, value) VALUES (?, ?, ?)',
                        [(events[i], ids[n], float(v)) for i, d in enumerate(dispatches, start=1)
                         for n, v in d.counters.items()])
        con.commit()
    finally:
        con.close()
    return path


def roofline_dispatches() -> list[CounterDispatch]:
    """Generated: three dispatches of two kernels with every roofline counter, values chosen so FLOPs and bytes are
    easy to work out by hand (see ``tests/rocprof/test_roofline.py`` for the arithmetic).

    - ``gemm_bf16`` (twice, 10 us and 12 us): 1,000,000 BF16 MFMA MOPs and 40,000 FP32 FMAs per dispatch;
      reads 30,000 requests of which 20,000 are 32 B, writes 50,000 of which 30,000 are 64 B.
    - ``add_fp32`` (once, 80 us): 16,384 FP32 adds; 1,000,000 read requests (none 32 B), 500,000 writes (all 64 B).
    """
    from ..rocprof.roofline import ROOFLINE_COUNTERS

    zero = dict.fromkeys(ROOFLINE_COUNTERS, 0.0)
    gemm = zero | {"SQ_INSTS_VALU_MFMA_MOPS_BF16": 1_000_000, "SQ_INSTS_VALU_FMA_F32": 40_000,
                   "TCC_EA_RDREQ_sum": 30_000, "TCC_EA_RDREQ_32B_sum": 20_000, "TCC_EA_WRREQ_sum": 50_000,
                   "TCC_EA_WRREQ_64B_sum": 30_000, "TCP_TCC_READ_REQ_sum": 400_000,
                   "TCP_TOTAL_CACHE_ACCESSES_sum": 900_000, "SQ_LDS_IDX_ACTIVE": 300_000,
                   "SQ_LDS_BANK_CONFLICT": 100_000}
    add = zero | {"SQ_INSTS_VALU_ADD_F32": 16_384, "TCC_EA_RDREQ_sum": 1_000_000, "TCC_EA_WRREQ_sum": 500_000,
                  "TCC_EA_WRREQ_64B_sum": 500_000, "TCP_TCC_READ_REQ_sum": 1_000_000,
                  "TCP_TCC_WRITE_REQ_sum": 500_000, "TCP_TOTAL_CACHE_ACCESSES_sum": 1_500_000}
    return [CounterDispatch(1, "gemm_bf16", 1_000_000, 1_010_000, gemm),
            CounterDispatch(2, "add_fp32", 1_020_000, 1_100_000, add),
            CounterDispatch(3, "gemm_bf16", 1_110_000, 1_122_000, gemm)]


def shapes_trace() -> str:
    """Generated: a torch profiler trace with shapes (``record_shapes=True``) of a linear layer, attention, a
    convolution and a ReLU with the GPU kernels they launched (the fuzzer's seed for the roofline from shapes)."""
    import json

    def op(name: str, ts: int, ext: int, dims: list, types: list, concrete: list | None = None) -> dict:
        args = {"External id": ext, "Input Dims": dims, "Input type": types}
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 50, "args": args}

    qkv = [[2, 4, 128, 64], [2, 4, 256, 64], [2, 4, 256, 64]]
    events = [op("aten::addmm", 0, 2, [[32], [64, 128], [128, 32], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2),
              op("aten::scaled_dot_product_attention", 100, 3, qkv, ["c10::Half"] * 3),
              op("aten::convolution", 200, 5, [[8, 16, 32, 32], [32, 16, 3, 3], [32]] + [[]] * 6, ["float"] * 3,
                 ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
              op("aten::relu", 300, 6, [[8, 32, 16, 16]], ["float"])]
    events += [{"ph": "X", "cat": "kernel", "name": f"k{e}", "pid": 0, "tid": 7, "ts": 100 * i + 10, "dur": 9,
                "args": {"External id": e, "stream": 7}} for i, e in enumerate((2, 3, 5, 6))]
    return json.dumps({"traceEvents": events})
