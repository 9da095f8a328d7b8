"""The one dataset writer that `bgbench synth`, `build` and `edit` share.

It owns what the three have in common: the IN-9 output folders (`OUT/<folder>/<split>/<class>/`
and `OUT/fg_mask/...`, plus `OUT/attr_mask/...` for a job that writes attribute masks), the overwrite check, PNG and mask writes, the manifest and rejects
tables (one schema, `data.manifest`), the per-image reject protocol, and the shard record and
file copies that `bgbench merge` joins. The per-image work (drawing, GrabCut, edits) stays with
the callers, which hand it to `data.pool.worker_pool` as module-level functions: this layer
knows no variant and no edit.

Per-image functions raise `Rejected(reason, detail)` for bad input; the caller turns it into a
`RejectRow`. `read_image` and `read_mask_or_reject` are the readers every job uses, so an
unreadable image or a malformed mask is rejected the same way everywhere.
"""
from __future__ import annotations

import csv
import io
import shutil
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np
from PIL import Image

from ..errors import BgbenchError, DataError
from . import manifest as M
from .attributes import ATTR_DIR
from .csv_fields import allow_long_fields
from .images import BadMask, decode_image, read_mask
from .layout import MASK_DIR
from .owned import StagedOutput, refuse_unsafe_out
from .shards import ShardRecord

PNG_COMPRESS = 1  # zlib level: fast, and still lossless

# reject reasons shared by the jobs
UNREADABLE = "unreadable_image"
MISSING_MASK = "missing_mask"
BAD_MASK = "bad_mask"
EMPTY_MASK = "empty_mask"


_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # zip's earliest date: no clock in the file


def write_attribute_masks(path: Path, masks: Dict[str, np.ndarray]) -> None:
    """An .npz of the masks (uint8 0/1, one array per name), deterministic byte for byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(masks):
            buf = io.BytesIO()
            np.save(buf, np.asarray(masks[name], dtype=bool).astype(np.uint8), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME), buf.getvalue(),
                       compress_type=zipfile.ZIP_DEFLATED)


class Rejected(Exception):
    """Raised by per-image work: this image (or this image at one level) is a reject, not a crash."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def read_image(path: Path) -> np.ndarray:
    """The image as HxWx3 uint8, or `Rejected(unreadable_image)`."""
    try:
        return decode_image(path)
    except DataError as e:
        raise Rejected(UNREADABLE, str(e).split(": ", 1)[-1]) from None


def read_mask_or_reject(path: Path, shape: Tuple[int, int]) -> np.ndarray:
    """The mask at `path` for an image of `shape` (see `read_mask`), or `Rejected(bad_mask)`."""
    try:
        return read_mask(path, shape)
    except BadMask as e:
        raise Rejected(BAD_MASK, e.detail) from None


@dataclass(frozen=True)
class Target:
    """Where one split's files go; small and picklable, so workers write their own images."""

    out: Path
    split: str

    def path(self, folder: str, image_id: str, suffix: str = ".png") -> Path:
        return self.out / folder / self.split / f"{image_id}{suffix}"

    def save_image(self, folder: str, image_id: str, image: np.ndarray) -> None:
        Image.fromarray(image).save(self.path(folder, image_id), compress_level=PNG_COMPRESS)

    def save_mask(self, image_id: str, mask: np.ndarray) -> None:
        np.save(self.path(MASK_DIR, image_id, ".npy"), mask.astype(np.uint8))

    def save_attributes(self, image_id: str, masks: dict) -> None:
        """The image's attribute masks (part -> HxW bool) as attr_mask/<split>/<id>.npz."""
        write_attribute_masks(self.path(ATTR_DIR, image_id, ".npz"), masks)

    def load_image(self, folder: str, image_id: str) -> np.ndarray:
        return decode_image(self.path(folder, image_id))

    def load_mask(self, image_id: str) -> np.ndarray:
        return np.load(self.path(MASK_DIR, image_id, ".npy")).astype(bool)

    def remove(self, folders: Iterable[str], image_id: str) -> None:
        for folder, suffix in [*((f, ".png") for f in folders), (MASK_DIR, ".npy"), (ATTR_DIR, ".npz")]:
            self.path(folder, image_id, suffix).unlink(missing_ok=True)


class DatasetWriter:
    """One split of one dataset in the IN-9 layout: its folders, tables and shard record.

    The job writes into a stage beside `out` (`target` points there) and `commit()` moves the
    split in once it is complete (`data.owned`): a failed job leaves `out` as it was, and a
    rewrite removes the files the split's previous output listed in `out/FILES_<split>.txt`, never
    another file.

    `attributes`: the job writes attribute masks too (attr_mask/<split>/...); `masks`: it writes
    foreground masks (`build`'s in9l preset writes none, so its output has no empty fg_mask tree);
    `shared`: other files of the dataset's root the job rewrites, keeping the other splits' part
    (synth's SYNTHETIC9.json)."""

    def __init__(self, out: Path, split: str, folders: Sequence[str], classes: Sequence[str],
                 attributes: bool = False, masks: bool = True, shared: Sequence[str] = ()):
        self.out, self.split = Path(out), split
        self.folders, self.classes = list(folders), list(classes)
        self.mask_dirs = ([MASK_DIR] if masks else []) + ([ATTR_DIR] if attributes else [])
        self.output = StagedOutput(self.out, f"FILES_{split}.txt", split, shared=(M.MANIFEST, M.REJECTS, *shared))
        self.target = Target(self.output.stage, split)

    @property
    def stage(self) -> Path:
        """Where the job writes its files and tables until `commit()`."""
        return self.output.stage

    def open(self, overwrite: bool) -> None:
        """Refuse to replace a split that holds images unless `overwrite`; then stage empty class
        folders. Nothing in `out` changes before `commit()`."""
        refuse_unsafe_out(self.out)
        self._refuse_foreign_tables()
        existing = self.out / self.folders[0] / self.split
        if not overwrite and existing.is_dir() and any(p.is_file() for p in existing.rglob("*")):
            raise BgbenchError(f"{existing} already holds images; pass --overwrite to replace the "
                               f"{self.split} split")
        self.output.open()
        for folder in [*self.folders, *self.mask_dirs]:
            for cls in self.classes:
                (self.stage / folder / self.split / cls).mkdir(parents=True, exist_ok=True)

    def _refuse_foreign_tables(self) -> None:
        """One line when `out` holds a manifest.csv or rejects.csv that is no table of bgbench's (no
        `image` or `reason` column): the job rewrites those two files, and must not rewrite a user's."""
        for name, column in ((M.MANIFEST, "image"), (M.REJECTS, "reason")):
            path = self.out / name
            if path.exists() and column not in _header(path):
                raise BgbenchError(f"{path} is not a table bgbench wrote (no {column!r} column), and this job "
                                   f"would rewrite it: move it, or choose another --out")

    @contextmanager
    def staged(self, overwrite: bool) -> Iterator["DatasetWriter"]:
        """`open(overwrite)`, the caller's work, and whatever it left uncommitted (an error, an
        interrupt) discarded."""
        self.open(overwrite)
        try:
            yield self
        finally:
            self.output.discard()

    def write_into(self, stage: Path) -> None:
        """Write into `stage`, another process's open stage: torchrun's ranks write one output, whose
        stage rank 0 opened and commits (each process would otherwise stage beside it a folder of
        its own, named by its pid, that nobody opens)."""
        self.output.stage = Path(stage)
        self.target = Target(self.output.stage, self.split)

    def commit(self) -> None:
        """Move the complete split into `out`; see the class docstring."""
        self.output.commit()

    def discard(self) -> None:
        self.output.discard()

    def give_up(self) -> str:
        """The job produced no image. The split's previous output, if there is one, stays as it
        was; else the tables alone are moved in (rejects.csv says why each image failed), so a
        retry is not refused. Returns where the user's message points."""
        if self.output.has_previous():
            self.output.discard()
            return f"the previous {self.split} split in {self.out} is kept as it was"
        self.output.commit(folders=False, only_shared=True)
        return f"see {self.out / M.REJECTS}"

    def write_tables(self, rows: Iterable[M.ManifestRow], rejects: Iterable[M.RejectRow]) -> None:
        """manifest.csv and rejects.csv for this split, in the one order every run uses, staged
        with the other splits' rows of `out`'s tables."""
        manifest = [r.csv_row(self.split, self.classes) for r in M.sort_rows(rows, self.folders)]
        M.write_split(self.stage / M.MANIFEST, M.MANIFEST_FIELDS, self.split, manifest, base=self.out / M.MANIFEST)
        M.write_split(self.stage / M.REJECTS, M.REJECT_FIELDS, self.split,
                      [r.csv_row(self.split) for r in M.sort_rejects(rejects, self.folders)],
                      base=self.out / M.REJECTS)

    def copy_shards(self, records: Sequence[ShardRecord]) -> int:
        """Copy every shard's images and masks of this split into the output; returns the file count.

        Shards own disjoint images, so a file that two shards hold means they do not fit together.
        """
        copied = set()
        for rec in records:
            for folder in [*rec.folders, MASK_DIR, ATTR_DIR]:
                src = Path(rec.root) / folder / self.split
                if not src.is_dir():
                    continue
                for path in sorted(p for p in src.rglob("*") if p.is_file()):
                    rel = path.relative_to(rec.root)
                    if rel in copied:
                        raise BgbenchError(f"shards overlap: {rel} is in {rec.root} and in another shard")
                    copied.add(rel)
                    dst = self.stage / rel
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dst)
        return len(copied)


def _header(path: Path) -> Tuple[str, ...]:
    """The column names of the CSV file at `path` (none when it cannot be read as one)."""
    allow_long_fields()
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return tuple(next(csv.reader(f), ()))
    except (OSError, UnicodeDecodeError, csv.Error):
        return ()


def refuse_merge_into_a_shard(out: Path, shard_dirs: Sequence[Path]) -> None:
    out = Path(out).expanduser().resolve()
    for d in shard_dirs:
        if Path(d).expanduser().resolve() == out:
            raise BgbenchError(f"merge output {out} is one of the shard folders; write it elsewhere")


def manifest_rows(records: Sequence[ShardRecord]) -> List[M.ManifestRow]:
    return [M.ManifestRow(**{**r, "box": None if r.get("box") is None else tuple(r["box"])}) for rec in records
            for r in rec.rows]


def reject_rows(records: Sequence[ShardRecord]) -> List[M.RejectRow]:
    return [M.RejectRow(**r) for rec in records for r in rec.rejects]
