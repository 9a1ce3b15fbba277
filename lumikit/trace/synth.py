"""A deterministic generator of realistic Kineto traces, for tests, exercises and the benchmark.

Each rank gets the structure torch.profiler writes on a training step: ``ProfilerStep#N`` annotations (host, and
on the GPU when asked), CPU ops, runtime launches with correlation ids and ``ac2g`` flows, GEMM and elementwise
kernels (on stream 0 with HIP launch names for ROCm, on stream 7 with CUDA names), RCCL/NCCL all-reduce kernels on
their own stream overlapping the backward pass, memcpy/memset, and ``distributedInfo``. As DDP orders them, the
communication stream waits for the compute stream before each all-reduce and the compute stream for the last
all-reduce before the optimizer (event record / stream-wait-event calls with no stream or event argument, as
Kineto writes them on ROCm). One rank can be made a straggler (a slow data loader): the other ranks then wait
longer in their all-reduce kernels.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

import orjson

from ..errors import TraceError
from ..files import atomic_path


#: The top-level key every trace this module writes carries (its value says what made it): how a loaded trace, and
#: every picture drawn from it, knows it was generated (:func:`is_generated`).
GENERATED_KEY = "lumikit_generated"


def is_generated(trace: object) -> bool:
    """Whether a loaded :class:`~lumikit.trace.loader.Trace` (or a :class:`~lumikit.trace.analyses.TraceAnalyzer`
    of one) holds a rank file written by this module."""
    trace = getattr(trace, "trace", trace)
    return any(GENERATED_KEY in getattr(r, "metadata", {}) for r in getattr(trace, "ranks", {}).values())


@dataclass(frozen=True)
class SynthSpec:
    """What to generate: ``layers`` per step sets the size (about 60 KB per layer and step)."""

    ranks: int = 2
    steps: int = 4
    layers: int = 4
    vendor: str = "rocm"  # "rocm" or "cuda"
    straggler: int | None = None  # rank with a slow data loader
    straggler_delay_us: float = 400.0
    gpu_step_annotations: bool = True
    first_step: int = 10
    gzip: bool = False

    def __post_init__(self) -> None:
        if self.vendor not in ("rocm", "cuda"):
            raise TraceError(f"vendor {self.vendor!r} is not known; use 'rocm' or 'cuda'")
        if self.ranks < 1 or self.steps < 1 or self.layers < 1:
            raise TraceError("ranks, steps and layers must be at least 1")


_NAMES = {
    "rocm": {
        "gemm": "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB1_GRVW8_ISA90a_WG32_8_1",
        "gemm_launch": "hipExtModuleLaunchKernel", "launch": "hipLaunchKernel",
        "module_launch": "hipModuleLaunchKernel", "memcpy": "hipMemcpyAsync", "memset": "hipMemsetAsync",
        "sync": "hipStreamSynchronize", "comm": "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
        "record": "hipEventRecord", "wait": "hipStreamWaitEvent",
        "compute_stream": 0, "comm_stream": 2, "backend": "nccl", "warp": 64, "device_name": "AMD Instinct MI250X",
    },
    "cuda": {
        "gemm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
        "gemm_launch": "cudaLaunchKernelExC", "launch": "cudaLaunchKernel", "module_launch": "cuLaunchKernel",
        "memcpy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync", "sync": "cudaStreamSynchronize",
        "record": "cudaEventRecord", "wait": "cudaStreamWaitEvent",
        "comm": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "compute_stream": 7, "comm_stream": 20, "backend": "nccl", "warp": 32, "device_name": "NVIDIA H100",
    },
}
_ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar)::{lambda()#1}, "
                "std::array<char*, 2ul> >(int, float, std::array<char*, 2ul>)")
_THRESHOLD_BW = "void at::native::elementwise_kernel<128, 2, at::native::threshold_kernel_impl<float>>(int)"
_OPTIMIZER = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::AdamW>(int)"
_MEMSET = "Memset (Device)"
_H2D = "Memcpy HtoD (Pinned -> Device)"
_D2H = "Memcpy DtoH (Device -> Pinned)"


def _header(spec: SynthSpec, rank: int, base_ns: int) -> bytes:
    n = _NAMES[spec.vendor]
    props = ",\n".join(
        f'    {{"id": {i}, "name": "{n["device_name"]}", "totalGlobalMem": 68702699520, "computeMajor": 9, '
        f'"computeMinor": 0, "warpSize": {n["warp"]}, "numSms": 110}}' for i in range(min(spec.ranks, 8)))
    world = ", ".join(str(r) for r in range(spec.ranks))
    return (
        "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n" + props + "\n  ],\n"
        f'  "distributedInfo": {{"backend": "{n["backend"]}", "rank": {rank}, "world_size": {spec.ranks}, '
        f'"pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "pg_size": {spec.ranks}, '
        f'"ranks": [{world}]}}], "nccl_version": "2.21.5"}},\n'
        '  "record_shapes": 1,\n  "displayTimeUnit": "ms",\n'
        f'  "baseTimeNanoseconds": {base_ns},\n  "traceEvents": [\n'
    ).encode()


class _Rank:
    """Writes one rank's events while keeping the host clock, the stream clocks and the id counters."""

    def __init__(self, spec: SynthSpec, rank: int) -> None:
        self.spec, self.rank, self.n = spec, rank, _NAMES[spec.vendor]
        self.pid, self.tid, self.bwd_tid = 1000 + rank, 1000 + rank, 2000 + rank
        self.device = rank % 8
        self.corr = 5_000_000  # real traces count from process start; small ids crash HTA on pandas 3
        self.ext = 1
        self.events: list[dict] = []
        self.stream_free: dict[int, float] = {}

    def x(self, cat: str, name: str, pid: int, tid: int, ts: float, dur: float, args: dict) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3),
                            "dur": round(dur, 3), "args": args})

    def cpu(self, name: str, ts: float, dur: float, tid: int, cat: str = "cpu_op", **args) -> int:
        ext = self.ext
        self.ext += 1
        self.x(cat, name, self.pid, tid, ts, dur, {"External id": ext, **args})
        return ext

    def launch(self, launch_name: str, kernel: str, cat: str, ts: float, tid: int, gpu_dur: float,
               stream: int | None = None, not_before: float = 0.0, nbytes: int | None = None,
               min_end: float = 0.0) -> tuple[float, float]:
        """A runtime call at ``ts`` and the GPU activity it enqueues; returns (host end, GPU end)."""
        stream = self.n["compute_stream"] if stream is None else stream
        corr, ext = self.corr, self.ext
        self.corr += 1
        host_dur = 5.5 if "Memcpy" not in launch_name else 14.0
        rt_args: dict = {"External id": ext, "cbid": 211, "correlation": corr}
        if self.spec.vendor == "rocm":
            rt_args["stream"] = hex(stream)
        self.x("cuda_runtime", launch_name, self.pid, tid, ts, host_dur, rt_args)
        start = max(ts + host_dur + 3.0, self.stream_free.get(stream, 0.0), not_before)
        gpu_dur = max(gpu_dur, min_end - start)
        gpu_args: dict = {"External id": ext, "device": self.device, "stream": stream, "correlation": corr}
        if self.spec.vendor == "cuda":
            gpu_args.update({"queued": 0, "context": 1, "registers per thread": 128, "grid": [132, 1, 1],
                             "block": [384, 1, 1], "est. achieved occupancy %": 12})
        if nbytes is not None:
            gpu_args["bytes"] = nbytes
            gpu_args["memory bandwidth (GB/s)"] = round(nbytes / (gpu_dur * 1e3), 3)
        self.x(cat, kernel, self.device, stream, start, gpu_dur, gpu_args)
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": tid, "ts": round(ts, 3),
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": self.device, "tid": stream, "ts": round(start, 3),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.stream_free[stream] = start + gpu_dur
        return ts + host_dur, start + gpu_dur

    def runtime_call(self, name: str, ts: float, dur: float, tid: int) -> None:
        """A runtime call that enqueues no GPU work of its own (an event record, a stream wait), with its
        correlation id and, as Kineto writes them on ROCm, no stream or event argument."""
        self.x("cuda_runtime", name, self.pid, tid, ts, dur, {"External id": self.ext, "correlation": self.corr})
        self.corr += 1

    def step(self, number: int, t0: float, delays: list[float]) -> float:
        """Write one training step starting at ``t0`` on every rank; returns the next step's start."""
        spec, n = self.spec, self.n
        layers = spec.layers
        my_delay = delays[self.rank]
        first_gpu = None
        t = t0 + 20.0 + my_delay  # data loading
        self.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0 + 2.0, 16.0 + my_delay,
                 self.tid, cat="user_annotation")
        h_end, g_end = self.launch(n["memcpy"], _H2D, "gpu_memcpy", t, self.tid, 42.0, nbytes=4 << 20)
        first_gpu = g_end - 42.0
        t = h_end + 4.0
        h_end, _ = self.launch(n["memset"], _MEMSET, "gpu_memset", t, self.tid, 2.0, nbytes=1 << 16)
        t = h_end + 4.0
        fwd_start = t
        for layer in range(layers):
            op = t
            t += 6.0
            launch = n["gemm_launch"] if layer % 3 else n["module_launch"]
            h_end, _ = self.launch(launch, n["gemm"], "kernel", t + 8.0, self.tid, 38.0 + (layer % 5))
            self.cpu("aten::addmm", t, h_end - t + 2.0, self.tid)
            self.cpu("aten::linear", op, h_end - op + 4.0, self.tid)
            t = h_end + 6.0
            h_end, _ = self.launch(n["launch"], _ELEMENTWISE, "kernel", t + 6.0, self.tid, 4.0)
            self.cpu("aten::relu", t, h_end - t + 2.0, self.tid)
            t = h_end + 4.0
        self.cpu("## forward ##", fwd_start - 1.0, t - fwd_start + 2.0, self.tid, cat="user_annotation")
        # backward on the autograd thread, all-reduce in buckets on the communication stream
        bwd_start = t + 5.0
        t = bwd_start
        bucket = max(1, layers // 4)
        for layer in reversed(range(layers)):
            op = t
            t += 5.0
            for _ in range(2):
                h_end, _ = self.launch(n["gemm_launch"], n["gemm"], "kernel", t, self.bwd_tid, 40.0)
                t = h_end + 5.0
            h_end, last_compute = self.launch(n["launch"], _THRESHOLD_BW, "kernel", t, self.bwd_tid, 5.0)
            t = h_end + 4.0
            self.cpu("autograd::engine::evaluate_function: AddmmBackward0", op, t - op, self.bwd_tid)
            if layer % bucket == 0:
                # every rank is ready at (its own delay + the same offset); the collective ends when the
                # slowest rank has arrived, so faster ranks spend the difference inside the kernel
                ready = last_compute
                wait = max(delays) - my_delay
                self.cpu("record_param_comms", t, 12.0, self.bwd_tid, **{"Collective name": "allreduce"})
                # as DDP does: the communication stream waits for an event record on the compute stream before the
                # collective, and an event record after it marks the end the optimizer waits for
                self.runtime_call(n["record"], t + 0.2, 0.7, self.bwd_tid)
                self.runtime_call(n["wait"], t + 1.0, 0.8, self.bwd_tid)
                self.launch(n["launch"], n["comm"], "kernel", t + 2.0, self.bwd_tid, 60.0,
                            stream=n["comm_stream"], not_before=ready, min_end=ready + wait + 60.0)
                self.runtime_call(n["record"], t + 8.0, 0.7, self.bwd_tid)
                t += 14.0
        opt = t + 4.0
        comm_done = self.stream_free.get(n["comm_stream"], 0.0)
        self.runtime_call(n["wait"], opt + 0.5, 0.8, self.tid)  # the compute stream waits for the last collective
        h_end, _ = self.launch(n["launch"], _OPTIMIZER, "kernel", opt + 3.0, self.tid, 25.0, not_before=comm_done)
        self.cpu("Optimizer.step#AdamW.step", opt, h_end - opt + 2.0, self.tid, cat="user_annotation")
        t = h_end + 3.0
        h_end, g_end = self.launch(n["memcpy"], _D2H, "gpu_memcpy", t, self.tid, 3.0, nbytes=4)
        sync_end = max(h_end, g_end) + 2.0
        self.x("cuda_runtime", n["sync"], self.pid, self.tid, h_end + 1.0, sync_end - h_end - 1.0,
               {"External id": self.ext, "correlation": self.corr})
        self.corr += 1
        end = sync_end + 6.0
        step_ext = self.cpu(f"ProfilerStep#{number}", t0, end - t0, self.tid, cat="user_annotation")
        if spec.gpu_step_annotations and first_gpu is not None:
            self.x("gpu_user_annotation", f"ProfilerStep#{number}", self.device, self.n["compute_stream"],
                   first_gpu, g_end - first_gpu, {"External id": step_ext})
        return end

    def metadata_events(self) -> list[dict]:
        n = self.n
        return [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": self.pid, "tid": 0, "args": {"name": "python"}},
            {"name": "process_name", "ph": "M", "ts": 0, "pid": self.device, "tid": 0, "args": {"name": "python"}},
            {"name": "process_labels", "ph": "M", "ts": 0, "pid": self.device, "tid": 0,
             "args": {"labels": f"GPU {self.device}"}},
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": self.pid, "tid": self.tid,
             "args": {"name": "thread 1 (python)"}},
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": self.device, "tid": n["compute_stream"],
             "args": {"name": f"stream {n['compute_stream']}"}},
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": self.device, "tid": n["comm_stream"],
             "args": {"name": f"stream {n['comm_stream']}"}},
        ]


def _step_length(spec: SynthSpec, delays: list[float]) -> float:
    probes = {0, spec.straggler or 0}
    return max(_Rank(spec, r).step(0, 0.0, delays) for r in probes) + 40.0


def iter_rank_bytes(spec: SynthSpec, rank: int) -> Iterator[bytes]:
    """The bytes of one rank's trace file, step by step (so large files never sit in memory)."""
    delays = [spec.straggler_delay_us if r == spec.straggler else 0.0 for r in range(spec.ranks)]
    period = _step_length(spec, delays)
    base_us = 4_203_669_600_000.0
    yield _header(spec, rank, int(base_us * 1000) - 1_000_000_000)
    writer = _Rank(spec, rank)
    first = True
    for ev in writer.metadata_events():
        yield (b"" if first else b",\n") + orjson.dumps(ev)
        first = False
    for i in range(spec.steps):
        writer.events = []
        writer.step(spec.first_step + i, base_us + i * period, delays)
        yield b",\n" + b",\n".join(orjson.dumps(ev) for ev in writer.events)
    trailer = {"traceName": f"rank{rank}.synthetic.pt.trace.json", GENERATED_KEY: "lumikit.trace.synth"}
    yield b"\n],\n" + orjson.dumps(trailer)[1:] + b"\n"


def rank_file_name(rank: int, gz: bool) -> str:
    """The file name torch's tensorboard handler would give rank ``rank`` (worker name ``rank<N>``)."""
    return f"rank{rank}.synthetic.pt.trace.json" + (".gz" if gz else "")


def write_synthetic(out_dir: Path | str, spec: SynthSpec = SynthSpec(), *, force: bool = False) -> list[Path]:
    """Write one trace file per rank into ``out_dir`` (created); refuses to overwrite unless ``force``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(spec.ranks):
        path = out / rank_file_name(rank, spec.gzip)
        if path.exists() and not force:
            raise TraceError(f"{path} exists; pass force=True to overwrite it or choose another folder")
        with atomic_path(path) as tmp, open(tmp, "wb") as raw:
            fh: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3) if spec.gzip else raw
            for piece in iter_rank_bytes(spec, rank):
                fh.write(piece)
            if spec.gzip:
                fh.close()
        paths.append(path)
    return paths


def layers_for_size(target_mb: float, spec: SynthSpec = SynthSpec()) -> int:
    """How many layers per step make each rank's file about ``target_mb`` megabytes (uncompressed)."""
    probe = SynthSpec(**{**spec.__dict__, "ranks": max(spec.ranks, 1), "layers": 8, "gzip": False})
    size = sum(len(b) for b in iter_rank_bytes(probe, 0))
    per_layer = size / 8
    return max(1, round(target_mb * 1e6 / per_layer))


def event(name: str, cat: str, ts: float, dur: float, pid: int = 1, tid: int = 1, **args) -> dict:
    """One complete ('X') event, for hand-written traces in tests and exercises."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write_events(path: Path | str, events: list[dict], rank: int | None = None, compact: bool = True) -> Path:
    """A minimal Kineto-style file holding ``events`` (with ``distributedInfo.rank`` when ``rank`` is given)."""
    doc: dict = {"schemaVersion": 1, GENERATED_KEY: "lumikit.trace.synth.write_events"}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
    doc["traceEvents"] = events
    path = Path(path)
    path.write_bytes(orjson.dumps(doc) if compact else orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def data_parallel_events(steps: int = 4, busy: tuple[float, ...] = (0.9, 0.1), step_us: float = 10_000.0,
                         kernels_per_step: int = 10) -> list[dict]:
    """Generated events of one process driving several GCDs (``nn.DataParallel``): each step, device ``d`` (trace
    pid ``d``) runs GEMMs that keep it busy for ``busy[d]`` of the step, all launched from the one host thread."""
    events: list[dict] = []
    corr = 1
    for s in range(steps):
        t0 = s * step_us
        events.append(event(f"ProfilerStep#{s}", "user_annotation", t0, step_us, pid=100, tid=1))
        for device, share in enumerate(busy):
            length = share * step_us / kernels_per_step
            for k in range(kernels_per_step):
                ts = t0 + k * step_us / kernels_per_step
                events.append(event("hipLaunchKernel", "cuda_runtime", ts, 1.0, pid=100, tid=1, stream="0x0",
                                    correlation=corr))
                events.append(event(_NAMES["rocm"]["gemm"], "kernel", ts + 2.0, length - 2.0 if k == 0 else length,
                                    pid=device, tid=0, stream=0, correlation=corr, device=device))
                corr += 1
    return events


def unlaunched_work_events() -> list[dict]:
    """Generated events of a trace that starts mid-run: two kernels still running from before the profiler started
    (their launches are not in the trace), then three 1 ms steps of three launched 50 us kernels each."""
    events: list[dict] = []
    corr = 1
    for ts in (10.0, 2100.0):
        events.append(event("Cijk_gemm", "kernel", ts, 2000, pid=0, tid=0, correlation=corr, stream=0, device=0))
        corr += 1
    for s in range(3):
        t0 = 5000 + s * 1000
        events.append(event(f"ProfilerStep#{s + 1}", "user_annotation", t0, 1000, pid=100, tid=1))
        for k in range(3):
            events.append(event("hipLaunchKernel", "cuda_runtime", t0 + 10 + k * 100, 5, pid=100, tid=1,
                                correlation=corr))
            events.append(event("Cijk_gemm", "kernel", t0 + 20 + k * 100, 50, pid=0, tid=0, correlation=corr,
                                stream=0, device=0))
            corr += 1
    return events


def sync_chain_events(vendor: str = "cuda", cuda_sync: bool = True) -> list[dict]:
    """Generated events whose critical path is known by construction: two steps; in step 1 three ops launch a
    chain of kernels (K1 100 µs, K2 200 µs, K3 50 µs) on one stream, a CPU op ``cpu_work`` (100 µs) runs while
    they do, and the host then waits in a stream synchronize until K3 ends and runs ``aten::item`` (20 µs).

    The path: 5 µs of ``aten::mm`` up to the first launch, 10 µs from that launch to K1's start, K1, K2, the 5 µs
    gap before K3, K3, the sync, ``aten::item``: 390 µs, of which 350 are GPU compute; ``cpu_work`` is off the
    path. ``vendor="rocm"`` writes HIP names; ``cuda_sync=True`` (CUDA only) adds Kineto's ``Stream Sync`` event."""
    if vendor not in ("cuda", "rocm"):
        raise TraceError(f"vendor {vendor!r} is not known; use 'rocm' or 'cuda'")
    api = "cuda" if vendor == "cuda" else "hip"
    stream = 7 if vendor == "cuda" else 0
    pid, tid, dev = 100, 1, 0
    ev: list[dict] = [event("ProfilerStep#1", "user_annotation", 0, 420, pid=pid, tid=tid),
                      event("ProfilerStep#2", "user_annotation", 420, 50, pid=pid, tid=tid)]
    kernels = (("aten::mm", 10, 30, 15, 25, 100, "K1_gemm"), ("aten::add", 45, 10, 47, 125, 200, "K2_gemm"),
               ("aten::relu", 60, 10, 62, 330, 50, "K3_relu"))
    for corr, (op, op_ts, op_dur, launch_ts, k_ts, k_dur, kernel) in enumerate(kernels, start=1):
        ev.append(event(op, "cpu_op", op_ts, op_dur, pid=pid, tid=tid, **{"External id": corr}))
        ev.append(event(f"{api}LaunchKernel", "cuda_runtime", launch_ts, 5, pid=pid, tid=tid, correlation=corr,
                        **{"External id": corr}))
        ev.append(event(kernel, "kernel", k_ts, k_dur, pid=dev, tid=stream, stream=stream, correlation=corr,
                        device=dev, **{"External id": corr}))
    ev.append(event("cpu_work", "cpu_op", 80, 100, pid=pid, tid=tid, **{"External id": 10}))
    ev.append(event(f"{api}StreamSynchronize", "cuda_runtime", 200, 185, pid=pid, tid=tid, correlation=20))
    if vendor == "cuda" and cuda_sync:
        ev.append(event("Stream Sync", "cuda_sync", 378, 7, pid=dev, tid=stream, stream=stream, correlation=20,
                        device=dev, cuda_sync_kind="Stream Sync"))
    ev.append(event("aten::item", "cpu_op", 390, 20, pid=pid, tid=tid, **{"External id": 11}))
    # step 2 (left out of the default window, as the last step is)
    ev.append(event("aten::mm", "cpu_op", 425, 10, pid=pid, tid=tid, **{"External id": 12}))
    return sorted(ev, key=lambda e: e["ts"])


def as_rocm_events(events: list[dict]) -> list[dict]:
    """A CUDA trace's events as a ROCm trace of the same run would record them (Kineto on rocprofiler-sdk): runtime
    calls renamed to HIP (``cudaStreamSynchronize`` -> ``hipStreamSynchronize``), no ``cuda_sync`` events, and no
    stream or event arguments on the host calls. Generated from real data: say so where it is shown."""
    from .runtime_names import to_hip

    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("cat") == "cuda_sync":
            continue
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            e = {**e, "name": to_hip(str(e.get("name", "")))}
            if isinstance(e.get("args"), dict):
                e["args"] = {k: v for k, v in e["args"].items() if k not in ("stream", "wait_on_stream",
                                                                               "wait_on_cuda_event_record_corr_id")}
        out.append(e)
    return out
def lost_launch_events() -> list[dict]:
    """Generated: :func:`unlaunched_work_events` plus one 200 us kernel inside step 2 whose launch is not in the
    trace (a launch the profiler lost): HTA leaves it out, so a window that kept it would shorten the idle time
    of steps 1-2 from 1250 - 6 * 50 = 950 us to 750 us."""
    return unlaunched_work_events() + [event("Cijk_gemm", "kernel", 6500.0, 200, pid=0, tid=0, correlation=10_000,
                                             stream=0, device=0)]


#: The causes :func:`idle_causes_events` builds, µs of GPU idle time each ("X" is cuda or hip).
IDLE_CAUSES_ANSWER = {"sync drain: XDeviceSynchronize": 230.0, "starved: data loading": 270.0,
                      "sync drain: XMemcpyAsync": 205.0, "starved: aten::nonzero": 180.0,
                      "starved: nothing traced": 110.0, "starved: launch overhead": 45.0, "queued": 10.0}


def idle_causes_events(vendor: str = "rocm") -> list[dict]:
    """Generated: one analysed step (ProfilerStep#1, 0-1500 us; #2 is the dropped last step) whose GPU idle gaps
    each have a known cause (:data:`IDLE_CAUSES_ANSWER`; 1050 us of idle in a 1420 us span):

    * 120-350: the host waits in a device synchronize from 16 to 125, then runs aten::nonzero: sync drain (230);
    * 400-410: the next kernel was launched at 360-365, before the gap: queued (10);
    * 450-720: the host is inside a DataLoader iteration (with aten::stack in it) until 700: data loading (270);
    * 800-845: a 30 us launch call at 810-840 is most of the gap: launch overhead (45);
    * 850-960: no host event until the launch at 950: nothing traced (110);
    * 990-995 and 1000-1200: the host is in a device-to-host async copy call until 1100: sync drain (205);
    * 1250-1430: aten::nonzero (1240-1420) holds the host: starved by that op (180).
    """
    rt = "hip" if vendor == "rocm" else "cuda"
    host = {"pid": 100, "tid": 1}
    gpu = {"pid": 0, "tid": 0}
    events = [event("ProfilerStep#1", "user_annotation", 0, 1500, **host),
              event("ProfilerStep#2", "user_annotation", 1500, 100, **host)]
    kernels = [(10, 5, 20, 100), (340, 5, 350, 50), (360, 5, 410, 40), (710, 5, 720, 80), (810, 30, 845, 5),
               (950, 5, 960, 30), (1190, 5, 1200, 50), (1410, 5, 1430, 10)]  # launch ts, dur; kernel ts, dur
    for corr, (lts, ldur, kts, kdur) in enumerate(kernels, start=1):
        events.append(event(f"{rt}LaunchKernel", "cuda_runtime", lts, ldur, correlation=corr, **host))
        events.append(event(f"kernel_{corr}", "kernel", kts, kdur, correlation=corr, stream=0, device=0, **gpu))
    events += [
        event(f"{rt}DeviceSynchronize", "cuda_runtime", 16, 109, correlation=100, **host),
        event("aten::nonzero", "cpu_op", 130, 200, **host),
        event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", 370, 330, **host),
        event("aten::stack", "cpu_op", 400, 100, **host),
        event(f"{rt}MemcpyAsync", "cuda_runtime", 965, 135, correlation=9, **host),
        event("Memcpy DtoH (Device -> Host)", "gpu_memcpy", 995, 5, correlation=9, stream=0, device=0, **gpu),
        event("aten::nonzero", "cpu_op", 1240, 180, **host),
    ]
    return events
