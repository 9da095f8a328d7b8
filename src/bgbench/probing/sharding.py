"""A probe's images across torchrun ranks: each rank takes whole batches, rank 0 gets every row.

The probes (noise, saliency, and any probe that runs a model over `layout.foregrounds()` batch by
batch) share one protocol, so that K processes store the rows of one process, in the same order:

    shard = ProbeShard(pairs, cfg.batch_size, setup(cfg.device))
    for items, x, m in masked_batches(shard.pairs, cfg.batch_size, shard.ranks.device, cfg.workers):
        shard.add(items, rows_of_this_batch)
    rows = shard.gathered()  # every rank's rows, in one-process order, on rank 0; None elsewhere

A batch is a block of `batch_size` consecutive images of the sorted list, and block b goes to rank
b mod K (`distributed.share`), so every forward pass sees exactly the inputs it sees in one
process; the rows of each block are put back in block order on rank 0.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..distributed import Ranks, gather_in_order, share


class ProbeShard:
    """This rank's share of a probe's (item, mask path) pairs, and the rows it computes for them."""

    def __init__(self, pairs: Sequence[tuple], batch_size: int, ranks: Ranks):
        self.ranks, self.batch_size = ranks, batch_size
        self.n_blocks = -(-len(pairs) // batch_size)
        self._blocks = share(self.n_blocks, ranks)
        self.pairs = [p for b in self._blocks for p in pairs[b * batch_size:(b + 1) * batch_size]]
        self._block_of = {pair[0].image_id: k // batch_size for k, pair in enumerate(pairs)}
        self._rows: Dict[int, List[tuple]] = {b: [] for b in self._blocks}

    def add(self, items: Sequence, rows: Sequence[tuple]) -> None:
        """The rows computed for `items`, one batch (or a same-size part of one) of this rank's pairs."""
        block = self._block_of[items[0].image_id]
        self._rows[block].extend(rows)

    def gathered(self) -> Optional[List[tuple]]:
        """Every rank's rows in the order one process makes them, on rank 0; None on other ranks."""
        mine = [self._rows[b] for b in self._blocks]
        blocks = gather_in_order(mine, self.n_blocks, self.ranks)
        return None if blocks is None else [row for block in blocks for row in block]
