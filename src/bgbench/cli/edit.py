"""`bgbench edit`: ImageNet-E attribute edits (remove, size, position, rotation, background complexity)."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ..edits.pipeline import EditConfig
from ..errors import BgbenchError
from ..signatures import default_of
from .arguments import add_config_flags, config_options, add_model_args, add_output_args
from .output import emit, record_dataset_run

#: `EditConfig`'s flags that `--help` lists after the model's, and the two it lists just before
#: --plugin: the order it has always had.
AFTER_MODEL = ("adv_eps", "adv_steps", "shard", "overwrite")
BEFORE_PLUGIN = ("device", "classifier_scale")


def register(sub) -> None:
    p = sub.add_parser("edit", help="ImageNet-E attribute edits of a masked dataset, one IN-9-layout folder per level")
    add_config_flags(p, EditConfig, skip=AFTER_MODEL + BEFORE_PLUGIN)
    add_config_flags(p, EditConfig, only=BEFORE_PLUGIN)
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first, so that it can register inpainters or complexity editors: a module "
                        "name (found in the current folder too, e.g. my_backends for ./my_backends.py) or a path "
                        "to a .py file")
    add_model_args(p, EditConfig, required=False, device=False,
                   model_help="classifier for the adversarial complexity level (timm:ARCH, file:PATH, zoo:NAME, "
                              "openclip:ARCH[@PRETRAINED], hf:REPO_OR_DIR); without it that level is skipped")
    add_config_flags(p, EditConfig, only=AFTER_MODEL)
    add_output_args(p)


def import_plugin(name: str) -> None:
    """Import a backend plugin: a path to a .py file, or a module name, looked up in the current
    folder as well as on sys.path (the `bgbench` script's sys.path does not hold the current folder)."""
    path = Path(name)
    try:
        if name.endswith(".py") or os.sep in name:
            if not path.is_file():
                raise BgbenchError(f"--plugin {name}: no such file")
            spec = importlib.util.spec_from_file_location(f"bgbench_plugin_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return
        cwd = os.getcwd()
        added = cwd not in sys.path and "" not in sys.path
        if added:
            sys.path.insert(0, cwd)
        try:
            importlib.import_module(name)
        finally:
            if added:
                sys.path.remove(cwd)
    except ImportError as e:
        raise BgbenchError(f"--plugin {name}: cannot import it ({e}); give a module in the current folder or on "
                           f"PYTHONPATH, or a path to a .py file") from None


def run(args: argparse.Namespace) -> int:
    from .. import console
    from ..api import IMAGENET_E, build
    from ..models.options import ModelOptions
    for name in args.plugin:
        import_plugin(name)
    model = None
    if args.model:
        from .arguments import load_model
        model = load_model(args)
    elif any(getattr(args, name) != default_of(ModelOptions, name)
             for name in ("checkpoint", "norm", "resize", "labels", "templates")):
        raise BgbenchError("--checkpoint, --norm, --resize, --labels and --templates describe the --model of the "
                           "adversarial level; pass --model too")
    options = config_options(args, EditConfig)
    result = build(preset=IMAGENET_E, model=model, batch_size=args.batch_size, progress=not args.quiet, **options)
    if result is None:  # a torchrun rank other than 0: rank 0 writes the tables, records and reports
        return 0
    for why in result.skipped:
        console.status(f"skipped {why}")
    doc, text = result.outputs(), result.text()
    record_dataset_run(args, result, doc, "edit")
    return emit(args, doc, text)
