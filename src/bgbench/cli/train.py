"""`bgbench train`: train or fine-tune a timm architecture with a recipe, resumably."""
from __future__ import annotations

import argparse
import dataclasses

from ..errors import BgbenchError
from ..models.options import MODEL_HELP, ModelOptions
from ..options import FLAG
from ..training.config import TrainConfig
from ..training.recipes import list_recipes
from ..variants.registry import list_variants
from .arguments import (add_batch_size_arg, add_config_flags, add_db_arg, add_device_arg, add_model_arg,
                        add_output_args, add_seed_arg, config_default)
from .folders import open_store
from .output import emit


def _default(name: str):
    return config_default(TrainConfig, name)


def register(sub) -> None:
    p = sub.add_parser("train", help="train or fine-tune a timm architecture with a recipe (erm, mixup, cutmix, "
                                     "bgswap), optionally with SWA, resuming from OUT/last.pt; or refit only the last "
                                     "layer of any model (dfr, linear-probe); under torchrun, DistributedDataParallel "
                                     "(the last-layer recipes: sharded feature extraction)")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout (the last-layer recipes also read "
                                                 "group datasets: Waterbirds' metadata.csv, a groups.csv)")
    p.add_argument("--variant", choices=list_variants(),
                   help=f"variant folder to train on (default {_default('variant')}; dfr: mixed_rand on IN-9-layout "
                        f"data, where the background no longer predicts the class)")
    add_model_arg(p, required=False, help=f"timm:ARCH (default {_default('model')}); the last-layer recipes: "
                                          f"{MODEL_HELP}")
    p.add_argument("--init", metavar="CKPT",
                   help="fine-tune from a checkpoint of ARCH (any format `eval` reads) or a model string such as "
                        "zoo:efficientnet_lite0; the head is replaced by one for the dataset's classes")
    p.add_argument("--freeze", action="store_true", help="with --init: train the classifier head only")
    p.add_argument("--recipe", default=_default("recipe"), choices=list_recipes(),
                   help="erm: plain; mixup/cutmix: timm Mixup; bgswap: on-the-fly MIXED-RAND (needs fg_mask); "
                        "dfr: last-layer retraining (Kirichenko et al. 2023), a group-balanced logistic-regression "
                        "head on the frozen model's penultimate features; linear-probe: the same unbalanced "
                        "(default %(default)s)")
    p.add_argument("--bgswap-p", type=float, default=_default("bgswap_p"),
                   help="bgswap: probability that an image's background is swapped (default %(default)s)")
    p.add_argument("--mixup-alpha", type=float, default=_default("mixup_alpha"),
                   help="mixup: Beta(a, a) (default %(default)s)")
    p.add_argument("--cutmix-alpha", type=float, default=_default("cutmix_alpha"),
                   help="cutmix: Beta(a, a) (default %(default)s)")
    p.add_argument("--swa", action=argparse.BooleanOptionalAction, default=_default("swa"),
                   help="stochastic weight averaging over the last epochs; the saved model is the average")
    p.add_argument("--swa-start", type=float, default=_default("swa_start"),
                   help="share of epochs before averaging starts (default %(default)s)")
    p.add_argument("--swa-lr", type=float, help="constant lr while averaging (default lr/4)")
    p.add_argument("--out", required=True, help="run folder: model.pt, config.json, log.jsonl, last.pt")
    p.add_argument("--split", help="split to train on (default: train; a groups.csv without a split column: all its "
                                   "rows; DFR's Waterbirds results fit the head on --split val)")
    p.add_argument("--epochs", type=int, default=_default("epochs"), help="epochs (default %(default)s)")
    add_batch_size_arg(p, _default("batch_size"), what="images per training step (under torchrun: of all processes "
                                                        "together, a multiple of their number)")
    p.add_argument("--lr", type=float, default=_default("lr"),
                   help="peak learning rate of the one-cycle schedule, AdamW (default %(default)s)")
    add_seed_arg(p, _default("seed"), "seed of the initialization, the order of images and the augmentations")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    add_device_arg(p, _default("device"))
    p.add_argument("--sync-bn", action="store_true", default=_default("sync_bn"),
                   help="under torchrun on GPUs: SyncBatchNorm, batch statistics over every process's images "
                        "(default: each process normalizes with its own share of the batch)")
    _add_last_layer_args(p)
    add_output_args(p, quiet_help="no progress bars")
    add_db_arg(p)
    p.set_defaults(func=run, train_defaults={a.dest: a.default for a in p._actions})


def _add_last_layer_args(p) -> None:
    from ..models.options import ModelOptions
    g = p.add_argument_group("last-layer recipes (dfr, linear-probe): the frozen model and the head's fit")
    add_config_flags(g, ModelOptions, skip=("model",))
    g.add_argument("--c-grid", type=float, nargs="+", default=list(_last("c_grid")), metavar="C",
                   help="inverse regularization strengths tried, chosen on the held-out share (default: DFR's, "
                        "%(default)s)")
    g.add_argument("--penalty", choices=("l1", "l2"), default=_last("penalty"),
                   help="the head's regularization (default %(default)s, DFR's)")
    g.add_argument("--held-out", type=float, default=_last("held_out"),
                   help="share of each group held out to choose C (default %(default)s)")
    g.add_argument("--retrains", type=int, default=_last("retrains"),
                   help="dfr: group-balanced subsets whose heads are averaged (default %(default)s)")
    g.add_argument("--feature-cache", metavar="DIR",
                   help="folder of cached penultimate features (default $BGBENCH_CACHE/features or "
                        "~/.cache/bgbench/features; 'none': no cache)")


def _last(name: str):
    from ..training.config import LastLayerConfig
    return config_default(LastLayerConfig, name)


#: The model flags (`ModelOptions`'s) the last-layer recipes take, less --model (train's own).
MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(ModelOptions)
                     if f.name not in ("model", "data", "split") and FLAG in f.metadata or f.name == "device")


#: Flags of full training that a last-layer recipe has no use for, and of the last-layer recipes
#: that full training has none for: given with the other kind, they are an error, not ignored.
FULL_ONLY = ("epochs", "lr", "bgswap_p", "mixup_alpha", "cutmix_alpha", "swa", "swa_start", "swa_lr", "init", "freeze",
             "threads", "sync_bn")
LAST_ONLY = (*(f for f in MODEL_FIELDS if f not in ("device",)), "c_grid", "penalty", "held_out", "retrains",
             "feature_cache")


def _changed(args: argparse.Namespace, names, parser_defaults: dict) -> list:
    return [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) != parser_defaults.get(n)]


def run(args: argparse.Namespace) -> int:
    from ..api import train
    from ..console import status
    from ..recording import record
    from ..training.recipes import last_layer_recipes
    defaults = args.train_defaults
    last = args.recipe in last_layer_recipes()
    wrong = _changed(args, FULL_ONLY if last else LAST_ONLY, defaults)
    if wrong:
        kind = f"--recipe {args.recipe} fits the last layer only" if last else f"--recipe {args.recipe} trains the " \
            "whole network"
        raise BgbenchError(f"{kind}: {', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply")
    if last:
        if args.model is None:
            raise BgbenchError(f"--recipe {args.recipe} refits the last layer of a trained model: name it with --model")
        result = train(args.data, args.out, model=args.model, recipe=args.recipe, variant=args.variant,
                       split=args.split, c_grid=tuple(args.c_grid), penalty=args.penalty, held_out=args.held_out,
                       retrains=args.retrains, seed=args.seed, batch_size=args.batch_size, device=args.device,
                       feature_cache=args.feature_cache, progress=not args.quiet,
                       **{f: getattr(args, f) for f in MODEL_FIELDS if f != "device"})
    else:
        result = train(args.data, args.out, model=args.model or _default("model"),
                       variant=args.variant or _default("variant"), split=args.split or _default("split"),
                       epochs=args.epochs,
                       batch_size=args.batch_size, lr=args.lr, seed=args.seed, recipe=args.recipe,
                       bgswap_p=args.bgswap_p, mixup_alpha=args.mixup_alpha, cutmix_alpha=args.cutmix_alpha,
                       swa=args.swa, swa_start=args.swa_start, swa_lr=args.swa_lr, init=args.init,
                       freeze=args.freeze, threads=args.threads, device=args.device, sync_bn=args.sync_bn,
                       progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 saves, records and reports
        return 0
    path = result["checkpoint"]
    with open_store(args) as store:
        known = _recorded(store, result["checkpoint_sha256"], path)
        if known:  # a finished run rerun: the same model.pt is already recorded
            run_id = known[-1]["id"]
            status(f"{path} is already recorded as training run {run_id} in {store.path}; nothing new recorded")
        else:
            run_id = record(result, store)
            status(f"training run {run_id} stored in {store.path}")
    doc = {"run_id": run_id, **result.outputs()}
    emit(args, doc, f"saved {path} (training run {run_id}); evaluate with: "
                    f"bgbench eval --model file:{path} --data ROOT")
    return 0


def _recorded(store, sha256: str, path) -> list:
    """Finished training runs that recorded this very file: the same bytes at the same path. The
    same fit saved to another --out has the same bytes (fits are deterministic) but is a run of its
    own, and the record of another path says nothing about this one."""
    from pathlib import Path
    here = Path(path).resolve()
    return [r for r in store.runs_of_checkpoint("train", sha256) if _checkpoint_of(r) == here]


def _checkpoint_of(run):
    """The checkpoint a stored training run wrote (from its outputs), resolved; None if it names none."""
    import json
    from pathlib import Path
    saved = json.loads(run["outputs"] or "{}").get("checkpoint")
    return Path(saved).resolve() if saved else None
