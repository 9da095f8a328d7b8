"""`bgbench build`: the IN-9 variants from images, boxes and (optionally) masks.

Two steps, through the one dataset writer and its worker pool, so the output depends on the
seed and never on the number of workers or shards:
1. per image (`variants.prepare`, in workers): decode, filters, GrabCut; write the variants
   that need no donor and the mask;
2. global: drop images that no donor of their size can serve, balance classes (both seeded,
   over the sorted list of prepared images), remove the dropped images' files, choose every mixed
   image's donor (`variants.donors`), and render the three mixed variants (in workers).

With `--shard K/N` a run does step 1 on its share and records what it prepared; `bgbench merge`
copies the shards' files and runs step 2 on their union. An unsharded run is step 1 on every
image followed by the very same step 2, so a merge is byte-identical to it by construction.
Bad input is never fatal: each rejected image gets a row in rejects.csv with a reason.

With a `preset` (`variants.presets`), `images` is an ImageNet 2012 root in either release layout
(`data.imagenet`) and the tasks come from its synsets instead of class folders; everything after
the task list is this same pipeline.
"""
from __future__ import annotations

from collections import Counter
from itertools import groupby
from operator import attrgetter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import checks
from ..data import manifest as M
from ..data.in9 import discover
from ..data.layout import MASK_DIR
from ..data.pool import Pool, worker_pool
from ..data.shards import Shard, ShardRecord, inputs_fingerprint, select
from ..data.writer import DatasetWriter, Target, reject_rows
from ..errors import BgbenchError
from ..options import WRITE_WORKERS_HELP, flag
from ..provenance import Provenance
from .annotations import find, load_annotations
from .donors import Candidate, Donor, assign_donors
from .grabcut import TRIES
from .prepare import Prepared, Settings, Task, own_variants, prepare
from .preprocess import Preprocess
from .presets import PRESETS, get_preset
from .registry import get_variant, list_variants
from ..result import Result

KIND = "build"
BALANCED_OUT = "balanced_out"
NO_DONOR = "no_donor_of_same_size"


class BuildError(BgbenchError):
    """Nothing could be built, or the inputs are unusable as a whole."""


@dataclass(frozen=True, kw_only=True)
class BuildConfig:
    """A build's settings; a field with a flag is also that `bgbench build` option (--images and
    --imagenet, the two ways of giving `images`, are the command's own)."""

    images: Path  # class folders; with a preset, the ImageNet root
    #: in9 | in9l | full-in: `images` is an ImageNet root
    preset: Optional[str] = field(default=None, metadata=flag(
        "--preset", "with --imagenet: in9 (the 370 mapped synsets in IN-9's 9 folders, one box, the filters, 8 variants, "
                    "balanced), in9l (every image of those synsets, original only, balanced) or full-in (all 1000 "
                    "synsets as wnid folders, the filters, 8 variants, not balanced); default in9", choices=PRESETS))
    #: with a preset: optional (torchvision's layout needs it for boxes)
    boxes: Optional[Path] = field(metadata=flag(
        "--boxes", "folder of VOC/ImageNet <stem>.xml files (flat or per class) or a COCO .json file; with --imagenet, "
                   "the box archives' XML folder (torchvision's layout; the ILSVRC release has its own)"))
    masks: Optional[Path] = field(default=None, metadata=flag(
        "--masks", "folder of <class>/<stem>.png or .npy masks (nonzero = foreground); skip GrabCut"))
    out: Path = field(metadata=flag("--out", "output root in the IN-9 layout", required=True))
    split: str = field(default="val", metadata=flag("--split", "split folder to write (default %(default)s)",
                                                    choices=("val", "train")))
    seed: int = field(default=0, metadata=flag(
        "--seed", "seeds GrabCut, class balancing and donor choice (default %(default)s)"))
    workers: int = field(default=1, metadata=flag(
        "--workers", WRITE_WORKERS_HELP))
    preprocess: Preprocess = Preprocess()
    #: Appendix A filter 4; None: the preset's default (on without one)
    balance: Optional[bool] = field(default=None, metadata=flag(
        "--balance", "drop images at random down to the smallest class count, as the paper builds IN-9 (Appendix A, "
                     "filter 4; default on, except for --preset full-in)", action="boolean_optional"))
    tries: int = field(default=TRIES, metadata=flag(
        "--grabcut-tries", "GrabCut retries (different seeds) before rejecting (default %(default)s)",
        metavar="GRABCUT_TRIES"))
    shard: Optional[Shard] = None
    overwrite: bool = False

    @property
    def balanced(self) -> bool:
        if self.balance is not None:
            return self.balance
        return get_preset(self.preset).balance if self.preset else True

    @property
    def variants(self) -> Tuple[str, ...]:
        return get_preset(self.preset).variants if self.preset else tuple(list_variants())

    @property
    def needs_box(self) -> bool:
        return get_preset(self.preset).needs_box if self.preset else True

    def __post_init__(self):
        if self.preset is None and self.boxes is None:
            raise BuildError("--images needs --boxes (a folder of VOC/ImageNet .xml files or a COCO .json file)")
        checks.at_least("--workers", self.workers, 1)
        checks.at_least("--grabcut-tries", self.tries, 1)
        checks.one_of("--split", self.split, ("val", "train"))
        pre = self.preprocess
        checks.at_least("--resize", pre.resize, 1)
        checks.at_least("--crop", pre.crop, 1)
        if pre.resize is not None and pre.crop is not None and pre.crop > pre.resize:
            raise BgbenchError(f"--crop {pre.crop} is larger than --resize {pre.resize}")

    def settings(self) -> dict:
        """What decides the output besides the inputs: shards must agree on all of it."""
        return {"split": self.split, "seed": self.seed, "resize": self.preprocess.resize,
                "crop": self.preprocess.crop, "balance": self.balanced, "grabcut_tries": self.tries,
                "preset": self.preset, "variants": list(self.variants)}

    def config(self) -> dict:
        """The run's recorded config: the settings and where the inputs were."""
        key = "imagenet" if self.preset else "images"
        return {key: str(self.images), "boxes": str(self.boxes) if self.boxes else None,
                "masks": str(self.masks) if self.masks else None,
                **{k: v for k, v in self.settings().items() if k != "seed"}}


@dataclass
class BuildResult(Result):
    out: Path
    built: List[Prepared]
    rejects: List[M.RejectRow]
    classes: Tuple[str, ...]
    reasons: Counter = field(default_factory=Counter)
    config: dict = field(default_factory=dict)  # what a record of the run keeps
    shard: Optional[Shard] = None
    provenance: Optional[Provenance] = None  # None for a shard: it is recorded once merged
    variants: Tuple[str, ...] = tuple(list_variants())

    def outputs(self) -> dict:
        return {"built": len(self.built), "rejected": len(self.rejects), "reasons": dict(self.reasons),
                "classes": list(self.classes), "manifest": str(self.out / M.MANIFEST),
                "shard": str(self.shard) if self.shard else None}

    to_dict = outputs  # its document is what it wrote

    def table(self) -> List[dict]:
        """One row per image built: its id, class, source, box kept and mask."""
        return [{"image_id": p.image_id, "label": p.label, "source": p.source, "box_kept": p.box_kept,
                 "mask_source": p.mask_source, "fg_fraction": p.fg_fraction} for p in self.built]

    def text(self) -> str:
        by = ", ".join(f"{r}: {n}" for r, n in sorted(self.reasons.items()))
        rejected = f"rejected {len(self.rejects)}" + (f" ({by})" if by else "")
        if self.shard is not None:
            return (f"shard {self.shard}: prepared {len(self.built)} images in {self.out}, {rejected}; balance, donors "
                    f"and the mixed variants follow in `bgbench merge`")
        masks = f" + {MASK_DIR}" if any(p.box is not None for p in self.built) else ""
        return (f"built {len(self.built)} images x {len(self.variants)} variants{masks} in {self.out}\n"
                + (f"{rejected}; see {self.out / M.REJECTS}" if self.rejects else "rejected 0"))


def _find_mask(masks: Optional[Path], cls: str, stem: str) -> Optional[Path]:
    if masks is None:
        return None
    return next((p for p in (masks / cls / f"{stem}{suffix}" for suffix in (".npy", ".png")) if p.is_file()), None)


def _tasks(cfg: BuildConfig, classes: Sequence[str]) -> List[Task]:
    """Every input file, sorted by class and name: the list shards take their shares of."""
    annotations = load_annotations(cfg.boxes)
    files = [(label, cls, p) for label, cls in enumerate(classes) for p in sorted((cfg.images / cls).iterdir())
             if p.is_file() and not p.name.startswith(".")]
    return [Task(k, f"{cls}/{p.stem}", label, p, p.relative_to(cfg.images).as_posix(), find(annotations, cls, p.stem),
                 _find_mask(cfg.masks, cls, p.stem)) for k, (label, cls, p) in enumerate(files)]


def _imagenet_tasks(cfg: BuildConfig) -> Tuple[List[Task], Tuple[str, ...]]:
    """The preset's images of an ImageNet root, sorted by ImageNet index and stem, and its classes.

    The image id keeps ImageNet's stem, and the manifest its wnid and ImageNet index."""
    from ..data.imagenet import ILSVRC, imagenet_synsets, list_sources, open_tree
    from .annotations import Annotation
    preset = get_preset(cfg.preset)
    tree = open_tree(cfg.images, cfg.boxes)
    if preset.needs_box and tree.annotations is None and tree.layout != ILSVRC:
        raise BuildError(f"--preset {preset.name} needs boxes: give --boxes DIR, the folder of ImageNet's box "
                         f"archives (<wnid>/<stem>.xml or <stem>.xml)")
    index = {w: k for k, w in enumerate(imagenet_synsets())}
    tasks = []
    for src in list_sources(tree, cfg.split, list(preset.folder_of)):
        label = preset.folder_of[src.wnid]
        annotation = None if src.boxes is None else Annotation(boxes=list(src.boxes), error=src.box_error)
        tasks.append(Task(len(tasks), f"{preset.classes[label]}/{src.stem}", label, src.path, src.source,
                          annotation, None, src.box_files if preset.needs_box else (),
                          {"wnid": src.wnid, "imagenet_index": index[src.wnid]}))
    return tasks, preset.classes


def _resolved(cfg: BuildConfig) -> Tuple[BuildConfig, Tuple[str, ...]]:
    """The config with user paths expanded, checked; and the class folders (none yet with a preset:
    `_imagenet_tasks` gives them)."""
    cfg = BuildConfig(**{**cfg.__dict__, "images": Path(cfg.images).expanduser(), "out": Path(cfg.out).expanduser(),
                         "boxes": Path(cfg.boxes).expanduser() if cfg.boxes else None,
                         "masks": Path(cfg.masks).expanduser() if cfg.masks else None})
    if cfg.preset is not None:
        get_preset(cfg.preset)  # a bad name is one line
        if cfg.masks is not None:
            raise BuildError("--masks is not used with --imagenet (masks come from GrabCut)")
        return cfg, ()
    if not cfg.images.is_dir():
        raise BuildError(f"--images {cfg.images} is not a folder")
    if cfg.masks is not None and not cfg.masks.is_dir():
        raise BuildError(f"--masks {cfg.masks} is not a folder")
    if not cfg.boxes.exists():
        raise BuildError(f"--boxes {cfg.boxes} does not exist")
    classes = tuple(sorted(p.name for p in cfg.images.iterdir() if p.is_dir() and not p.name.startswith(".")))
    if not classes:
        raise BuildError(f"--images {cfg.images} has no class folders (expected DIR/<class>/<image>)")
    return cfg, classes


def build(cfg: BuildConfig, progress: bool = True) -> BuildResult:
    """Build every variant of `cfg.images` into `cfg.out` (or one shard's step 1); see the module docstring."""
    cfg, classes = _resolved(cfg)
    tasks, classes = _imagenet_tasks(cfg) if cfg.preset is not None else (_tasks(cfg, classes), classes)
    writer = DatasetWriter(cfg.out, cfg.split, cfg.variants, classes, masks=cfg.needs_box)
    with writer.staged(cfg.overwrite):
        mine = select(tasks, cfg.shard)
        settings = Settings(cfg.preprocess, cfg.seed, cfg.tries, writer.target, cfg.variants, cfg.needs_box)
        with worker_pool(cfg.workers, len(mine)) as pool:
            results = pool.map(prepare, mine, settings, "prepare", progress)
            prepared = [r for r in results if isinstance(r, Prepared)]
            rejects = [r for r in results if not isinstance(r, Prepared)]
            if cfg.shard is not None:
                _save_shard(cfg, writer.stage, classes, tasks, prepared, rejects)
                writer.commit()
                return BuildResult(cfg.out, prepared, rejects, classes, Counter(r.reason for r in rejects),
                                   cfg.config(), cfg.shard, variants=cfg.variants)
            return _finish(writer, prepared, rejects, cfg.config(), cfg.seed, cfg.balanced, pool, progress)


def _save_shard(cfg: BuildConfig, root: Path, classes: Sequence[str], tasks: Sequence[Task],
                prepared: List[Prepared], rejects: List[M.RejectRow]) -> None:
    lines = [f"{t.source}\t{t.mask_path.name if t.mask_path else ''}" for t in tasks]
    ShardRecord(KIND, cfg.split, cfg.shard, cfg.settings(), inputs_fingerprint(lines), own_variants(cfg.variants),
                list(classes),
                rows=[p.to_json() for p in prepared], rejects=[r.to_json() for r in rejects],
                extra={"config": cfg.config()}).save(root)


def merge(out: Path, records: List[ShardRecord], overwrite: bool = False, workers: int = 1,
          progress: bool = True) -> BuildResult:
    """Join the shards of one split into `out` and run step 2 on their union."""
    ref = records[0]
    variants = ref.settings.get("variants", list_variants())
    writer = DatasetWriter(out, ref.split, variants, ref.classes,
                           masks=any(r["box"] is not None for rec in records for r in rec.rows))
    with writer.staged(overwrite):
        writer.copy_shards(records)
        prepared = sorted((Prepared.from_json(r) for rec in records for r in rec.rows), key=lambda p: p.index)
        config = {**ref.extra["config"], "shards": ref.shard.count}
        with worker_pool(workers, len(prepared)) as pool:
            return _finish(writer, prepared, reject_rows(records), config, ref.settings["seed"],
                           ref.settings["balance"], pool, progress)


def _finish(writer: DatasetWriter, prepared: List[Prepared], rejects: List[M.RejectRow], config: dict, seed: int,
            balance: bool, pool: Pool, progress: bool) -> BuildResult:
    """Step 2: select, donors, the mixed variants, and the tables."""
    classes, variants = tuple(writer.classes), tuple(writer.folders)
    mixed = [v for v in variants if get_variant(v).donor is not None]
    built, donors, dropped = _select(prepared, len(classes), seed, balance, mixed)
    for p, reason, detail in dropped:
        writer.target.remove(own_variants(variants), p.image_id)
        rejects.append(M.RejectRow(p.index, p.image_id, p.source, reason, detail))
    by_index = {p.index: p for p in built}
    jobs = [_MixJob(p.image_id, p.box, {v: by_index[d.index].image_id for v, d in donors[p.index].items()})
            for p in built if mixed]
    pool.map(_render_mixed, jobs, writer.target, "render", progress)
    writer.write_tables(_manifest_rows(by_index, donors, classes, variants), rejects)
    reasons = Counter(r.reason for r in rejects)
    if not built:
        source = config.get("images") or config.get("imagenet")
        raise BuildError(f"nothing could be built from {source}: {len(rejects)} rejected "
                         f"({', '.join(f'{r}: {n}' for r, n in sorted(reasons.items())) or 'no files'}); "
                         f"{writer.give_up()}")
    writer.commit()
    prov = Provenance.of(KIND, config, layout=discover(writer.out, split=writer.split), seed=seed)
    return BuildResult(writer.out, built, M.sort_rejects(rejects, writer.folders), classes, reasons, config,
                       provenance=prov, variants=variants)


@dataclass(frozen=True)
class _MixJob:
    image_id: str
    box: M.Box
    donors: Dict[str, str]  # mixed variant -> donor image id


def _render_mixed(job: _MixJob, target: Target) -> None:
    """The three mixed variants of one image, from its written original and mask and each donor's
    written only_bg_t (every build with mixed variants writes only_bg_t in step 1; PNG is lossless)."""
    image, mask = target.load_image("original", job.image_id), target.load_mask(job.image_id)
    for name, donor in job.donors.items():
        background = target.load_image("only_bg_t", donor)
        target.save_image(name, job.image_id, get_variant(name).render(image, mask, job.box, background))


def _manifest_rows(by_index: Dict[int, Prepared], donors: Dict[int, Dict[str, Donor]],
                   classes: Sequence[str], variants: Sequence[str]) -> List[M.ManifestRow]:
    """The manifest's rows of the built images (`by_index`, in their order) and their donors."""
    rows = []
    for p in by_index.values():
        params = {} if p.source_box is None else {"source_box": list(p.source_box), "box_kept": p.box_kept}
        common = dict(position=p.index, image=p.image_id, label=p.label, source=p.source, box=p.box,
                      mask_source=p.mask_source, fg_fraction=p.fg_fraction, params={**params, **(p.extra or {})})
        for name in variants:
            d = donors[p.index].get(name)
            bg = {} if d is None else {"bg_image": by_index[d.index].image_id,
                                       "bg_class": classes[by_index[d.index].label], "bg_fallback": d.fallback}
            rows.append(M.ManifestRow(folder=name, **common, **bg))
    return rows


def _balance(built: List[Prepared], seed: int) -> Tuple[List[Prepared], List[Prepared]]:
    """Drop images at random (seeded) down to the smallest non-empty class count; each class's
    draw is over its images in `built` order (a stable sort keeps it), classes in label order."""
    by_class = [list(members) for _, members in groupby(sorted(built, key=attrgetter("label")), attrgetter("label"))]
    k = min(map(len, by_class), default=0)
    rng = np.random.default_rng([seed, 7])
    keep = {members[i].index for members in by_class for i in rng.choice(len(members), size=k, replace=False)}
    return [p for p in built if p.index in keep], [p for p in built if p.index not in keep]


def _select(built: List[Prepared], num_classes: int, seed: int, balance: bool, mixed: Sequence[str]
            ) -> Tuple[List[Prepared], Dict[int, Dict[str, Donor]], List[Tuple[Prepared, str, str]]]:
    """Drop images that no donor can serve, balance classes (if asked), and repeat until both hold.

    Dropping an image without a donor can unbalance the classes, and balancing can leave an image
    alone in its size; each round that changes nothing ends it, and every other round drops images.
    Returns the kept images, their donors, and (image, reason, detail) for each dropped one.
    """
    dropped: List[Tuple[Prepared, str, str]] = []
    while True:
        donors = assign_donors([Candidate(p.index, p.label, p.size) for p in built], num_classes, seed, mixed)
        stranded = [p for p in built if p.index not in donors]
        kept = [p for p in built if p.index in donors]
        kept, out = _balance(kept, seed) if balance else (kept, [])
        if not stranded and not out:
            return built, donors, dropped
        dropped += [(p, NO_DONOR, f"no other built image is {p.size[1]}x{p.size[0]}") for p in stranded]
        dropped += [(p, BALANCED_OUT, "dropped to balance classes") for p in out]
        built = kept

