"""Two gloo ranks; rank 1 skips the third all_reduce, so rank 0 waits on collective 3 until its timeout."""
import os, sys, pickle, datetime
import torch, torch.distributed as dist
import torch._C._distributed_c10d as c10d

def main(rank: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531", TORCH_FR_BUFFER_SIZE="100")
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=5))
    x = torch.ones(4)
    dist.all_reduce(x)
    dist.broadcast(x, 0)
    if rank == 0:
        try:
            dist.all_reduce(x)  # rank 1 never joins
        except Exception as exc:
            print("rank 0:", type(exc).__name__, str(exc)[:120])
    with open(f"{out}/fr_trace_rank_{rank}", "wb") as fh:
        fh.write(c10d._dump_fr_trace())
    with open(f"{out}/fr_trace_rank_{rank}.json", "wb") as fh:
        fh.write(c10d._dump_fr_trace_json())

if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
    os._exit(0)
