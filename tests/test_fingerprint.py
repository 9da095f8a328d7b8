"""The dataset fingerprint: listed with os.scandir, it must equal what `Path.rglob` gave (every
stored run carries it, and a study matches runs by it)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from bgbench.data.layout import dataset_fingerprint


def rglob_fingerprint(root: Path, split: str) -> str:
    """The fingerprint as bgbench computed it before (pathlib's recursive glob), written here."""
    h = hashlib.sha256()
    for folder in sorted(p for p in root.iterdir() if (p / split).is_dir()):
        for path in sorted((folder / split).rglob("*")):
            if path.is_file():
                h.update(f"{path.relative_to(root).as_posix()}:{path.stat().st_size}".encode())
    return h.hexdigest()[:16]


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_the_fingerprint_is_rglobs_on_a_tree_with_links_dots_and_names_that_sort_apart(tmp_path):
    root = tmp_path / "data"
    # 'a.b' sorts before 'a/...' as a string ('.' < '/') but after 'a' as a path part.
    for k, rel in enumerate(["original/val/a/x.JPEG", "original/val/a.b/y.JPEG", "original/val/a-b/z.png",
                             "original/val/a/deeper/w.JPEG", "original/val/.hidden", "fg_mask/val/a/x.npy",
                             "mixed_rand/val/a/x.JPEG", "mixed_rand/val/é/ü.JPEG", "notes/README"]):
        write(root / rel, 3 + k)
    (root / "loose.txt").write_text("not a variant")
    outside = tmp_path / "outside"
    write(outside / "big.bin", 99)
    (root / "original/val/linked.JPEG").symlink_to(outside / "big.bin")  # a file by its target's size
    (root / "original/val/linked_dir").symlink_to(outside, target_is_directory=True)  # not entered
    (root / "original/val/broken.JPEG").symlink_to(tmp_path / "missing")  # no file
    (root / "mixed_rand/val/empty").mkdir()
    expected = rglob_fingerprint(root, "val")
    assert dataset_fingerprint(root, "val") == expected
    os.truncate(root / "original/val/a/deeper/w.JPEG", 1)  # a size changes: so does the fingerprint
    assert dataset_fingerprint(root, "val") == rglob_fingerprint(root, "val") != expected


def test_the_fingerprint_of_the_suites_dataset_is_rglobs(synth_root):
    assert dataset_fingerprint(Path(synth_root), "val") == rglob_fingerprint(Path(synth_root), "val")
