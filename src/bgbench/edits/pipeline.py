"""`bgbench edit`: ImageNet-E attribute edits of a masked IN-9-layout dataset, through the one writer.

Per image (the writer's worker pool, single-threaded OpenCV and torch): decode, check the mask,
make the clean background once, render every edit level with a generator seeded by (seed, image
id, level), measure the pixel rate and the background's GLCM statistics, and write PNGs. The
adversarial complexity level needs the classifier, so it runs afterwards in the parent, reading
the written originals through the feed (`evaluation.feed`); its batches never cross a block of
`--batch-size` consecutive images of the sorted list.

Images are independent, so `--shard K/N` takes whole blocks (block b goes to shard b mod N): a
shard's adversarial batches are then the very batches of an unsharded run, and `bgbench merge`
only copies files and joins the tables. Under torchrun the processes take the same blocks (rank r
of K as shard r/K) but write into one output folder, and rank 0 joins their rows: no merge step.
The output depends on the seed, never on the number of workers, shards or processes. A bad mask
or a failed edit is a row in rejects.csv, never an abort.

With `--backend diffusion` the complexity levels (lambda = -20 and 20, and with `--model` the
adversarial one by classifier guidance) and the size, position and rotation levels (the classical
composite, its background regenerated around the object: the paper's Algorithm 2) are made by
ImageNet-E's blended guided diffusion (`diffusion`) from the named weights, batched in the
parent, each image with its own generator seeded by (seed, image id), the same at every level as
the toolkit's one seed is; remove stays classical.
"""
from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from itertools import groupby
from pathlib import Path
from functools import cache
from typing import List, Optional, Sequence, Tuple

import cv2
import numpy as np

from .. import checks, console
from ..data import manifest as M
from ..data.in9 import discover
from ..data.layout import MASK_DIR
from ..data.pool import worker_pool
from ..data.shards import Shard, ShardRecord, inputs_fingerprint, select
from ..data.writer import (EMPTY_MASK, MISSING_MASK, DatasetWriter, Rejected, Target, manifest_rows, read_image,
                           read_mask_or_reject, reject_rows)
from ..distributed import broadcast, gather, setup, world_record
from ..errors import BgbenchError, DataError
from ..evaluation.metrics import finite_or_none
from ..options import DEVICE_HELP, SHARD_HELP, WRITE_WORKERS_HELP, flag, runtime
from ..provenance import Provenance
from . import complexity as C
from .functions import DoesNotFit, glcm_stats, pixel_rate
from .registry import (ADVERSARIAL, ATTRIBUTES, POSITION_RATE, SIZE_RATES, Context, Edit, edits_for,
                       get_complexity_editor, get_inpainter, list_complexity_editors, list_inpainters)
from .result import ORIGINAL, EditResult
from .schedule import Schedule

KIND = "edit"
CLASSICAL, DIFFUSION = "classical", "diffusion"
BACKENDS = (CLASSICAL, DIFFUSION)
RATE_TOLERANCE = 0.10  # a size/position edit must reach its pixel rate within 10%

# rejects.csv reasons of this job (besides the writer's unreadable_image, missing/bad/empty_mask)
NO_BACKGROUND = "no_background"
RATE_UNREACHABLE = "rate_unreachable"
DOES_NOT_FIT = "does_not_fit"  # a rotated object larger than the image (never shrunk to fit)
EDIT_FAILED = "edit_failed"
#: What an edit (or a plugged-in backend) raises when it cannot edit this image: the image is
#: rejected at that level and the run goes on. Anything else (a TypeError, a KeyError: a bug, not
#: an image) stops the run, so a programming error is never filed as a rejected image.
EDIT_FAILURES = (ValueError, RuntimeError, ArithmeticError, cv2.error)


@dataclass(frozen=True)
class EditConfig:
    """The edit job's options, each its `bgbench edit` flag (`options.flag`)."""

    data: Path = field(metadata=flag(
        "--data", "dataset root in the IN-9 layout with fg_mask/ (IN-9, Synthetic-9, a build)", required=True))
    out: Path = field(metadata=flag(
        "--out", "output root: DIR/original, DIR/fg_mask and DIR/<attribute>_<level>", required=True))
    attributes: Tuple[str, ...] = field(default=ATTRIBUTES, metadata=flag(
        "--attributes", f"attributes to edit (default: all of {', '.join(ATTRIBUTES)})", choices=ATTRIBUTES,
        nargs="+", metavar="ATTR", type=str))
    levels: Optional[Tuple[str, ...]] = field(default=None, metadata=flag(
        "--levels", "only these level folders (fnmatch patterns, e.g. 'size_*' complexity_20)", nargs="+",
        metavar="PATTERN"))
    angles: Optional[Tuple[float, ...]] = field(default=None, metadata=flag(
        "--angles", "rotation angles in degrees, one folder each (default: one seeded random angle per image, "
        "rotation_random; seed 003 gives no fixed angle). The object keeps its size; one that no longer fits is "
        "rejected (does_not_fit)", nargs="+", type=float, metavar="DEG"))
    split: str = field(default="val", metadata=flag(
        "--split", "split folder to edit (default %(default)s)", choices=("val", "train")))
    seed: int = field(default=0, metadata=flag(
        "--seed", "seeds positions and random angles per image (default %(default)s)"))
    workers: int = field(default=1, metadata=runtime(flag(
        "--workers", WRITE_WORKERS_HELP)))
    inpainter: str = field(default="telea", metadata=flag(
        "--inpainter", f"object-removal backend (registered: {', '.join(list_inpainters())}; default %(default)s)"))
    complexity_editor: str = field(default="fft", metadata=flag(
        "--complexity-editor", f"background-complexity backend (registered: {', '.join(list_complexity_editors())}; "
        f"default %(default)s)"))
    adv_eps: float = field(default=C.ADV_EPS, metadata=flag(
        "--adv-eps", f"L-inf bound of the adversarial background (default {C.ADV_EPS:.4g} = 16/255)"))
    adv_steps: int = field(default=C.ADV_STEPS, metadata=flag(
        "--adv-steps", "ascent steps of the adversarial level (default %(default)s)"))
    batch_size: int = field(default=32, metadata=runtime())  # its flag is the model's (`add_model_args`)
    overwrite: bool = field(default=False, metadata=flag(
        "--overwrite", "replace an existing edit of this split", action="store_true"))
    shard: Optional[Shard] = field(default=None, metadata=flag("--shard", SHARD_HELP, metavar="K/N", type=str))
    backend: str = field(default=CLASSICAL, metadata=flag(
        "--backend", "how the complexity levels are made: 'classical' (gradient steps on the pixels, no weights; "
        "default) or 'diffusion' (ImageNet-E's blended guided diffusion, needs --weights and the 'diffusion' extra)",
        choices=BACKENDS))
    weights: Optional[str] = field(default=None, metadata=flag(
        "--weights", "the diffusion backend's network: guided-diffusion's 256x256_diffusion_uncond.pt (or any ADM "
        "state dict, .pt or .safetensors), a diffusers UNet2DModel folder, or a hub name (the only thing that "
        "downloads)", metavar="FILE_OR_DIR"))
    respacing: str = field(default="100", metadata=flag(
        "--respacing", "diffusion steps kept of the 1,000 (guided-diffusion's timestep_respacing; default "
        "%(default)s)"))
    skip: int = field(default=90, metadata=flag(
        "--skip", "respaced steps skipped: the edit starts from the image noised to step steps-skip (default "
        "%(default)s: the toolkit's demo runs 10 of 100)"))
    diffusion_size: Optional[int] = field(default=None, metadata=flag(
        "--diffusion-size", "square size the diffusion runs at (default: the model's, 256 for a guided-diffusion "
        "file); results are resized back to the image's size", type=int, metavar="PX"))
    head_channels: int = field(default=64, metadata=flag(
        "--head-channels", "attention head width of a guided-diffusion file, not stored in it (default "
        "%(default)s, the released model's)"))
    range_lambda: float = field(default=50.0, metadata=flag(
        "--range-lambda", "weight of the toolkit's range loss on x0 (default %(default)s)"))
    l2_lambda: float = field(default=0.0, metadata=flag(
        "--l2-lambda", "weight of the toolkit's L2 background-preservation loss (default %(default)s: off, as in "
        "run.sh)"))
    lpips_lambda: float = field(default=0.0, metadata=flag(
        "--lpips-lambda", "weight of the toolkit's LPIPS background-preservation loss (default %(default)s: off; "
        "needs lpips and its VGG weights)"))
    coarse_to_fine: bool = field(default=False, metadata=flag(
        "--coarse-to-fine", "erode the edited region by 51 and 31 px early on, as the toolkit's --coarse_to_fine",
        action="store_true"))
    classifier_scale: float = field(default=10.0, metadata=flag(
        "--classifier-scale", "with --backend diffusion and --model: the adversarial level's classifier-guidance "
        "scale (default %(default)s, the toolkit's)"))
    # where the models run (the diffusion network, the adversarial level's classifier); noise is drawn on the CPU
    device: str = field(default="cpu", metadata=runtime(flag("--device", DEVICE_HELP)))

    def __post_init__(self):
        checks.at_least("--workers", self.workers, 1)
        checks.at_least("--adv-steps", self.adv_steps, 1)
        checks.within("--adv-eps", self.adv_eps, 0, 1, open_low=True)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.one_of("--split", self.split, ("val", "train"))
        for a in self.attributes:
            checks.one_of("--attributes", a, ATTRIBUTES)
        get_inpainter(self.inpainter)
        get_complexity_editor(self.complexity_editor)
        checks.one_of("--backend", self.backend, BACKENDS)
        if self.backend == DIFFUSION and not self.weights:
            raise BgbenchError("--backend diffusion needs --weights: a guided-diffusion .pt "
                               "(256x256_diffusion_uncond.pt), a .safetensors file, a diffusers folder or a hub name")
        if self.backend == CLASSICAL and self.weights:
            raise BgbenchError("--weights names the network of --backend diffusion; add --backend diffusion")
        if self.backend == DIFFUSION:
            checks.device(self.device)
        checks.at_least("--skip", self.skip, 0)
        checks.at_least("--head-channels", self.head_channels, 1)
        checks.at_least("--diffusion-size", self.diffusion_size, 8)  # None: the model's sample size
        for name, value in (("--range-lambda", self.range_lambda), ("--l2-lambda", self.l2_lambda),
                            ("--lpips-lambda", self.lpips_lambda), ("--classifier-scale", self.classifier_scale)):
            checks.at_least(name, value, 0)

    def settings(self, model=None) -> dict:
        """What decides the output besides the source images: shards must agree on all of it."""
        return {"attributes": list(self.attributes), "levels": list(self.levels) if self.levels else None,
                "angles": list(self.angles) if self.angles else None, "split": self.split, "seed": self.seed,
                "inpainter": self.inpainter, "complexity_editor": self.complexity_editor, "adv_eps": self.adv_eps,
                "adv_steps": self.adv_steps, "batch_size": self.batch_size,
                "model": model.spec.to_dict() if model is not None else None,
                **({"backend": DIFFUSION, "weights": self.weights, "respacing": self.respacing, "skip": self.skip,
                    "diffusion_size": self.diffusion_size, "head_channels": self.head_channels,
                    "guidance": asdict(self.guidance(classifier=True))} if self.backend == DIFFUSION else {})}

    def guidance(self, complexity: float = 0.0, classifier: bool = False):
        """The guidance loss's weights at complexity level `complexity`; with `classifier`, the
        adversarial level's."""
        from .diffusion import Guidance
        return Guidance(complexity=complexity, range_lambda=self.range_lambda, l2_lambda=self.l2_lambda,
                        lpips_lambda=self.lpips_lambda, coarse_to_fine=self.coarse_to_fine,
                        classifier_scale=self.classifier_scale if classifier else 0.0)


@dataclass(frozen=True)
class _Task:
    index: int
    image_id: str
    label: int
    path: Path
    source: str  # relative to --data
    mask_path: Path


def level_rng(seed: int, image_id: str, level: str) -> np.random.Generator:
    """The generator of one image's edit: from the seed, the image id and the level only."""
    return np.random.default_rng([seed, zlib.crc32(image_id.encode()), zlib.crc32(level.encode())])


def _row(task: _Task, level: str, attribute: str, image: np.ndarray, mask: np.ndarray, params: dict) -> M.ManifestRow:
    contrast, dissim = glcm_stats(image, mask)
    return M.ManifestRow(task.index, level, task.image_id, task.label, task.source, M.mask_box(mask), "provided",
                         M.fg_fraction(mask), params={"attribute": attribute,
                                                      "glcm_contrast": finite_or_none(round(contrast, 5)),
                                                      "glcm_dissimilarity": finite_or_none(round(dissim, 5)), **params})


def _rendered(edit: Edit, image: np.ndarray, mask: np.ndarray, ctx: Context):
    """One level of one image, rendered and checked; or `Rejected` for this level only."""
    try:
        done = edit.render(image, mask, ctx)
    except DoesNotFit as e:  # a rotated object larger than the image: refused, never shrunk
        raise Rejected(DOES_NOT_FIT, str(e)) from None
    except EDIT_FAILURES as e:  # a failed edit rejects this image at this level only
        raise Rejected(EDIT_FAILED, f"{type(e).__name__}: {e}".splitlines()[0]) from None
    target = SIZE_RATES.get(edit.level) if edit.attribute == "size" else (
        POSITION_RATE if edit.attribute == "position" else None)
    if target is not None and abs(pixel_rate(done.mask) - target) > RATE_TOLERANCE * target:
        raise Rejected(RATE_UNREACHABLE, f"pixel rate {pixel_rate(done.mask):.4f} for a target of {target}")
    return done


def _edit_one(task: _Task, job: Tuple[EditConfig, Target]) -> Tuple[List[M.ManifestRow], List[M.RejectRow]]:
    """Every CPU level of one image: its rows, and its rejects (the whole image, or single levels)."""
    cfg, target = job
    try:
        image = read_image(task.path)
        # a foreground mask that can be edited: present, readable, the image's size, neither empty nor full
        if not task.mask_path.is_file():
            raise Rejected(MISSING_MASK, f"no {task.mask_path}")
        mask = read_mask_or_reject(task.mask_path, image.shape[:2])
        if not mask.any():
            raise Rejected(EMPTY_MASK, f"mask {task.mask_path.name} is empty")
        if mask.all():
            raise Rejected(NO_BACKGROUND, f"mask {task.mask_path.name} covers the whole image")
    except Rejected as e:
        return [], [M.RejectRow(task.index, task.image_id, task.source, e.reason, e.detail)]
    target.save_image(ORIGINAL, task.image_id, image)
    target.save_mask(task.image_id, mask)
    rows = [_row(task, ORIGINAL, ORIGINAL, image, mask, {})]
    rejects: List[M.RejectRow] = []
    background = cache(lambda: get_inpainter(cfg.inpainter)(image, mask))  # made once, for the levels that need it
    for edit in edits_for(cfg.attributes, cfg.angles, cfg.levels, with_model=False):
        if cfg.backend == DIFFUSION and edit.attribute in DIFFUSED:  # made in the parent, batched
            continue
        ctx = Context(background, get_complexity_editor(cfg.complexity_editor),
                      level_rng(cfg.seed, task.image_id, edit.name))
        try:
            done = _rendered(edit, image, mask, ctx)
            target.save_image(edit.name, task.image_id, done.image)
            rows.append(_row(task, edit.name, edit.attribute, done.image, done.mask, done.params))
        except Rejected as e:
            rejects.append(M.RejectRow(task.index, task.image_id, task.source, e.reason, e.detail, edit.name))
    return rows, rejects


def _adversarial(model, tasks: Sequence[_Task], cfg: EditConfig, target: Target, device: str, progress: bool
                 ) -> List[M.ManifestRow]:
    """The adversarial complexity level of `tasks` (their originals are written), through the feed on
    `device` (`model` is there), a batch per block of `--batch-size` consecutive images of
    the sorted list (cut again where the image size changes), so that a shard's batches are an
    unsharded run's."""
    import torch

    from ..data.pixel_cache import Pixels
    from ..evaluation.feed import Images, batches
    from ..evaluation.numerics import forward_context
    # the originals as this job wrote them, read by path: never cached, they live in its stage only
    images = Images(Pixels(list(tasks)),
                    [list(b) for _, b in groupby(range(len(tasks)), key=lambda k: tasks[k].index // cfg.batch_size)],
                    masks=[target.path(MASK_DIR, t.image_id, ".npy") for t in tasks],
                    render=lambda t: target.load_image(ORIGINAL, t.image_id))
    params = {"eps": round(cfg.adv_eps, 6), "steps": cfg.adv_steps, "model": model.spec.name}
    rows = []
    with forward_context("fp32", device), torch.enable_grad():  # it ascends the loss: gradients
        for _, batch in batches(images, device=device, workers=cfg.workers, progress=progress,
                                desc=ADVERSARIAL):
            outs = C.adversarial_backgrounds(model, batch.x, batch.m, [t.label for t in batch.items],
                                             eps=cfg.adv_eps, steps=cfg.adv_steps)
            for t, out, mask in zip(batch.items, outs, batch.m[:, 0].bool().cpu().numpy()):
                target.save_image(ADVERSARIAL, t.image_id, out)
                rows.append(_row(t, ADVERSARIAL, "complexity", out, mask, params))
    return rows


#: The attributes the diffusion backend makes: the complexity levels (the adversarial one by
#: classifier guidance), and the moved, scaled or rotated object harmonised with a regenerated
#: background (the paper's Algorithm 2).
DIFFUSED = ("complexity", "size", "position", "rotation")


def _diffusion(weights, edits: Sequence[Edit], tasks: Sequence[_Task], cfg: EditConfig, target: Target,
               device: str, progress: bool, model=None) -> Tuple[List[M.ManifestRow], List[M.RejectRow]]:
    """The diffusion backend's levels of `tasks` (their originals are written), batched in the
    parent within blocks of `--batch-size` on `device` (`model` is there); one generator per image.
    The adversarial level is guided by `model`'s log-probability of the true class."""
    from .diffusion import class_log_prob, diffuse_backgrounds, lpips_for
    levels = [e for e in edits if e.attribute in DIFFUSED]
    if not levels:
        return [], []
    lpips_model = lpips_for(cfg.lpips_lambda, device)
    weights.unet.to(device)
    inpainter = get_inpainter(cfg.inpainter)
    items = [(t, target.load_image(ORIGINAL, t.image_id), target.load_mask(t.image_id)) for t in tasks]
    base = {"backend": DIFFUSION, "respacing": cfg.respacing, "steps": Schedule(cfg.respacing).steps - cfg.skip,
            "skip": cfg.skip, "seed": cfg.seed, "weights_sha256": weights.sha256, "weights_kind": weights.kind,
            "size": cfg.diffusion_size or weights.sample_size, "range_lambda": cfg.range_lambda}
    rows, rejects = [], []
    bar = console.progress(enabled=progress, total=len(items) * len(levels), desc="diffusion", unit="img")
    # consecutive (task, image, mask) items of one block of the sorted list and of one image size
    for _, group in groupby(items, key=lambda it: (it[0].index // cfg.batch_size, it[1].shape)):
        chunk = list(group)
        backgrounds = [inpainter(im, m) for _, im, m in chunk]
        # one noise per image for every level, as the toolkit's one seed gives: levels differ by their guidance
        seeds = [int(level_rng(cfg.seed, t.image_id, DIFFUSION).integers(2 ** 63)) for t, _, _ in chunk]
        for edit in levels:
            lam = float(edit.level) if edit.attribute == "complexity" and not edit.needs_model else 0.0
            # the adversarial level is guided by the classifier, at lambda 0
            said = {"classifier_scale": cfg.classifier_scale, "model": model.spec.name} if edit.needs_model else {}
            ready = []
            # (the kept image, the kept object's mask, the level's own parameters) of each image: the image
            # itself for a complexity level; the classical composite (the object moved, scaled or rotated onto
            # the inpainted background) for Algorithm 2, whose background diffusion regenerates; `Rejected`
            # where the classical edit refuses the image
            for (t, im, m), bg, seed in zip(chunk, backgrounds, seeds):
                try:
                    if edit.attribute == "complexity":
                        kept = im, m, {"lambda": lam, **said}
                    else:
                        ctx = Context(lambda bg=bg: bg, get_complexity_editor(cfg.complexity_editor),
                                      level_rng(cfg.seed, t.image_id, edit.name))
                        done = _rendered(edit, im, m, ctx)
                        kept = done.image, done.mask, {**done.params, "lambda": lam}
                    ready.append((t, *kept, bg, seed))
                except Rejected as e:
                    rejects.append(M.RejectRow(t.index, t.image_id, t.source, e.reason, e.detail, edit.name))
            if ready:
                classifier = (class_log_prob(model, [r[0].label for r in ready], ready[0][1].shape[:2])
                              if edit.needs_model else None)
                try:
                    outs = diffuse_backgrounds(weights, [r[1] for r in ready], [r[2] for r in ready],
                                               [r[4] for r in ready], [r[5] for r in ready],
                                               cfg.guidance(lam, classifier=edit.needs_model), cfg.respacing,
                                               cfg.skip, cfg.diffusion_size, lpips_model, device=device,
                                               classifier=classifier)
                except EDIT_FAILURES as e:
                    raise BgbenchError(f"the diffusion backend failed at {edit.name}: "
                                       f"{type(e).__name__}: {e}".splitlines()[0]) from None
                for (t, _, mask, params, _, seed), out in zip(ready, outs):
                    target.save_image(edit.name, t.image_id, out)
                    rows.append(_row(t, edit.name, edit.attribute, out, mask, {**params, **base, "noise_seed": seed}))
            bar.update(len(chunk))
    bar.close()
    return rows, rejects


def edit_dataset(cfg: EditConfig, model=None, progress: bool = True) -> Optional[EditResult]:
    """Write every requested edit level of `cfg.data` into `cfg.out` (or one shard's share); see the
    module docstring. Under torchrun the ranks share the images as `--shard` would (blocks of
    `--batch-size`), write into the one `cfg.out`, and rank 0 joins their rows and writes the
    tables: its result is the one-process result; the other ranks return None."""
    # the resolved config, the source layout, the levels to write and the levels skipped (with why)
    data, out = Path(cfg.data).expanduser(), Path(cfg.out).expanduser()
    cfg = EditConfig(**{**cfg.__dict__, "data": data, "out": out})
    if out.resolve() == data.resolve():
        raise BgbenchError(f"--out {out} is the source dataset; write the edits elsewhere")
    layout = discover(data, split=cfg.split, variants=[ORIGINAL])
    if not layout.has_masks:
        raise DataError(f"no {MASK_DIR}/{cfg.split}/ folder under {data}; edits need foreground masks")
    if model is not None:
        model.meet(layout)
    every = edits_for(cfg.attributes, cfg.angles, cfg.levels, with_model=True)
    edits = every if model is not None else [e for e in every if not e.needs_model]
    skipped = [f"{ADVERSARIAL}: needs --model"] if len(edits) < len(every) else []
    adversarial = model is not None and any(e.needs_model for e in edits)
    if not edits:
        raise BgbenchError(f"--levels {' '.join(cfg.levels or ())} selects no edit level")
    if adversarial:  # it ascends the loss through the model
        from ..models.checkpoint import check_needs
        check_needs(model, ("gradients",), f"the adversarial level ({ADVERSARIAL})")
        checks.device(cfg.device)
    weights = None  # the diffusion backend's, checked before anything is written
    if cfg.backend == DIFFUSION:
        from .diffusion_weights import load_weights
        Schedule(cfg.respacing).indices(cfg.skip)  # a bad --respacing or --skip: one line, before the weights load
        weights = load_weights(cfg.weights, head_channels=cfg.head_channels)
        if cfg.lpips_lambda:
            from .diffusion import need_lpips
            need_lpips()
    ranks = setup(cfg.device)  # the models run on this rank's device: NCCL on CUDA, gloo on the CPU
    if ranks.distributed and cfg.shard is not None:
        raise BgbenchError("--shard K/N splits a job into separate runs that `bgbench merge` joins; under torchrun "
                           "the processes already share the images: use one or the other")
    writer = DatasetWriter(cfg.out, cfg.split, [ORIGINAL, *[e.name for e in edits]], layout.classes)
    if ranks.main:
        writer.open(cfg.overwrite)
    writer.write_into(broadcast(writer.stage, ranks))  # rank 0's stage, once its folders exist
    try:  # every rank writes into the writer's stage; rank 0 commits it
        tasks = [_Task(i, it.image_id, it.label, it.path, it.path.relative_to(layout.root).as_posix(),
                       layout.mask_path(it.image_id)) for i, it in enumerate(layout.items(ORIGINAL))]
        mine = select(tasks, Shard(ranks.rank, ranks.world) if ranks.distributed else cfg.shard, block=cfg.batch_size)
        with worker_pool(cfg.workers, len(mine), torch=True) as pool:
            results = pool.map(_edit_one, mine, (cfg, writer.target), "edit", progress and ranks.main, chunk_cap=8)
        rows = [r for rs, _ in results for r in rs]
        rejects = [j for _, js in results for j in js]
        ok = {r.position for r in rows if r.folder == ORIGINAL}
        if model is not None:
            model = model.to(ranks.device).eval()
        if weights is not None:
            more, refused = _diffusion(weights, edits, [t for t in mine if t.index in ok], cfg, writer.target,
                                       ranks.device, progress and ranks.main, model)
            rows, rejects = rows + more, rejects + refused
        elif adversarial:
            rows += _adversarial(model, [t for t in mine if t.index in ok], cfg, writer.target, ranks.device,
                                 progress and ranks.main)
        parts = gather((rows, rejects), ranks)
        if parts is None:
            return None
        rows, rejects = [r for p in parts for r in p[0]], [j for p in parts for j in p[1]]
        prov = Provenance.of(KIND, {**asdict(cfg), "data": str(cfg.data), "out": str(cfg.out), **world_record(ranks)},
                             model=model, layout=layout, seed=cfg.seed)
        result = EditResult(cfg.out, [e.name for e in edits], M.sort_rows(rows, writer.folders),
                            M.sort_rejects(rejects, writer.folders), skipped, shard=cfg.shard, provenance=prov)
        if cfg.shard is not None:
            ShardRecord(KIND, cfg.split, cfg.shard, cfg.settings(model),
                        inputs_fingerprint([f"{t.source}\t{t.mask_path.is_file()}" for t in tasks]
                                           + [layout.fingerprint()]), writer.folders, list(layout.classes),
                        rows=[r.to_json() for r in result.rows], rejects=[r.to_json() for r in result.rejects],
                        extra={"provenance": asdict(prov), "skipped": skipped}).save(writer.stage)
            writer.commit()
            return result
        return _finish(writer, result)
    finally:
        if ranks.main:
            writer.discard()  # what was not committed (an error, an interrupt); nothing after a commit


def _finish(writer: DatasetWriter, result: EditResult) -> EditResult:
    """The tables, and the staged split moved into its folder (or, with no image edited, the
    previous output kept)."""
    writer.write_tables(result.rows, result.rejects)
    if not any(r.folder == ORIGINAL for r in result.rows):
        raise BgbenchError(f"no image of {result.provenance.data_root} could be edited: {len(result.rejects)} "
                           f"rejected; {writer.give_up()}")
    writer.commit()
    return result


def merge(out: Path, records: List[ShardRecord], overwrite: bool = False, workers: int = 1,
          progress: bool = True) -> EditResult:
    """Join the shards of one split into `out`: copy their files and join their tables.

    Nothing is left to compute, so `workers` and `progress` (merge's one signature) go unused.
    """
    ref = records[0]
    writer = DatasetWriter(out, ref.split, ref.folders, ref.classes)
    with writer.staged(overwrite):
        writer.copy_shards(records)
        prov = Provenance(**ref.extra["provenance"])
        prov.config = {**{k: v for k, v in prov.config.items() if k != "shard"}, "out": str(out),
                       "shards": ref.shard.count}
        return _finish(writer, EditResult(Path(out), ref.folders[1:],
                                          M.sort_rows(manifest_rows(records), writer.folders),
                                          M.sort_rejects(reject_rows(records), writer.folders),
                                          list(ref.extra["skipped"]), provenance=prov))
