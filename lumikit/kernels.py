"""Kernel classes shared by every reader of GPU activity (profiler traces, rocprof tables, HIP logs).

One rule, used everywhere: RCCL/NCCL collectives are communication, copies and fills are memory,
everything else that runs on the GPU is compute.
"""
from __future__ import annotations

import re
from typing import Literal

KernelClass = Literal["compute", "communication", "memory"]
CLASSES: tuple[KernelClass, ...] = ("compute", "communication", "memory")

_COMM = re.compile(r"nccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|"
                   r"alltoall|broadcast_kernel|sendrecv", re.IGNORECASE)
_MEM = re.compile(r"memcpy|memset|copybuffer|fillbuffer|copy_?dtod|copy_?htod|copy_?dtoh|memory_copy|"
                  r"copy(?:host|device)to(?:host|device)|"
                  r"^\s*(?:Memcpy|Memset)\b|hipMemcpy|hipMemset|__amd_rocclr_(?:copy|fill)", re.IGNORECASE)


def classify_kernel(name: str, category: str | None = None) -> KernelClass:
    """The class of one GPU activity from its name and, where known, its trace category.

    >>> classify_kernel("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)")
    'communication'
    >>> classify_kernel("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy")
    'memory'
    >>> classify_kernel("Cijk_Ailk_Bljk_SB_MT64x64x16")
    'compute'
    """
    if category in ("gpu_memcpy", "gpu_memset"):
        return "memory"
    if _COMM.search(name):
        return "communication"
    if _MEM.search(name):
        return "memory"
    return "compute"
