"""`bgbench edit`: ImageNet-E attribute edits (remove, size, position, rotation, background complexity)."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ..edits.pipeline import BACKENDS, EditConfig
from ..edits.registry import ATTRIBUTES, list_complexity_editors, list_inpainters
from ..errors import BgbenchError
from ..signatures import default_of
from .arguments import add_device_arg, add_model_args, add_output_args, add_seed_arg, add_shard_arg
from .output import emit, record_dataset_run


def _default(name: str):
    return default_of(EditConfig, name)


def register(sub) -> None:
    p = sub.add_parser("edit", help="ImageNet-E attribute edits of a masked dataset, one IN-9-layout folder per level")
    p.add_argument("--data", required=True, help="dataset root in the IN-9 layout with fg_mask/ (IN-9, Synthetic-9, a build)")
    p.add_argument("--out", required=True, help="output root: DIR/original, DIR/fg_mask and DIR/<attribute>_<level>")
    p.add_argument("--attributes", nargs="+", choices=ATTRIBUTES, default=list(_default("attributes")),
                   metavar="ATTR",
                   help=f"attributes to edit (default: all of {', '.join(ATTRIBUTES)})")
    p.add_argument("--levels", nargs="+", metavar="PATTERN",
                   help="only these level folders (fnmatch patterns, e.g. 'size_*' complexity_20)")
    p.add_argument("--angles", nargs="+", type=float, metavar="DEG",
                   help="rotation angles in degrees, one folder each (default: one seeded random angle per image, "
                        "rotation_random; seed 003 gives no fixed angle). The object keeps its size; one that "
                        "no longer fits is rejected (does_not_fit)")
    p.add_argument("--split", choices=["val", "train"], default=_default("split"),
                   help="split folder to edit (default %(default)s)")
    add_seed_arg(p, _default("seed"), "seeds positions and random angles per image")
    p.add_argument("--workers", type=int, default=_default("workers"),
                   help="worker processes (the output does not depend on it; default %(default)s)")
    p.add_argument("--inpainter", default=_default("inpainter"),
                   help=f"object-removal backend (registered: {', '.join(list_inpainters())}; default %(default)s)")
    p.add_argument("--complexity-editor", default=_default("complexity_editor"),
                   help=f"background-complexity backend (registered: {', '.join(list_complexity_editors())}; "
                        f"default %(default)s)")
    p.add_argument("--backend", choices=BACKENDS, default=_default("backend"),
                   help="how the complexity levels are made: 'classical' (gradient steps on the pixels, no weights; "
                        "default) or 'diffusion' (ImageNet-E's blended guided diffusion, needs --weights and the "
                        "'diffusion' extra)")
    p.add_argument("--weights", metavar="FILE_OR_DIR",
                   help="the diffusion backend's network: guided-diffusion's 256x256_diffusion_uncond.pt (or any "
                        "ADM state dict, .pt or .safetensors), a diffusers UNet2DModel folder, or a hub name "
                        "(the only thing that downloads)")
    p.add_argument("--respacing", default=_default("respacing"),
                   help="diffusion steps kept of the 1,000 (guided-diffusion's timestep_respacing; "
                        "default %(default)s)")
    p.add_argument("--skip", type=int, default=_default("skip"),
                   help="respaced steps skipped: the edit starts from the image noised to step steps-skip "
                        "(default %(default)s: the toolkit's demo runs 10 of 100)")
    p.add_argument("--diffusion-size", type=int, default=_default("diffusion_size"), metavar="PX",
                   help="square size the diffusion runs at (default: the model's, 256 for a guided-diffusion file); "
                        "results are resized back to the image's size")
    p.add_argument("--head-channels", type=int, default=_default("head_channels"),
                   help="attention head width of a guided-diffusion file, not stored in it (default %(default)s, "
                        "the released model's)")
    p.add_argument("--range-lambda", type=float, default=_default("range_lambda"),
                   help="weight of the toolkit's range loss on x0 (default %(default)s)")
    p.add_argument("--l2-lambda", type=float, default=_default("l2_lambda"),
                   help="weight of the toolkit's L2 background-preservation loss (default %(default)s: off, as in "
                        "run.sh)")
    p.add_argument("--lpips-lambda", type=float, default=_default("lpips_lambda"),
                   help="weight of the toolkit's LPIPS background-preservation loss (default %(default)s: off; needs "
                        "lpips and its VGG weights)")
    p.add_argument("--coarse-to-fine", action="store_true",
                   help="erode the edited region by 51 and 31 px early on, as the toolkit's --coarse_to_fine")
    add_device_arg(p, _default("device"))  # the diffusion backend's network; its noise is drawn on the CPU
    p.add_argument("--classifier-scale", type=float, default=_default("classifier_scale"),
                   help="with --backend diffusion and --model: the adversarial level's classifier-guidance scale "
                        "(default %(default)s, the toolkit's)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first, so that it can register inpainters or complexity editors: a module "
                        "name (found in the current folder too, e.g. my_backends for ./my_backends.py) or a path "
                        "to a .py file")
    add_model_args(p, EditConfig, required=False, device=False,
                   model_help="classifier for the adversarial complexity level (timm:ARCH, file:PATH, zoo:NAME, "
                              "openclip:ARCH[@PRETRAINED], hf:REPO_OR_DIR); without it that level is skipped")
    p.add_argument("--adv-eps", type=float, default=_default("adv_eps"),
                   help=f"L-inf bound of the adversarial background (default {_default('adv_eps'):.4g} = 16/255)")
    p.add_argument("--adv-steps", type=int, default=_default("adv_steps"),
                   help="ascent steps of the adversarial level (default %(default)s)")
    add_shard_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing edit of this split")
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
    result = build(args.out, preset=IMAGENET_E, data=args.data, model=model, attributes=args.attributes,
                   levels=args.levels, angles=args.angles, split=args.split, seed=args.seed, workers=args.workers,
                   inpainter=args.inpainter, complexity_editor=args.complexity_editor, adv_eps=args.adv_eps,
                   adv_steps=args.adv_steps, batch_size=args.batch_size, overwrite=args.overwrite,
                   shard=args.shard, backend=args.backend, weights=args.weights, respacing=args.respacing,
                   skip=args.skip, diffusion_size=args.diffusion_size, head_channels=args.head_channels,
                   range_lambda=args.range_lambda, l2_lambda=args.l2_lambda, lpips_lambda=args.lpips_lambda,
                   coarse_to_fine=args.coarse_to_fine, classifier_scale=args.classifier_scale, device=args.device,
                   progress=not args.quiet)
    if result is None:  # a torchrun rank other than 0: rank 0 writes the tables, records and reports
        return 0
    for why in result.skipped:
        console.status(f"skipped {why}")
    doc, text = result.outputs(), result.text()
    record_dataset_run(args, result, doc, "edit")
    return emit(args, doc, text)
