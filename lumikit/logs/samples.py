"""Logs written in the real formats, for lessons and tests on machines where no multi-node GPU job can run.

They are small and generated (never copied from third-party logs); the readers of this wing treat them exactly as
they treat logs from LUMI.
"""
from __future__ import annotations


def rccl_debug_log(*, plugin: bool = True, gdr: bool = True, host: str = "nid005001", rank: int = 7,
                   pid: int = 40121) -> str:
    """A few ``NCCL_DEBUG=INFO`` lines of one rank of a 2-node job, as RCCL prints them: with the aws-ofi-rccl
    plugin on Slingshot (CXI) or falling back to sockets without it, and with or without GPU-direct RDMA."""
    head = f"{host}:{pid}:{pid} [{rank}] NCCL INFO "
    lines = ["RCCL version 2.20.5+hip6.2 HEAD:b0a3ddc", "NCCL_SOCKET_IFNAME set by environment to hsn0,hsn1,hsn2,hsn3",
             "Bootstrap : Using hsn0:10.253.6.211<0>"]
    if plugin:
        lines += ["NET/OFI Using aws-ofi-rccl 1.4.0", "NET/OFI Selected Provider is cxi (found 4 nics)",
                  "Using network AWS Libfabric"]
    else:
        lines += ["NET/Plugin : Plugin load (librccl-net.so) returned 2 : librccl-net.so: cannot open shared object "
                  "file: No such file or directory", "NET/Socket : Using [0]hsn0:10.253.6.211<0>",
                  "Using network Socket"]
    if gdr:
        lines += ["NCCL_NET_GDR_LEVEL set by environment to PHB",
                  "GPU Direct RDMA Enabled for GPU d1000 / HCA 0 (distance 3 <= 4), read 1 mode Default"]
    net = "AWS Libfabric/0" if plugin else "Socket/0"
    lines += [f"Channel {c:02d}/0 : {rank}[d1000] -> {rank + 1}[c1000] [send] via NET/{net}{'/GDRDMA' if gdr else ''}"
              for c in range(2)]
    lines.append(f"comm 0x55d5c4a0 rank {rank} nranks 16 cudaDev {rank} busId d1000 - Init COMPLETE")
    return "".join(head + line + "\n" for line in lines)
