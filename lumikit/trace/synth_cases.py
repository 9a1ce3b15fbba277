"""Generated single-rank training steps, each with one known cause of slowness (or none), for ``advise`` and its
tests: a starving data loader, thousands of tiny kernels, fp32 GEMMs, a blocking ``.item()`` per step, and a
healthy bf16 step whose GPU is busy with matrix work. Every file says it was generated.

Each step: ``ProfilerStep#N`` on the host; the host launches kernels (``hipLaunchKernel``, correlation ids) inside
``aten::`` ops; kernels run on stream 0 of device 0 in launch order, each as soon as its launch has reached the GPU
and the previous kernel has ended (the host may run ahead of the GPU). Times in µs.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import TraceError
from .synth import event, write_events

BF16_GEMM = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB1_GRVW8_ISA90a_WG32_8_1"
FP32_GEMM = "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_GRVW4_ISA90a_WG32_8_1"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<c10::BFloat16>, "
               "std::array<char*, 3ul> >(int, at::native::AddFunctor<c10::BFloat16>, std::array<char*, 3ul>)")
OPTIMIZER = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::AdamW>(int)"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
CASES = ("healthy", "dataloader", "tiny_kernels", "fp32_gemm", "item_sync")


class _Step:
    """One rank's host clock, GPU stream clock and correlation counter."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.host = 0.0
        self.gpu_free = 0.0
        self.corr = 1

    def kernel(self, op: str, name: str, gpu_us: float, host_us: float = 12.0) -> float:
        """An ``aten::`` op that launches one kernel; returns the kernel's end."""
        t = self.host
        self.events.append(event(op, "cpu_op", t, host_us, pid=100, tid=1))
        self.events.append(event("hipLaunchKernel", "cuda_runtime", t + 2, 5.0, pid=100, tid=1,
                                 correlation=self.corr, stream="0x0"))
        start = max(t + 10.0, self.gpu_free)
        self.events.append(event(name, "kernel", start, gpu_us, pid=0, tid=0, correlation=self.corr, stream=0,
                                 device=0))
        self.corr += 1
        self.gpu_free = start + gpu_us
        self.host = t + host_us + 1.0
        return self.gpu_free

    def item(self) -> None:
        """``loss.item()``: a device-to-host copy the host waits for (GPU work drains first)."""
        t = self.host
        end = max(t + 20.0, self.gpu_free + 8.0)
        self.events.append(event("aten::item", "cpu_op", t, end - t + 4.0, pid=100, tid=1))
        self.events.append(event("aten::_local_scalar_dense", "cpu_op", t + 1, end - t + 2.0, pid=100, tid=1))
        self.events.append(event("hipMemcpyWithStream", "cuda_runtime", t + 2, end - t - 1.0, pid=100, tid=1,
                                 correlation=self.corr, stream="0x0"))
        start = max(t + 10.0, self.gpu_free)
        self.events.append(event("Memcpy DtoH (Device -> Host)", "gpu_memcpy", start, 4.0, pid=0, tid=0,
                                 correlation=self.corr, stream=0, device=0))
        self.corr += 1
        self.gpu_free = start + 4.0
        self.host = end + 6.0

    def wait(self, name: str, us: float) -> None:
        """Host time in an annotation that launches nothing (data loading)."""
        self.events.append(event(name, "user_annotation", self.host, us, pid=100, tid=1))
        self.host += us + 1.0


def case_events(case: str, steps: int = 5) -> list[dict]:
    """The events of ``steps`` generated steps of one case of :data:`CASES`."""
    if case not in CASES:
        raise TraceError(f"unknown case {case!r}; choose one of {', '.join(CASES)}")
    s = _Step()
    marks = []
    for n in range(steps):
        begin = s.host
        if case == "dataloader":
            s.wait(LOADER, 6000.0)
        else:
            s.wait(LOADER, 40.0)
        if case == "tiny_kernels":
            for _ in range(1500):
                s.kernel("aten::add", ELEMENTWISE, 3.0, host_us=14.0)
        else:
            gemm = FP32_GEMM if case == "fp32_gemm" else BF16_GEMM
            gemm_us = 1600.0 if case == "fp32_gemm" else 400.0
            for _ in range(8):
                s.kernel("aten::mm", gemm, gemm_us)
                s.kernel("aten::add", ELEMENTWISE, 30.0)
        s.kernel("Optimizer.step#AdamW.step", OPTIMIZER, 60.0)
        if case == "item_sync":
            s.item()
            s.wait("aten::copy_", 1.0)
            for _ in range(4):  # logging after the sync: the GPU waits for these launches
                s.kernel("aten::mul", ELEMENTWISE, 5.0, host_us=200.0)
        if case == "healthy":  # the host runs ahead: the step's end waits only for the optimizer's launch
            pass
        marks.append((n + 1, begin, s.host - begin))
    evs = [event(f"ProfilerStep#{n}", "user_annotation", b, max(d, 1.0), pid=100, tid=1) for n, b, d in marks]
    return sorted(evs + s.events, key=lambda e: (e["ts"], -e["dur"]))


def write_case(path: Path | str, case: str, steps: int = 5) -> Path:
    """Write one generated case as a trace file (marked generated)."""
    return write_events(path, case_events(case, steps))
