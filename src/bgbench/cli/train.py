"""`bgbench train`: train or fine-tune a timm architecture with a recipe, resumably."""
from __future__ import annotations

import argparse

from ..training.recipes import (DEFAULT_BGSWAP_P, DEFAULT_CUTMIX_ALPHA, DEFAULT_MIXUP_ALPHA, DEFAULT_SWA_START,
                             list_recipes)
from ..variants.registry import list_variants
from .common import add_db_arg


def register(sub) -> None:
    p = sub.add_parser("train", help="train or fine-tune a timm architecture with a recipe (erm, mixup, cutmix, "
                                     "bgswap), optionally with SWA; resumes from OUT/last.pt")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout")
    p.add_argument("--variant", default="original", choices=list_variants(), help="variant folder to train on")
    p.add_argument("--model", default="timm:resnet10t", help="timm:ARCH (default %(default)s)")
    p.add_argument("--init", metavar="CKPT",
                   help="fine-tune from a checkpoint of ARCH (any format `eval` reads) or a model string such as "
                        "zoo:efficientnet_lite0; the head is replaced by one for the dataset's classes")
    p.add_argument("--freeze", action="store_true", help="with --init: train the classifier head only")
    p.add_argument("--recipe", default="erm", choices=list_recipes(),
                   help="erm: plain; mixup/cutmix: timm Mixup; bgswap: on-the-fly MIXED-RAND (needs fg_mask)")
    p.add_argument("--bgswap-p", type=float, default=DEFAULT_BGSWAP_P,
                   help="bgswap: probability that an image's background is swapped (default %(default)s)")
    p.add_argument("--mixup-alpha", type=float, default=DEFAULT_MIXUP_ALPHA,
                   help="mixup: Beta(a, a) (default %(default)s)")
    p.add_argument("--cutmix-alpha", type=float, default=DEFAULT_CUTMIX_ALPHA,
                   help="cutmix: Beta(a, a) (default %(default)s)")
    p.add_argument("--swa", action=argparse.BooleanOptionalAction, default=False,
                   help="stochastic weight averaging over the last epochs; the saved model is the average")
    p.add_argument("--swa-start", type=float, default=DEFAULT_SWA_START,
                   help="share of epochs before averaging starts (default %(default)s)")
    p.add_argument("--swa-lr", type=float, help="constant lr while averaging (default lr/4)")
    p.add_argument("--out", required=True, help="run folder: model.pt, config.json, log.jsonl, last.pt")
    p.add_argument("--split", default="train")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import train
    from ..runs import record
    from ..store import Store
    result = train(args.data, args.out, model=args.model, variant=args.variant, split=args.split,
                   epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, recipe=args.recipe,
                   bgswap_p=args.bgswap_p, mixup_alpha=args.mixup_alpha, cutmix_alpha=args.cutmix_alpha,
                   swa=args.swa, swa_start=args.swa_start, swa_lr=args.swa_lr, init=args.init, freeze=args.freeze,
                   threads=args.threads, progress=not args.quiet)
    path = result["checkpoint"]
    with Store(args.db) as store:
        run_id = record(result, store)
    print(f"saved {path} (training run {run_id}); evaluate with: bgbench eval --model file:{path} --data ROOT")
    return 0
