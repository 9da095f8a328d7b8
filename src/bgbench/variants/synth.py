"""`bgbench synth`: Synthetic-9 written in the IN-9 layout through the one dataset writer.

`data.synthetic` draws the images; here their 8 variants are rendered with the registry's pure
functions and written, with the mask and the attribute masks (`attr_mask/`) of each original. Every image is a function of (seed, split, class, index), so a worker or
a shard draws any image, donors included, by itself: donors are chosen for the whole split
(`variants.donors`, from the labels alone), and each worker renders and writes its images. The
output is byte-identical for any `--workers` and any `--shard` split, once merged.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional

from .. import checks
from ..data import manifest as M
from ..data.layout import IN9_VARIANTS
from ..data.pool import worker_pool
from ..data.shards import Shard, ShardRecord, inputs_fingerprint, select
from ..data.synthetic import (ATTRIBUTES, MIN_SIZE, SHARED_PARTS, SYNTH_CLASSES, TEXTURES, Sample, class_part,
                              correlated_family, sample_at)
from ..data.writer import DatasetWriter, Target, manifest_rows
from ..options import WRITE_WORKERS_HELP, flag
from ..provenance import Provenance
from .donors import Candidate, assign_donors
from .functions import only_bg_t
from .registry import get_variant
from .watermark import watermark_image
from ..result import Result

KIND = "synth"
INFO = "SYNTHETIC9.json"


@dataclass(frozen=True, kw_only=True)
class SynthConfig:
    """A Synthetic-9 split's settings; a field with a flag is also that `bgbench synth` option."""

    out: Path = field(metadata=flag("--out", "dataset root to write", required=True))
    size: int = field(default=64, metadata=flag("--size", "image side in pixels (default %(default)s)"))
    per_class: int = field(default=50, metadata=flag("--per-class", "images per class (default %(default)s)"))
    split: str = field(default="val", metadata=flag(
        "--split", "split folder to write (default %(default)s); train and val draw from independent seeds",
        choices=("train", "val")))
    seed: int = field(default=0, metadata=flag("--seed", "seed of the generator (default %(default)s)"))
    bg_correlation: float = field(default=0.95, metadata=flag(
        "--bg-correlation", "probability that the background texture matches the class (default %(default)s)"))
    #: an exact share of each class's images on their own class's background family, the rest on
    #: the other families in turn (minority groups, as in Waterbirds); None: `bg_correlation`'s draw
    correlation: Optional[float] = field(default=None, metadata=flag(
        "--correlation", "a controlled shortcut: exactly a share P of each class's images on its own class's "
                         "background family, the rest on the other families in turn (minority groups, as in "
                         "Waterbirds); the manifest records each ORIGINAL image's group", type=float, metavar="P"))
    #: a second, controlled shortcut: this share of `watermark_class`'s images carry ImageNet-W's
    #: watermark (the imagenet-w package's own), as ImageNet's cartons carry a watermark; None: none
    watermark_correlation: Optional[float] = field(default=None, metadata=flag(
        "--watermark-correlation", "a second, controlled shortcut (Whac-A-Mole's watermark): a share Q of "
                                   "--watermark-class's images carry ImageNet-W's watermark (the imagenet-w "
                                   "package's), on every variant; SYNTHETIC9.json records it, and `bgbench probe "
                                   "watermark` reads its Carton gap on that class", type=float, metavar="Q"))
    watermark_class: str = field(default=SYNTH_CLASSES[-1], metadata=flag(
        "--watermark-class", f"with --watermark-correlation: the class the watermark marks (default "
                             f"{SYNTH_CLASSES[-1]})", choices=SYNTH_CLASSES, default=None))
    workers: int = field(default=1, metadata=flag(
        "--workers", WRITE_WORKERS_HELP))
    shard: Optional[Shard] = None
    overwrite: bool = False

    def __post_init__(self):
        checks.at_least("--per-class", self.per_class, 1)
        checks.at_least("--size", self.size, MIN_SIZE)
        checks.within("--bg-correlation", self.bg_correlation, 0, 1)
        checks.within("--correlation", self.correlation, 0, 1)
        checks.within("--watermark-correlation", self.watermark_correlation, 0, 1)
        checks.one_of("--watermark-class", self.watermark_class, SYNTH_CLASSES)
        checks.one_of("--split", self.split, ("train", "val"))
        checks.at_least("--workers", self.workers, 1)

    def settings(self) -> dict:
        """What decides the images: shards must agree on all of it."""
        chosen = {"correlation": self.correlation} if self.correlation is not None else {
            "bg_correlation": self.bg_correlation}
        marked = {} if self.watermark_correlation is None else {"watermark": self.watermark()}
        return {"per_class": self.per_class, "size": self.size, "seed": self.seed, "split": self.split, **chosen,
                **marked}

    def watermark(self) -> dict:
        """The watermark shortcut as SYNTHETIC9.json records it (the watermark measure reads its class)."""
        return {"class": self.watermark_class, "correlation": self.watermark_correlation,
                "images": int(round(self.watermark_correlation * self.per_class))}

    def marked(self, position: int) -> bool:
        """Whether the image at `position` carries the watermark: the first round(Q x per_class)
        images of the watermark class (an exact share, as `correlation`'s)."""
        if self.watermark_correlation is None:
            return False
        label, i = position // self.per_class, position % self.per_class
        return SYNTH_CLASSES[label] == self.watermark_class and i < round(self.watermark_correlation * self.per_class)


@dataclass
class SynthResult(Result):
    out: Path
    split: str
    images: int  # images written (per variant)
    shard: Optional[Shard] = None
    rows: List[M.ManifestRow] = field(default_factory=list, repr=False)
    provenance: Optional[Provenance] = None  # None for a shard: it is recorded once merged

    def outputs(self) -> dict:
        return {"out": str(self.out), "split": self.split, "images": self.images, "variants": list(IN9_VARIANTS),
                "shard": str(self.shard) if self.shard else None}

    to_dict = outputs  # its document is what it wrote

    def table(self) -> List[dict]:
        """One row per image written (the manifest's)."""
        return [r.to_json() for r in self.rows]

    def text(self) -> str:
        what = f"Synthetic-9 ({self.split}, {self.images} images x {len(IN9_VARIANTS)} variants + fg_mask, attr_mask)"
        if self.shard:
            return f"wrote shard {self.shard} of {what} to {self.out}; join the shards with `bgbench merge`"
        return f"wrote {what} to {self.out}"


@dataclass(frozen=True)
class _Job:
    position: int
    donors: Dict[str, int]  # mixed variant -> donor position


@dataclass(frozen=True)
class _Settings:
    target: Target
    cfg: SynthConfig


def image_id(cfg: SynthConfig, position: int) -> str:
    return f"{SYNTH_CLASSES[position // cfg.per_class]}/synth_{cfg.split}_{position:05d}"


@lru_cache(maxsize=32)  # a job draws each of its donors once, however many mixed variants share it
def _sample(cfg: SynthConfig, position: int) -> Sample:
    label, i = position // cfg.per_class, position % cfg.per_class
    family = None if cfg.correlation is None else correlated_family(label, i, cfg.per_class, cfg.correlation)
    return sample_at(label, i, cfg.size, cfg.seed, cfg.split, cfg.bg_correlation, family=family)


def _render(job: _Job, s: _Settings) -> List[M.ManifestRow]:
    """Draw one image (and its donors), write its 8 variants and mask; its manifest rows."""
    cfg = s.cfg
    me = _sample(cfg, job.position)
    iid = image_id(cfg, job.position)
    common = dict(position=job.position, image=iid, label=me.label, box=me.box, mask_source="exact",
                  fg_fraction=M.fg_fraction(me.mask))
    rows = []
    mark = watermark_image if cfg.marked(job.position) else (lambda image: image)
    for name in IN9_VARIANTS:
        d = job.donors.get(name)  # None: a variant of the image alone
        donor = me if d is None else _sample(cfg, d)
        background = None if d is None else only_bg_t(donor.image, donor.mask, donor.box)
        s.target.save_image(name, iid, mark(get_variant(name).render(me.image, me.mask, me.box, background)))
        if d is not None:
            bg = {"bg_image": image_id(cfg, d), "bg_class": SYNTH_CLASSES[donor.label]}
        else:
            bg = {"bg_class": SYNTH_CLASSES[me.texture]} if cfg.correlation is not None and name == "original" else {}
        rows.append(M.ManifestRow(folder=name, params={"texture": TEXTURES[donor.texture]}, **bg, **common))
    s.target.save_mask(iid, me.mask)
    s.target.save_attributes(iid, me.attributes)
    return rows


def _jobs(cfg: SynthConfig) -> List[_Job]:
    """Every image of the split with its donors, chosen over the whole split."""
    n = len(SYNTH_CLASSES) * cfg.per_class
    donors = assign_donors([Candidate(p, p // cfg.per_class, (cfg.size, cfg.size)) for p in range(n)],
                           len(SYNTH_CLASSES), cfg.seed)
    return [_Job(p, {v: d.index for v, d in donors[p].items()}) for p in range(n)]


def synth(cfg: SynthConfig, progress: bool = True) -> SynthResult:
    """Write one split of Synthetic-9 (or, with `cfg.shard`, that shard's share of it)."""
    cfg = SynthConfig(**{**cfg.__dict__, "out": Path(cfg.out).expanduser()})
    writer = DatasetWriter(cfg.out, cfg.split, IN9_VARIANTS, SYNTH_CLASSES, attributes=True, shared=(INFO,))
    with writer.staged(cfg.overwrite):
        jobs = _jobs(cfg)
        mine = select(jobs, cfg.shard)
        with worker_pool(cfg.workers, len(mine)) as pool:
            rows = [r for rs in pool.map(_render, mine, _Settings(writer.target, cfg), f"synth {cfg.split}",
                                         progress) for r in rs]
        if cfg.shard is not None:
            ShardRecord(KIND, cfg.split, cfg.shard, cfg.settings(),
                        inputs_fingerprint([image_id(cfg, j.position) for j in jobs]), list(IN9_VARIANTS),
                        list(SYNTH_CLASSES), rows=[r.to_json() for r in rows]).save(writer.stage)
            writer.commit()
            return SynthResult(cfg.out, cfg.split, len(mine), cfg.shard, rows)
        _finish(writer, cfg.settings(), rows)
    return SynthResult(cfg.out, cfg.split, len(mine), None, rows, _provenance(cfg.out, cfg.settings()))


def _provenance(out: Path, settings: dict) -> Provenance:
    from ..data.in9 import discover
    return Provenance.of("synth", settings, layout=discover(out, split=settings["split"]),
                              seed=settings["seed"])


def _finish(writer: DatasetWriter, settings: dict, rows: List[M.ManifestRow]) -> None:
    writer.write_tables(rows, [])
    _write_info(writer.stage / INFO, settings, len({r.image for r in rows}), base=writer.out / INFO)
    writer.commit()


def _write_info(path: Path, settings: dict, images: int, base: Path) -> None:
    """SYNTHETIC9.json at `path`: the generator's settings per split, other splits' entries kept
    from `base` (the file it will replace)."""
    info = json.loads(base.read_text()) if base.is_file() else {}
    splits = info.get("splits", {}) if isinstance(info.get("splits"), dict) else {}
    split = settings["split"]
    splits[split] = {**{k: v for k, v in settings.items() if k != "split"}, "images": images}
    parts = {name: [c for k, c in enumerate(SYNTH_CLASSES) if class_part(k) == name] for name in ATTRIBUTES
             if name not in SHARED_PARTS}
    parts.update({name: "any class (on about half the images)" for name in SHARED_PARTS})
    doc = {"generator": "bgbench synth", "classes": list(SYNTH_CLASSES), "textures": list(TEXTURES),
           "attributes": parts, "splits": splits}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def merge(out: Path, records: List[ShardRecord], overwrite: bool = False, workers: int = 1,
          progress: bool = True) -> SynthResult:
    """Join the shards of one split into `out`: the very files an unsharded run writes.

    Nothing is left to compute, so `workers` and `progress` (merge's one signature) go unused.
    """
    ref = records[0]
    writer = DatasetWriter(out, ref.split, IN9_VARIANTS, SYNTH_CLASSES, attributes=True, shared=(INFO,))
    with writer.staged(overwrite):
        writer.copy_shards(records)
        rows = manifest_rows(records)
        _finish(writer, ref.settings, rows)
    return SynthResult(Path(out), ref.split, len({r.image for r in rows}), None, rows,
                       _provenance(Path(out), {**ref.settings, "shards": len(records)}))


def write_dataset(out: Path, progress: bool = True, **options) -> Path:
    """Write one split of Synthetic-9 to `out` (`SynthConfig`'s fields as keywords; see `synth`); returns `out`."""
    return synth(SynthConfig(out=Path(out), **options), progress).out
