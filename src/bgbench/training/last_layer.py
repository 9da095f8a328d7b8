"""Last-layer retraining (`--recipe dfr`, `--recipe linear-probe`): I/O around `dfr.fit_head`.

The frozen model is built through the one door (`models.options.build`), its penultimate features
over the head's data are read from the cache or extracted (sharded under torchrun), the head is fit
(`dfr.py`), and the model with its new head is saved as a bgbench checkpoint (`OUT/model.pt`), which
every command loads with `--model file:OUT/model.pt`. Its spec records what the head was fitted on
(`extra['last_layer']`: the backbone, its weights' sha256, the data, variant, split, the grid and
the chosen C); OUT/config.json and OUT/head.json say the same for people.

On Waterbirds' validation split (the default split of `dfr` there) the head is fitted as DFR's
repository fits it (`dfr.fit_head_as_repo`), its final scaler on the training split's features, which
are extracted (and cached) too.

A finished run rerun with the same config returns its model.pt untouched (as `bgbench train`
does); a run killed during extraction starts again from the cached features, if any.

Features: penultimate features of a frozen model over a dataset's images, extracted once and cached.

Last-layer retraining reads each image's features many times (every C of the grid, every
balanced subset), and a researcher fits several heads on one backbone (DFR, a linear probe, other
variants). So the features are computed once per (model, data, variant, split) and kept on disk:
`<cache>/<key>.npz` with the image ids, labels and features, where the key hashes the model's
spec (its weights' sha256, or its seeded init, its normalization and resize) and the dataset's
fingerprint. A changed model or dataset gets a new key, never a stale file. The file is written
to a temporary name and renamed, so a killed extraction leaves no half file behind.

Under torchrun each rank extracts whole batches of the images (block b to rank b mod K) and rank 0
joins them in order and writes the cache.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import torch

from ..console import status
from ..data.pixel_cache import cache_root, pixels_of
from ..data.groups import find_group_file, training_split
from ..data.manifest import image_groups
from ..data.resolve import resolve_layout
from ..data.waterbirds import find_waterbirds
from ..distributed import Ranks, setup, world_record
from ..errors import BgbenchError
from ..models.checkpoint import save_checkpoint
from ..evaluation.feed import Images, batches, chunks_of, gathered
from ..evaluation.numerics import strict_fp32
from ..models.heads import feature_width, pre_logits, with_head
from ..models.options import build
from ..models.spec import BgModel
from ..options import resolve_workers
from ..version import __version__
from .config import DFR_RETRAINS, LastLayerConfig
from .dfr import REPO_RETRAINS, fit_head, fit_head_as_repo, group_codes, head_fit_summary, worst_group_accuracy

#: Config keys that may change between a run and its rerun (they do not change the head).
RERUN_FREE_KEYS = ("out", "device", "batch_size", "feature_cache")


def fit_last_layer(cfg: LastLayerConfig, progress: bool = True) -> Optional[Path]:
    """Fit `cfg.recipe`'s head on `cfg.model`'s frozen features and save OUT/model.pt; returns its
    path (None on torchrun ranks other than 0)."""
    started = time.perf_counter()
    ranks = setup(cfg.device)
    out = Path(cfg.out).expanduser()
    # DFR on Waterbirds (read as `data.resolve` reads it: a groups.csv first), on its validation split
    as_repo = (cfg.recipe == "dfr" and find_group_file(cfg.data) is None and find_waterbirds(cfg.data) is not None
               and cfg.split in (None, "val"))
    split = cfg.split if cfg.split is not None else ("val" if as_repo else training_split(cfg.data))
    # the split a head is fitted on by default (train) must exist: an IN-9-layout dataset with only a val
    # split (the IN-9 release) is told to name it, before the model loads
    original = Path(cfg.data).expanduser() / "original"
    if cfg.split is None and split is not None and original.is_dir() and not (original / split).is_dir():
        splits = sorted(p.name for p in original.iterdir() if p.is_dir())
        raise BgbenchError(f"{cfg.data} has no {split} split to fit the head on (its splits: "
                           f"{', '.join(splits) or 'none'}); name one with --split, e.g. --split "
                           f"{splits[0] if splits else 'val'} (then evaluate on images the head was not fitted on)")
    if cfg.retrains is None:  # recorded as run, so a rerun compares like with like
        cfg = replace(cfg, retrains=REPO_RETRAINS if as_repo else DFR_RETRAINS)
    model = build(cfg.model_options(split))
    done = _finished(out, cfg, model.spec.checkpoint_sha256)
    if done is not None:
        if ranks.main:
            status(f"{done} already holds this head (same config and backbone); nothing to do")
        return done if ranks.main else None
    feature_width(model)  # a model without a readable penultimate layer fails here, before any work
    layout = resolve_layout(cfg.data, None if cfg.variant is None else [cfg.variant], split=split)
    # DFR on IN-9-layout data fits on MIXED-RAND, where backgrounds no longer predict the class; a linear
    # probe, and any recipe on other data, on ORIGINAL
    variant = cfg.variant or ("mixed_rand" if cfg.recipe == "dfr" and layout.kind == "in9"
                              and "mixed_rand" in layout.variants else "original")
    model.meet(layout, labels=False)  # the head is new: any label space; the input size is said
    groups = _groups(cfg, layout, variant) if ranks.main else None
    model = model.to(ranks.device).eval()
    cache = None if cfg.feature_cache == "none" else Path(cfg.feature_cache or cache_root() / "features").expanduser()

    def features(of, variant: str) -> Optional[Features]:  # of the layout `of`'s images of `variant`
        return penultimate_features(model, of.items(variant), cache_key(model, of.fingerprint(), variant, of.split),
                                    ranks, cache, cfg.batch_size, progress)
    feats = features(layout, variant)
    # Waterbirds' training split's features, which DFR's script fits its final StandardScaler on
    scaler = features(resolve_layout(cfg.data, split="train"), "original") if as_repo else None
    if feats is None:
        return None
    if feats.cached:
        status(f"features of {len(feats.image_ids)} {variant} images read from the cache ({cache / feats.key}.npz)")
    feature_groups = [groups[i] for i in feats.image_ids]
    if as_repo:
        status(f"DFR as its repository fits it on Waterbirds' validation split (dfr_evaluate_spurious.py): C chosen "
               f"on half of it{'' if cfg.held_out == 0.5 else ' (its half: --held-out does not apply)'}, "
               f"{cfg.retrains} balanced heads averaged, scaled as the {len(scaler.x)} training images")
        fit = fit_head_as_repo(feats.x, feats.labels, feature_groups, len(layout.classes), scaler.x,
                               c_grid=cfg.c_grid, penalty=cfg.penalty, retrains=cfg.retrains, seed=cfg.seed)
    else:
        fit = fit_head(feats.x, feats.labels, feature_groups, len(layout.classes),
                       balance=cfg.recipe == "dfr", c_grid=cfg.c_grid, penalty=cfg.penalty, retrains=cfg.retrains,
                       held_out=cfg.held_out, seed=cfg.seed)
    status(head_fit_summary(fit))
    pred = np.argmax(np.asarray(feats.x, dtype=np.float64) @ fit.weight.T + fit.bias, axis=1)
    fitted = {"train_accuracy": float((pred == feats.labels).mean()),
              "train_worst_group_accuracy": worst_group_accuracy(pred, feats.labels, group_codes(feature_groups))}
    provenance = {"recipe": cfg.recipe, "backbone": model.spec.name, "backbone_sha256": model.spec.checkpoint_sha256,
                  "backbone_checkpoint": model.spec.checkpoint, "data": str(Path(cfg.data).resolve()),
                  "data_fingerprint": layout.fingerprint(), "variant": variant, "split": layout.split,
                  "features": int(feats.x.shape[1]), "images": len(feats.image_ids), "feature_cache_key": feats.key,
                  **({"scaler_feature_cache_key": scaler.key} if as_repo else {}), **fit.provenance(), **fitted}
    new = with_head(model.cpu(), torch.from_numpy(fit.weight), torch.from_numpy(fit.bias), layout.classes,
                    provenance)
    # OUT/model.pt, head.json (with the wall time, which the checkpoint leaves out so that the same fit gives
    # the same bytes) and config.json, each whole or not at all; config.json comes last, as the mark of a
    # finished run, so a run killed at any moment before it is fitted again on rerun. The checkpoint is
    # serialized into memory: torch.save names the archive's entries after the file it writes, and a
    # temporary file's name would make each run's bytes differ.
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    save_checkpoint(new, buffer, recipe=cfg.recipe)
    _write_whole(out / "model.pt", buffer.getvalue())
    _write_whole(out / "head.json", (json.dumps({**provenance, "seconds": round(seconds, 2)}, indent=2,
                                                default=float) + "\n").encode())
    record = {**_config_record(cfg), "data_fingerprint": provenance["data_fingerprint"], "bgbench_version": __version__,
              **world_record(ranks)}
    _write_whole(out / "config.json", (json.dumps(record, indent=2) + "\n").encode())
    return out / "model.pt"


def _groups(cfg: LastLayerConfig, layout, variant: str) -> dict:
    """image id -> group: the data's groups (`data.manifest.image_groups`), else the class (DFR then
    balances the classes only, and says so)."""
    groups = image_groups(layout, variant)
    if groups is not None:
        return {k: (v if isinstance(v, str) else f"{v[0]} on {v[1]}") for k, v in groups.items()}
    if cfg.recipe == "dfr":
        status(f"note: {cfg.data} records no groups for {variant} (no manifest background classes, no group "
               f"file): DFR balances the classes only")
    return {it.image_id: layout.classes[it.label] for it in layout.items(variant)}


def _config_record(cfg: LastLayerConfig) -> dict:
    return {**asdict(cfg), "c_grid": list(cfg.c_grid), "data": str(cfg.data), "out": str(cfg.out)}


def _finished(out: Path, cfg: LastLayerConfig, backbone_sha256: Optional[str]) -> Optional[Path]:
    """OUT/model.pt when OUT holds a finished run of the same config on the same backbone weights;
    an error when OUT holds another run's files (nothing is overwritten)."""
    config, model = out / "config.json", out / "model.pt"
    if not config.is_file():
        return None
    try:
        saved = json.loads(config.read_text())
    except (OSError, ValueError):
        raise BgbenchError(f"{config} is not readable JSON; remove {out} or choose another --out") from None
    mine = _config_record(cfg)
    defaults = _config_record(LastLayerConfig(data=cfg.data, out=cfg.out, model=cfg.model))
    differ = [k for k in mine if k not in RERUN_FREE_KEYS and saved.get(k, defaults[k]) != mine[k]]  # an option
    # newer than the saved run counts as its default
    if differ:
        raise BgbenchError(f"{out} holds a run with another {', '.join(differ)}; choose another --out")
    head = out / "head.json"
    if model.is_file() and head.is_file():
        fitted_on = json.loads(head.read_text()).get("backbone_sha256")
        if fitted_on != backbone_sha256:  # the same file: name, retrained since
            raise BgbenchError(f"{out} holds a head fitted on other weights of {cfg.model} (sha256 "
                               f"{str(fitted_on)[:8]}, now {str(backbone_sha256)[:8]}); choose another --out")
    return model if model.is_file() else None


def _write_whole(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary sibling and a rename, so a kill leaves the old file or
    the new one, never half of one. The temporary name is fixed: a rerun overwrites a killed run's."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def last_layer_record(out: str | Path):
    """The finished run in `out`, read back from its files, as a result to record (the training
    run that an eval of `file:OUT/model.pt` links to by its sha256)."""
    from ..recording import Metric
    from .loop import saved_run
    head = json.loads((Path(out) / "head.json").read_text())
    return saved_run(out, [Metric("held_out_worst_group_accuracy" if head["group_balanced"] else "held_out_accuracy",
                                  head["held_out_scores"][str(head["c"])], n=head["held_out_images"]),
                           Metric("train_accuracy", head["train_accuracy"], n=head["images"]),
                           Metric("train_worst_group_accuracy", head["train_worst_group_accuracy"], n=head["images"])],
                     lambda config: {"backbone": head["backbone"], "variant": head["variant"], "c": head["c"],
                                     "images": head["images"]},
                     variant=head["variant"], chosen_c=head["c"], backbone_sha256=head["backbone_sha256"])


@dataclass
class Features:
    """image ids, labels (N,) and penultimate features (N, D) float32 of one variant split."""

    image_ids: List[str]
    labels: np.ndarray
    x: np.ndarray
    key: str
    cached: bool = False  # read from the cache rather than computed


def cache_key(model: BgModel, data_fingerprint: str, variant: str, split: str) -> str:
    """A hash of what decides the features: the model's spec (weights' sha256 or seeded init,
    normalization, input size and resize policy) and the data (fingerprint, variant, split)."""
    spec = model.spec.to_dict()
    what = {**{k: spec.get(k) for k in ("name", "arch", "mean", "std", "input_size", "resize", "interpolation",
                                        "checkpoint_sha256")},
            "init_seed": (spec.get("extra") or {}).get("init_seed"), "data": data_fingerprint, "variant": variant,
            "split": split}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def penultimate_features(model: BgModel, items, key: str, ranks: Ranks, cache: Optional[Path], batch_size: int,
                         progress: bool = True) -> Optional[Features]:
    """Features of `items` (a layout's items of one variant): from `cache` when it holds `key`,
    else computed (this rank's share under torchrun) and cached by rank 0. Rank 0 returns them,
    the other ranks None."""
    path = None if cache is None else Path(cache) / f"{key}.npz"
    if path is not None and path.is_file():
        found = _read(path, key, items, say=ranks.main)
        if found is not None:
            return found if ranks.main else None
    pixels = pixels_of(items)  # one entry for every rank; the forward starts as the first images land
    out: Dict[int, list] = {}  # this rank's batches through the feed, kept on the device until the pass ends
    with torch.inference_mode(), strict_fp32():
        for k, batch in batches(Images.of(pixels, batch_size), device=ranks.device,
                                workers=resolve_workers(None, str(ranks.device)), ranks=ranks,
                                progress=progress and ranks.main, desc="features"):
            out.setdefault(k, []).append(pre_logits(model, batch.x).float())
    rows = gathered({k: [row for f in fs for row in f.cpu().numpy()] for k, fs in out.items()},
                    len(chunks_of(len(pixels), batch_size)), ranks)  # in order, on rank 0
    if rows is None:
        return None
    feats = Features([it.image_id for it in items], np.asarray([it.label for it in items], dtype=np.int64),
                     np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32), key)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, image_ids=np.asarray(feats.image_ids), labels=feats.labels, x=feats.x)
        os.replace(tmp, path)
    return feats


def _read(path: Path, key: str, items, say: bool = True) -> Optional[Features]:
    """The cached features, if the file is whole and names the same images in the same order.

    A damaged file (truncated or emptied by a kill, a full disk or another tool: BadZipFile,
    EOFError, ...) is recomputed, not trusted, and `say`s so in one status line."""
    try:
        with np.load(path, allow_pickle=False) as z:
            ids, labels, x = [str(i) for i in z["image_ids"]], z["labels"], z["x"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        if say:
            status(f"feature cache {path} is damaged ({type(e).__name__}: {e}); recomputing the features")
        return None
    if ids != [it.image_id for it in items]:
        return None
    return Features(ids, labels.astype(np.int64), x.astype(np.float32), key, cached=True)
