"""Supervised training on one variant folder, with the recipes of `augment.py` and optional SWA.

The whole split is decoded once into one uint8 tensor: the datasets bgbench trains on at CPU
scale fit in memory, and decoding once keeps every epoch compute-bound.

A run is resumable: after every epoch `OUT/last.pt` holds the weights, optimizer, schedulers,
SWA average, epoch and RNG states, so rerunning the same command after a kill continues where it
stopped instead of starting over (and refuses if the configuration changed in a way that matters).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, List, Optional

import numpy as np
import torch

from .. import console
from ..data.images import decode_image
from ..data.layout import discover
from ..errors import BgbenchError
from ..models.checkpoint import save_checkpoint
from ..models.registry import create_model, list_schemes
from ..models.spec import DATASET, BgModel
from .augment import BatchAugment, RecipeContext
from .config import TrainConfig  # noqa: F401 (re-exported: the config lives in a torch-free module)
from .recipes import get_recipe
from .swa import finalize_bn, make_swa, make_swalr, swa_start_epoch


#: Config keys that may change between a run and its resume (they do not change the result).
RESUME_FREE_KEYS = ("out", "threads")


def _load_split(root: str, variant: str, split: str):
    """(images NHWC uint8 tensor, labels, class folder names, items, data fingerprint) of one variant
    split; the items pair images with masks."""
    layout = discover(root, split=split, variants=[variant])
    items = layout.items(variant)
    arrays = [decode_image(it.path) for it in items]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise BgbenchError(f"training images under {root}/{variant}/{split} differ in size ({sorted(shapes)[:3]}); "
                           f"resize them to one size first")
    images = torch.from_numpy(np.stack(arrays))
    labels = torch.tensor([it.label for it in items], dtype=torch.long)
    return images, labels, layout.classes, items, layout.fingerprint()


def resolve_config(cfg: TrainConfig) -> TrainConfig:
    """`cfg` with its derived defaults filled in (what config.json records)."""
    d = asdict(cfg)
    if d["swa_lr"] is None:
        d["swa_lr"] = cfg.lr / 4
    d["data"] = str(cfg.data)
    d["out"] = str(cfg.out)
    return TrainConfig(**d)


def build_model(cfg: TrainConfig, classes, image_hw) -> BgModel:
    """A fresh timm model, or one initialised from `cfg.init` with its head replaced (fine-tuning)."""
    scheme, _, arch = cfg.model.partition(":")
    if scheme != "timm" or not arch:
        raise BgbenchError(f"bgbench train needs --model timm:ARCH, got {cfg.model!r}")
    n = len(classes)
    if cfg.init:
        if cfg.init.split(":", 1)[0] in list_schemes() and not Path(cfg.init).exists():
            model = create_model(cfg.init)
        else:
            model = create_model(cfg.model, checkpoint=cfg.init)
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
    model.spec.input_size = (3, int(image_hw[0]), int(image_hw[1]))
    if cfg.freeze:
        head = model.net.get_classifier() if hasattr(model.net, "get_classifier") else None
        head_params = list(head.parameters()) if isinstance(head, torch.nn.Module) else []
        if not head_params:
            raise BgbenchError(f"--freeze: cannot find the classifier head of {arch}")
        for p in model.net.parameters():
            p.requires_grad_(False)
        for p in head_params:
            p.requires_grad_(True)
    return model


def _batches(order: torch.Tensor, batch_size: int, even: bool) -> Iterator[torch.Tensor]:
    """Consecutive batches of `order`; with `even`, odd batches lose their last item (timm Mixup
    pairs each image with the batch's reverse) and a batch of one is dropped."""
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        if even:
            idx = idx[:len(idx) - len(idx) % 2]
        if len(idx):
            yield idx


def _numpy_state() -> dict:
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss),
            "gauss": float(gauss)}


def _set_numpy_state(d: dict) -> None:
    np.random.set_state(("MT19937", d["keys"].numpy().astype(np.uint32), d["pos"], d["has_gauss"], d["gauss"]))


def _atomic_save(obj, path: Path) -> None:
    """Write then rename, so a kill mid-write never leaves a truncated last.pt."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _check_resumable(saved: dict, now: dict, path: Path) -> None:
    diff = [k for k in sorted(set(saved) | set(now)) if k not in RESUME_FREE_KEYS and saved.get(k) != now.get(k)]
    if diff:
        detail = ", ".join(f"{k}: {saved.get(k)!r} -> {now.get(k)!r}" for k in diff[:4])
        raise BgbenchError(f"{path} was saved by a run with a different configuration ({detail}); "
                           f"rerun with the original options, or use a new --out (or delete {path}) to start over")


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


def train(cfg: TrainConfig, progress: bool = True) -> Path:
    """Train `cfg.model` on `cfg.data/cfg.variant/cfg.split` with `cfg.recipe`; returns the checkpoint.

    If `cfg.out/last.pt` exists the run resumes from it (same configuration required); a run
    that already finished returns its model.pt untouched.
    """
    from ..version import __version__
    cfg = resolve_config(cfg)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    recipe = get_recipe(cfg.recipe)
    if recipe.needs_masks and cfg.variant != "original":
        raise BgbenchError(f"--recipe {cfg.recipe} composites foregrounds with their masks, which describe the "
                           f"original images: use --variant original (got {cfg.variant})")
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)  # timm's Mixup draws from numpy's global RNG
    gen = torch.Generator().manual_seed(cfg.seed)
    out = Path(cfg.out)
    last_path = out / "last.pt"
    images, labels, classes, items, fingerprint = _load_split(cfg.data, cfg.variant, cfg.split)
    record = {**asdict(cfg), "data_fingerprint": fingerprint}
    state = None
    if last_path.is_file():
        state = torch.load(last_path, map_location="cpu", weights_only=True)
        _check_resumable(state["config"], record, last_path)
        if int(state["epoch"]) >= cfg.epochs and (out / "model.pt").is_file():
            console.status(f"{out} is already finished (epoch {int(state['epoch'])}/{cfg.epochs}); nothing to train")
            return out / "model.pt"
    ctx = RecipeContext(num_classes=len(classes), labels=labels, generator=gen, root=cfg.data, split=cfg.split,
                        items=items, image_shape=tuple(images.shape[1:3]), bgswap_p=cfg.bgswap_p,
                        mixup_alpha=cfg.mixup_alpha, cutmix_alpha=cfg.cutmix_alpha)
    aug: BatchAugment = recipe.builder()(ctx)
    model = build_model(cfg, classes, images.shape[1:3])
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({**record, "bgbench_version": __version__}, indent=1))

    net = model.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = sum(1 for _ in _batches(torch.arange(len(labels)), cfg.batch_size, aug.needs_even_batch))
    if steps_per_epoch == 0:
        raise BgbenchError(f"too few training images ({len(labels)}) for one batch of recipe {cfg.recipe}")
    swa_start = swa_start_epoch(cfg.epochs, cfg.swa_start) if cfg.swa else cfg.epochs
    sched = None
    if swa_start > 0:  # one-cycle over the epochs before averaging (all of them without SWA)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=swa_start * steps_per_epoch,
                                                    pct_start=0.15)
    swa_model = make_swa(model) if cfg.swa else None
    swalr = None
    start_epoch = 0
    log_path = out / "log.jsonl"
    if state is not None:
        start_epoch = int(state["epoch"])
        model.load_state_dict(state["model"])
        if sched is not None and state.get("sched") is not None:
            sched.load_state_dict(state["sched"])
        if state.get("swalr") is not None:
            swalr = make_swalr(opt, cfg.swa_lr)
            swalr.load_state_dict(state["swalr"])
        if swa_model is not None and state.get("swa_model") is not None:
            swa_model.load_state_dict(state["swa_model"])
        opt.load_state_dict(state["optimizer"])  # last: scheduler constructors touch the lr
        torch.set_rng_state(state["rng"]["torch"])
        gen.set_state(state["rng"]["generator"])
        _set_numpy_state(state["rng"]["numpy"])
        _rewrite_log(log_path, start_epoch, state.get("log"))
        console.status(f"resuming {out} from epoch {start_epoch}/{cfg.epochs} (saved in {last_path})")
    else:
        log_path.write_text("")

    bar = console.progress(enabled=progress, total=cfg.epochs * steps_per_epoch, initial=start_epoch * steps_per_epoch,
                           desc=f"train {cfg.recipe}{'+swa' if cfg.swa else ''} on {cfg.variant}", unit="step")
    for epoch in range(start_epoch, cfg.epochs):
        t0 = time.time()
        averaging = cfg.swa and epoch >= swa_start
        if averaging and swalr is None:
            swalr = make_swalr(opt, cfg.swa_lr)
        net.train()
        order = torch.randperm(len(labels), generator=gen)
        seen = correct = 0
        loss_sum = 0.0
        for idx in _batches(order, cfg.batch_size, aug.needs_even_batch):
            x = images[idx].permute(0, 3, 1, 2).float().div_(255)
            y = labels[idx]
            x, target = aug(x, y, idx)
            flip = torch.rand(len(idx), generator=gen) < 0.5
            x[flip] = x[flip].flip(-1)
            logits = net(x)
            loss = aug.loss(logits, target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if not averaging:
                sched.step()
            seen += len(idx)
            correct += int((logits.argmax(1) == y).sum())  # against the hard labels, also for mixup
            loss_sum += loss.item() * len(idx)
            bar.update(1)
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.2f}")
        if averaging:
            swa_model.update_parameters(model)
            swalr.step()
        rec = {"epoch": epoch + 1, "loss": loss_sum / seen, "train_acc": correct / seen,
               "lr": opt.param_groups[0]["lr"], "swa": averaging, "seconds": round(time.time() - t0, 2)}
        # last.pt first, then the log line: a kill in between loses no training (the line is
        # restored from last.pt on resume), whereas the other order could repeat an epoch.
        _atomic_save({"config": record, "epoch": epoch + 1, "model": model.state_dict(),
                      "optimizer": opt.state_dict(), "sched": sched.state_dict() if sched is not None else None,
                      "swalr": swalr.state_dict() if swalr is not None else None,
                      "swa_model": swa_model.state_dict() if swa_model is not None else None,
                      "rng": {"torch": torch.get_rng_state(), "generator": gen.get_state(),
                              "numpy": _numpy_state()},
                      "log": rec}, last_path)
        with open(log_path, "a") as log:
            log.write(json.dumps(rec) + "\n")
    bar.close()
    final = model
    if swa_model is not None:
        # BN statistics for the averaged weights, over the training inputs the recipe produces
        bn_gen = torch.Generator().manual_seed(cfg.seed + 1)
        order = torch.randperm(len(labels), generator=bn_gen)
        finalize_bn(swa_model, (aug.inputs(images[idx].permute(0, 3, 1, 2).float().div_(255), labels[idx], idx)
                                for idx in _batches(order, cfg.batch_size, False)))
        final = swa_model.module
    path = out / "model.pt"
    save_checkpoint(final.eval(), path, epoch=cfg.epochs, config=asdict(cfg), swa=cfg.swa)
    return path


def training_record(out: str | Path):
    """The finished training run in `out`, read back from its files, as a result to record
    (`runs.Outputs` with its provenance).

    Reading what was written (config.json, log.jsonl, model.pt and its sha256) records exactly
    what a later eval of `file:OUT/model.pt` will load; the run's checkpoint_sha256 is model.pt's,
    which is how the report links an evaluated model to its recipe and training data.
    """
    from ..models.checkpoint import sha256_file
    from ..runs import Metric, Outputs, Provenance
    out = Path(out)
    config = json.loads((out / "config.json").read_text())
    fingerprint = config.pop("data_fingerprint", None)
    config.pop("bgbench_version", None)
    ckpt = torch.load(out / "model.pt", map_location="cpu", weights_only=True)
    spec = {**ckpt["bgbench_spec"], "checkpoint": str(out / "model.pt"),
            "checkpoint_sha256": sha256_file(out / "model.pt")}
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if line.strip()]
    last = log[-1] if log else {}
    prov = Provenance.of("train", config, model=spec, seed=config.get("seed"),
                         data_root=config["data"], data_fingerprint=fingerprint)
    return Outputs({"checkpoint": spec["checkpoint"], "checkpoint_sha256": spec["checkpoint_sha256"],
                    "recipe": config["recipe"], "swa": config["swa"], "epochs": len(log)},
                   [Metric("train_loss", last.get("loss")), Metric("train_accuracy", last.get("train_acc"))],
                   provenance=prov)
