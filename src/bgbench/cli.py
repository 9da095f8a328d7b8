"""`bgbench <subcommand>`: one command for evaluation, data generation, training and the demo.

User errors (BgbenchError) print one line and exit with status 2; bugs keep their traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from . import __version__
from .classes import Mapping
from .errors import BgbenchError
from .models.registry import NORMS
from .variants import IN9_VARIANTS, list_variants


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="timm:ARCH, file:PATH or zoo:NAME")
    p.add_argument("--checkpoint", help="weights for a timm:ARCH model (bgbench, robustness, state_dict or TorchScript)")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="allow full unpickling of the checkpoint (runs code from the file: only for trusted files)")
    p.add_argument("--norm", choices=NORMS, default="auto",
                   help="input normalization (auto: from the checkpoint, else IN-9 or ImageNet by label space)")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    p.add_argument("--batch-size", type=int, default=64)


def _add_db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="SQLite results store (default ~/.bgbench/results.db or $BGBENCH_DB)")


def cmd_eval(args) -> int:
    from .api import evaluate
    from .models import create_model
    from .store import Store
    model = create_model(args.model, checkpoint=args.checkpoint, trust_checkpoint=args.trust_checkpoint, norm=args.norm)
    with Store(args.db) as store:
        report = evaluate(model, args.data, variants=args.variants, mapping=args.mapping, batch_size=args.batch_size,
                          device=args.device, store=store, progress=not args.quiet, seed=args.seed)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(report.table())
        print(f"run {report.run_id} stored in {store.path}")
    return 0


def cmd_synth(args) -> int:
    from .data.synthetic import write_dataset
    out = write_dataset(args.out, per_class=args.per_class, size=args.size, seed=args.seed, split=args.split,
                        bg_correlation=args.bg_correlation, progress=not args.quiet)
    print(f"wrote Synthetic-9 ({args.split}, {9 * args.per_class} images x 8 variants + fg_mask) to {out}")
    return 0


def cmd_train(args) -> int:
    from .train.loop import TrainConfig, train
    cfg = TrainConfig(data=args.data, variant=args.variant, model=args.model, out=args.out, split=args.split,
                      epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                      recipe=args.recipe, bgswap_p=args.bgswap_p, mixup_alpha=args.mixup_alpha,
                      cutmix_alpha=args.cutmix_alpha, swa=args.swa, swa_start=args.swa_start, swa_lr=args.swa_lr,
                      init=args.init, freeze=args.freeze, threads=args.threads)
    path = train(cfg, progress=not args.quiet)
    print(f"saved {path}  (evaluate with: bgbench eval --model file:{path} --data ROOT)")
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo
    run_demo(out=args.out, db=args.db, progress=not args.quiet)
    return 0


def cmd_models(args) -> int:
    from .models import list_models
    for name in list_models(args.pattern):
        print(name)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bgbench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bgbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("eval", help="accuracy per IN-9 variant with 95%% intervals, and the BG-Gap")
    _add_model_args(p)
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout")
    p.add_argument("--variants", nargs="+", choices=list_variants(), metavar="VARIANT",
                   help=f"variants to evaluate (default: those of {', '.join(IN9_VARIANTS)} present)")
    p.add_argument("--mapping", choices=[m.value for m in Mapping], default=Mapping.ARGMAX.value,
                   help="1000-class models: 'argmax' (the paper's rule) or 'superclass' (sum of probabilities)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_db_arg(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("synth", help="write Synthetic-9 in the IN-9 layout")
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--per-class", type=int, default=50)
    p.add_argument("--split", choices=["train", "val"], default="val")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bg-correlation", type=float, default=0.95,
                   help="probability that the background texture matches the class")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_synth)

    from .train.augment import DEFAULT_BGSWAP_P, DEFAULT_CUTMIX_ALPHA, DEFAULT_MIXUP_ALPHA, list_recipes
    from .train.swa import DEFAULT_SWA_START
    p = sub.add_parser("train", help="train or fine-tune a timm architecture with a recipe (erm, mixup, cutmix, "
                                     "bgswap), optionally with SWA; resumes from OUT/last.pt")
    p.add_argument("--data", required=True)
    p.add_argument("--variant", default="original", choices=list_variants())
    p.add_argument("--model", default="timm:resnet10t", help="timm:ARCH")
    p.add_argument("--init", metavar="CKPT",
                   help="fine-tune from a checkpoint of ARCH (any format `eval` reads) or a model string such as "
                        "zoo:efficientnet_lite0; the head is replaced by one for the dataset's classes")
    p.add_argument("--freeze", action="store_true", help="with --init: train the classifier head only")
    p.add_argument("--recipe", default="erm", choices=list_recipes(),
                   help="erm: plain; mixup/cutmix: timm Mixup; bgswap: on-the-fly MIXED-RAND (needs fg_mask)")
    p.add_argument("--bgswap-p", type=float, default=DEFAULT_BGSWAP_P,
                   help="bgswap: probability that an image's background is swapped (default %(default)s)")
    p.add_argument("--mixup-alpha", type=float, default=DEFAULT_MIXUP_ALPHA, help="mixup: Beta(a, a) (default %(default)s)")
    p.add_argument("--cutmix-alpha", type=float, default=DEFAULT_CUTMIX_ALPHA,
                   help="cutmix: Beta(a, a) (default %(default)s)")
    p.add_argument("--swa", action=argparse.BooleanOptionalAction, default=False,
                   help="stochastic weight averaging over the last epochs; the saved model is the average")
    p.add_argument("--swa-start", type=float, default=DEFAULT_SWA_START,
                   help="share of epochs before averaging starts (default %(default)s)")
    p.add_argument("--swa-lr", type=float, help="constant lr while averaging (default lr/4)")
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="train")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("demo", help="Synthetic-9 end to end: ORIGINAL vs MIXED-RAND training, BG-Gaps (offline)")
    p.add_argument("--out", default="bgbench-demo")
    _add_db_arg(p)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("models", help="list model strings (zoo and timm architectures)")
    p.add_argument("pattern", nargs="?", default="zoo:*", help="fnmatch pattern, e.g. 'timm:resnet*'")
    p.set_defaults(func=cmd_models)

    for module in _command_modules():
        module.register(sub)
    return parser


def _command_modules():
    """Subcommands that live beside the code they drive; each module has `register(subparsers)`
    that adds its parser and sets `func`. Imported lazily so `bgbench --help` stays cheap."""
    import importlib
    return [importlib.import_module(f"bgbench.{name}") for name in COMMAND_MODULES]


# One line per subcommand module: keep this list sorted.
COMMAND_MODULES: List[str] = [
    "cli_build",
    "cli_challenge",
]


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BgbenchError as e:
        print(f"bgbench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
