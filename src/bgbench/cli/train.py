"""`bgbench train`: train or fine-tune a timm architecture with a recipe, resumably."""
from __future__ import annotations

import argparse

from ..training.config import TrainConfig
from ..training.recipes import list_recipes
from ..variants.registry import list_variants
from .arguments import (add_batch_size_arg, add_db_arg, add_device_arg, add_model_arg, add_output_args, add_seed_arg,
                        config_default)
from .folders import open_store
from .output import emit


def _default(name: str):
    return config_default(TrainConfig, name)


def register(sub) -> None:
    p = sub.add_parser("train", help="train or fine-tune a timm architecture with a recipe (erm, mixup, cutmix, "
                                     "bgswap), optionally with SWA; resumes from OUT/last.pt; under torchrun, "
                                     "DistributedDataParallel")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout")
    p.add_argument("--variant", default=_default("variant"), choices=list_variants(),
                   help="variant folder to train on (default %(default)s)")
    add_model_arg(p, required=False, default=_default("model"), help="timm:ARCH (default %(default)s)")
    p.add_argument("--init", metavar="CKPT",
                   help="fine-tune from a checkpoint of ARCH (any format `eval` reads) or a model string such as "
                        "zoo:efficientnet_lite0; the head is replaced by one for the dataset's classes")
    p.add_argument("--freeze", action="store_true", help="with --init: train the classifier head only")
    p.add_argument("--recipe", default=_default("recipe"), choices=list_recipes(),
                   help="erm: plain; mixup/cutmix: timm Mixup; bgswap: on-the-fly MIXED-RAND (needs fg_mask) "
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
    p.add_argument("--split", default=_default("split"), help="split folder to train on (default %(default)s)")
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
    add_output_args(p, quiet_help="no progress bars")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import train
    from ..console import status
    from ..recording import record
    result = train(args.data, args.out, model=args.model, variant=args.variant, split=args.split,
                   epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, recipe=args.recipe,
                   bgswap_p=args.bgswap_p, mixup_alpha=args.mixup_alpha, cutmix_alpha=args.cutmix_alpha,
                   swa=args.swa, swa_start=args.swa_start, swa_lr=args.swa_lr, init=args.init, freeze=args.freeze,
                   threads=args.threads, device=args.device, sync_bn=args.sync_bn, progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 saves, records and reports
        return 0
    path = result["checkpoint"]
    with open_store(args) as store:
        known = store.runs_of_checkpoint("train", result["checkpoint_sha256"])
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
