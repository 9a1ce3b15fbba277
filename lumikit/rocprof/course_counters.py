"""Generated roofline counters for the course's kernels: what ``rocprofv3`` with the roofline passes would count on
an MI250X GCD, derived from each kernel's shapes. Nothing here is recorded: the files say so in their name
(``generated``) and every number follows from the formulas below, so the lesson and the checks can say why each
point sits where it does.

The kernels (:func:`course_kernels`): a ResNet-50 3x3 convolution as an implicit GEMM and the language model's MLP
up-projection (both BF16 on the matrix cores), the language model's QKV projection for a few decode tokens (a thin
BF16 GEMM), a batch-norm forward and a residual add (FP32 vector arithmetic on every element) and the local
reduction of a DDP all-reduce bucket (an RCCL kernel).

How shapes become counts (the inverse of rocprof-compute's formulas in :mod:`.roofline`):

- FLOPs: a GEMM of M x K by K x N is 2·M·N·K, counted as ``SQ_INSTS_VALU_MFMA_MOPS_BF16`` = FLOPs / 512, plus
  one FP32 add per output element for the bias (``SQ_INSTS_VALU_ADD_F32`` = adds / 64, one instruction per
  64-lane wavefront); elementwise work is counted in ADD and FMA instructions the same way;
- HBM bytes: every input read once and every output written once (the shape roofline's cache assumption), in
  64-byte requests (``TCC_EA_RDREQ_sum``, ``TCC_EA_WRREQ_sum`` = ``TCC_EA_WRREQ_64B_sum``);
- L2 bytes (L1-to-L2 requests of 64 bytes): a GEMM reads A once per column of output tiles and B once per row of
  tiles (128 x 128 tiles), which is more than HBM delivers; elementwise kernels have no reuse, so L2 = HBM;
- time: the longest of FLOPs at :data:`MATRIX_EFFICIENCY` of the measured BF16 ceiling (or
  :data:`VECTOR_EFFICIENCY` of the measured FP32 vector one), bytes at :data:`HBM_EFFICIENCY` of the measured
  HBM ceiling, :data:`MIN_KERNEL_NS` (launch and ramp-up of any dispatch) and, for the all-reduce, its bucket
  over :data:`LINK_BYTES_PER_S` (the link between the two GCDs, not HBM, sets its pace).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomic
from ..jobs.profiling import ROOFLINE_PASSES
from .roofline import MEASURED, ROOFLINE_COUNTERS

if TYPE_CHECKING:
    from ..testing.counter_outputs import CounterDispatch

#: Assumed shares of the measured ceilings a kernel of the course reaches (generated, not measured).
MATRIX_EFFICIENCY, VECTOR_EFFICIENCY, HBM_EFFICIENCY = 0.7, 0.5, 0.8
#: The shortest a dispatch lasts (launch and ramp-up), in ns: a small kernel never reaches a roof.
MIN_KERNEL_NS = 4_000
#: The link an all-reduce between two GCDs on different MI250X packages crosses (50 GB/s per direction, the
#: figure module 07 measures with rccl-tests).
LINK_BYTES_PER_S = 50e9
#: The GEMM tile edge (elements) behind the L2 traffic.
TILE = 128
#: Decode tokens of the language model's QKV projection the lesson uses; the exercise varies it per learner.
DECODE_TOKENS = 32


@dataclass(frozen=True)
class CourseKernel:
    """One kernel of the course as the counters would see it: its work and traffic from its shapes."""

    name: str
    what: str          # where it runs in the course, with its shapes
    kind: str          # "matrix" (BF16 MFMA) or "vector" (FP32 VALU)
    flops_mfma: int    # FLOPs on the matrix cores
    adds: int          # FP32 adds on the vector units
    fmas: int          # FP32 fused multiply-adds on the vector units (2 FLOPs each)
    read_bytes: int    # from HBM, each input once
    write_bytes: int   # to HBM, each output once
    l2_read_bytes: int
    dispatches: int
    link_bytes: int = 0  # bytes the kernel sends over the GCD-to-GCD link (the all-reduce)

    @property
    def flops(self) -> int:
        return self.flops_mfma + self.adds + 2 * self.fmas


def gemm(name: str, what: str, m: int, n: int, k: int, dispatches: int = 1, a_elements: int | None = None
         ) -> CourseKernel:
    """A BF16 GEMM (M x K by K x N, plus a bias per output element), as the matrix cores run it.
    ``a_elements``: the elements A is made from when that is fewer than M·K (an implicit-GEMM convolution reads its
    input tensor, not the 9x larger matrix of 3x3 patches)."""
    a, b, c = 2 * (m * k if a_elements is None else a_elements), 2 * k * n, 2 * m * n  # bytes of A, B, the output
    l2 = a * math.ceil(n / TILE) + b * math.ceil(m / TILE) + 2 * n  # + the bias vector
    return CourseKernel(name, what, "matrix", 2 * m * n * k, m * n, 0, a + b + 2 * n, c, l2, dispatches)


def elementwise(name: str, what: str, elements: int, *, reads: int, writes: int, size: int, adds: int,
                fmas: int, dispatches: int = 1, link_bytes: int = 0) -> CourseKernel:
    """An elementwise kernel: ``reads`` and ``writes`` passes over ``elements`` of ``size`` bytes, with ``adds``
    and ``fmas`` FP32 operations per element."""
    nbytes = elements * size
    return CourseKernel(name, what, "vector", 0, adds * elements, fmas * elements, reads * nbytes, writes * nbytes,
                        reads * nbytes, dispatches, link_bytes)


def course_kernels(decode_tokens: int = DECODE_TOKENS) -> tuple[CourseKernel, ...]:
    """The course's kernels (generated from shapes; see the module's docstring)."""
    bucket = 25 * 2**20 // 4  # DDP's default 25 MiB gradient bucket, FP32 elements
    return (
        gemm("igemm_conv3x3_resnet50", "ResNet-50 3x3 convolution, 256 -> 256 channels, 8x8, batch 128 "
             "(M = 8192, N = 256, K = 2304; A is the 128 x 256 x 8 x 8 input)", 128 * 8 * 8, 256, 256 * 9, dispatches=6,
             a_elements=128 * 256 * 8 * 8),
        gemm("Cijk_gemm_lm_mlp_up", "language model (medium) MLP up-projection, batch 32 x 256 tokens, "
             "384 -> 1536 (M = 8192, N = 1536, K = 384)", 32 * 256, 1536, 384, dispatches=8),
        gemm("Cijk_gemm_lm_qkv_decode", f"language model (medium) QKV projection while generating, {decode_tokens} "
             f"tokens, 384 -> 1152 (M = {decode_tokens}, N = 1152, K = 384)", decode_tokens, 1152, 384,
             dispatches=8),
        elementwise("batch_norm_fwd_resnet50", "ResNet-50 batch norm forward, FP32, 128 x 256 x 8 x 8: statistics, "
                    "then normalise (reads its input twice)", 128 * 256 * 8 * 8, reads=2, writes=1, size=4, adds=1,
                    fmas=2, dispatches=6),
        elementwise("elementwise_add_residual", "language model residual add, BF16, 8192 tokens x 384",
                    32 * 256 * 384, reads=2, writes=1, size=2, adds=1, fmas=0, dispatches=16),
        elementwise("ncclDevKernel_AllReduce_Sum_f32", "DDP all-reduce of one 25 MiB FP32 gradient bucket between "
                    "two GCDs: adds the received half to the local one", bucket, reads=2, writes=1, size=4,
                    adds=1, fmas=0, dispatches=2, link_bytes=bucket * 4),
    )


def _ceiling(name: str) -> float:
    return next(r.value for r in MEASURED if r.name == name)


def duration_ns(k: CourseKernel) -> int:
    """How long one dispatch of ``k`` lasts in the generated file (see the module's docstring)."""
    compute = (MATRIX_EFFICIENCY * _ceiling("BF16 matrix, measured") if k.kind == "matrix"
               else VECTOR_EFFICIENCY * _ceiling("FP32 vector, measured"))
    seconds = max(k.flops / compute, (k.read_bytes + k.write_bytes) / (HBM_EFFICIENCY * _ceiling("HBM, measured")),
                  k.link_bytes / LINK_BYTES_PER_S)
    return max(MIN_KERNEL_NS, round(seconds * 1e9))


def counters(k: CourseKernel) -> dict[str, float]:
    """The value of every roofline counter for one dispatch of ``k`` (64-byte requests, 64-lane instructions)."""
    out = dict.fromkeys(ROOFLINE_COUNTERS, 0.0)
    l2_reads, writes = math.ceil(k.l2_read_bytes / 64), math.ceil(k.write_bytes / 64)
    out.update({
        "SQ_INSTS_VALU_MFMA_MOPS_BF16": k.flops_mfma / 512,
        "SQ_INSTS_VALU_ADD_F32": math.ceil(k.adds / 64),
        "SQ_INSTS_VALU_FMA_F32": math.ceil(k.fmas / 64),
        "TCC_EA_RDREQ_sum": math.ceil(k.read_bytes / 64),
        "TCC_EA_WRREQ_sum": writes,
        "TCC_EA_WRREQ_64B_sum": writes,
        "TCP_TCC_READ_REQ_sum": l2_reads,
        "TCP_TCC_WRITE_REQ_sum": writes,
        "TCP_TOTAL_CACHE_ACCESSES_sum": l2_reads + writes,
        "SQ_LDS_IDX_ACTIVE": 2 * l2_reads if k.kind == "matrix" else 0,  # GEMM tiles staged through LDS
    })
    return out


def course_dispatches(decode_tokens: int = DECODE_TOKENS) -> list[CounterDispatch]:
    """One :class:`~lumikit.testing.counter_outputs.CounterDispatch` per dispatch of :func:`course_kernels`, in
    the order a step runs them (forward: convolutions and batch norms, then the language model; then the
    all-reduce), 2 µs apart."""
    from ..testing.counter_outputs import CounterDispatch

    kernels = course_kernels(decode_tokens)
    order = [0, 3] * 6 + [1, 4, 2, 4] * 8 + [5, 5]
    out, t = [], 1_000_000
    for i, which in enumerate(order, start=1):
        k = kernels[which]
        dur = duration_ns(k)
        out.append(CounterDispatch(i, k.name, t, t + dur, counters(k)))
        t += dur + 2_000
    return out


def write_course_counters(folder: str | os.PathLike[str], decode_tokens: int = DECODE_TOKENS,
                          pid: int = 4242) -> Path:
    """Write a generated roofline run of the course's kernels into ``folder``: ``pass_1/`` ... ``pass_3/``, each
    with the ``<pid>_counter_collection.csv`` of its counters (the layout ``rocprofv3 -i`` writes, one pass per
    ``pmc:`` line of :data:`~lumikit.jobs.profiling.ROOFLINE_PASSES`). Returns ``folder``."""
    from ..testing.counter_outputs import CounterDispatch, counter_csv

    root = Path(folder)
    dispatches = course_dispatches(decode_tokens)
    for n, names in enumerate(ROOFLINE_PASSES, start=1):
        kept = [CounterDispatch(d.dispatch_id, d.kernel, d.start_ns, d.end_ns, {c: d.counters[c] for c in names})
                for d in dispatches]
        target = root / f"pass_{n}" / f"{pid}_counter_collection.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, counter_csv(kept, pid=pid))
    return root
