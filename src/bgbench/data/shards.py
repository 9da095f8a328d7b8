"""`--shard K/N` and what `bgbench merge` needs to join shards byte-identically.

Shard K of N takes the images whose position in the job's sorted list of image ids falls in a
block numbered K modulo N (blocks of one image, except for `edit`, whose blocks are its
adversarial batches). Every shard computes that list itself, from the same inputs, so the
shares do not depend on which shard runs first, where, or whether the others ran at all.

A shard writes its images into its own folder, in the IN-9 layout, and a record
`SHARD_<split>.json` of what it did: the job, the settings that decide the output (compared by
`merge`), a fingerprint of the job's full input list, and its manifest and reject rows (for
`build`: what it prepared, since donors and balance are chosen at the merge).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..errors import BgbenchError
from ..version import __version__

RECORD_FORMAT = 1


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (0 <= index < count)."""

    index: int
    count: int

    def __post_init__(self):
        if self.count < 1 or not 0 <= self.index < self.count:
            raise BgbenchError(f"--shard {self.index}/{self.count}: K must be in 0..N-1 and N at least 1")

    @classmethod
    def parse(cls, text: str) -> "Shard":
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m:
            raise BgbenchError(f"--shard {text!r}: expected K/N, e.g. 0/8")
        return cls(int(m.group(1)), int(m.group(2)))

    def owns(self, position: int, block: int = 1) -> bool:
        return (position // block) % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def inputs_fingerprint(lines: Sequence[str]) -> str:
    """A fingerprint of a job's full input list (one line per image), so merge can tell whether
    every shard saw the same inputs, and hence the same shares."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode() + b"\0")
    return h.hexdigest()[:16]


def select(items: Sequence, shard: Optional[Shard], block: int = 1) -> list:
    """The items (in order) that `shard` owns; all of them without a shard."""
    return list(items) if shard is None else [it for k, it in enumerate(items) if shard.owns(k, block)]


@dataclass
class ShardRecord:
    """What one shard did, as merge reads it back."""

    kind: str  # synth | build | edit
    split: str
    shard: Shard
    settings: Dict[str, Any]  # everything that decides the output: equal across shards
    inputs: str  # fingerprint of the job's full, sorted input list
    folders: List[str]  # the image folders (variants or levels) besides fg_mask
    classes: List[str]
    rows: List[dict] = field(default_factory=list)  # manifest rows, or build's prepared images
    rejects: List[dict] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)  # provenance and the like: not compared
    version: str = __version__
    root: Optional[Path] = None  # where it was read from

    def save(self, root: Path) -> Path:
        doc = {"format": RECORD_FORMAT, "kind": self.kind, "split": self.split,
               "shard": [self.shard.index, self.shard.count], "version": self.version, "settings": self.settings,
               "inputs": self.inputs, "folders": self.folders, "classes": self.classes, "extra": self.extra,
               "rows": self.rows, "rejects": self.rejects}
        path = Path(root) / f"SHARD_{self.split}.json"
        path.write_text(json.dumps(doc, sort_keys=True))
        return path

    @classmethod
    def load(cls, path: Path) -> "ShardRecord":
        try:
            doc = json.loads(Path(path).read_text())
            if doc.get("format") != RECORD_FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, expected {RECORD_FORMAT}")
            return cls(kind=doc["kind"], split=doc["split"], shard=Shard(*doc["shard"]), settings=doc["settings"],
                       inputs=doc["inputs"], folders=list(doc["folders"]), classes=list(doc["classes"]),
                       rows=doc["rows"], rejects=doc["rejects"], extra=doc.get("extra", {}),
                       version=doc["version"], root=Path(path).parent)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise BgbenchError(f"cannot read shard record {path}: {e}") from None


def read_shards(dirs: Sequence[Path]) -> Dict[str, List[ShardRecord]]:
    """split -> the shard records of every SHARD_DIR, checked to fit together (see `check_fit`)."""
    by_split: Dict[str, List[ShardRecord]] = {}
    for d in dirs:
        d = Path(d).expanduser()
        if not d.is_dir():
            raise BgbenchError(f"shard folder {d} does not exist")
        found = sorted(d.glob("SHARD_*.json"))
        if not found:
            raise BgbenchError(f"{d} holds no SHARD_<split>.json: it is not the output of a --shard run")
        for path in found:
            rec = ShardRecord.load(path)
            by_split.setdefault(rec.split, []).append(rec)
    for split, recs in by_split.items():
        check_fit(recs, split)
    return {s: sorted(r, key=lambda rec: rec.shard.index) for s, r in sorted(by_split.items())}


def check_fit(records: Sequence[ShardRecord], split: str) -> None:
    """Refuse shards that do not make one dataset: another job, version, N, settings or input list;
    a shard given twice; a shard missing."""
    ref = records[0]
    for rec in records[1:]:
        for what, mine, theirs in (("job", rec.kind, ref.kind), ("bgbench version", rec.version, ref.version),
                                   ("shard count N", rec.shard.count, ref.shard.count)):
            if mine != theirs:
                raise BgbenchError(f"shards of {split} do not fit together: {rec.root} has {what} {mine}, "
                                   f"{ref.root} has {theirs}")
        differ = sorted(k for k in set(rec.settings) | set(ref.settings) if rec.settings.get(k) != ref.settings.get(k))
        if differ:
            k = differ[0]
            raise BgbenchError(f"shards of {split} do not fit together: {k} is {rec.settings.get(k)!r} in {rec.root} "
                               f"but {ref.settings.get(k)!r} in {ref.root}")
        if rec.inputs != ref.inputs:
            raise BgbenchError(f"shards of {split} do not fit together: {rec.root} and {ref.root} saw different "
                               f"input images")
    seen: Dict[int, Path] = {}
    for rec in records:
        if rec.shard.index in seen:
            raise BgbenchError(f"shard {rec.shard} of {split} is given twice: {seen[rec.shard.index]} and {rec.root}")
        seen[rec.shard.index] = rec.root
    missing = sorted(set(range(ref.shard.count)) - set(seen))
    if missing:
        raise BgbenchError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{k}/{ref.shard.count}' for k in missing)}"
                           f" of {split} {'are' if len(missing) > 1 else 'is'} missing")
