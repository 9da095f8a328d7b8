"""The challenge's capacity: pairs/s that its search schedules, with a model that costs nothing.

On a card, the challenge's cost is the device's forwards plus whatever the host does per batch
(ordering, packing, bookkeeping, transfers). This runs the engine's real search
(`ChallengeEngine.verdicts`, every hook of bf16-verified included) on one core with a model that
costs nothing, so what it times is bgbench's own work, the figure that can be improved and checked
without a GPU (issue 45, item 5). Two cases:

- `robust`: nothing is fooled, so every foreground sees every background (the worst case, where
  a robust model's cost is);
- `fooled`: about 1 background in 100 fools every foreground but one in ten (those survive), as
  a background-reliant model.

Each composite carries its foreground's class and flags in pixel (0, 0), under the mask, and its
background's flag in pixel (0, 1), outside it; the model reads those two pixels. Images are
`size` pixels square (default 2: the search's host work does not depend on the image size, while
compositing a 224-px image costs this CPU milliseconds, work that a card does at memory speed).
At any size, the time spent compositing and in the model (`device_s`: the card's share) is
measured apart, and `host_pairs_s` is the pairs per second of everything else.

    python benchmarks/capacity_challenge.py [--cases robust fooled] [--precisions fp32 bf16-verified]
        [--fg 256] [--bg 4050] [--batch-size 256] [--size 2] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Dict, Iterable, List

import numpy as np
import torch
from torch import nn

from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.models.spec import BgModel, ModelSpec

NUM_CLASSES = 9
#: background j fools (in the `fooled` case) when j % FOOL_EVERY == FOOL_AT
FOOL_EVERY, FOOL_AT = 97, 5
#: in the `fooled` case, foreground i is never fooled when i % ROBUST_EVERY == 0
ROBUST_EVERY = 10


class DeviceClock:
    """Seconds spent in the work a card would do: building composites and the model's forward."""

    def __init__(self):
        self.seconds = 0.0

    def wrap_composites(self, engine: ChallengeEngine) -> None:
        """Time each batch the engine's `composites` generator builds (an instance attribute
        shadows the method, so every caller of it, the verifier's included, is timed)."""
        inner = engine.composites
        clock = self

        def composites(*args, **kwargs):
            it = inner(*args, **kwargs)
            while True:
                t = time.perf_counter()
                x = next(it, None)
                clock.seconds += time.perf_counter() - t
                if x is None:
                    return
                yield x

        engine.composites = composites


class FreeLogits(nn.Module):
    """Logits that cost nothing: class y (10 against 0) read from the composite's pixel (0, 0), or
    y + 1 when pixel (0, 1) marks a fooling background and pixel (0, 0) a foreground that can be
    fooled. Exact in bf16 (margin 10), so bf16-verified rechecks nothing but its audits."""

    def __init__(self, clock: DeviceClock):
        super().__init__()
        self.clock = clock

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = time.perf_counter()
        fg = (x[:, :2, 0, 0] * 255).round().long()
        fools = (x[:, 0, 0, 1] * 255).round().long() == 1
        y = fg[:, 0]
        pred = torch.where(fools & (fg[:, 1] == 1), (y + 1) % NUM_CLASSES, y)
        out = 10 * nn.functional.one_hot(pred, NUM_CLASSES).float()
        self.clock.seconds += time.perf_counter() - t
        return out


def free_model(clock: DeviceClock) -> BgModel:
    spec = ModelSpec(name="bench:free", arch="bench", num_classes=NUM_CLASSES, mean=(0.0, 0.0, 0.0),
                     std=(1.0, 1.0, 1.0))
    return BgModel(FreeLogits(clock), spec).eval()


def tensors(case: str, num_fg: int, num_bg: int, size: int, seed: int = 0):
    """(foregrounds, masks, labels, backgrounds, bg labels) of `size` px whose corner pixels carry
    what `FreeLogits` reads; the rest is noise (its content costs nothing either way)."""
    if size < 2:
        raise ValueError("size must be at least 2 (two carrier pixels)")
    g = torch.Generator().manual_seed(seed)
    labels = np.arange(num_fg) % NUM_CLASSES
    fg = torch.randint(0, 256, (num_fg, size, size, 3), dtype=torch.uint8, generator=g)
    fg[:, 0, 0, 0] = torch.from_numpy(labels).to(torch.uint8)
    foolable = (case == "fooled") & (np.arange(num_fg) % ROBUST_EVERY != 0)
    fg[:, 0, 0, 1] = torch.from_numpy(foolable.astype(np.uint8))
    masks = torch.rand(num_fg, size, size, generator=g) < 0.3
    masks[:, 0, 0], masks[:, 0, 1] = True, False
    tile = torch.randint(0, 256, (1, size, size, 3), dtype=torch.uint8, generator=g)
    bg = tile.expand(num_bg, size, size, 3).contiguous()
    bg[:, 0, 1, 0] = torch.from_numpy((np.arange(num_bg) % FOOL_EVERY == FOOL_AT).astype(np.uint8))
    bg_labels = torch.arange(num_bg) % NUM_CLASSES
    return fg, masks, labels, bg, bg_labels


def run_case(case: str, precision: str, num_fg: int, num_bg: int, size: int, batch_size: int,
             seed: int = 0, speculate: bool = True) -> dict:
    """One verdicts call over every foreground: pairs, seconds, and the host's pairs/s. `speculate`:
    the search's path on a card (each next batch launched before the last one's results are back,
    `search.VerdictSearch`), whose bookkeeping is the host's work there."""
    fg, masks, labels, bg, bg_labels = tensors(case, num_fg, num_bg, size, seed)
    clock = DeviceClock()
    options = {"speculate": speculate} if _speculates() else {}
    engine = ChallengeEngine(free_model(clock), bg, bg_labels, batch_size=batch_size, precision=precision,
                             seed=seed, **options)
    clock.wrap_composites(engine)
    t = time.perf_counter()
    results = engine.verdicts(fg, masks, labels, range(num_fg), progress=False)
    wall = time.perf_counter() - t
    fooled = sum(r.fooled for r in results)
    expected = case == "fooled" and (np.arange(num_fg) % ROBUST_EVERY != 0)
    assert [r.fooled for r in sorted(results, key=lambda r: r.index)] == list(np.broadcast_to(expected, num_fg)), \
        "verdicts differ from the model's construction"
    pairs = engine.stats.pairs
    host = max(wall - clock.seconds, 1e-9)
    return {"case": case, "precision": precision, "fg": num_fg, "bg": num_bg, "size": size,
            "batch_size": batch_size, "speculate": bool(getattr(engine, "speculate", False)),
            "wasted": getattr(engine.stats, "wasted", 0), "fooled": fooled, "pairs": pairs, "wall_s": wall,
            "device_s": clock.seconds, "pairs_s": pairs / wall, "host_pairs_s": pairs / host}


def _speculates() -> bool:
    """Whether this bgbench's engine can speculate (the benchmark also runs on earlier versions)."""
    return "speculate" in ChallengeEngine.__dataclass_fields__


def challenge_capacity(cases: Iterable[str] = ("robust", "fooled"), precisions: Iterable[str] = ("fp32",
                       "bf16-verified"), num_fg: int = 256, num_bg: int = 4050, size: int = 2,
                       batch_size: int = 256, threads: int = 1, seed: int = 0,
                       speculate: bool = True) -> Dict[str, object]:
    """Pairs/s the challenge's search schedules on `threads` cores with a model that costs nothing.

    Returns {"rows": [one dict per case and precision], "threads", "load"}; each row has
    `host_pairs_s` (the figure: pairs per second of the host's own work), `pairs_s` (end to end,
    compositing on this CPU included) and `device_s` (compositing and model time). `speculate`
    (default): the search's path on a card; its thrown-away batches are `wasted` composites."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rows: List[dict] = [run_case(c, p, num_fg, num_bg, size, batch_size, seed, speculate)
                            for c in cases for p in precisions]
    finally:
        torch.set_num_threads(before)
    return {"rows": rows, "threads": threads, "load": os.getloadavg()[0], "torch": torch.__version__}


def line(r: dict) -> str:
    return (f"challenge {r['case']:<6} {r['precision']:<13} {r['fg']} fg x {r['bg']} bg at {r['size']} px, "
            f"batch {r['batch_size']}{', speculating' if r['speculate'] else ''}: fooled {r['fooled']}, "
            f"{r['pairs']} pairs (+{r['wasted']} wasted) in {r['wall_s']:.2f} s "
            f"(device share {r['device_s']:.2f} s): {r['host_pairs_s']:,.0f} pairs/s scheduled by the host "
            f"({r['pairs_s']:,.0f} end to end)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["robust", "fooled"], choices=["robust", "fooled"])
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16-verified"])
    ap.add_argument("--fg", type=int, default=256, help="foregrounds (default %(default)s)")
    ap.add_argument("--bg", type=int, default=4050, help="backgrounds (default %(default)s: IN-9's)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--size", type=int, default=2, help="image size in px (default %(default)s; see the docstring)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-speculate", action="store_true", help="the CPU's path: wait for each batch's results "
                    "before packing the next (default: the card's path)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows to FILE")
    args = ap.parse_args()
    out = challenge_capacity(args.cases, args.precisions, args.fg, args.bg, args.size, args.batch_size, args.threads,
                             speculate=not args.no_speculate)
    print(f"torch {out['torch']}, {out['threads']} thread(s), load average {out['load']:.1f}")
    for r in out["rows"]:
        print(line(r), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
