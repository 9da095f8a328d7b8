"""The collectives bgbench's torchrun jobs call (`bgbench.distributed`), once, on DEVICE's backend.

usage: torchrun --standalone --nproc-per-node 1 nccl_smoke.py cuda|cpu

bgbench starts no process group for a world of one, so with a single GPU its own code never reaches
NCCL; this starts one (NCCL on CUDA, gloo on the CPU) and runs what `distributed.py` runs on it:
all_reduce of a float64 device tensor, gather_object and broadcast_object_list.
"""
import os
import sys

import torch
import torch.distributed as dist

device = sys.argv[1]
if device.startswith("cuda"):
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    torch.cuda.set_device(torch.device(device))
dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([1.5, float(rank)], dtype=torch.float64, device=device if device.startswith("cuda") else "cpu")
dist.all_reduce(t, op=dist.ReduceOp.SUM)
assert t.tolist() == [1.5 * world, float(sum(range(world)))], t
out = [None] * world if rank == 0 else None
dist.gather_object({"rank": rank}, out, dst=0)
box = ["from rank 0" if rank == 0 else None]
dist.broadcast_object_list(box, src=0)
assert box[0] == "from rank 0" and (rank != 0 or out == [{"rank": r} for r in range(world)])
dist.barrier()
print(f"collectives ok: {dist.get_backend()}, world {world}")
dist.destroy_process_group()
