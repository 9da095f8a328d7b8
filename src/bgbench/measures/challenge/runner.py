"""Running the Backgrounds Challenge: data loading, resumable progress, torchrun sharding, results.

I/O lives here; the verdict logic is `engine.ChallengeEngine` (with `search`), the visiting order
and stopping rule `sample`, the numbers `summary`. Foregrounds are visited in the run's seeded
order, in chunks; under `torchrun` each chunk is sharded across ranks (position % world_size ==
rank), every rank writes its own progress rows to the store, and rank 0 merges them once all ranks
are done.

Sampled runs (`sample`, `halfwidth`): the run's identity holds the seed but not the sample size,
so rerunning with a larger `sample`, or with neither option, continues the same run and reuses
every stored verdict. A run that stops before the last foreground is finished with status
'sampled' (an estimate; resumable, and not ranked by the leaderboard, which reads 'done' runs).

Verdict rows are committed as they come (that is what makes a killed run resumable); the
summary (accuracy, per-class rates, ASR) is computed by `summarize`, which writes nothing, and
recorded by `recording.record(report, store)`, which finishes the open run. A bf16-verified run
also stores its near ties and audit counts, and agrees on delta across ranks at every chunk
boundary: `verified.VerifiedRun`, imported only for it, which the invocation calls at a few hooks
(`verified`: near_row, settle, totals).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import torch

from ... import console, distributed, recording
from ...data.pixel_cache import pixels_of
from ...data.layout import Layout
from ...errors import DataError
from ...models.spec import BgModel
from ...provenance import Provenance
from ...store import Store
from ..running import RunContext
from .config import ChallengeConfig
from .engine import ChallengeEngine
from .result import ChallengeReport
from .sample import SamplePlan
from .summary import ChallengeData, summarize
from ...evaluation.feed import Fetch, Images, host_runs, to_device
from .search import FgResult

__all__ = ["ChallengeConfig", "ChallengeReport", "summarize", "load_backgrounds",
           "load_foregrounds"]


def _whole(images) -> tuple:
    """The one host run of `images` (a feed `Images` of one batch), as writable tensors (the
    engine's tensors own their memory); images of more than one size are refused in one line."""
    runs = [run for _, run in host_runs(images, range(len(images)), workers=0)]
    if len(runs) > 1:
        raise DataError("the challenge needs images of one size; found "
                        f"{sorted({tuple(r.x.shape[1:]) for r in runs})[:3]} ...")
    return tuple(t.clone() for t in (runs[0].x, runs[0].m) if t is not None) if runs else ()


def load_backgrounds(layout: Layout):
    """Every ONLY-BG-T image, decoded (from the pixel cache, through the feed), as one (N, H, W, 3)
    uint8 tensor."""
    items = layout.items("only_bg_t")
    found = _whole(Images.of(pixels_of(items), max(1, len(items))))
    return items, found[0] if found else torch.zeros((0, 1, 1, 3), dtype=torch.uint8)


def load_foregrounds(pairs, indices: List[int]):
    """The chosen originals and their masks (through the feed, from the whole list's cache entries);
    masks must match their image's size."""
    found = _whole(Images.of_pairs(pairs, max(1, len(indices)), positions=indices))
    return found or (torch.zeros((0, 1, 1, 3), dtype=torch.uint8), torch.zeros((0, 1, 1), dtype=torch.bool))


def challenge_run(run: RunContext):
    """The challenge's own part of its run: the backgrounds, the resumable invocation over the
    foregrounds, and on rank 0 (the report, its config; its provenance was built when its run
    opened, `Challenge.opened`)."""
    cfg, out_dir, store, figures = run.cfg, run.out_dir, run.given["store"], run.given.get("figures")
    model, layout, rank = run.model, run.layout, run.ranks.rank
    bg_items, backgrounds = load_backgrounds(layout)
    job = _Invocation(run, ChallengeData(layout, layout.foregrounds(), bg_items, backgrounds), store, cfg)
    job.visit()
    verified = job.totals()
    if rank != 0:
        return None
    matrix = store.challenge_matrix(job.run_id, job.data.fg_ids) if cfg.full else None  # rows in the data's order
    report = summarize(store.challenge_results(job.run_id), job.data, job.run_id, model.spec.to_dict(), matrix,
                       plan=job.plan, cfg=cfg)
    # pairs: every rank's and every earlier invocation's
    report.pairs, report.seconds = store.challenge_pairs(job.run_id), round(run.elapsed(), 2)
    report.precision, report.numerics = verified, job.engine.numerics()
    if figures is not None and report.full:
        default = store.path.parent / f"{store.path.stem}-challenge_{job.run_id}"  # two stores in one folder: two
        report.files.update(figures(report, Path(out_dir or default)))
    report.provenance, report.store_path = job.provenance, str(store.path.resolve())
    return report, job.provenance.config


class _Invocation:
    """This process's share of one challenge run: its foregrounds, its engine, its stored progress."""

    def __init__(self, run: RunContext, data: ChallengeData, store: Store, cfg: ChallengeConfig):
        model, world, rank = run.model, run.ranks.world, run.ranks.rank
        self.data, self.store, self.cfg = data, store, cfg
        self.world, self.rank, self.device, self.ranks, self.progress = world, rank, run.device, run.ranks, run.progress
        self.plan = SamplePlan.build(cfg.seed, data.fg_ids, data.fg_labels, sample=cfg.sample,
                                     halfwidth=cfg.halfwidth, chunk=cfg.chunk_size(world),
                                     first=cfg.first_chunk(world))
        self.mine = set(self.plan.shard(0, len(self.plan.order), rank, world))  # every chunk's share of this rank
        self.provenance: Optional[Provenance] = None  # rank 0's: the open run's
        self.run_id = self._open_run(run)
        self.stored_pairs = 0  # the engine's composites already added to the run's stored count
        done = {r["image_id"]: r for r in store.challenge_results(self.run_id)}
        self.fooled_by_id = {i: bool(r["fooled"]) for i, r in done.items()}
        self.engine = self._make_engine(model, done)  # on its device, in eval mode (the template)
        # clean predictions by position; for the next flush: verdict rows, (--full) (image_id, its row's
        # bytes), (bf16-verified) near-tie rows and (rank 0) the run's audit counts
        self.clean, self.rows, self.matrix_rows, self.near_rows, self.state = {}, [], [], [], None
        self.unseen, self.bar = set(), None  # positions this invocation must still give a verdict; its bar
        self.verified = None  # bf16-verified's bookkeeping, the module imported only for it
        if self.engine.verifier is not None:
            from .verified import VerifiedRun
            self.verified = VerifiedRun(self)

    # -- setting up -----------------------------------------------------------------------------
    def _open_run(self, run: RunContext) -> int:
        run_id = None
        if self.rank == 0:
            prov = self.provenance = run.provenance(self.cfg.identity())
            # a full request takes a finished run of the same job as it is (nothing left to compute);
            # --rerun starts a new run
            statuses = () if self.cfg.rerun else ("running", "sampled") + (() if self.cfg.sampled else ("done",))
            run_id = self.store.find_resumable("challenge", prov.model, prov.spec, prov.data_fingerprint, prov.config,
                                               statuses=statuses) if statuses else None
            if run_id is not None and self.store.get_run(run_id)["status"] == "done":  # finished
                console.status(f"reusing challenge run {run_id}: it is finished, with the same model, weights, options "
                               f"and data (--rerun measures anew)")
            elif run_id is not None:
                console.status(f"resuming challenge run {run_id}: {len(self.store.challenge_results(run_id))}/"
                               f"{len(self.data.pairs)} foregrounds already done")
            else:
                run_id = recording.start(self.store, prov)
        return distributed.broadcast(run_id, self.ranks)

    def _make_engine(self, model: BgModel, done: dict) -> ChallengeEngine:
        cfg, d = self.cfg, self.data
        engine = ChallengeEngine(model, d.backgrounds.to(self.device), torch.from_numpy(d.bg_labels),
                                 mapping=cfg.mapping, batch_size=cfg.batch_size, precision=cfg.precision,
                                 verify_safety=cfg.verify_safety, seed=cfg.seed + self.rank)
        for r in done.values():  # warm the ordering with what earlier runs learnt: r's foreground fooled
            if r["fooling_bg"] in d.bg_index:
                engine.learn(torch.tensor([d.bg_index[r["fooling_bg"]]]), torch.tensor([True]), int(r["label"]))
        return engine

    # -- the loop over chunks ---------------------------------------------------------------------
    def visit(self) -> None:
        """Verdicts for this rank's share of every chunk, stopping early under `--halfwidth`."""
        plan, ids = self.plan, self.data.fg_ids
        chunks = [(end, [i for i in plan.shard(start, end, self.rank, self.world) if ids[i] not in self.fooled_by_id])
                  for start, end in plan.chunks()]  # each chunk's foregrounds without a verdict yet
        self.unseen = {i for _, new in chunks for i in new}
        self.bar = console.progress(enabled=self.progress and self.rank == 0, total=len(self.unseen),
                                    desc="challenge --full" if self.cfg.full else "challenge", unit="fg")
        for end, new in chunks:
            if new:
                self.run_chunk(new)
            if self.verified is not None:
                self.verified.settle()
            if plan.halfwidth is not None and self._interval_is_narrow(end):
                break
        self.bar.close()

    def _interval_is_narrow(self, end: int) -> bool:
        """The --halfwidth rule over the done prefix [0, end) of the order, every rank's share counted."""
        held = sum(not self.fooled_by_id[self.data.fg_ids[i]] for i in self.plan.shard(0, end, self.rank, self.world))
        held, n = distributed.all_reduce([held, end if self.rank == 0 else 0], self.ranks)
        return self.plan.should_stop(int(held), int(n))

    def run_chunk(self, positions: List[int]) -> None:
        """Verdicts (or full rows) for the foregrounds at `positions`, stored as they come."""
        d, engine = self.data, self.engine
        images, masks = self.load(positions)
        on_device = to_device(images, engine.device)  # once, from pinned memory
        preds = [engine.predict_uint8(on_device[s:s + self.cfg.batch_size])
                 for s in range(0, len(positions), self.cfg.batch_size)]
        self.clean.update(zip(positions, Fetch([torch.cat(preds)]).wait()[0].tolist()))  # one wait, not one a batch
        given = (on_device, masks, d.fg_labels[positions], list(range(len(positions))))  # local indices
        on_result = lambda r: self.record(positions[r.index], r)  # noqa: E731
        if self.cfg.full:
            engine.full_rows(*given, on_result=on_result)
        else:
            engine.verdicts(*given, on_result=on_result, progress=False)
        self.flush()

    def load(self, positions: List[int]):
        """The foregrounds at `positions`, decoded: (images, masks)."""
        return load_foregrounds(self.data.pairs, positions)

    # -- storing ----------------------------------------------------------------------------------
    def record(self, pos: int, r: FgResult) -> None:
        """Buffer one verdict (again, if a raised delta changed it) for the store."""
        d = self.data
        if r.row is not None:
            self.matrix_rows.append((d.fg_ids[pos], np.ascontiguousarray(r.row, dtype=np.uint8).tobytes()))
        self.rows.append((d.fg_ids[pos], int(d.fg_labels[pos]), int(self.clean[pos]), int(r.fooled), int(r.pairs),
                          d.bg_items[r.fooling_bg].image_id if r.fooled else None,
                          int(r.fooling_pred) if r.fooled else None))
        if self.verified is not None:
            self.near_rows.append(self.verified.near_row(d.fg_ids[pos], r))
        self.fooled_by_id[d.fg_ids[pos]] = bool(r.fooled)
        if pos in self.unseen:
            self.unseen.discard(pos)
            self.bar.update(1)
        if len(self.rows) >= self.cfg.save_every:
            self.flush()

    def flush(self) -> None:
        """Store the buffered verdicts (with bf16-verified, their near ties and the run's counts),
        and the composites evaluated since the last flush, in one transaction."""
        counted = self.engine.stats.pairs
        self.store.add_challenge_results(self.run_id, self.rows, self.near_rows, self.state,
                                         pairs=counted - self.stored_pairs, matrix_rows=self.matrix_rows)
        self.rows, self.matrix_rows, self.near_rows, self.state, self.stored_pairs = [], [], [], None, counted

    # -- totals over ranks --------------------------------------------------------------------------
    def totals(self) -> Optional[dict]:
        """The bf16-verified stats over every rank (None for other precisions); once it returns,
        every rank has stored its verdicts and its composites (which rank 0 then reads back from
        the store)."""
        verified = self.verified.totals() if self.verified is not None else None
        distributed.barrier(self.ranks)
        return verified
