"""One job on several processes under `torchrun`: PyTorch's own launcher, process group and collectives.

`torchrun --nproc-per-node K -m bgbench CMD ...` starts K copies of the command with RANK,
WORLD_SIZE and LOCAL_RANK in their environment. The model jobs (train, eval, the probes, edit's
adversarial level) call `setup` once; without torchrun it is a world of one and nothing here
touches torch.distributed, so a plain run is exactly what it was.

The rules every sharded job follows, so that K processes give the result of one:

- a rank takes whole blocks of the job's sorted list (block b goes to rank b mod K; a block is one
  forward batch), so each rank's batches are batches of a one-process run, bit for bit;
- results are gathered to rank 0 in the list's order (`gather_in_order`), and rank 0 alone
  records them, as one run;
- under NCCL (a CUDA device) each rank owns the GPU of its LOCAL_RANK; under gloo, the CPU.

This module sits at the bottom of the layers: it knows no dataset, model or store. It imports
torch only inside the functions that use it, so torch-free modules (configs read at `--help`
time) may import it.
"""
from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence


@dataclass(frozen=True)
class Ranks:
    """This process's place in a torchrun job: a world of one (rank 0) without torchrun."""

    world: int = 1
    rank: int = 0
    device: str = "cpu"

    @property
    def main(self) -> bool:
        """Rank 0: the process that writes files, records runs and prints results."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1


def world_record(ranks: Ranks) -> Dict[str, int]:
    """What a torchrun run adds to its recorded configuration: its world size (nothing for one process)."""
    return {"world_size": ranks.world} if ranks.distributed else {}


def launched() -> Ranks:
    """(world, rank) from torchrun's environment, without starting a process group (cheap: for
    deciding, before any work, which process writes files)."""
    return Ranks(world=int(os.environ.get("WORLD_SIZE", "1")), rank=int(os.environ.get("RANK", "0")))


def setup(device: str = "cpu") -> Ranks:
    """Join torchrun's process group (once per process) and return this rank with its device.

    Under NCCL the rank's device is `cuda:LOCAL_RANK`, set before the group starts so collectives
    run on the right GPU; `device` 'cpu' gives gloo. Outside torchrun: a world of one on `device`.
    """
    here = launched()
    if not device.startswith("cuda"):
        _pick_threads()
    if not here.distributed:
        return Ranks(device=device)
    import torch
    import torch.distributed as dist
    if device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', here.rank))}"
        torch.cuda.set_device(torch.device(device))
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
        atexit.register(_leave)
    return Ranks(world=here.world, rank=here.rank, device=device)


#: A machine is busy when fewer than this many cores are idle (cores minus the 1-minute load).
BUSY_BELOW_IDLE_CORES = 2
_threads_picked = False


def cpu_threads(environ=None, cores: Optional[int] = None, load: Optional[float] = None) -> Optional[int]:
    """The torch CPU threads a job takes: `BGBENCH_THREADS` when set; torch's own choice (None) when
    OMP_NUM_THREADS or MKL_NUM_THREADS says it (torchrun sets 1) or the machine is idle; one thread
    when the machine is busy, fewer than `BUSY_BELOW_IDLE_CORES` cores idle by the 1-minute load.
    Threads that fight other processes for cores make a job slower, not faster: two epochs of the
    demo's training took 73.9 s with two threads and 33.8 s with one on a loaded 2-core machine."""
    environ = os.environ if environ is None else environ
    if environ.get("BGBENCH_THREADS"):
        try:
            return max(1, int(environ["BGBENCH_THREADS"]))
        except ValueError:
            from .errors import BgbenchError
            raise BgbenchError(f"BGBENCH_THREADS must be a whole number of threads, not "
                               f"{environ['BGBENCH_THREADS']!r}") from None
    if environ.get("OMP_NUM_THREADS") or environ.get("MKL_NUM_THREADS"):
        return None
    cores = cores or os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average on this platform: torch's choice
            return None
    return 1 if cores - load < BUSY_BELOW_IDLE_CORES else None


def pin_threads(threads: Optional[int]) -> None:
    """Set torch's CPU threads for the rest of the process, whatever the load (a job whose numbers
    must not depend on how busy the machine is: the demo's, which the manual prints); None keeps
    torch's own choice. Either way a later job of the process keeps it (`_pick_threads`)."""
    global _threads_picked
    _threads_picked = True
    if threads is not None:
        import torch
        torch.set_num_threads(threads)


def _pick_threads() -> None:
    """Set torch's CPU threads once per process (`cpu_threads`); a later job of the same process
    (a study's next step) keeps what the first one chose."""
    if not _threads_picked:
        pin_threads(cpu_threads())


def _leave() -> None:
    import torch.distributed as dist
    if dist.is_initialized():
        dist.destroy_process_group()


def barrier(ranks: Ranks) -> None:
    if ranks.distributed:
        import torch.distributed as dist
        dist.barrier()


def everyone(value: Any, ranks: Ranks) -> List[Any]:
    """Every rank's `value` (any picklable object), in rank order, on every rank."""
    if not ranks.distributed:
        return [value]
    import torch.distributed as dist
    out = [None] * ranks.world
    dist.all_gather_object(out, value)
    return out


def broadcast(value: Any, ranks: Ranks) -> Any:
    """Rank 0's `value` on every rank."""
    return everyone(value if ranks.main else None, ranks)[0]


def gather(value: Any, ranks: Ranks) -> Optional[List[Any]]:
    """Every rank's `value`, in rank order, on rank 0; None on the other ranks."""
    if not ranks.distributed:
        return [value]
    import torch.distributed as dist
    out = [None] * ranks.world if ranks.main else None
    dist.gather_object(value, out, dst=0)
    return out


def all_reduce(values: Sequence[float], ranks: Ranks, op: str = "sum") -> List[float]:
    """Elementwise sum (or 'max') of `values` over the ranks, on every rank, as floats (summed in rank order)."""
    reduce = max if op == "max" else sum
    return [reduce(column) for column in zip(*everyone([float(v) for v in values], ranks))]


def owns(position: int, ranks: Ranks, block: int = 1) -> bool:
    """Whether this rank owns item `position` of a list cut into blocks of `block` items."""
    return (position // block) % ranks.world == ranks.rank


def share(n: int, ranks: Ranks, block: int = 1) -> List[int]:
    """The positions 0..n-1 this rank owns, in order: whole blocks, block b to rank b mod world.

    A share depends on n, the block and the world only, never on timing, so every rank knows
    every other rank's share without asking.
    """
    return [p for p in range(n) if owns(p, ranks, block)]


def shares_order(n: int, world: int, block: int = 1) -> List[int]:
    """The positions of every rank's share, rank 0's first: where each item of the ranks' results,
    put one after another, belongs."""
    return [p for r in range(world) for p in share(n, Ranks(world=world, rank=r), block)]


def in_order(parts: Sequence[Sequence[Any]], n: int, world: int, block: int = 1) -> List[Any]:
    """Join per-rank results (`parts[r]`: one entry per position of rank r's share, in order) into
    one list in the positions' order: what one process would have produced."""
    joined = [value for part in parts for value in part]
    if len(joined) != n:
        raise RuntimeError(f"the ranks returned {len(joined)} results for {n} items")
    return [value for _, value in sorted(zip(shares_order(n, world, block), joined), key=lambda pv: pv[0])]


def gather_in_order(mine: Sequence[Any], n: int, ranks: Ranks, block: int = 1) -> Optional[List[Any]]:
    """`mine` (this rank's results for `share(n, ranks, block)`) gathered to rank 0 and put in
    order; None on the other ranks. In a world of one, `mine` itself."""
    if not ranks.distributed:
        return list(mine)
    parts = gather(list(mine), ranks)
    return in_order(parts, n, ranks.world, block) if ranks.main else None
