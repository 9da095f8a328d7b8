"""The collectives bgbench's torchrun jobs call (`bgbench.distributed`), once, on DEVICE's backend.

usage: torchrun --standalone --nproc-per-node 1 nccl_smoke.py cuda|cpu

bgbench starts no process group for a world of one, so with a single GPU its own code never reaches
NCCL; this starts one (NCCL on CUDA, gloo on the CPU) and runs what `distributed.py` runs on it:
all_gather_object (which all_reduce and broadcast reduce over) and gather_object.
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
everyone = [None] * world
dist.all_gather_object(everyone, [1.5, float(rank)])
assert [sum(column) for column in zip(*everyone)] == [1.5 * world, float(sum(range(world)))], everyone
out = [None] * world if rank == 0 else None
dist.gather_object({"rank": rank}, out, dst=0)
assert rank != 0 or out == [{"rank": r} for r in range(world)]
dist.barrier()
print(f"collectives ok: {dist.get_backend()}, world {world}")
dist.destroy_process_group()
