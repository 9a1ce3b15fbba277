"""Generated multi-rank traces whose cross-rank answer is known by construction: a straggler rank, node clocks
that disagree, and collectives that carry Kineto's ``record_param_comms`` fields.

Each rank runs ``steps`` steps: a data-loading annotation, a forward kernel, a backward kernel (``extra_us``
longer on the straggler), an all-reduce on its own stream that waits for the backward kernel and ends
``comm_us`` after the last rank arrived (ranks leave a collective together), an optimizer kernel that waits for
the all-reduce, and a device synchronize at the end of the step. Ranks on node ``k`` write their timestamps
``k * clock_behind_us`` behind node 0's clock, as two hosts whose clocks disagree would. Every file says it was
generated (:data:`~lumikit.trace.synth.GENERATED_KEY`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from ..errors import TraceError
from ..files import atomic_path
from .synth import GENERATED_KEY, _NAMES, event

#: The backward GEMM's kernel name (a what-if pattern can pick it: ``backward_gemm``).
BACKWARD_KERNEL = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_backward_gemm_ISA90a"
FORWARD_KERNEL = "Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_forward_gemm_ISA90a"
OPTIMIZER_KERNEL = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::AdamW>(int)"
ALLREDUCE_KERNEL = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"


@dataclass(frozen=True)
class RanksSpec:
    """What :func:`write_straggler_ranks` generates (times in µs)."""

    ranks: int = 4
    ranks_per_node: int = 2
    steps: int = 6
    straggler: int | None = 2
    extra_us: float = 3000.0  # the straggler's backward is this much longer
    comm_us: float = 2000.0  # the all-reduce once every rank has arrived
    clock_behind_us: float = 37000.0  # node k's clock is k times this behind node 0's
    forward_us: float = 1000.0
    backward_us: float = 3000.0
    optimizer_us: float = 300.0
    elements: int = 12_500_000  # all-reduce size (bf16: 25 MB)
    dtype: str = "BFloat16"
    with_seq: bool = True  # write Kineto's "Seq" on each collective
    hostname: bool = True  # write a top-level "hostname" (Kineto leaves it out; a run folder gives the nodes)

    def __post_init__(self) -> None:
        if self.ranks < 2 or self.ranks_per_node < 1 or self.steps < 1:
            raise TraceError("a multi-rank trace needs at least 2 ranks, 1 rank per node and 1 step")


def host_of(spec: RanksSpec, rank: int) -> str:
    """The generated node name of a rank (``nid000000``, ``nid000001``, ...)."""
    return f"nid{rank // spec.ranks_per_node:06d}"


def rank_events(spec: RanksSpec, rank: int) -> list[dict]:
    """One rank's events, in that rank's own (possibly shifted) clock."""
    n = _NAMES["rocm"]
    shift = -(rank // spec.ranks_per_node) * spec.clock_behind_us
    pid, tid, dev = 1000 + rank, 1000 + rank, rank % 8
    comp, comm = 0, 2
    load = 200.0
    step_len = load + 60 + spec.forward_us + spec.backward_us + spec.extra_us + spec.comm_us + spec.optimizer_us + 400
    group = str(list(range(spec.ranks)))
    events: list[dict] = []
    corr = [5_000_000]

    def launch(name: str, kernel: str, at: float, start: float, dur: float, stream: int, **kargs) -> None:
        c = corr[0]
        corr[0] += 1
        events.append(event(name, "cuda_runtime", at + shift, 5.0, pid=pid, tid=tid, correlation=c,
                            stream=hex(stream)))
        events.append(event(kernel, "kernel", start + shift, dur, pid=dev, tid=stream, stream=stream,
                            correlation=c, device=dev, **kargs))

    def call(name: str, at: float, dur: float) -> None:
        c = corr[0]
        corr[0] += 1
        events.append(event(name, "cuda_runtime", at + shift, dur, pid=pid, tid=tid, correlation=c))

    base = 1_000_000.0
    for s in range(spec.steps):
        t0 = base + s * step_len
        late = spec.extra_us if rank == spec.straggler else 0.0
        events.append(event(f"ProfilerStep#{s + 1}", "user_annotation", t0 + shift, step_len - 50, pid=pid, tid=tid))
        events.append(event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "user_annotation",
                            t0 + 5 + shift, load - 10, pid=pid, tid=tid))
        h = t0 + load
        fwd_start = h + 10
        events.append(event("aten::linear", "cpu_op", h + shift, 8.0, pid=pid, tid=tid))
        launch(n["launch"], FORWARD_KERNEL, h + 1, fwd_start, spec.forward_us, comp)
        bwd_start = fwd_start + spec.forward_us
        events.append(event("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", h + 20 + shift, 8.0,
                            pid=pid, tid=tid))
        launch(n["launch"], BACKWARD_KERNEL, h + 21, bwd_start, spec.backward_us + late, comp)
        arrive = bwd_start + spec.backward_us + late
        last = bwd_start + spec.backward_us + (spec.extra_us if spec.straggler is not None else 0.0)
        coll = {"Collective name": "allreduce", "In msg nelems": spec.elements, "Out msg nelems": spec.elements,
                "Group size": spec.ranks, "dtype": spec.dtype, "Process Group Name": "0",
                "Process Group Description": "default_pg", "Process Group Ranks": group, "In split size": "[]",
                "Out split size": "[]"}
        if spec.with_seq:
            coll["Seq"] = s + 1
        events.append(event("record_param_comms", "cpu_op", h + 30 + shift, 10.0, pid=pid, tid=tid, **coll))
        call(n["record"], h + 31, 1.0)
        call(n["wait"], h + 33, 1.0)
        launch(n["launch"], ALLREDUCE_KERNEL, h + 35, arrive, last - arrive + spec.comm_us, comm, **coll)
        comm_end = last + spec.comm_us
        call(n["record"], h + 42, 1.0)
        call(n["wait"], h + 45, 1.0)
        events.append(event("Optimizer.step#AdamW.step", "user_annotation", h + 48 + shift, 10.0, pid=pid, tid=tid))
        launch(n["launch"], OPTIMIZER_KERNEL, h + 50, comm_end, spec.optimizer_us, comp)
        call(n["sync"].replace("Stream", "Device"), h + 60, comm_end + spec.optimizer_us - h - 60 + 2)
    return events


def write_straggler_ranks(out_dir: Path | str, spec: RanksSpec = RanksSpec(), *, force: bool = False) -> list[Path]:
    """Write one generated trace per rank into ``out_dir`` (``rank<N>.trace.json``); refuses to overwrite unless
    ``force``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(spec.ranks):
        path = out / f"rank{rank}.trace.json"
        if path.exists() and not force:
            raise TraceError(f"{path} exists; pass force=True to overwrite it or choose another folder")
        doc: dict = {"schemaVersion": 1, GENERATED_KEY: "lumikit.trace.synth_ranks",
                     "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": spec.ranks}}
        if spec.hostname:
            doc["hostname"] = host_of(spec, rank)
        doc["traceEvents"] = sorted(rank_events(spec, rank), key=lambda e: e["ts"])
        with atomic_path(path) as tmp:
            Path(tmp).write_bytes(orjson.dumps(doc))
        paths.append(path)
    return paths
