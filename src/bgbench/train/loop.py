"""Plain supervised training on one variant folder (the paper's ORIGINAL / MIXED-RAND recipes).

The whole split is decoded once into one uint8 tensor: the datasets bgbench trains on at CPU
scale fit in memory, and decoding once keeps every epoch compute-bound.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..data.images import decode_image
from ..data.layout import discover
from ..errors import BgbenchError
from ..models.registry import create_model
from ..models.spec import BgModel


@dataclass
class TrainConfig:
    data: str
    variant: str = "original"
    model: str = "timm:resnet10t"
    out: str = "runs/train"
    split: str = "train"
    epochs: int = 10
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 0.05
    seed: int = 0
    threads: Optional[int] = None


def load_split(root: str, variant: str, split: str):
    """(images NHWC uint8 tensor, labels, class folder names) of one variant split."""
    layout = discover(root, split=split, variants=[variant])
    items = layout.items(variant)
    arrays = [decode_image(it.path) for it in items]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise BgbenchError(f"training images under {root}/{variant}/{split} differ in size ({sorted(shapes)[:3]}); "
                           f"resize them to one size first")
    images = torch.from_numpy(np.stack(arrays))
    labels = torch.tensor([it.label for it in items], dtype=torch.long)
    return images, labels, layout.classes


def save_checkpoint(model: BgModel, path: Path, **extra) -> None:
    """A bgbench checkpoint: plain tensors plus the model spec, loadable with weights_only=True."""
    torch.save({"bgbench_spec": model.spec.to_dict(), "state_dict": model.net.state_dict(), **extra}, path)


def train(cfg: TrainConfig, progress: bool = True) -> Path:
    """Train `cfg.model` on `cfg.data/cfg.variant/cfg.split`; returns the checkpoint path."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    images, labels, classes = load_split(cfg.data, cfg.variant, cfg.split)
    model = create_model(cfg.model, num_classes=len(classes))
    model.spec.class_names = tuple(classes)
    model.spec.input_size = (3, images.shape[1], images.shape[2])
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=1))
    net = model.train()
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(labels) / cfg.batch_size)
    total = cfg.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total, pct_start=0.15)
    log = open(out / "log.jsonl", "w")
    bar = tqdm(total=total, desc=f"train {cfg.variant}", unit="step", disable=not progress, leave=False)
    for epoch in range(cfg.epochs):
        t0 = time.time()
        order = torch.randperm(len(labels), generator=gen)
        seen = correct = 0
        loss_sum = 0.0
        for i in range(0, len(order), cfg.batch_size):
            idx = order[i:i + cfg.batch_size]
            x = images[idx].permute(0, 3, 1, 2).float().div_(255)
            flip = torch.rand(len(idx), generator=gen) < 0.5
            x[flip] = x[flip].flip(-1)
            y = labels[idx]
            logits = net(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            seen += len(idx)
            correct += int((logits.argmax(1) == y).sum())
            loss_sum += loss.item() * len(idx)
            bar.update(1)
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.2f}")
        log.write(json.dumps({"epoch": epoch + 1, "loss": loss_sum / seen, "train_acc": correct / seen,
                              "seconds": round(time.time() - t0, 2)}) + "\n")
        log.flush()
    bar.close()
    log.close()
    path = out / "model.pt"
    save_checkpoint(model.eval(), path, epoch=cfg.epochs, config=asdict(cfg))
    return path
