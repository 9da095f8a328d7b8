"""A probe's host work alone, on any machine: the probe runs with its model and tensors on torch's
`meta` device, where an operation computes its output's shape and nothing else.

That is what a GPU run asks of the host: on a card each tensor operation is a launch (the host
queues it and goes on) and each read of a result back to the host is a wait. On `meta` the
launches cost their dispatch alone, and every step that stays on the host (numpy, OpenCV, the
pixel cache, Python's bookkeeping) costs what it costs. So the time of a `meta` run, less the time
spent inside the operations themselves, is bgbench's own work per image; with the launches
counted, it says how many images a second one core can hand a card, whatever the card.

A read back to the host (`.cpu()`, `.item()`, `.tolist()`, `.numpy()`, a tensor's truth value, or
an operation the meta device cannot compute, such as `torch.allclose`) returns zeros of the right
shape and is counted: on a card each is a wait for the device, where the host queues nothing
more. So is a blocking copy of host data to the device (`.to(device)` without `non_blocking`,
`torch.as_tensor(..., device=)`), which on a card waits for the work queued before it. The values are therefore not the probe's (every map is zero, every prediction class 0); the
work is, apart from what depends on values on the host (on a card the saliency probe now sorts
and measures its maps there; a host that sorted zero maps would be flattered, which is why its
NumPy path was timed on real maps apart, benchmarks/README.md).

    with HostOnly() as host:
        measure.compute(model, root, cfg)   # cfg.device = "meta"
    host.ops, host.waits, host.op_seconds
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict

import torch
from torch.overrides import TorchFunctionMode

Tensor = torch.Tensor
#: What a launch through PyTorch's eager dispatcher costs the host on a CUDA device (a few
#: microseconds; 5 is the usual figure for a small kernel on a current x86 host). An assumption,
#: not measured here: the projection below names it.
LAUNCH_SECONDS = 5e-6
#: Operations that copy host data to the device: without non_blocking, a wait on a card.
_UPLOADS = (Tensor.to, Tensor.cuda, torch.as_tensor, torch.tensor)
_READS = (Tensor.item, Tensor.tolist, Tensor.__bool__, Tensor.__int__, Tensor.__float__, Tensor.__index__)


def _zeros_like_on_host(t: Tensor) -> Tensor:
    return torch.zeros(t.shape, dtype=t.dtype)


def _to_host(args, kwargs) -> bool:
    """Whether a `Tensor.to(...)` call moves to the CPU."""
    target = kwargs.get("device", args[0] if args else None)
    if isinstance(target, str):
        return target.startswith("cpu")
    return isinstance(target, torch.device) and target.type == "cpu"


class HostOnly(TorchFunctionMode):
    """Counts the operations on meta tensors (the launches a card would get), the reads back to
    the host (its waits), and the seconds spent inside those operations (meta's shape inference,
    in Python for many operations, which a card's host does not do: it is taken off the run's
    time). Operations on host tensors (stacking a batch, pinning it) are host work and stay in."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.waits = 0
        self.op_seconds = 0.0

    def __torch_function__(self, func: Callable, types, args=(), kwargs=None) -> Any:
        kwargs = kwargs or {}
        first = args[0] if args and isinstance(args[0], Tensor) else None
        started = time.perf_counter()
        if func is Tensor.copy_ and first is not None and not first.is_meta and _touches_meta(args[1:], {}):
            self.ops += 1  # a copy to the host: queued when non_blocking (`evaluation.feed`), else waited for
            self.waits += 0 if kwargs.get("non_blocking", len(args) > 2 and args[2]) else 1
            return self._copied(first.zero_(), started)  # the zeros stand for the card's DMA: not host work
        if first is not None and first.is_meta:
            if func in (Tensor.cpu, Tensor.numpy) or (func is Tensor.to and _to_host(args[1:], kwargs)):
                self.waits += 1
                host = _zeros_like_on_host(first)
                return self._copied(host.numpy() if func is Tensor.numpy else host, started)
            if func in _READS:
                self.waits += 1
                return self._copied(func(_zeros_like_on_host(first)), started)
        on_device = _touches_meta(args, kwargs)
        started = time.perf_counter()
        try:
            out = func(*args, **kwargs)
        except (RuntimeError, NotImplementedError) as error:
            if "meta" not in str(error):
                raise
            self.waits += 1  # a value the host needs (torch.allclose, a nonzero's count): computed there

            def host(a):
                return _zeros_like_on_host(a) if isinstance(a, Tensor) and a.is_meta else a
            out = func(*[host(a) for a in args], **{k: host(v) for k, v in kwargs.items()})
        if on_device or (isinstance(out, Tensor) and out.is_meta):  # a launch (a copy to the device too)
            self.ops += 1
            self.op_seconds += time.perf_counter() - started
            if func in _UPLOADS and not on_device and not kwargs.get("non_blocking", False):
                self.waits += 1  # host data copied to the device and waited for (pageable, blocking)
        return out

    def _copied(self, out: Any, started: float) -> Any:
        """A copy's stand-in, whose time is the device's, not the host's."""
        self.op_seconds += time.perf_counter() - started
        return out


def _touches_meta(args, kwargs) -> bool:
    """Whether an operation reads a meta tensor (directly, or in a list such as torch.cat's)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.is_meta:
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(b, Tensor) and b.is_meta for b in a):
            return True
    return False


def host_only_run(run: Callable[[], Any], images: int, batches: int,
                  host: "HostOnly | None" = None) -> Dict[str, float]:
    """Time `run` (a probe on the meta device) under `HostOnly` (or `host`, one of its kind): its
    wall time, bgbench's own host work (the wall time less the time inside the operations),
    launches and waits per image and per batch, and the images/s one core can hand a card (own
    work plus LAUNCH_SECONDS a launch)."""
    from bgbench.evaluation import feed as readback
    readback.QUEUED.add("meta")  # meta's copies to the host are queued as a card's are (stood in for here)
    try:
        with host if host is not None else HostOnly() as host:
            started = time.perf_counter()
            run()
            wall = time.perf_counter() - started
    finally:
        readback.QUEUED.discard("meta")
    own = max(wall - host.op_seconds, 1e-9)
    projected = own + host.ops * LAUNCH_SECONDS
    return {"wall_images_s": images / wall, "own_seconds": own, "launches_per_image": host.ops / images,
            "waits_per_batch": host.waits / max(batches, 1), "waits": host.waits,
            "host_images_s": images / projected, "launch_seconds": LAUNCH_SECONDS}
