"""Supervised training on one variant folder, with the recipes of `augment.py` and optional SWA.

Stochastic Weight Averaging uses `torch.optim.swa_utils`: the base schedule (one-cycle) runs for the
first `--swa-start` share of the epochs; from then on SWALR holds the learning rate at `swa_lr` and
the loop averages the weights once per epoch (`AveragedModel`). At the end, BatchNorm statistics are
recomputed for the averaged weights over the training data (`update_bn`), because averaged weights
do not match any running statistics seen during training.

The whole split is decoded once into one uint8 tensor: the datasets bgbench trains on at CPU
scale fit in memory, and decoding once keeps every epoch compute-bound.

A run is resumable: after every epoch `OUT/last.pt` holds the weights, optimizer, schedulers,
SWA average, epoch and RNG states, so rerunning the same command after a kill continues where it
stopped instead of starting over (and refuses if the configuration changed in a way that matters).
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterator, List, Optional

import numpy as np
import torch
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn

from .. import console
from ..data.images import decode_image
from ..data.in9 import discover
from ..distributed import Ranks, all_reduce, gather, setup, world_record
from ..errors import BgbenchError
from ..models.checkpoint import save_checkpoint, sha256_file
from ..models.options import create_model, list_schemes
from ..models.spec import DATASET, BgModel
from .augment import BatchAugment
from .config import TrainConfig  # noqa: F401 (re-exported: the config lives in a torch-free module)
from .recipes import get_recipe


#: Config keys that may change between a run and its resume (they do not change the result).
RESUME_FREE_KEYS = ("out", "threads", "device")


def _load_split(root: str, variant: str, split: str) -> "TrainingData":
    """One variant split, decoded; its items pair images with masks."""
    from ..data.groups import find_group_file
    from ..data.waterbirds import find_waterbirds
    group_file = find_group_file(root) or find_waterbirds(root)
    if group_file is not None:  # images of any size, one list of files: a frozen backbone's head is what fits
        raise BgbenchError(f"{root} is a group dataset ({group_file.name}): full training reads IN-9-layout variant "
                           f"folders; fit a head on it with --recipe dfr or --recipe linear-probe")
    layout = discover(root, split=split, variants=[variant])
    items = layout.items(variant)
    arrays = [decode_image(it.path) for it in items]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise BgbenchError(f"training images under {root}/{variant}/{split} differ in size ({sorted(shapes)[:3]}); "
                           f"resize them to one size first")
    return TrainingData(torch.from_numpy(np.stack(arrays)), torch.tensor([it.label for it in items], dtype=torch.long),
                        layout.classes, items, layout.fingerprint())


def build_model(cfg: TrainConfig, classes, image_hw) -> BgModel:
    """A fresh timm model, or one initialised from `cfg.init` with its head replaced (fine-tuning)."""
    scheme, _, arch = cfg.model.partition(":")
    if scheme != "timm" or not arch:
        raise BgbenchError(f"bgbench train needs --model timm:ARCH, got {cfg.model!r}")
    n = len(classes)
    if cfg.init:
        # a model string such as zoo:efficientnet_lite0, else a checkpoint of ARCH
        model = (create_model(cfg.init) if cfg.init.split(":", 1)[0] in list_schemes() and not Path(cfg.init).exists()
                 else create_model(cfg.model, checkpoint=cfg.init))
        if model.spec.arch != arch:
            raise BgbenchError(f"--init {cfg.init} is a {model.spec.arch}, not {arch}; "
                               f"pass --model timm:{model.spec.arch}")
        same_head = model.spec.label_space == DATASET and tuple(model.spec.class_names or ()) == tuple(classes)
        if not same_head:  # keep a head already trained on these very classes, else start a new one
            if not hasattr(model.net, "reset_classifier"):
                raise BgbenchError(f"--init {cfg.init}: the network has no timm reset_classifier()")
            model.net.reset_classifier(n)
        spec = model.spec
        spec.name, spec.num_classes, spec.label_space = cfg.model, n, DATASET
        spec.extra = {**spec.extra, "init": cfg.init, "init_sha256": spec.checkpoint_sha256}
        spec.checkpoint = spec.checkpoint_sha256 = None
    else:
        model = create_model(cfg.model, num_classes=n)
    model.spec.class_names = tuple(classes)
    # the size it learns at: later jobs feed it that size by default (a no-op on images of this size)
    model.spec.input_size, model.spec.resize = (3, int(image_hw[0]), int(image_hw[1])), "native"
    if cfg.freeze:
        head = model.net.get_classifier() if hasattr(model.net, "get_classifier") else None
        if not isinstance(head, torch.nn.Module) or not list(head.parameters()):
            raise BgbenchError(f"--freeze: cannot find the classifier head of {arch}")
        model.net.requires_grad_(False)
        head.requires_grad_(True)
    return model


#: The smallest batch a rank trains on: two images. A last batch of one image is dropped, by one
#: process as by every rank alike: BatchNorm cannot normalize a single image in training (the run
#: would stop with a traceback), and dropping it for every model keeps one rule.
SMALLEST_BATCH = 2


def _batches(order: torch.Tensor, batch_size: int, even: bool) -> Iterator[torch.Tensor]:
    """Consecutive batches of `order`; with `even`, odd batches lose their last item (timm Mixup
    pairs each image with the batch's reverse). A batch of fewer than `SMALLEST_BATCH` items is
    dropped."""
    for idx in order.split(batch_size):
        if even:
            idx = idx[:len(idx) - len(idx) % 2]
        if len(idx) >= SMALLEST_BATCH:
            yield idx


def _shard_order(order: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """This rank's part of a permutation that every rank drew alike, as `DistributedSampler` cuts
    it: padded by wrapping to a multiple of the world, then every world-th item from the rank's.

    The k-th batches of b items of all ranks together hold the items of the one-process k-th batch
    of b x world items. A world of one keeps `order` as it is.
    """
    if not ranks.distributed:
        return order
    from torch.utils.data import DistributedSampler
    return order[torch.tensor(list(DistributedSampler(range(len(order)), num_replicas=ranks.world, rank=ranks.rank,
                                                      shuffle=False)), dtype=torch.long)]


def _rewrite_log(log_path: Path, epoch: int, last_record: Optional[dict]) -> None:
    """Keep the log consistent with last.pt: drop lines past `epoch`, restore its line if lost."""
    records: List[dict] = []
    if log_path.is_file():
        for line in log_path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:  # a line cut by the kill
                continue
            if rec.get("epoch", 0) <= epoch:
                records.append(rec)
    if last_record and not any(r.get("epoch") == epoch for r in records):
        records.append(last_record)
    log_path.write_text("".join(json.dumps(r) + "\n" for r in records))


@dataclass
class TrainingData:
    """One variant split held in memory: images (N,H,W,3 uint8), labels, class folders, items, fingerprint."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: List[str]
    items: list
    fingerprint: str

    def batch(self, idx: torch.Tensor) -> torch.Tensor:
        """Images `idx` as (B,3,H,W) floats in [0,1]."""
        return self.images[idx].permute(0, 3, 1, 2).float().div_(255)


@dataclass
class Trainer:
    """What changes while training: the model (and its DDP wrapper `net`), optimizer, schedules, SWA,
    and the two generators: `order` draws each epoch's permutation and is alike on every rank;
    `augment` draws flips and the recipe's randomness, differently on each rank. In a world of one
    they are one generator, so a one-process run draws everything from one stream."""

    cfg: TrainConfig
    ranks: Ranks
    model: BgModel
    net: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: Optional[torch.optim.lr_scheduler.LRScheduler]
    swa_model: Optional[torch.nn.Module]
    swa_start: int
    batch_size: int  # this rank's share of --batch-size
    steps_per_epoch: int
    order: torch.Generator
    augment: torch.Generator
    swalr: Optional[object] = None


def _check_world(cfg: TrainConfig, ranks: Ranks) -> None:
    """What a torchrun world needs: a batch that splits evenly, and SyncBatchNorm only on GPUs."""
    if not ranks.distributed:
        return
    if cfg.batch_size % ranks.world:
        raise BgbenchError(f"--batch-size {cfg.batch_size} is the batch of all {ranks.world} processes together: "
                           f"make it a multiple of {ranks.world}")
    if cfg.sync_bn and not ranks.device.startswith("cuda"):
        raise BgbenchError("--sync-bn needs --device cuda: PyTorch's SyncBatchNorm synchronizes GPU tensors only")


def _trainer(cfg: TrainConfig, model: BgModel, n_images: int, needs_even: bool, ranks: Ranks,
             order: torch.Generator, augment: torch.Generator) -> Trainer:
    """Optimizer, one-cycle schedule (over the epochs before averaging), SWA average, and the DDP
    wrapper (a world of one trains the model itself)."""
    if ranks.distributed and cfg.sync_bn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(ranks.device).train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr,
                            weight_decay=cfg.weight_decay)
    batch_size = cfg.batch_size // ranks.world
    # DistributedSampler pads every rank to -(-n_images // world) images
    steps_per_epoch = sum(1 for _ in _batches(torch.arange(-(-n_images // ranks.world)), batch_size, needs_even))
    if steps_per_epoch == 0:
        raise BgbenchError(f"too few training images ({n_images}) for one batch of recipe {cfg.recipe}")
    # the first epoch (0-based) whose weights are averaged: at least one epoch always is
    swa_start = min(max(int(math.floor(cfg.swa_start * cfg.epochs)), 0), max(cfg.epochs - 1, 0)) if cfg.swa \
        else cfg.epochs
    # one-cycle over the epochs before averaging (all of them without SWA)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=swa_start * steps_per_epoch,
                                                pct_start=0.15) if swa_start > 0 else None
    return Trainer(cfg, ranks, model, model, opt, sched, AveragedModel(model) if cfg.swa else None,  # equal weights
                   swa_start, batch_size, steps_per_epoch, order, augment)


def _swalr(t: Trainer) -> SWALR:
    """Cosine anneal to `swa_lr` over one epoch, then constant; stepped once per epoch."""
    return SWALR(t.opt, swa_lr=t.cfg.swa_lr, anneal_epochs=1, anneal_strategy="cos")


def _restore(t: Trainer, state: dict) -> None:
    """Weights, optimizer, schedules, SWA average and this rank's RNG states from last.pt."""
    t.model.load_state_dict(state["model"])
    if t.sched is not None and state.get("sched") is not None:
        t.sched.load_state_dict(state["sched"])
    if state.get("swalr") is not None:
        t.swalr = _swalr(t)
        t.swalr.load_state_dict(state["swalr"])
    if t.swa_model is not None and state.get("swa_model") is not None:
        t.swa_model.load_state_dict(state["swa_model"])
    t.opt.load_state_dict(state["optimizer"])  # last: scheduler constructors touch the lr
    rng = state["rng"]["ranks"][t.ranks.rank] if "ranks" in state["rng"] else state["rng"]
    torch.set_rng_state(rng["torch"])
    t.order.set_state(rng["generator"])
    if t.ranks.distributed:
        t.augment.set_state(rng["augment"])
    d = rng["numpy"]
    np.random.set_state(("MT19937", d["keys"].numpy().astype(np.uint32), d["pos"], d["has_gauss"], d["gauss"]))


def _run_epoch(t: Trainer, epoch: int, data: TrainingData, aug: BatchAugment, bar) -> dict:
    """One epoch over this rank's share of a fresh permutation; returns its log line (all ranks' numbers)."""
    t0 = time.time()
    averaging = t.cfg.swa and epoch >= t.swa_start
    if averaging and t.swalr is None:
        t.swalr = _swalr(t)
    t.net.train()
    order = _shard_order(torch.randperm(len(data.labels), generator=t.order), t.ranks)
    seen = correct = 0
    loss_sum = 0.0
    device = t.ranks.device
    for idx in _batches(order, t.batch_size, aug.needs_even_batch):
        y = data.labels[idx]
        x, target = aug(data.batch(idx), y, idx)
        flip = torch.rand(len(idx), generator=t.augment) < 0.5
        x[flip] = x[flip].flip(-1)
        logits = t.net(x.to(device))
        loss = aug.loss(logits, target.to(device))
        t.opt.zero_grad(set_to_none=True)
        loss.backward()
        t.opt.step()
        if not averaging:
            t.sched.step()
        seen += len(idx)
        correct += int((logits.argmax(1).cpu() == y).sum())  # against the hard labels, also for mixup
        loss_sum += loss.item() * len(idx)
        bar.update(1)
        bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.2f}")
    if averaging:
        t.swa_model.update_parameters(t.model)
        t.swalr.step()
    seen, correct, loss_sum = all_reduce([seen, correct, loss_sum], t.ranks)
    return {"epoch": epoch + 1, "loss": loss_sum / seen, "train_acc": correct / seen,
            "lr": t.opt.param_groups[0]["lr"], "swa": averaging, "seconds": round(time.time() - t0, 2)}


def _save_last(t: Trainer, rec: dict, record: dict, out: Path) -> None:
    """last.pt (every rank's RNG states, gathered to rank 0), then the epoch's log line: a kill in
    between loses no training (the line is restored from last.pt on resume), whereas the other
    order could repeat an epoch. Only rank 0 writes."""
    _, keys, pos, has_gauss, gauss = np.random.get_state()  # MT19937's, as tensors and numbers
    rng = {"torch": torch.get_rng_state(), "generator": t.order.get_state(),
           "numpy": {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss),
                     "gauss": float(gauss)}}
    if t.ranks.distributed:
        rng["augment"] = t.augment.get_state()
    rngs = gather(rng, t.ranks)
    if not t.ranks.main:
        return
    tmp = out / "last.pt.tmp"  # written then renamed: a kill mid-write never leaves a truncated last.pt
    torch.save({"config": record, "epoch": rec["epoch"], "world_size": t.ranks.world, "model": t.model.state_dict(),
                "optimizer": t.opt.state_dict(), "sched": t.sched.state_dict() if t.sched is not None else None,
                "swalr": t.swalr.state_dict() if t.swalr is not None else None,
                "swa_model": t.swa_model.state_dict() if t.swa_model is not None else None,
                "rng": {"ranks": rngs} if t.ranks.distributed else rngs[0], "log": rec}, tmp)
    os.replace(tmp, out / "last.pt")
    with open(out / "log.jsonl", "a") as log:
        log.write(json.dumps(rec) + "\n")


def train(cfg: TrainConfig, progress: bool = True) -> Optional[Path]:
    """Train `cfg.model` on `cfg.data/cfg.variant/cfg.split` with `cfg.recipe`; returns the checkpoint.

    If `cfg.out/last.pt` exists the run resumes from it (same configuration and world size
    required); a run that already finished returns its model.pt untouched. Under torchrun the
    ranks train one model with DistributedDataParallel and rank 0 alone writes files; the other
    ranks return None.
    """
    from ..version import __version__
    # the derived defaults filled in (what config.json records)
    cfg = replace(cfg, swa_lr=cfg.lr / 4 if cfg.swa_lr is None else cfg.swa_lr, data=str(cfg.data), out=str(cfg.out))
    ranks = setup(cfg.device)
    _check_world(cfg, ranks)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    recipe = get_recipe(cfg.recipe)
    if recipe.needs_masks and cfg.variant != "original":
        raise BgbenchError(f"--recipe {cfg.recipe} composites foregrounds with their masks, which describe the "
                           f"original images: use --variant original (got {cfg.variant})")
    # seed torch, numpy (timm's Mixup draws from numpy's global RNG) and the loop's generators; under
    # torchrun each rank's own draws come from a seed of (seed, rank)
    rank_seed = int(np.random.SeedSequence([cfg.seed, ranks.rank]).generate_state(1)[0])
    torch.manual_seed(cfg.seed)
    np.random.seed(rank_seed if ranks.distributed else cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    augment = torch.Generator().manual_seed(rank_seed) if ranks.distributed else gen
    out = Path(cfg.out)
    data = _load_split(cfg.data, cfg.variant, cfg.split)
    record = {**asdict(cfg), "data_fingerprint": data.fingerprint, **world_record(ranks)}
    last_path, state = out / "last.pt", None
    if last_path.is_file():  # an earlier run's: of this very configuration and world size, or refused
        state = torch.load(last_path, map_location="cpu", weights_only=True)
        saved_world = int(state.get("world_size", 1))
        if saved_world != ranks.world:
            raise BgbenchError(f"{last_path} was saved by a run on {saved_world} process(es), this one has "
                               f"{ranks.world}; resume it on {saved_world} (torchrun --nproc-per-node {saved_world}), "
                               f"or use a new --out")
        saved = state["config"]
        diff = [k for k in sorted(set(saved) | set(record))
                if k not in RESUME_FREE_KEYS and saved.get(k) != record.get(k)]
        if diff:
            detail = ", ".join(f"{k}: {saved.get(k)!r} -> {record.get(k)!r}" for k in diff[:4])
            raise BgbenchError(f"{last_path} was saved by a run with a different configuration ({detail}); rerun with "
                               f"the original options, or use a new --out (or delete {last_path}) to start over")
    if state is not None and int(state["epoch"]) >= cfg.epochs and (out / "model.pt").is_file():
        if ranks.main:
            console.status(f"{out} is already finished (epoch {int(state['epoch'])}/{cfg.epochs}); nothing to train")
        return out / "model.pt" if ranks.main else None
    aug: BatchAugment = recipe.builder()(cfg, data, augment)
    model = build_model(cfg, data.classes, data.images.shape[1:3])
    if ranks.distributed:  # the same initial weights everywhere (DDP broadcasts rank 0's), then a rank's own stream
        torch.manual_seed(rank_seed)
    if ranks.main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps({**record, "bgbench_version": __version__}, indent=1))
    t = _trainer(cfg, model, len(data.labels), aug.needs_even_batch, ranks, gen, augment)
    start_epoch = 0  # or the one after last.pt's, whose states are restored
    if state is None and ranks.main:
        (out / "log.jsonl").write_text("")
    elif state is not None:
        _restore(t, state)
        start_epoch = int(state["epoch"])
        if ranks.main:
            _rewrite_log(out / "log.jsonl", start_epoch, state.get("log"))
            console.status(f"resuming {out} from epoch {start_epoch}/{cfg.epochs} (saved in {out / 'last.pt'})")
    if ranks.distributed:  # DDP broadcasts rank 0's weights (after a resume loaded them) and averages gradients
        from torch.nn.parallel import DistributedDataParallel
        t.net = DistributedDataParallel(t.model, device_ids=[torch.device(ranks.device).index]
                                        if ranks.device.startswith("cuda") else None)
    bar = console.progress(enabled=progress and ranks.main, total=cfg.epochs * t.steps_per_epoch,
                           initial=start_epoch * t.steps_per_epoch, unit="step",
                           desc=f"train {cfg.recipe}{'+swa' if cfg.swa else ''} on {cfg.variant}")
    for epoch in range(start_epoch, cfg.epochs):
        _save_last(t, _run_epoch(t, epoch, data, aug, bar), record, out)
    bar.close()
    # the model to save: the trained one, or the SWA average with BatchNorm statistics recomputed over the
    # training inputs the recipe produces. Under torchrun each rank runs `update_bn` on its share and the
    # statistics are averaged over the ranks (equal shares, so the mean of the batch statistics of one
    # process); with --sync-bn SyncBatchNorm pools them across ranks as it goes
    final = t.model
    if t.swa_model is not None:
        order = _shard_order(torch.randperm(len(data.labels), generator=torch.Generator().manual_seed(cfg.seed + 1)),
                             ranks)
        update_bn((aug.inputs(data.batch(idx), data.labels[idx], idx).to(ranks.device)
                   for idx in _batches(order, t.batch_size, False)), t.swa_model)
        if ranks.distributed and not cfg.sync_bn:
            import torch.distributed as dist
            stats = [b for m in t.swa_model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                     for b in (m.running_mean, m.running_var) if b is not None]
            for b in stats:  # each rank's statistics replaced, in place, by their mean
                dist.all_reduce(b, op=dist.ReduceOp.SUM)
                b.div_(ranks.world)
        final = t.swa_model.module
    if not ranks.main:
        return None
    save_checkpoint(final.eval(), out / "model.pt", epoch=cfg.epochs, config={**asdict(cfg), **world_record(ranks)},
                    swa=cfg.swa)
    return out / "model.pt"


def training_record(out: str | Path):
    """The finished training run in `out`, read back from its files, as a result to record
    (`recording.Outputs` with its provenance).

    Reading what was written (config.json, log.jsonl, model.pt and its sha256) records exactly
    what a later eval of `file:OUT/model.pt` will load; the run's checkpoint_sha256 is model.pt's,
    which is how the report links an evaluated model to its recipe and training data.
    """
    from ..recording import Metric
    log = [json.loads(line) for line in (Path(out) / "log.jsonl").read_text().splitlines() if line.strip()]
    last = log[-1] if log else {}
    return saved_run(out, [Metric("train_loss", last.get("loss")), Metric("train_accuracy", last.get("train_acc"))],
                     lambda config: {"swa": config["swa"], "epochs": len(log)})


def saved_run(out: str | Path, metrics: list, outputs, **more):
    """A finished run folder (config.json, model.pt) as `recording.Outputs`: the checkpoint, its
    sha256 and recipe, then `outputs(config)`; its provenance's config is config.json's with `more`."""
    from ..provenance import Provenance
    from ..recording import Outputs
    path = Path(out) / "model.pt"
    config = json.loads((Path(out) / "config.json").read_text())
    fingerprint = config.pop("data_fingerprint", None)
    config.pop("bgbench_version", None)
    config.update(more)
    spec = {**torch.load(path, map_location="cpu", weights_only=True)["bgbench_spec"], "checkpoint": str(path),
            "checkpoint_sha256": sha256_file(path)}
    prov = Provenance.of("train", config, model=spec, seed=config.get("seed"), data_root=config["data"],
                         data_fingerprint=fingerprint)
    return Outputs({"checkpoint": spec["checkpoint"], "checkpoint_sha256": spec["checkpoint_sha256"],
                    "recipe": config["recipe"], **outputs(config)}, metrics, provenance=prov)
