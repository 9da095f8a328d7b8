"""`bgbench train`: train or fine-tune a timm architecture with a recipe, resumably; or refit the
last layer of any model (dfr, linear-probe). The flags come from `TrainConfig` and, for the
last-layer recipes, `LastLayerConfig` (the model options included); the command passes the ones
given to `bgbench.train`, which decides which kind of training the recipe is and refuses a flag
the other kind takes."""
from __future__ import annotations

import argparse

from ..options import flagged_fields
from ..training.config import LastLayerConfig, TrainConfig
from .arguments import add_config_flags, add_output_args
from .output import emit, open_store


def register(sub) -> None:
    p = sub.add_parser("train", help="train or fine-tune a timm architecture with a recipe (erm, mixup, cutmix, "
                                     "bgswap), optionally with SWA, resuming from OUT/last.pt; or refit only the last "
                                     "layer of any model (dfr, linear-probe); under torchrun, DistributedDataParallel "
                                     "(the last-layer recipes: sharded feature extraction)")
    add_config_flags(p, TrainConfig)
    g = p.add_argument_group("last-layer recipes (dfr, linear-probe): the frozen model and the head's fit")
    add_config_flags(g, LastLayerConfig, skip=tuple(f.name for f, _ in flagged_fields(TrainConfig)))
    add_output_args(p, quiet_help="no progress bars")
    p.set_defaults(train_defaults={a.dest: a.default for a in p._actions})


#: The fields of the two configs whose flags this command has.
FLAGGED = tuple(dict.fromkeys(f.name for cls in (TrainConfig, LastLayerConfig) for f, _ in flagged_fields(cls)))


def run(args: argparse.Namespace) -> int:
    from ..api import train
    from ..console import status
    from ..recording import record
    defaults = args.train_defaults  # the training flags given (those whose value is not the flag's default)
    options = {name: getattr(args, name) for name in FLAGGED
               if name not in ("data", "out") and getattr(args, name) != defaults.get(name)}
    result = train(args.data, args.out, progress=not args.quiet, **options)
    if result is None:  # a torchrun rank other than 0: rank 0 saves, records and reports
        return 0
    path = result["checkpoint"]
    with open_store(args) as store:
        run_id = record(result, store)
        if getattr(result, "recorded_before", False):
            status(f"{path} is already recorded as training run {run_id} in {store.path}; nothing new recorded")
        else:
            status(f"training run {run_id} stored in {store.path}")
    doc = {"run_id": run_id, **result.outputs()}
    return emit(args, doc, f"saved {path} (training run {run_id}); evaluate with: "
                           f"bgbench eval --model file:{path} --data ROOT")
